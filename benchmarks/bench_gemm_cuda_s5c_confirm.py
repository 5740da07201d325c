"""Issue 14, CUDA GEMM (fifth session, argmax helper): the backend's own choice after the change.

``tg.matmul`` on resident cupy operands at 8192³ (the facts pass included: ~0.3 ms of ~50): max_times /
min_times float32 without the zero (the NZ tiles) and with one zero in b (the guarded HOT / big
kernels), min_plus for reference; int32 max_plus through DPX ("dpx_big3" now) against the DPX
"big" tile launched directly; the plain 64x64x16 2/SM tiles of bench_gemm_cuda_s5c.py (the "same
kernel without argmax"). Sampled rows of each float result checked on the device against a
broadcast reference (first index of the best). CUDA events, median, beside copy and SGEMM.

``python3 benchmarks/bench_gemm_cuda_s5c_confirm.py --json $OUT/x.json``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_gemm_cuda_s5c import ARG_T, rname, specs  # noqa: E402
from bench_gemm_sweep import Timer, baselines  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch, kernels  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s5c_confirm.json")
    p.add_argument("--size", type=int, default=8192)
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg
    from pytropical_gpu.semirings import get_semiring

    be = tg.get_backend("cuda")
    timer = Timer(cp)
    out = {"device": be.describe(), "rows": [], "failed": []}
    rows = out["rows"]
    log = print
    S = args.size

    def save():
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))

    rng = np.random.default_rng(1)
    baselines(cp, timer, rows, log, (S,), rng)
    a = cp.asarray(rng.standard_normal((S, S), dtype=np.float32))
    b = cp.asarray(rng.standard_normal((S, S), dtype=np.float32))
    bz = {"max": b.copy(), "min": b.copy()}
    bz["max"][S // 2, 17] = -np.inf
    bz["min"][S // 2, 17] = np.inf

    def record(op, t):
        r = {"op": op, "size": f"{S}^3", "s": t, "TOPS": 2 * S**3 / t / 1e12}
        rows.append(r)
        save()
        log(f"{op:44s} {t * 1e3:9.3f} ms {r['TOPS']:6.2f} TOPS")

    def check(name, bb, argmax):
        got = tg.matmul(a, bb, name, return_argmax=argmax, backend="cuda")
        d, idx = got if argmax else (got, None)
        sel = cp.asarray([0, 1, 777, S // 2, S - 1])
        s = a[sel][:, :, None] * bb[None] if "times" in name else a[sel][:, :, None] + bb[None]
        if "times" in name:  # the zero (an infinity in bb) is absorbing
            zero = np.float32(-np.inf if name.startswith("max") else np.inf)
            s = cp.where(bb[None] == zero, zero, s)
        if (name.startswith("max") and "times" in name) or name == "max_plus":
            want, widx = s.max(axis=1), s.argmax(axis=1)
        else:
            want, widx = s.min(axis=1), s.argmin(axis=1)
        ok = bool(cp.array_equal(d[sel], want)) and (idx is None or bool(cp.array_equal(idx[sel], widx)))
        if not ok:
            out["failed"].append([name, argmax])
            log(f"CHECK FAILED {name} argmax={argmax}")
        return ok

    for name in ("min_plus", "max_times", "min_times"):
        for argmax in (True, False):
            cases = [("", b)] if name == "min_plus" else [(" (no zero: NZ)", b),
                                                          (" (one zero: guarded)", bz[name[:3]])]
            for tag, bb in cases:
                if check(name, bb, argmax):
                    t = timer(lambda bb=bb, name=name, argmax=argmax: tg.matmul(
                        a, bb, name, return_argmax=argmax, backend="cuda"), 5)
                    record(f"{name}{' argmax' if argmax else ''}{tag}", t)
    sp = specs()
    for label in ("max_times nz", "min_plus"):  # the same 64x64x16 2/SM tile without argmax
        rl = rname(ARG_T, False)
        t = timer(lambda label=label, rl=rl: gemm_launch.run(
            be, sp[(label, rl)], a[None], b[None], None, False, gemm_launch.Plan("tile", rl, 1, S)), 5)
        record(f"{label} plain tile {ARG_T}", t)
    ai = cp.random.randint(-(2**28) + 1, 2**28, (S, S), dtype=cp.int32)
    bi = cp.random.randint(-(2**28) + 1, 2**28, (S, S), dtype=cp.int32)
    t = timer(lambda: tg.matmul(ai, bi, "max_plus", backend="cuda"), 5)
    record("max_plus i32 |x| < 2^28 (backend: dpx_big3)", t)
    spec = kernels.gemm_spec(get_semiring("max_plus"), np.dtype(np.int32))
    for role in ("big", "big3"):
        t = timer(lambda role=role: gemm_launch.run(be, spec, ai[None], bi[None], None, False,
                                                    gemm_launch.Plan("tile", role, 1, S), prefix="dpx_"), 5)
        record(f"max_plus i32 DPX {role} (kernel)", t)
    d = tg.matmul(ai, bi, "max_plus", backend="cuda")[:64]  # dpx_big3, against the DPX "big" tile
    ref = gemm_launch.run(be, spec, ai[None, :64], bi[None], None, False,
                          gemm_launch.Plan("tile", "big", 1, S), prefix="dpx_")[0][0]
    if not bool(cp.array_equal(d, ref)):
        out["failed"].append(["max_plus i32 dpx_big3 vs dpx_big"])
    save()
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if out["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
