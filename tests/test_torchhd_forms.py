"""torchhd's habits: ``bundle(a, b)``, ``bundle([a, b])``, ``bundle(batched)`` and ``multiset``
with a keyword-only threshold, one signature across module, backend and HybridContext, the
``*_similarity`` aliases, and ``random``'s argument order (documented mapping)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import pytropical_gpu as tg
from pytropical_gpu import HybridContext, TernaryVec
from pytropical_gpu.backends import get_backend


def _majority(trits: np.ndarray, threshold: int = 1) -> np.ndarray:
    s = trits.astype(np.int64).sum(axis=0)
    t = max(threshold, 1)
    return np.where(s >= t, 1, np.where(s <= -t, -1, 0))


@pytest.fixture
def trits(rng):
    return rng.integers(-1, 2, (5, 77)).astype(np.int8)


def test_the_three_calling_forms_agree(backend, trits):
    vs = [TernaryVec.from_array(t) for t in trits]
    want = _majority(trits)
    for got in (tg.bundle(*vs, backend=backend), tg.bundle(vs, backend=backend),
                tg.bundle(tuple(vs), backend=backend),
                tg.bundle(TernaryVec.from_array(trits), backend=backend),
                tg.multiset(TernaryVec.from_array(trits), backend=backend)):
        np.testing.assert_array_equal(got.to_array(), want)


def test_two_vectors_as_torchhd_writes_them(backend):
    a = TernaryVec.from_array(np.array([1, -1, 0, 1], np.int8))
    b = TernaryVec.from_array(np.array([1, 1, 0, -1], np.int8))
    np.testing.assert_array_equal(tg.bundle(a, b, backend=backend).to_array(), [1, 0, 0, 0])


@pytest.mark.parametrize("threshold", [0, 2, 3, 6])
def test_threshold_is_keyword_only_in_every_form(backend, trits, threshold):
    vs = [TernaryVec.from_array(t) for t in trits]
    want = _majority(trits, threshold)
    np.testing.assert_array_equal(tg.bundle(*vs, threshold=threshold, backend=backend).to_array(), want)
    np.testing.assert_array_equal(
        tg.multiset(TernaryVec.from_array(trits), threshold=threshold, backend=backend).to_array(), want)
    ctx = HybridContext(backend=backend)
    np.testing.assert_array_equal(ctx.bundle(vs, threshold=threshold).to_array(), want)


def test_a_positional_threshold_says_it_is_keyword_only(backend, trits):
    v = TernaryVec.from_array(trits)
    with pytest.raises(TypeError, match="keyword-only"):
        tg.bundle(v, 2, backend=backend)
    with pytest.raises(TypeError, match="vectors\\[1\\] must be a TernaryVec, got 'x'"):
        tg.bundle(v[0], "x", backend=backend)


def test_bundle_and_multiset_refuse_what_they_cannot_bundle(backend):
    with pytest.raises(ValueError, match="no vectors"):
        tg.bundle(backend=backend)
    with pytest.raises(ValueError, match="no vectors"):
        tg.bundle([], backend=backend)
    with pytest.raises(ValueError, match="batched"):
        tg.multiset(TernaryVec.from_array(np.array([1, 0], np.int8)), backend=backend)
    with pytest.raises(TypeError, match="TernaryVec"):
        tg.multiset(np.ones((2, 3), np.int8), backend=backend)


def _params(f):
    return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()
            if p.name not in ("self", "backend")]


@pytest.mark.parametrize("op", ["bundle", "multiset"])
def test_one_signature_across_module_backend_and_context(op):
    module = _params(getattr(tg, op))
    assert module == _params(getattr(get_backend("cpu"), op))
    assert module == _params(getattr(HybridContext, op))
    sig = inspect.signature(getattr(tg, op))
    assert sig.parameters["threshold"].kind is inspect.Parameter.KEYWORD_ONLY
    assert sig.parameters["backend"].kind is inspect.Parameter.KEYWORD_ONLY


def test_similarity_aliases(backend, rng):
    q = TernaryVec.from_array(rng.integers(-1, 2, (3, 100)).astype(np.int8))
    m = TernaryVec.from_array(rng.integers(-1, 2, (4, 100)).astype(np.int8))
    qa, ma = q.to_array().astype(np.int64), m.to_array().astype(np.int64)
    want_dot = qa @ ma.T
    np.testing.assert_array_equal(tg.dot_similarity(q, m, backend=backend), want_dot)
    nn = np.sqrt(np.outer((qa != 0).sum(1), (ma != 0).sum(1)))
    np.testing.assert_allclose(tg.cosine_similarity(q, m, backend=backend), want_dot / nn, rtol=1e-12)
    ctx = HybridContext(backend=backend)
    np.testing.assert_array_equal(ctx.dot_similarity(q, m), want_dot)


def test_random_maps_torchhds_num_dim_to_dim_batch():
    """torchhd ``random(num, dim)`` is ``TernaryVec.random(dim, batch=num)`` here (documented)."""
    v = TernaryVec.random(1000, batch=3, seed=0)
    assert v.shape == (3, 1000) and v.batch_shape == (3,)
    assert TernaryVec.random(64, batch=(2, 5), seed=1).shape == (2, 5, 64)
    assert "random(num_vectors, dimensions)" in TernaryVec.random.__doc__
    a = TernaryVec.random(500, density=0.5, seed=7).to_array()
    assert 150 < np.count_nonzero(a) < 350 and set(np.unique(a)) <= {-1, 0, 1}
