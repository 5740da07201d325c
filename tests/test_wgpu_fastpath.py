"""The recording fast path of a wgpu batch (``backends/wgpu/fastpath.py``): it is taken for resident
bind and 2-D matmul, gives the generic path's bits (and numpy's), keeps one compiled op record per
(op, shapes, dtype, semiring, guard) so a changed shape/dtype/semiring/guard gets a new one, and
raises what the call raises outside a batch, with the same type and message."""

from __future__ import annotations

import types

import numpy as np
import pytest

from conftest import require_backend
from pytropical_gpu import HybridContext, TernaryVec
from pytropical_gpu.backends import get_backend
from pytropical_gpu.backends.wgpu import fastpath


@pytest.fixture
def ctx():
    return HybridContext(backend=require_backend("wgpu"))


def _eng():
    return get_backend("wgpu").engine


def _stat(name):
    return _eng().stats.get(name, 0)


def _generic(ctx, fn):
    """``fn()`` in a batch through the generic path, brought to the host."""
    fastpath.ENABLED = False
    try:
        with ctx.batch():
            r = fn()
    finally:
        fastpath.ENABLED = True
    return ctx.to_host(r)


def _fast(ctx, fn, calls=1):
    before = _stat("fast_calls")
    with ctx.batch():
        r = fn()
    assert _stat("fast_calls") - before == calls  # the fast path was taken
    return ctx.to_host(r)


def _tv_ref(a, b):
    return TernaryVec.from_array(a.to_array() * b.to_array())


@pytest.mark.parametrize("dim,batch", [(1024, ()), (1000, ()), (37, (3,)), (4097, (2, 2))])
def test_bind_fast_equals_generic_and_reference(ctx, dim, batch):
    t = TernaryVec.random(dim, density=0.7, seed=dim, batch=batch)
    u = TernaryVec.random(dim, density=0.7, seed=dim + 1, batch=batch)
    T, U = ctx.to_device(t), ctx.to_device(u)
    want = _tv_ref(_tv_ref(t, u), u).to_array()
    for fn in (lambda: ctx.bind(ctx.bind(T, U), U), lambda: ctx.unbind(ctx.bind(T, U), U)):
        got = _fast(ctx, fn, calls=2).to_array()
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(_generic(ctx, fn).to_array(), want)


def _minplus(a, b):
    """min_plus in numpy: +inf (the zero) annihilates, also against -inf."""
    x, y = a[:, :, None], b[None, :, :]
    with np.errstate(invalid="ignore"):
        s = np.where((x == np.inf) | (y == np.inf), np.float32(np.inf), x + y)
    return s.min(axis=1)


def _operands(rng, dt, m, k, n):
    if dt == np.float32:
        a = rng.integers(-50, 50, (m, k)).astype(np.float32)
        b = rng.integers(-50, 50, (k, n)).astype(np.float32)
        a[rng.random((m, k)) < 0.2] = np.inf  # the guarded ⊗: inf + -inf must give the zero
        b[rng.random((k, n)) < 0.2] = -np.inf
        if not _eng().flushes_subnormals:  # a flushing adapter refuses it (a test of its own below)
            b[0, 0] = np.float32(1e-40)  # a subnormal (lavapipe keeps them)
        return a, b
    info = np.iinfo(np.int32)
    a = rng.integers(-1000, 1000, (m, k)).astype(np.int32)
    b = rng.integers(-1000, 1000, (k, n)).astype(np.int32)
    a[0, :3] = info.max  # min_plus's zero on int32: saturates, never wraps
    b[-1, -1] = info.min + 5
    return a, b


@pytest.mark.parametrize("dt", [np.float32, np.int32])
@pytest.mark.parametrize("shape", [(64, 64, 64), (1, 1, 1), (7, 33, 5), (130, 3, 65)])
def test_matmul_fast_equals_generic_and_cpu(ctx, rng, dt, shape):
    m, k, n = shape
    a, b = _operands(rng, dt, m, k, n)
    A, B = ctx.to_device(a), ctx.to_device(b)
    cpu = get_backend("cpu")
    for sr in ("min_plus", "max_plus", "max_min"):
        want = cpu.matmul(a, b, sr)
        if sr == "min_plus" and dt == np.float32:
            np.testing.assert_array_equal(want, _minplus(a, b))  # the reference itself
        got = _fast(ctx, lambda s=sr: ctx.matmul(A, B, s))
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(_generic(ctx, lambda s=sr: ctx.matmul(A, B, s)), want)
    # a chain: results (lazy device facts) as the next call's operands
    if m == k == n:
        def chain():
            x = A
            for _ in range(4):
                x = ctx.matmul(x, A, "min_plus")
            return x
        want = a
        for _ in range(4):
            want = cpu.matmul(want, a, "min_plus")
        np.testing.assert_array_equal(_fast(ctx, chain, calls=4), want)
        np.testing.assert_array_equal(_generic(ctx, chain), want)


