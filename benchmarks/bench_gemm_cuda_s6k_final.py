"""Issue 14, CUDA GEMM (sixth session): the adopted units launch as committed (gemm_units.run and
the library path) against the default ``big3`` grid it replaces, in the same run.

Checks first: at every timed shape the units launch equal to ``big3`` in full (bits) and 8 rows
against numpy; ``tg.matmul`` on cupy operands (the rule on) equal too. Timings: CUDA events, median
of 9 × 10 pipelined calls (8192³: 5 × 1), two rounds.

``python3 benchmarks/bench_gemm_cuda_s6k_final.py --json $OUT/gemm_cuda_s6k3_h200_s6.json``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from bench_gemm_sweep import Timer  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch, gemm_units, kernels  # noqa: E402

TIMED = [(2048, 2048, 2048), (1536, 1536, 1536), (3072, 3072, 3072), (4096, 4096, 4096),
         (1536, 2048, 2048), (8192, 8192, 8192)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s6k3.json")
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg
    from pytropical_gpu.semirings import get_semiring

    be = tg.get_backend("cuda")
    timer = Timer(cp)
    out = {"device": be.describe(), "rows": [], "checks": []}
    sms = be._sm_count()
    spec = kernels.gemm_spec(get_semiring("min_plus"), np.dtype(np.float32))
    uspec = gemm_units.spec("min_plus")
    rng = np.random.default_rng(5)

    def big3(a, b):
        _, m, k = a.shape
        pl = gemm_launch.plan(m, b.shape[2], k, 1, 4, False, True, sms, spec.names, "big3")
        assert pl.role == "big3" and pl.ks == 1
        return gemm_launch.run(be, spec, a, b, None, False, pl)[0]

    ok_all = True
    ops = {}
    for (m, k, n) in TIMED:
        a = cp.asarray(rng.standard_normal((1, m, k), dtype=np.float32))
        b = cp.asarray(rng.standard_normal((1, k, n), dtype=np.float32))
        ops[(m, k, n)] = (a, b)
        want = big3(a, b)
        d = gemm_units.run(be, uspec, a, b, None)
        ok = bool(cp.array_equal(d.view(cp.uint32), want.view(cp.uint32)))
        lib = tg.matmul(a[0], b[0], "min_plus", backend="cuda")
        ok = ok and bool(cp.array_equal(lib.view(cp.uint32), want[0].view(cp.uint32)))
        ah, bh, dh = a.get()[0], b.get()[0], d.get()[0]
        for r in np.random.default_rng(3).choice(m, 8, replace=False):
            ok = ok and bool(np.array_equal(dh[r], np.min(ah[r][:, None] + bh, axis=0)))
        out["checks"].append({"shape": [m, k, n], "ok": ok, "layout": gemm_units.layout(m, n, k, 3 * sms)})
        print(f"check {m}x{k}x{n}: {ok}")
        ok_all = ok_all and ok
    for rnd in (1, 2):
        for (m, k, n), (a, b) in ops.items():
            reps, inner = (5, 1) if m * n * k > 2**36 else (9, 10)
            for op, fn in (("big3", lambda a=a, b=b: big3(a, b)),
                           ("units", lambda a=a, b=b: gemm_units.run(be, uspec, a, b, None)),
                           ("big3 (end)", lambda a=a, b=b: big3(a, b))):
                t = timer(fn, reps, inner=inner)
                out["rows"].append({"op": op, "size": f"{m}x{k}x{n}", "s": t,
                                    "TOPS": 2 * m * n * k / t / 1e12, "round": rnd})
                print(f"{op:12s} {m}x{k}x{n} {t * 1e3:9.4f} ms {2 * m * n * k / t / 1e12:6.2f} TOPS r{rnd}")
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
