"""Sessions 10 and 11: the zero-sign pass's gate (``wgsl/gemm_zany.wgsl`` (s11) +
``wgsl/gemm_zflags.wgsl`` + ``wgsl/gemm_zsign.wgsl``, ``backends/wgpu/zsign.py``): what the gate's
dispatches cost and what the gate saves.

Checks first: ``pytropical_gpu.matmul`` on wgpu against ``tests/reference.py`` bit for bit on the
gate's cases (operands with no -0 / no sign bit, -0 in a few rows, c with ±0, batches with a
broadcast operand, a shape that splits k), then each timed command list's output (sampled rows
against the cpu backend, whose rule is ``zero_order.fix_host``), gated and ungated. Then GPU
timestamps (median of ``rounds`` samples taken in turn) at each size, per case:

* ``typ`` (min_plus, max_plus): random positive operands, no zero output (s11: the any word shuts
  the flags and the pass: the common case costs one read of D);
* ``one_zero`` (min_plus): the same with one zero output (a +0 in row 0 of A and column n-1 of B
  at one k): the any word opens, the flags read A and B, the pass reads D;
* ``worst_old`` (min_times): nonnegative operands full of zeros: every output +0 with no -0 term,
  the session 9 worst case (the ungated pass scans all of k per output; 95.7 ms at 4096^3 on the
  H200, 16x the GEMM); the gate is shut everywhere;
* ``few_open`` (min_times): the same with a -0 in the last column of 8 rows of A: those rows'
  outputs scan all of k (their last term decides), the rest are shut;
* ``all_open`` (min_times): a -0 in the last column of every row of A: every output scans all of k
  (what the gate cannot help: the remaining worst case), for the record.

Rows: ``gemm`` (the library's kernel alone), ``gemm+zsign`` (GEMM, any zero, flags, gated pass:
what the library records), ``zany`` (the any-zero dispatch alone), ``zflags`` (the flags dispatch
alone, on the any words ``zany`` left), ``zsign gated`` (the pass alone on computed flags), ``zsign
ungated`` (the pass alone with every flag and the any word set: the session 9 pass's cost on this
data, plus nothing). ``ratio``: a row's median over the same case's ``gemm`` median.

    python benchmarks/bench_wgpu_zsign_s10.py --out $OUT [--quick] [--tag s11]

writes ``wgpu_zsign_h200_<tag>.json`` (``--quick``: ``wgpu_zsign_quick_<tag>.json``).
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
NONNEG = np.array([0.0, 0.0, 0.0, 1.0, 2.0], F32)
C_VALUES = np.array([0.0, -0.0, 3.0, -3.0], F32)
OUT = {"checks": [], "rows": [], "errors": [], "notes": __doc__}


def _same(got, want) -> bool:
    got, want = np.asarray(got, F32), np.asarray(want, F32)
    return got.shape == want.shape and bool(np.array_equal(got.view(np.int32), want.view(np.int32)))


def _open_rows(a: np.ndarray, rows) -> np.ndarray:
    a = a.copy()
    a[..., rows, -1] = -0.0
    return a


def checks() -> bool:
    """The library on the gate's cases, bits against the reference."""
    rng = np.random.default_rng(10)
    ok = True
    for name in ("min_plus", "max_plus", "min_times", "max_times", "min_max", "max_min"):
        for lead_a, lead_b, m, k, n in (((), (), 37, 53, 29), ((3,), (), 17, 40, 13),
                                        ((), (3,), 9, 70, 33), ((), (), 33, 2048, 40)):
            a = rng.choice(NONNEG, lead_a + (m, k))
            b = rng.choice(NONNEG, lead_b + (k, n))
            if name in ("max_plus", "max_min"):
                a, b = -a, -b  # (-0 where a zero was: the gate opens; c below keeps both zeros)
            for aa in (a, _open_rows(a, [1, m - 1])):
                c = rng.choice(C_VALUES, (m, n))
                d = ptg.matmul(aa, b, name, c=c, backend="wgpu")
                ax = aa if aa.ndim == 3 or b.ndim == 2 else aa[None]
                bx = b if b.ndim == 3 or aa.ndim == 2 else b[None]
                good = _same(d, ref_matmul(ax, bx, name, c)[0])
                OUT["checks"].append({"label": f"{name} {lead_a}{lead_b} {(m, k, n)}", "ok": good})
                ok &= good
    log(f"checks {'passed' if ok else 'FAILED'}: {sum(c['ok'] for c in OUT['checks'])} of "
        f"{len(OUT['checks'])}")
    return ok


