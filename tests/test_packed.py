"""Bit-packed boolean AndOr: packing layout and products on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_bool

import pytropical_gpu as tg


def pack_by_hand(bits: np.ndarray) -> np.ndarray:
    """Independent packer: word w, bit j holds bits[..., 32 w + j]."""
    r, k = bits.shape
    words = np.zeros((r, (k + 31) // 32), np.uint64)
    for j in range(k):
        words[:, j // 32] |= bits[:, j].astype(np.uint64) << np.uint64(j % 32)
    return words.astype(np.uint32)


@pytest.mark.parametrize("k", [1, 31, 32, 33, 64, 100])
def test_pack_layout_is_lsb_first_with_zero_tail(backend, rng, k):
    a = rng.random((5, k)) < 0.5
    pr = tg.pack_rows(a, backend=backend)
    assert pr.shape == (5, k) and pr.k == k
    np.testing.assert_array_equal(np.asarray(pr.words), pack_by_hand(a))
    pc = tg.pack_cols(a.T.copy(), backend=backend)
    assert pc.shape == (k, 5)
    np.testing.assert_array_equal(np.asarray(pc.words), pack_by_hand(a))


@pytest.mark.parametrize("density", [0.01, 0.05, 0.5])
@pytest.mark.parametrize("shape", [(1, 1, 1), (9, 33, 7), (70, 200, 45), (3, 1000, 2)])
def test_andor_matmul_matches_reference(backend, rng, density, shape):
    m, k, n = shape
    a, b = rng.random((m, k)) < density, rng.random((k, n)) < density
    got = tg.andor_matmul(a, b, backend=backend)
    assert got.dtype == np.bool_ and got.shape == (m, n)
    np.testing.assert_array_equal(got, ref_bool(a, b, "lor_land"))


def test_packed_handles_are_reusable(backend, rng):
    a, b1, b2 = rng.random((20, 70)) < 0.05, rng.random((70, 10)) < 0.05, rng.random((70, 3)) < 0.2
    pa = tg.pack_rows(a, backend=backend)
    for b in (b1, b2, b1):
        pb = tg.pack_cols(b, backend=backend)
        np.testing.assert_array_equal(tg.andor_matmul(pa, pb, backend=backend), ref_bool(a, b, "lor_land"))
    np.testing.assert_array_equal(tg.andor_matmul(pa, b2, backend=backend), ref_bool(a, b2, "lor_land"))


def test_andor_k_zero_is_all_false(backend):
    got = tg.andor_matmul(np.zeros((3, 0), bool), np.zeros((0, 4), bool), backend=backend)
    assert got.shape == (3, 4) and not got.any()


def test_andor_rejects_misaligned_and_non_bool(backend):
    with pytest.raises(ValueError, match=r"\(3, 5\).*\(4, 2\)"):
        tg.andor_matmul(np.zeros((3, 5), bool), np.zeros((4, 2), bool), backend=backend)
    with pytest.raises(TypeError, match="bool"):
        tg.pack_rows(np.zeros((3, 5), np.int32), backend=backend)
