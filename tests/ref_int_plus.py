"""An int32 max_plus / min_plus reference written from the contract alone (int64 sums saturated to
int32, the zero absorbing, ties to the first k), and operands for the "dpxw_" DPX tiles; shared by
tests/test_cuda_dpxw.py and benchmarks/bench_gemm_cuda_s6i.py."""

from __future__ import annotations

import numpy as np

I32 = np.iinfo(np.int32)
W = 2**30


def _zero(name):
    return I32.min if name == "max_plus" else I32.max


def ref_plus(a, b, name, c=None):
    """(d, idx) of int32 max_plus / min_plus: each term a + b in int64, saturated to int32, the zero
    when either operand is the zero; the best over k, the first k reaching it (-1 when the best is
    the zero, or with c when c is not strictly improved on); d = c ⊕ best."""
    zero = _zero(name)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    m, k = a.shape
    n = b.shape[-1]
    best = np.full((m, n), zero, np.int64)
    idx = np.full((m, n), -1, np.int32)
    for kk in range(k):
        t = np.clip(a64[:, kk:kk + 1] + b64[kk:kk + 1, :], I32.min, I32.max)
        t[(a[:, kk:kk + 1] == zero) | (b[kk:kk + 1, :] == zero)] = zero
        win = t > best if name == "max_plus" else t < best
        best[win] = t[win]
        idx[win] = kk
    if c is not None:
        c64 = c.astype(np.int64)
        keep = ~(best > c64 if name == "max_plus" else best < c64)
        idx[keep] = -1
        best = np.maximum(best, c64) if name == "max_plus" else np.minimum(best, c64)
    return best.astype(np.int32), idx


def wide_operands(rng, m, k, n, lim=W - 1, ties=False):
    """No zero, |x| <= lim: most magnitudes in [2^28, 2^30) (beyond the sentinel DPX path), the
    extremes ±lim in places; ``ties``: few distinct values, so many k reach the best."""
    def one(shape):
        x = rng.integers(-lim, lim + 1, shape, dtype=np.int64)
        if ties:
            x = rng.choice(np.array([-lim, -(2**28), 0, 2**28, lim]), shape)
        x.flat[rng.integers(0, x.size, max(1, x.size // 50))] = lim
        x.flat[rng.integers(0, x.size, max(1, x.size // 50))] = -lim
        return x.astype(np.int32)
    return one((m, k)), one((k, n))
