"""Issue 14 (fourth session, second run): the backend's own choice after the change (``plan`` with
``CudaBackend.big_tile``, the real module), 8192³ / 2048³ CUDA-event medians of the kernels the
backend launches, each result checked on sampled rows against the reference on the device.

``python3 benchmarks/bench_gemm_cuda_s4_confirm.py --json $OUT/x.json``
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

from pytropical_gpu.backends.cuda import gemm_launch, kernels  # noqa: E402

ROWS = [("min_plus", "float32", 8192, False), ("min_plus", "float32", 2048, False),
        ("max_plus", "float32", 8192, False), ("max_min", "float32", 8192, False),
        ("min_max", "float32", 8192, False), ("max_min", "int32", 8192, False),
        ("min_plus", "float32", 8192, True), ("max_min", "float32", 8192, True)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s4_confirm.json")
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg

    be = tg.get_backend("cuda")
    sms = be.describe()["multiprocessors"]
    timer, out, bad = Timer(cp), {"rows": []}, 0
    for name, dts, s, arg in ROWS:
        sr, dt = tg.get_semiring(name), np.dtype(dts)
        spec = kernels.gemm_spec(sr, dt)
        pl = gemm_launch.plan(s, s, s, 1, 4, arg, True, sms, spec.names, be.big_tile)
        if dt == np.int32:
            a = cp.random.randint(-(2**30), 2**30, (1, s, s), dtype=cp.int32)
            b = cp.random.randint(-(2**30), 2**30, (1, s, s), dtype=cp.int32)
        else:
            a = cp.random.standard_normal((1, s, s), dtype=cp.float32)
            b = cp.random.standard_normal((1, s, s), dtype=cp.float32)

        def call(spec=spec, a=a, b=b, arg=arg, pl=pl):
            return gemm_launch.run(be, spec, a, b, None, arg, pl)

        d, idx = call()
        rows = cp.arange(0, s, 997)[:9]  # sampled rows, reference on the device
        add, mul = {"min": cp.min, "max": cp.max}[sr.add_op], {"plus": cp.add, "min": cp.minimum,
                                                               "max": cp.maximum}[sr.mul_op]
        prod = mul(a[0][rows][:, :, None], b[0][None])  # (r, k, n)
        want = add(prod, axis=1)
        ok = bool(cp.array_equal(d[0][rows], want))
        if arg:
            ok = ok and bool(cp.array_equal(idx[0][rows], cp.argmax(prod == want[:, None, :], axis=1)))
        bad += not ok
        big = s >= 8192
        t = timer(call, 3 if big else 7, inner=1 if big else 10)
        r = {"op": f"{name} {dts}" + (" argmax" if arg else ""), "size": f"{s}^3", "role": pl.role,
             "ks": pl.ks, "s": t, "TOPS": 2 * s**3 / t / 1e12, "ok": ok}
        out["rows"].append(r)
        print(f"{r['op']:24s} {r['size']:7s} {pl.role:10s} ks={pl.ks} {t * 1e3:8.3f} ms "
              f"{r['TOPS']:6.2f} TOPS ok={ok}", flush=True)
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
