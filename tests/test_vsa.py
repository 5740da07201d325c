"""Bitsliced ternary VSA on every backend against int8 arithmetic on the unpacked trits."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_bundle

import pytropical_gpu as tg
from pytropical_gpu import TernaryVec

DIMS = [1, 31, 32, 33, 64, 65, 1000]


def trits(rng, shape, density=0.7):
    t = rng.integers(-1, 2, shape).astype(np.int8)
    return np.where(rng.random(shape) < density, t, 0).astype(np.int8)


def test_from_array_round_trip_and_layout(rng):
    x = trits(rng, (3, 70))
    v = TernaryVec.from_array(x)
    assert v.dim == 70 and v.pos.shape == (3, 3) and v.pos.dtype == np.uint32
    np.testing.assert_array_equal(v.to_array(), x)
    # LSB first: trit j of the row lives in word j // 32, bit j % 32
    j = 37
    bit = (v.pos[..., j // 32] >> np.uint32(j % 32)) & np.uint32(1)
    np.testing.assert_array_equal(bit.astype(bool), x[:, j] == 1)
    assert not ((v.pos[..., -1] | v.neg[..., -1]) >> np.uint32(70 - 64)).any()  # zero tail


def test_random_has_requested_density():
    v = TernaryVec.random(100_000, density=0.25, seed=3)
    t = v.to_array()
    assert abs((t != 0).mean() - 0.25) < 0.01
    assert abs((t == 1).mean() - (t == -1).mean()) < 0.01
    np.testing.assert_array_equal(TernaryVec.random(500, seed=7, batch=(2,)).to_array(),
                                  TernaryVec.random(500, seed=7, batch=(2,)).to_array())


@pytest.mark.parametrize("dim", DIMS)
def test_bind_is_elementwise_product(backend, rng, dim):
    x, y = trits(rng, (4, dim)), trits(rng, (4, dim))
    got = tg.bind(TernaryVec.from_array(x), TernaryVec.from_array(y), backend=backend)
    np.testing.assert_array_equal(got.to_array(), x * y)
    back = tg.unbind(got, TernaryVec.from_array(y), backend=backend)
    np.testing.assert_array_equal(back.to_array(), np.where(y != 0, x, 0))


def test_bind_broadcasts_batches(backend, rng):
    x, y = trits(rng, (5, 1, 40)), trits(rng, (3, 40))
    got = tg.bind(TernaryVec.from_array(x), TernaryVec.from_array(y), backend=backend)
    assert got.batch_shape == (5, 3)
    np.testing.assert_array_equal(got.to_array(), x * y)


@pytest.mark.parametrize("nvec", [1, 2, 3, 8, 64, 257])
@pytest.mark.parametrize("threshold", [1, 2, 5])
def test_bundle_is_exact_per_element(backend, rng, nvec, threshold):
    x = trits(rng, (nvec, 77))
    x[:, 0] = 1  # a column that sums to nvec exactly
    if nvec >= 2:
        x[:, 1] = np.resize([1, -1], nvec)  # a column that ties (0 or 1)
    want = ref_bundle(x, threshold)
    stacked = tg.bundle(TernaryVec.from_array(x), threshold=threshold, backend=backend)
    np.testing.assert_array_equal(stacked.to_array(), want)
    listed = tg.bundle([TernaryVec.from_array(r) for r in x], threshold=threshold, backend=backend)
    np.testing.assert_array_equal(listed.to_array(), want)


def test_bundle_keeps_trailing_batch_dims(backend, rng):
    x = trits(rng, (9, 2, 3, 50))
    got = tg.bundle(TernaryVec.from_array(x), backend=backend)
    assert got.batch_shape == (2, 3)
    np.testing.assert_array_equal(got.to_array(), ref_bundle(x, 1))


def test_bundle_threshold_above_count_gives_zero(backend, rng):
    x = np.ones((4, 40), np.int8)
    assert not tg.bundle(TernaryVec.from_array(x), threshold=5, backend=backend).to_array().any()
    assert (tg.bundle(TernaryVec.from_array(x), threshold=4, backend=backend).to_array() == 1).all()


@pytest.mark.parametrize("dim", DIMS)
def test_dot_is_exact(backend, rng, dim):
    x, y = trits(rng, dim), trits(rng, dim)
    got = tg.dot(TernaryVec.from_array(x), TernaryVec.from_array(y), backend=backend)
    assert isinstance(got, int)
    assert got == int((x.astype(np.int64) * y).sum())


def test_dot_of_long_vectors_exceeds_int16_and_is_exact(backend):
    dim = (1 << 20) + 3
    v = TernaryVec.from_array(np.ones(dim, np.int8))
    w = TernaryVec.from_array(-np.ones(dim, np.int8))
    assert tg.dot(v, v, backend=backend) == dim
    assert tg.dot(v, w, backend=backend) == -dim


def test_batched_dot_shape_is_query_batch_then_memory_batch(backend, rng):
    q, m = trits(rng, (3, 100)), trits(rng, (7, 100))
    got = tg.dot(TernaryVec.from_array(q), TernaryVec.from_array(m), backend=backend)
    assert got.shape == (3, 7) and got.dtype == np.int64
    np.testing.assert_array_equal(got, q.astype(np.int64) @ m.T)
    one = tg.dot_similarity(TernaryVec.from_array(q[0]), TernaryVec.from_array(m), backend=backend)
    np.testing.assert_array_equal(one, q[0].astype(np.int64) @ m.T)


def test_cosine(backend, rng):
    x, y = trits(rng, 300), trits(rng, 300)
    want = (x.astype(float) @ y) / np.sqrt((x != 0).sum() * (y != 0).sum())
    got = tg.cosine(TernaryVec.from_array(x), TernaryVec.from_array(y), backend=backend)
    assert abs(got - want) < 1e-12
    zero = TernaryVec.from_array(np.zeros(300, np.int8))
    assert tg.cosine_similarity(zero, TernaryVec.from_array(y), backend=backend) == 0.0


@pytest.mark.parametrize("dim", [1, 5, 32, 33, 100])
@pytest.mark.parametrize("shifts", [1, 3, -1, 31, 32, 250])
def test_permute_is_a_cyclic_roll(backend, rng, dim, shifts):
    x = trits(rng, (2, dim))
    got = tg.permute(TernaryVec.from_array(x), shifts=shifts, backend=backend)
    np.testing.assert_array_equal(got.to_array(), np.roll(x, shifts, axis=-1))


@pytest.mark.parametrize("k", [1, 3])
def test_search_returns_best_rows_ties_to_smaller_index(backend, rng, k):
    mem = trits(rng, (40, 200))
    mem[25] = mem[7]  # a tie: index 7 must come first
    q = mem[7].copy()
    idx, scores = tg.search(TernaryVec.from_array(q), TernaryVec.from_array(mem), k=k, backend=backend)
    exact = mem.astype(np.int64) @ q
    order = sorted(range(40), key=lambda i: (-exact[i], i))[:k]
    np.testing.assert_array_equal(idx, order)
    np.testing.assert_array_equal(scores, exact[order])
    assert idx[0] == 7


def test_search_batched_queries(backend, rng):
    mem, qs = trits(rng, (30, 64)), trits(rng, (4, 64))
    idx, scores = tg.search(TernaryVec.from_array(qs), TernaryVec.from_array(mem), k=2, backend=backend)
    assert idx.shape == (4, 2) and scores.shape == (4, 2)
    exact = qs.astype(np.int64) @ mem.T
    for r in range(4):
        order = sorted(range(30), key=lambda i: (-exact[r, i], i))[:2]
        np.testing.assert_array_equal(idx[r], order)


def test_trits_round_trip_on_cupy_planes(rng):
    """from_array/to_array and SoftTernaryVec.to_array keep cupy planes on the device."""
    from conftest import require_backend

    require_backend("cuda")
    import cupy as cp

    x = trits(rng, (3, 70))
    v = TernaryVec.from_array(cp.asarray(x))
    assert isinstance(v.pos, cp.ndarray)
    np.testing.assert_array_equal(cp.asnumpy(v.to_array()), x)
    np.testing.assert_array_equal(cp.asnumpy(v.pos), TernaryVec.from_array(x).pos)
    soft = tg.HybridContext(backend="cuda").to_device(tg.SoftTernaryVec(70, bits=2, batch=(3,)))
    soft.accumulate(v, backend="cuda")
    soft.accumulate(v, backend="cuda")
    assert isinstance(soft.sign, cp.ndarray)
    np.testing.assert_array_equal(cp.asnumpy(soft.to_array()), 2 * x)
