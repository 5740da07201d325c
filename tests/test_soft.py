"""Saturating bit-sliced soft counters: accumulate and harden for every bits value."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_soft

from pytropical_gpu import SoftTernaryVec, TernaryVec


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5])
def test_accumulate_saturates_and_harden_thresholds(backend, rng, bits):
    dim = 75
    seq = [rng.integers(-1, 2, (2, dim)).astype(np.int8) for _ in range(2 ** bits + 6)]
    seq += [np.ones((2, dim), np.int8)] * (2 ** bits + 1)  # drive into saturation
    seq += [-np.ones((2, dim), np.int8)] * 3
    soft = SoftTernaryVec(dim, bits=bits, batch=(2,))
    for h in seq:
        assert soft.accumulate(TernaryVec.from_array(h), backend=backend) is soft
    want = ref_soft(seq, bits)
    np.testing.assert_array_equal(soft.to_array(), want)
    for t in range(0, 2 ** bits + 1):
        hard = soft.harden(t, backend=backend).to_array()
        tt = max(t, 1)
        np.testing.assert_array_equal(hard, np.where(want >= tt, 1, np.where(want <= -tt, -1, 0)))


def test_accumulate_broadcasts_one_vector_over_the_batch(backend, rng):
    soft = SoftTernaryVec(40, bits=3, batch=(3,))
    h = rng.integers(-1, 2, 40).astype(np.int8)
    soft.accumulate(TernaryVec.from_array(h), backend=backend)
    np.testing.assert_array_equal(soft.to_array(), np.broadcast_to(h, (3, 40)))


def test_sign_flips_through_zero(backend):
    soft = SoftTernaryVec(3, bits=2)
    seq = [[1, -1, 0], [-1, 1, 0], [-1, 1, -1], [-1, 1, -1]]
    for h in seq:
        soft.accumulate(TernaryVec.from_array(np.array(h, np.int8)), backend=backend)
    np.testing.assert_array_equal(soft.to_array(), [-2, 2, -2])
    assert soft.sign[0] == 0b101  # zero is stored with sign 0, negatives set the sign bit
