"""Bad input raises a clear builtin exception naming what was received (the table of cases is
tests/test_bad_inputs.py); inputs are never modified."""

from __future__ import annotations

import numpy as np
import pytest

import pytropical_gpu as tg
from pytropical_gpu import SoftTernaryVec, TernaryVec


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
    be = tg.get_backend(backend)
    be.to_host(be.to_device(x))
    assert _snapshot(x.pos, x.neg, y.pos, y.neg) == before
    pr, pc = tg.pack_rows(ab, backend="cpu"), tg.pack_cols(bb, backend="cpu")
    before = _snapshot(pr.words, pc.words)
    tg.andor_matmul(pr, pc, backend=backend)
    be.to_host(be.to_device(pr))
    assert _snapshot(pr.words, pc.words) == before
