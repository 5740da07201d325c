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
