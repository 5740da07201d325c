"""Issue 14's row "max_times f32 / i32 ≥ 85 % of min_plus": the int32 half, never timed before.

Checks first, bit for bit against tests/reference.py (a failed check stops the run): int32 max_times
and min_times through ``matmul`` on odd shapes (tiles, the small-k kernels, split k) with the
extremes (INT32_MIN / MAX and their neighbours, 0, ±1, products that overflow), with and without
``c``. Then CUDA-event medians behind a 2 ms spin kernel (the GPU's time alone) of
``CudaBackend._gemm`` (facts learned once, as ``matmul`` does) at 4096³ and 8192³: int32 max_times
and min_times on operands in [-1000, 1000) (no product overflows; the guard decides per k-slab) and
on operands in [-2^20, 2^20) (products overflow: the guarded body), beside int32 min_plus (the DPX
tiles) and float32 min_plus (the units kernel) in the same run; each row's ratio to both.

``python3 benchmarks/bench_gemm_cuda_s12i.py --json $OUT/gemm_cuda_s12i_h200_s12.json`` (``--quick``:
1024³ and 2048³)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_zero_sign_cuda import median_ms  # noqa: E402
from reference import ref_matmul  # noqa: E402

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu import facts  # noqa: E402
from pytropical_gpu.semirings import get_semiring  # noqa: E402

I32 = np.iinfo(np.int32)
SPECIAL = np.array([I32.min, I32.max, I32.min + 1, I32.max - 1, 0, 1, -1, 46341, -46341, 65536], np.int32)
SHAPES = [(67, 45, 37), (130, 132, 260), (301, 7, 5), (5, 3, 1031), (17, 530, 9), (200, 64, 64)]


def check(rng) -> list[str]:
    done = []
    for name in ("max_times", "min_times"):
        for m, k, n in SHAPES:
            a = rng.integers(-3000, 3000, (m, k)).astype(np.int32)
            b = rng.integers(-3000, 3000, (k, n)).astype(np.int32)
            for x in (a[:, : max(1, k // 2)], b[: max(1, k // 2)]):
                mask = rng.random(x.shape) < 0.1
                x[mask] = rng.choice(SPECIAL, int(mask.sum()))
            c = rng.choice(SPECIAL, (m, n)).astype(np.int32)
            for cc in (None, c):
                want, _ = ref_matmul(a, b, name, cc)
                got = np.asarray(tg.matmul(a, b, name, c=cc, backend="cuda"))
                assert (got == want).all(), f"{name} {m}x{k}x{n} c={cc is not None}"
                done.append(f"{name} int32 {m}x{k}x{n} c={cc is not None}")
    return done


def time_row(cp, name, dtype, s, lo, hi, reps) -> dict:
    be = tg.get_backend("cuda")
    sr = get_semiring(name)
    rs = cp.random.RandomState(5)
    if np.dtype(dtype).kind == "f":
        a = rs.standard_normal((1, s, s), dtype=np.float32)
        b = rs.standard_normal((1, s, s), dtype=np.float32)
    else:
        a = rs.randint(lo, hi, (1, s, s), dtype=np.int32)
        b = rs.randint(lo, hi, (1, s, s), dtype=np.int32)
    known = {"a": facts.of(a, cp), "b": facts.of(b, cp), "c": None}
    be._gemm(a, b, sr, None, False, known)
    ms = median_ms(cp, lambda: be._gemm(a, b, sr, None, False, known), reps, True)
    return {"semiring": name, "dtype": dtype, "size": s, "range": [lo, hi], "ms": ms,
            "TOPS": 2 * s**3 / ms / 1e9}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    import cupy as cp

    t0 = time.time()
    out = {"device": tg.get_backend("cuda").describe(), "checks": check(np.random.default_rng(0)),
           "rows": []}
    for s in ((1024, 2048) if args.quick else (4096, 8192)):
        reps = 5 if s >= 8192 else 9
        base = {"f32 min_plus": time_row(cp, "min_plus", "float32", s, 0, 0, reps),
                "i32 min_plus": time_row(cp, "min_plus", "int32", s, -1000, 1000, reps)}
        out["rows"] += list(base.values())
        for name in ("max_times", "min_times"):
            for lo, hi in ((-1000, 1000), (-(1 << 20), 1 << 20)):
                r = time_row(cp, name, "int32", s, lo, hi, reps)
                r.update({f"ratio_to_{k.replace(' ', '_')}": base[k]["ms"] / r["ms"] for k in base})
                out["rows"].append(r)
        for r in out["rows"][-6:]:
            print(json.dumps(r), flush=True)
    out["seconds"] = round(time.time() - t0, 1)
    text = json.dumps(out, indent=1)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text)
    print(text[-3000:])


if __name__ == "__main__":
    main()