def test_a_changed_shape_dtype_semiring_or_guard_gets_its_own_record(ctx, rng):
    a = rng.integers(0, 9, (16, 16)).astype(np.float32)
    A = ctx.to_device(a)
    cpu = get_backend("cpu")
    # the records are a per-process cache: a test run before in this process (under xdist, any
    # module's) may hold these keys already, so start from none (the H200 suite, seed 27103)
    fastpath.records(_eng()).clear()
    r0 = _stat("fast_records")
    with ctx.batch():
        x = ctx.matmul(A, A, "min_plus")
        y = ctx.matmul(A, A, "min_plus")  # the same key: the same record
    assert _stat("fast_records") - r0 == 1
    np.testing.assert_array_equal(ctx.to_host(x), ctx.to_host(y))
    cases = [(a[:, :8], a[:8, :], "min_plus"),  # other shapes
             (a.astype(np.int32), a.astype(np.int32), "min_plus"),  # other dtype, same shapes
             (a, a, "max_plus"),  # other semiring
             (np.where(a > 4, np.inf, a).astype(np.float32), a, "min_plus")]  # inf: guarded ⊗
    for p, q, sr in cases:
        before = _stat("fast_records")
        got = _fast(ctx, lambda p=p, q=q, sr=sr: ctx.matmul(ctx.to_device(np.ascontiguousarray(p)),
                                                           ctx.to_device(np.ascontiguousarray(q)),
                                                           sr))
        assert _stat("fast_records") - before == 1, (p.shape, p.dtype, sr)
        np.testing.assert_array_equal(got, cpu.matmul(p, q, sr))
    assert len(fastpath.records(_eng())) <= fastpath.MAX_RECORDS + 1


def _error(fn):
    with pytest.raises(Exception) as e:
        fn()
    return type(e.value), str(e.value)


def test_bad_input_raises_as_outside_a_batch(ctx):
    A = ctx.to_device(np.ones((3, 4), np.float32))
    B = ctx.to_device(np.ones((4, 2), np.float32))
    I4 = ctx.to_device(np.ones((4, 2), np.int32))
    bad = np.ones((4, 2), np.float32)
    bad[1, 1] = np.nan
    NAN = ctx.to_device(bad)
    U8 = ctx.to_device(np.ones((4, 2), np.uint32))
    t, s = ctx.to_device(TernaryVec.random(64, seed=1)), ctx.to_device(TernaryVec.random(65, seed=2))
    calls = [lambda: ctx.matmul(A, A, "min_plus"),  # k mismatch
             lambda: ctx.matmul(A, I4, "min_plus"),  # mixed dtypes
             lambda: ctx.matmul(A, B, "no_such_semiring"),
             lambda: ctx.matmul(A, B, 3),
             lambda: ctx.matmul(A, NAN, "min_plus"),  # NaN known from to_device
             lambda: ctx.matmul(U8, U8.reshape(2, 4), "min_plus"),  # uint32 min_plus: not allowed?
             lambda: ctx.bind(t, s),  # dimension mismatch
             lambda: ctx.bind(t, A)]
    for fn in calls:
        try:
            fn()
        except Exception:
            pass
        else:
            continue  # valid (the uint32 case on a backend that allows it): nothing to compare
        want = _error(fn)
        for _ in range(2):  # twice: a failing key leaves no record that lets the next call pass
            def in_batch(fn=fn):
                with ctx.batch():
                    fn()
            assert _error(in_batch) == want


def test_results_of_a_discarded_batch_raise_in_a_later_batch(ctx):
    A = ctx.to_device(np.ones((8, 8), np.float32))
    with pytest.raises(KeyError):
        with ctx.batch():
            x = ctx.matmul(A, A, "min_plus")
            raise KeyError("boom")
    with pytest.raises(RuntimeError, match="discarded"):
        with ctx.batch():
            ctx.matmul(x, A, "min_plus")
    with ctx.batch():  # usable again
        y = ctx.matmul(A, A, "min_plus")
    np.testing.assert_array_equal(ctx.to_host(y), np.full((8, 8), 2, np.float32))


def test_the_fast_path_needs_this_threads_batch(ctx):
    A = ctx.to_device(np.ones((8, 8), np.float32))
    before = _stat("fast_calls")
    ctx.matmul(A, A, "min_plus")  # no batch: the generic path (its own submission)
    ctx.matmul(np.ones((8, 8), np.float32), A, "min_plus")
    assert _stat("fast_calls") == before


def test_records_start_afresh_with_a_new_runtime():
    eng = types.SimpleNamespace(rt=object())
    fastpath.records(eng)["k"] = 1
    assert fastpath.records(eng) == {"k": 1}
    eng.rt = object()  # a forked child's stand-in runtime, say
    assert fastpath.records(eng) == {}


def test_a_flushing_adapters_subnormal_rule_still_applies(ctx, monkeypatch):
    """On an adapter that flushes subnormals (forced here), a subnormal operand raises in a batch as
    outside one (known from to_device: at the call), and a result's pending facts at the end."""
    monkeypatch.setattr(_eng(), "flushes_subnormals", True)
    sub = np.full((4, 4), 1.0, np.float32)
    sub[1, 2] = np.float32(1e-40)
    S, ONE = ctx.to_device(sub), ctx.to_device(np.ones((4, 4), np.float32))
    want = _error(lambda: ctx.matmul(S, ONE, "min_plus"))
    assert "subnormal" in want[1].lower()
    before = _stat("fast_calls")

    def in_batch():
        with ctx.batch():
            ctx.matmul(ONE, ONE, "min_plus")  # fine: taken by the fast path
            ctx.matmul(S, ONE, "min_plus")
    assert _error(in_batch) == want
    assert _stat("fast_calls") > before
    # the result of a product is subnormal-free or not only on the device: checked at the end
    tiny = np.full((4, 4), np.float32(2.0**-70), np.float32)
    T = ctx.to_device(tiny)  # normal, but tiny + tiny... min_plus adds: 2**-69, still normal

    def chain():
        with ctx.batch():
            x = ctx.matmul(T, T, "min_plus")
            return ctx.to_host(ctx.matmul(x, ONE, "min_plus"))
    np.testing.assert_array_equal(chain(), np.full((4, 4), np.float32(2.0**-69) + 1, np.float32))
