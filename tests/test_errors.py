"""Bad input raises a clear builtin exception naming what was received; inputs are never modified."""

from __future__ import annotations

import numpy as np
import pytest

import pytropical_gpu as tg
from pytropical_gpu import SoftTernaryVec, TernaryVec


def test_shape_mismatch_names_both_shapes(backend):
    with pytest.raises(ValueError, match=r"\(3, 4\) and \(5, 2\).*4 != 5"):
        tg.matmul(np.zeros((3, 4), np.float32), np.zeros((5, 2), np.float32), "min_plus", backend=backend)


def test_batch_mismatch(backend):
    with pytest.raises(ValueError, match="batch"):
        tg.matmul(np.zeros((2, 3, 4), np.float32), np.zeros((3, 4, 2), np.float32), backend=backend)


def test_nan_is_rejected(backend):
    a = np.ones((2, 2), np.float32)
    a[1, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        tg.matmul(a, np.ones((2, 2), np.float32), "min_plus", backend=backend)
    with pytest.raises(ValueError, match="NaN"):
        tg.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), c=a, backend=backend)


def test_unknown_semiring_lists_known_ones():
    with pytest.raises(ValueError, match="unknown semiring 'min_pluss'.*min_plus"):
        tg.matmul(np.ones((1, 1)), np.ones((1, 1)), "min_pluss", backend="cpu")


def test_mixed_and_wrong_dtypes(backend):
    with pytest.raises(TypeError, match="mixed dtypes float32 and int32"):
        tg.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.int32), backend=backend)
    with pytest.raises(TypeError, match="int16"):
        tg.matmul(np.ones((2, 2), np.int16), np.ones((2, 2), np.int16), "min_plus", backend=backend)
    with pytest.raises(TypeError, match="bool"):
        tg.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), "lor_land", backend=backend)
    with pytest.raises(TypeError, match="float32"):
        tg.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), "bor_band", backend=backend)


def test_argmax_needs_a_selective_semiring(backend):
    with pytest.raises(ValueError, match="argmax"):
        tg.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), "plus_times",
                  return_argmax=True, backend=backend)


def test_bad_out_and_bad_c(backend):
    a = np.ones((2, 3), np.float32)
    b = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match="out"):
        tg.matmul(a, b, out=np.empty((4, 2), np.float32), backend=backend)
    with pytest.raises(ValueError, match="c has shape"):
        tg.matmul(a, b, c=np.ones((3, 3), np.float32), backend=backend)
    with pytest.raises(TypeError, match="c has dtype"):
        tg.matmul(a, b, c=np.ones((2, 4), np.float64), backend=backend)


def test_invalid_trits_are_rejected():
    with pytest.raises(ValueError, match=r"invalid trit values \[2\]"):
        TernaryVec.from_array(np.array([1, 2, 0], np.int8))
    with pytest.raises(ValueError, match="both pos and neg"):
        TernaryVec(np.array([1], np.uint32), np.array([1], np.uint32), 3)
    with pytest.raises(ValueError, match="tail bits"):
        TernaryVec(np.array([1 << 5], np.uint32), np.array([0], np.uint32), 3)
    with pytest.raises(TypeError, match="integer"):
        TernaryVec.from_array(np.array([0.5]))


def test_dimension_mismatch(backend):
    a, b = TernaryVec.random(64, seed=1), TernaryVec.random(65, seed=2)
    for f in (tg.bind, tg.dot, tg.cosine):
        with pytest.raises(ValueError, match="dimension mismatch"):
            f(a, b, backend=backend)
    with pytest.raises(ValueError, match="dimension mismatch"):
        tg.bundle([a, b], backend=backend)
    with pytest.raises(ValueError, match="dimension mismatch"):
        SoftTernaryVec(64).accumulate(b, backend=backend)


def test_search_k_out_of_range(backend):
    mem = TernaryVec.random(64, seed=1, batch=(3,))
    with pytest.raises(ValueError, match="k=4"):
        tg.search(mem[0], mem, k=4, backend=backend)


def test_missing_backend_raises_with_reason():
    from pytropical_gpu.backends import probe

    with pytest.raises(ValueError, match="unknown backend"):
        tg.get_backend("opencl")
    for name in ("wgpu", "cuda"):
        ok, reason = probe(name)
        if not ok:
            with pytest.raises(tg.BackendUnavailableError, match=name) as e:
                tg.matmul(np.ones((1, 1)), np.ones((1, 1)), backend=name)
            assert isinstance(e.value, RuntimeError) and reason in str(e.value)


def _snapshot(*xs):
    return [x.tobytes() for x in xs]


def test_inputs_are_never_modified(backend, rng):
    a = rng.random((6, 9)).astype(np.float32)
    a[0, 0] = np.inf
    b = rng.random((9, 5)).astype(np.float32)
    c = rng.random((6, 5)).astype(np.float32)
    before = _snapshot(a, b, c)
    tg.matmul(a, b, "min_plus", c=c, return_argmax=True, backend=backend)
    tg.matmul(a.T.copy(), a, "plus_times", backend=backend)
    assert _snapshot(a, b, c) == before
    ab, bb = rng.random((5, 40)) < 0.3, rng.random((40, 4)) < 0.3
    before = _snapshot(ab, bb)
    tg.andor_matmul(ab, bb, backend=backend)
    tg.matmul(ab, bb, "lxor_land", backend=backend)
    assert _snapshot(ab, bb) == before
    x = TernaryVec.random(100, seed=1, batch=(4,))
    y = TernaryVec.random(100, seed=2, batch=(4,))
    before = _snapshot(x.pos, x.neg, y.pos, y.neg)
    tg.bind(x, y, backend=backend)
    tg.bundle(x, backend=backend)
    tg.bundle([x, y], backend=backend)
    tg.dot(x, y, backend=backend)
    tg.cosine(x, y, backend=backend)
    tg.permute(x, 7, backend=backend)
    tg.search(x[0], y, k=2, backend=backend)
    soft = SoftTernaryVec(100, bits=2, batch=(4,))
    soft.accumulate(x, backend=backend)
    soft.harden(1, backend=backend)
    assert _snapshot(x.pos, x.neg, y.pos, y.neg) == before
