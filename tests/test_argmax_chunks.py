"""Argmax of every selective semiring where the winning k sits at chosen places of the k range:
the CUDA tile reduces chunks of AK terms (one 16-wide slab by default; the chunk's first term
starts it without the ⊕) and finds the winner's k again inside the winning chunk, so winners at
and beside chunk edges, in a chunk cut by the end of k or of a split-k part, ties across and inside chunks,
chunks of NaN products only (inf - inf, 0 * inf: the zero) and rows of the zero alone are placed on
purpose; every backend runs them, against the independent reference."""

from __future__ import annotations

import numpy as np
import pytest
from reference import SEMIRINGS, ref_matmul, zero_of
from test_matmul import rand
from test_matmul_kernels import check_argmax

import pytropical_gpu as tg

I32 = np.iinfo(np.int32)
SELECTIVE = [s for s in SEMIRINGS if s != "plus_times"]


def _operands(rng, name, dtype, m, k, n, starts):
    """Small values (ties everywhere); row i's terms before starts[i] are the zero (absorbing), so
    its winner is the first best k at or after starts[i]."""
    a, b = rand(rng, (m, k), dtype, special=False), rand(rng, (k, n), dtype, special=False)
    if dtype == "int32":  # 10 values
        a, b = a // 200, b // 200
    z = zero_of(name, np.dtype(dtype))
    for i, t in enumerate(starts):
        a[i, :t] = z
    if dtype == "float32" and m > len(starts) + 1:  # a chunk of NaN products in a row
        r = len(starts)
        if name.endswith("plus"):
            a[r, :40], b[:40, 1] = np.inf, -np.inf
            a[r + 1, :40], b[:40, 2] = -np.inf, np.inf
        elif name.endswith("times"):
            a[r, :40], b[:40, 1] = 0.0, np.inf
    return a, b


@pytest.mark.parametrize("name", SELECTIVE)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize(("m", "k", "n", "starts"), [
    (70, 97, 67, (0, 16, 17, 31, 33, 48, 50, 64, 95, 96, 97)),  # one pass; k cut in its 4th chunk
    (8, 1300, 12, (0, 289, 300, 559, 1290, 1299)),  # split k on cuda (parts of 272: chunks cut)
], ids=["one_pass", "split_k"])
def test_argmax_winner_placed_in_chunks(backend, rng, name, dtype, m, k, n, starts):
    a, b = _operands(rng, name, dtype, m, k, n, starts)
    check_argmax(a, b, name, rand(rng, (m, n), dtype), backend)
    # the placed rows win only from their start on (else the test would not reach the chunk edges)
    _, plain_idx = ref_matmul(a, b, name)
    for i, t in enumerate(starts):
        row = plain_idx[i]
        if t >= k:
            assert (row == -1).all()
        else:
            assert (row >= t).all()


def _late_operands(rng, name, dtype, m, k, n, k0):
    """No zero (and, for int32 plus, no value the fast body cannot take: |x| < 2^30, some above
    2^28 so the DPX path is not chosen) before k0; from k0 on the zero in 10 % of places and, for
    int32, values the guarded body alone handles. On cuda a block runs its first slabs in the loop
    holding only the fast body, then leaves it in the middle of k (sr_gemm's HOT)."""
    z = zero_of(name, np.dtype(dtype))
    if dtype == "int32":
        lim = 2**30 if name.endswith("plus") else 1000
        a = rng.integers(-lim + 1, lim, (m, k)).astype(np.int32)
        b = rng.integers(-lim + 1, lim, (k, n)).astype(np.int32)
        wild = (I32.max - 1, I32.min + 1) if name.endswith("plus") else (I32.max, I32.min)
    else:
        a, b = rand(rng, (m, k), dtype, special=False), rand(rng, (k, n), dtype, special=False)
        a[:, : k0 // 2][rng.random((m, k0 // 2)) < 0.1] = -z  # the other infinity: fast
        wild = (-z, np.float32(0.0))
    a[:, k0:][rng.random((m, k - k0)) < 0.1] = z
    b[k0:][rng.random((k - k0, n)) < 0.1] = z
    a[: min(3, m), k0:] = z  # rows won before k0
    a[3:5, k - 1], b[k - 1, :2] = wild
    return a, b


@pytest.mark.parametrize("name", SELECTIVE)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize(("m", "k", "n", "k0"), [(70, 200, 67, 100), (130, 333, 190, 40),
                                                 (8, 1300, 12, 700)], ids=["one_pass", "tiles", "split_k"])
def test_zero_only_after_fast_slabs(backend, rng, name, dtype, m, k, n, k0):
    a, b = _late_operands(rng, name, dtype, m, k, n, k0)
    check_argmax(a, b, name, rand(rng, (m, n), dtype), backend)
    np.testing.assert_array_equal(tg.matmul(a, b, name, backend=backend), ref_matmul(a, b, name)[0])
