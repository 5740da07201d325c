"""What the cuda zero-sign pass (``backends/cuda/zero_sign.py``) costs beside the GEMM.

Checks first: float32 max_plus and min_times on small operands full of ±0 (and a few other values),
every output's bits against tests/reference.py, with and without ``c`` and argmax (a failed check
stops the run). Then CUDA-event medians (float32, cupy operands): the GEMM alone
(``CudaBackend._gemm_kernels``), the GEMM and the pass (``_gemm``), the pass alone (again on the
fixed output: the same reads and scans), and the whole ``matmul`` (with its NaN check); the first
three again as ``*_gpu_ms`` behind a 2 ms spin kernel, so that the GPU's time is timed without the
host's launch overhead (which a short GEMM does not hide); since session 14 ``_gemm`` skips the
pass where the operands' facts show that no zero term can be -0 (``pass_skipped``: the uniform
cases), and an operand's range facts are timed by CuPy's two reductions against
``operand_range``'s one kernel; on

* ``uniform``: operands uniform in [-1, 1) (almost no zero output: the pass is one read of D and
  two launches that return at once), square and skinny (the issue's 2,097,152×4×4 rows);
* ``worst_s9``: min_times on nonnegative operands, half of them +0, so every output is +0 (session
  9's worst case, every output scanned all k terms; the gate now sees no sign bit and skips them);
* ``few_rows``: the same with a -0 as the last term of 8 rows of A, so the gate opens for those
  rows' outputs and each of them scans all k terms.

``python3 benchmarks/bench_zero_sign_cuda.py --json $OUT/zero_sign_cuda_h200_s11.json``
(``--quick`` for small sizes).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from reference import ref_matmul  # noqa: E402

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu import facts, zero_order  # noqa: E402
from pytropical_gpu.backends.cuda import operand_range, zero_sign  # noqa: E402
from pytropical_gpu.bench import gputime  # noqa: E402
from pytropical_gpu.semirings import get_semiring  # noqa: E402

VALUES = np.array([0.0, -0.0, 0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 1e-30, -1e-30, np.inf, -np.inf])


def check(rng) -> list[str]:
    """The cases checked, bit for bit; raises AssertionError at the first difference."""
    done = []
    for name in ("max_plus", "min_times"):
        for m, k, n in ((9, 33, 130), (70, 67, 129), (9, 1030, 11)):
            a = rng.choice(VALUES, (m, k)).astype(np.float32)
            b = rng.choice(VALUES, (k, n)).astype(np.float32)
            c = rng.choice(VALUES[:6], (m, n)).astype(np.float32)
            for cc in (None, c):
                want, widx = ref_matmul(a, b, name, cc)
                d, idx = tg.matmul(a, b, name, c=cc, return_argmax=True, backend="cuda")
                d0 = tg.matmul(a, b, name, c=cc, backend="cuda")
                for got in (d, d0):
                    bad = got.view(np.int32) != want.view(np.int32)
                    assert not bad.any(), f"{name} {m}x{k}x{n} c={cc is not None}: {bad.sum()} differ"
                np.testing.assert_array_equal(idx, widx)
                done.append(f"{name} {m}x{k}x{n} c={cc is not None}")
    return done


_SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
}
"""


def median_ms(cp, fn, reps: int, hide_host: bool = False) -> float:
    """Median milliseconds of ``fn`` (``gputime.event_times``). ``hide_host``: a 2 ms spin kernel
    goes before each repetition, so the host enqueues ``fn``'s launches while the GPU is busy and
    the events time the GPU's work alone (without it, a short ``fn`` also times the Python launch
    overhead of its calls)."""
    before = None
    if hide_host:
        spin = cp.RawKernel(_SPIN, "spin")
        before = lambda: spin((1,), (1,), (np.int64(4_000_000),))  # noqa: E731
    return 1e3 * float(np.median(gputime.event_times(cp, fn, reps, before=before)))


CASES = (  # (case, semiring, m, k, n)
    ("uniform", "max_plus", 4096, 4096, 4096),
    ("uniform", "min_times", 4096, 4096, 4096),
    ("uniform", "max_plus", 1024, 1024, 1024),
    ("uniform", "min_plus", 2048, 2048, 2048),  # issue 14's 2048³ row (≥ 25 TOPS) with the pass
    ("uniform", "min_plus", 8192, 8192, 8192),  # the headline row, the pass beside a long GEMM
    ("uniform", "min_plus", 2097152, 4, 4),
    ("uniform", "min_plus", 4, 4, 2097152),
    ("uniform", "min_plus", 65536, 64, 64),
    ("worst_s9", "min_times", 4096, 4096, 4096),
    ("few_rows", "min_times", 4096, 4096, 4096),
)
QUICK = tuple((c, s, min(m, 300), min(k, 300), min(n, 300)) for c, s, m, k, n in CASES)


