"""Session 9: what the zero-sign pass (``wgsl/gemm_zsign.wgsl``, ``backends/wgpu/zsign.py``) costs.

Checks first: ``pytropical_gpu.matmul`` on wgpu against ``tests/reference.py`` bit for bit (zeros of
both signs, each selective semiring, plain / ``c`` / argmax / batched, and a shape that splits k),
then the timed commands' outputs (sampled rows against the cpu backend, bits). Then GPU
timestamps (median of ``rounds`` samples taken in turn) for min_plus and max_plus f32 at each size:
the library's GEMM alone, the GEMM and the pass, and the pass alone over (typ) a result with no
zero (it reads D once), (worst) every output +0 for min_plus / -0 for max_plus with no term that
decides (it scans all of k per output: a naive GEMM's reads), (best) every output a zero decided
by its first term.

    python benchmarks/bench_wgpu_zsign_s9.py --out $OUT [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

os.environ.setdefault("PYTROPICAL_WEBGPU", "wgpu")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "tests"), os.path.dirname(HERE)]

import _wgpu_timing as timing  # noqa: E402
from _wgpu_timing import log  # noqa: E402
from reference import ref_matmul  # noqa: E402

import pytropical_gpu as ptg  # noqa: E402
from pytropical_gpu.backends.wgpu import gemm, zsign  # noqa: E402
from pytropical_gpu.backends.wgpu.device import get_engine  # noqa: E402
from pytropical_gpu.semirings import get_semiring  # noqa: E402

F32 = np.float32
VALUES = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -0.5, 1e-30, -1e-30, np.inf, -np.inf], F32)
OUT = {"checks": [], "rows": [], "errors": [], "notes": __doc__}


def _same(got, want) -> bool:
    got, want = np.asarray(got, F32), np.asarray(want, F32)
    return got.shape == want.shape and bool(np.array_equal(got.view(np.int32), want.view(np.int32)))


def checks() -> bool:
    rng = np.random.default_rng(9)
    ok = True
    for name in ("min_plus", "max_plus", "min_times", "max_times", "min_max", "max_min"):
        for m, k, n, lead in ((33, 130, 45, ()), (9, 1030, 11, ()), (17, 40, 13, (3,)),
                              (128, 4096, 128, ())):  # the last splits k on the H200
            a = rng.choice(VALUES[:2] if k > 1000 else VALUES, lead + (m, k))
            b = rng.choice(VALUES[:2], (k, n)).astype(F32)
            c = rng.choice(VALUES[:2], lead + (m, n)).astype(F32)
            d, i = ptg.matmul(a, b, name, c=c, return_argmax=True, backend="wgpu")
            bb = b[None] if lead else b
            want, wi = ref_matmul(a.astype(F32), bb, name, c) if m * k * n < 1 << 24 else \
                (ptg.matmul(a, b, name, c=c, return_argmax=True, backend="cpu"))
            good = _same(d, want) and np.array_equal(i, wi) and _same(
                ptg.matmul(a, b, name, backend="wgpu"), ptg.matmul(a, b, name, backend="cpu"))
            OUT["checks"].append({"label": f"{name} {lead + (m, k, n)}", "ok": good})
            ok &= good
    log(f"checks {'passed' if ok else 'FAILED'}: {sum(c['ok'] for c in OUT['checks'])} of "
        f"{len(OUT['checks'])}")
    return ok


def time_size(eng, name, size, rounds, reps):
    sr = get_semiring(name)
    rng = np.random.default_rng(size)
    typ = (rng.integers(1, 1000, (2, size, size)) / 8).astype(F32)  # no zero output (all > 0)
    worst = np.full((size, size), 0.0 if name == "min_plus" else -0.0, F32)
    best = np.full((size, size), -0.0 if name == "min_plus" else 0.0, F32)
    kname, kp = gemm.choose_kernel(size, size, size, False, eng.limits.max_workgroup_storage)
    code = gemm.semiring_code(sr, np.dtype(F32), False)
    pipe = eng.pipeline(kname, **code.params(), **kp, HAS_C=False)
    rows, bufs = {}, []
    for tag, (a, b) in (("typ", (typ[0], typ[1])), ("worst", (worst, worst)), ("best", (best, best))):
        A, B, D = eng.upload(a), eng.upload(b), eng.alloc(size * size * 4)
        bufs += [A, B, D]
        binds = [A.binding(), B.binding(), D.binding()]
        g = gemm.make_dispatch(eng, pipe, kname, kp, binds, size, size, size)
        z, ztmp = zsign.commands(eng, sr, np.dtype(F32), binds, size, size, size)
        bufs += ztmp  # the gate's flags (session 10 on): kept until the timing ends
        eng.submit([g] + z)
        r = np.random.default_rng(1).choice(size, 3, replace=False)
        got = eng.download(D, F32, (size, size))[r]
        ok = _same(got, ptg.matmul(a[r], b, name, backend="cpu"))
        OUT["checks"].append({"label": f"timed {name} {size} {tag}", "ok": ok})
        if not ok:
            log(f"CHECK FAILED timed {name} {size} {tag}: not timed")
            continue
        if tag == "typ":
            rows["gemm"], rows["gemm+zsign"] = [g], [g] + z
        rows[f"zsign {tag}"] = z
    got = {x: [] for x in rows}
    for _ in range(rounds):
        for x, cmds in rows.items():
            n = 1 if x == "zsign worst" and size >= 4096 else reps
            got[x].append(timing.kernel_time(eng, list(cmds), n, 1) * 1e3)
    for x, v in got.items():
        q1, med, q3 = np.percentile(v, [25, 50, 75])
        row = {"label": f"{name} {size}^3 {x}", "median_ms": float(med), "q1_ms": float(q1),
               "q3_ms": float(q3), "samples": v}
        OUT["rows"].append(row)
        log(f"{row['label']}: {med:.4f} ms [q1 {q1:.4f}, q3 {q3:.4f}]")
    eng.release(*bufs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    ap.add_argument("--quick", action="store_true", help="small sizes (lavapipe)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    eng = get_engine()
    OUT["device"] = eng.rt.info.name
    log(f"device: {OUT['device']}")
    ok = checks()
    sizes = (64, 128) if args.quick else (1024, 4096)
    steps = [lambda n=n, s=s: time_size(eng, n, s, 3 if args.quick else 7, 2 if args.quick else 5)
             for s in sizes for n in ("min_plus", "max_plus")] if ok else []
    path = os.path.join(args.out, "wgpu_zsign_quick.json" if args.quick else "wgpu_zsign_h200_s9.json")
    timing.run_steps(steps, OUT, path, t0, "wall (no timestamp-query)")
    if not steps:
        with open(path, "w") as f:
            json.dump(OUT, f, indent=1, default=str)
    return 0 if ok and not OUT["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