def _cases(size):
    rng = np.random.default_rng(size)
    typ = (rng.integers(1, 1000, (2, size, size)) / 8).astype(F32)  # no zero output (all > 0)
    z = rng.choice(NONNEG, (2, size, size))  # every min_times output +0, no -0 term
    few = np.linspace(0, size - 1, 8).astype(int)
    one = typ.copy()
    one[0, 0, size // 2], one[1, size // 2, size - 1] = 0.0, 0.0  # one zero output: (0, size - 1)
    return [("typ", "min_plus", typ[0], typ[1]), ("typ", "max_plus", typ[0], typ[1]),
            ("one_zero", "min_plus", one[0], one[1]),
            ("worst_old", "min_times", z[0], z[1]),
            ("few_open", "min_times", _open_rows(z[0], few), z[1]),
            ("all_open", "min_times", _open_rows(z[0], slice(None)), z[1])]


def time_case(eng, tag, name, a, b, size, rounds, reps):
    sr, dt = get_semiring(name), np.dtype(F32)
    kname, kp = gemm.choose_kernel(size, size, size, False, eng.limits.max_workgroup_storage)
    code = gemm.semiring_code(sr, dt, False)
    pipe = eng.pipeline(kname, **code.params(), **kp, HAS_C=False)
    A, B, D, D2 = eng.upload(a), eng.upload(b), eng.alloc(size * size * 4), eng.alloc(size * size * 4)
    binds = [A.binding(), B.binding(), D.binding()]
    g = gemm.make_dispatch(eng, pipe, kname, kp, binds, size, size, size)
    z, tmp = zsign.commands(eng, sr, dt, binds, size, size, size)
    rec = zsign.record(eng, sr, dt, size, size, size)
    allset = eng.alloc(rec.nbytes)  # every flag set: the pass scans as session 9's did
    eng.rt.write(allset.handle, np.full(rec.nbytes // 4, 3, np.uint32))
    g2 = gemm.make_dispatch(eng, pipe, kname, kp, [A.binding(), B.binding(), D2.binding()],
                            size, size, size)
    ungated = rec.dispatches(A.binding(), B.binding(), D2.binding(), fl=allset.binding())[2]
    eng.submit([g] + z + [g2, ungated])
    r = np.random.default_rng(1).choice(size, 3, replace=False)
    if tag == "one_zero":
        r = np.union1d(r, [0])
    elif tag != "typ":
        r = np.union1d(r, np.flatnonzero(a[:, -1].view(np.uint32) == 0x80000000)[:3])
    want = ptg.matmul(a[r], b, name, backend="cpu")
    got, got2 = eng.download(D, F32, (size, size))[r], eng.download(D2, F32, (size, size))[r]
    ok = _same(got, want) and _same(got2, want)
    OUT["checks"].append({"label": f"timed {name} {size} {tag}", "ok": ok})
    if not ok:
        log(f"CHECK FAILED timed {name} {size} {tag}: not timed")
        eng.release(A, B, D, D2, allset, *tmp)
        return
    rows = {"gemm": [g], "gemm+zsign": [g] + z, "zany": z[:1], "zflags": z[1:2],
            "zsign gated": z[2:], "zsign ungated": [ungated]}
    slow = tag in ("worst_old", "all_open") and size >= 4096
    got = {x: [] for x in rows}
    for _ in range(rounds):
        for x, cmds in rows.items():
            heavy = slow and (x == "zsign ungated" or tag == "all_open" and x not in
                              ("gemm", "zany", "zflags"))  # ~0.1 s a pass at 4096^3: one at a time
            n = 1 if heavy else reps
            got[x].append(timing.kernel_time(eng, list(cmds), n, 1) * 1e3)
    base = float(np.median(got["gemm"]))
    for x, v in got.items():
        q1, med, q3 = np.percentile(v, [25, 50, 75])
        row = {"label": f"{name} {size}^3 {tag} {x}", "case": tag, "semiring": name, "size": size,
               "what": x, "median_ms": float(med), "q1_ms": float(q1), "q3_ms": float(q3),
               "ratio": float(med) / base, "samples": v}
        OUT["rows"].append(row)
        log(f"{row['label']}: {med:.4f} ms [q1 {q1:.4f}, q3 {q3:.4f}] = {row['ratio']:.3f} x gemm")
    eng.release(A, B, D, D2, allset, *tmp)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/out"))
    ap.add_argument("--quick", action="store_true", help="small sizes (lavapipe)")
    ap.add_argument("--tag", default="s11", help="the output's session tag (s10: the old name)")
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    eng = get_engine()
    OUT["device"] = eng.rt.info.name
    OUT["sizes"] = sizes = (64, 128) if args.quick else (1024, 4096)
    log(f"device: {OUT['device']}")
    ok = checks()
    rounds, reps = (3, 2) if args.quick else (7, 5)
    steps = [lambda s=s, c=c: time_case(eng, *c, s, rounds, reps)
             for s in sizes for c in _cases(s)] if ok else []
    path = os.path.join(args.out, f"wgpu_zsign_{'quick' if args.quick else 'h200'}_{args.tag}.json")
    timing.run_steps(steps, OUT, path, t0, "wall (no timestamp-query)")
    if not steps:
        with open(path, "w") as f:
            json.dump(OUT, f, indent=1, default=str)
    return 0 if ok and not OUT["errors"] and all(c["ok"] for c in OUT["checks"]) else 1


if __name__ == "__main__":
    sys.exit(main())