def operands(cp, case: str, m: int, k: int, n: int):
    rs = cp.random.RandomState(1)
    if case == "uniform":
        return (rs.random_sample((m, k), dtype=np.float32) * 2 - 1,
                rs.random_sample((k, n), dtype=np.float32) * 2 - 1)
    a, b = rs.random_sample((m, k), dtype=np.float32), rs.random_sample((k, n), dtype=np.float32)
    a[rs.random_sample((m, k)) < 0.5] = 0
    b[rs.random_sample((k, n)) < 0.5] = 0
    if case == "few_rows":
        a[:8, -1] = -0.0
    return a, b


def time_case(cp, case: str, name: str, m: int, k: int, n: int, reps: int) -> dict:
    be = tg.get_backend("cuda")
    sr = get_semiring(name)
    a, b = operands(cp, case, m, k, n)
    a3, b3 = a[None], b[None]
    known = {"a": facts.of(a3, cp), "b": facts.of(b3, cp), "c": None}
    assert not known["a"].nan and not known["b"].nan  # learns the facts once, as matmul does
    d, _ = be._gemm(a3, b3, sr, None, False, known)
    want = cp.asnumpy(d)
    if m * k * n <= 2 ** 25:  # small enough for the numpy reference
        ref, _ = ref_matmul(cp.asnumpy(a), cp.asnumpy(b), name)
        assert (want.view(np.int32) == ref.view(np.int32)).all(), f"{case} {name} differs"
    zeros = int((d == 0).sum())
    row = {"case": case, "semiring": name, "m": m, "k": k, "n": n, "zero_outputs": zeros,
           "neg_zero_outputs": int(((d == 0) & cp.signbit(d)).sum()),
           "gemm_ms": median_ms(cp, lambda: be._gemm_kernels(a3, b3, sr, None, False, known), reps),
           "gemm_and_pass_ms": median_ms(cp, lambda: be._gemm(a3, b3, sr, None, False, known), reps),
           "pass_ms": median_ms(cp, lambda: zero_sign.fix(d, a3, b3, sr, None), reps),
           "gemm_gpu_ms": median_ms(cp, lambda: be._gemm_kernels(a3, b3, sr, None, False, known),
                                    reps, True),
           "gemm_and_pass_gpu_ms": median_ms(cp, lambda: be._gemm(a3, b3, sr, None, False, known),
                                             reps, True),
           "pass_gpu_ms": median_ms(cp, lambda: zero_sign.fix(d, a3, b3, sr, None), reps, True),
           "matmul_ms": median_ms(cp, lambda: tg.matmul(a, b, name, backend="cuda"), reps),
           # an operand's range facts read back: CuPy's two reductions (before session 14) and
           # operand_range's one kernel (range and signs), host-timed (each ends in a read-back)
           "facts_two_reductions_ms": median_ms(cp, lambda: cp.stack([a.min(), a.max()]).get(), reps),
           "facts_one_kernel_ms": median_ms(cp, lambda: operand_range.keys(a).get(), reps),
           "pass_skipped": zero_order.no_negative_zero(sr, known)}
    row["tops_gemm_and_pass"] = round(2 * m * n * k / row["gemm_and_pass_gpu_ms"] / 1e9, 2)
    row["tops_gemm"] = round(2 * m * n * k / row["gemm_gpu_ms"] / 1e9, 2)
    assert (cp.asnumpy(d).view(np.int32) == want.view(np.int32)).all(), "the pass is not idempotent"
    moved = 4 * (m * k + k * n + m * n)
    row["gemm_and_pass_gbps"] = round(moved / row["gemm_and_pass_ms"] / 1e6, 1)
    row["gemm_gbps"] = round(moved / row["gemm_ms"] / 1e6, 1)
    row["gemm_and_pass_gpu_gbps"] = round(moved / row["gemm_and_pass_gpu_ms"] / 1e6, 1)
    row["gemm_gpu_gbps"] = round(moved / row["gemm_gpu_ms"] / 1e6, 1)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--quick", action="store_true", help="small sizes (at most 300)")
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    import cupy as cp

    t0 = time.time()
    out = {"device": tg.get_backend("cuda").describe(), "checks": check(np.random.default_rng(0))}
    out["cases"] = [time_case(cp, *row, args.reps) for row in (QUICK if args.quick else CASES)]
    out["seconds"] = round(time.time() - t0, 1)
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text)


if __name__ == "__main__":
    main()
