"""Bind groups reused across submits (``backends/wgpu/bindgroups.py``): a repeated batch or eager
call finds its bind groups again and still computes the right values (checked against numpy), and a
destroyed buffer's bind groups are dropped before the next submit (so none is reused and none keeps
the buffer alive). The cache logic is tested on its own with stand-in handles (no device), then on
the runtime the environment selects (wgpu-py, or Dawn with ``PYTROPICAL_WEBGPU=dawn``)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

from conftest import require_backend
from pytropical_gpu import HybridContext, TernaryVec
from pytropical_gpu.backends import get_backend
from pytropical_gpu.backends.wgpu import bindgroups


class _Buf:
    """A stand-in buffer (hashable by identity, weak-referenceable)."""


def _cache(capacity=None):
    made, released = [], []

    def make(pipeline, entries):
        made.append(pipeline)  # not the entries: they would keep the buffers alive
        return object()

    return bindgroups.BindGroupCache(make, released.append, capacity), made, released


def _get(c, pipeline, entries):
    """A lookup as the runtimes make it: the key determines (and names) the entries."""
    return c.get((pipeline, entries), pipeline, lambda: entries)


def test_cache_hit_returns_the_same_group_and_a_changed_entry_misses():
    c, made, _ = _cache()
    a, b = _Buf(), _Buf()
    g = _get(c, "p", ((1, a, 0, 256), (2, b, 0, 256)))
    assert _get(c, "p", ((1, a, 0, 256), (2, b, 0, 256))) is g
    assert (c.hits, c.misses) == (1, 1)
    # another offset, size, buffer or pipeline is another bind group
    for pipe, entries in [("p", ((1, a, 256, 256), (2, b, 0, 256))),
                          ("p", ((1, a, 0, 128), (2, b, 0, 256))),
                          ("p", ((1, b, 0, 256), (2, a, 0, 256))),
                          ("q", ((1, a, 0, 256), (2, b, 0, 256)))]:
        assert _get(c, pipe, entries) is not g
    assert c.misses == 5 and len(made) == 5


def test_destroyed_buffer_groups_are_dropped_and_released():
    """Would fail without invalidation: the group naming the destroyed buffer stays, is released
    never, and the buffer object stays referenced by the cache."""
    c, _, released = _cache()
    a, b, keep = _Buf(), _Buf(), _Buf()
    g_ab = _get(c, "p", ((1, a, 0, 4), (2, b, 0, 4)))
    g_keep = _get(c, "p", ((1, keep, 0, 4),))
    c.forget(a)
    assert c.holds(a)  # dropped at the next drain (forget may run in a finalizer's thread)
    c.drain()
    assert not c.holds(a) and not c.holds(b)  # b's only group named a too
    assert c.holds(keep) and len(c) == 1
    assert released == []  # released after the submit in progress is done
    c.done()
    assert released == [g_ab]
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is None  # the cache keeps no destroyed buffer alive
    assert _get(c, "p", ((1, keep, 0, 4),)) is g_keep


def test_capacity_evicts_oldest_and_disabled_cache_releases_each_group():
    c, _, released = _cache(capacity=2)
    bufs = [_Buf() for _ in range(3)]
    gs = [_get(c, "p", ((1, x, 0, 4),)) for x in bufs]
    assert len(c) == 2 and not c.holds(bufs[0])
    c.done()
    assert released == [gs[0]]
    c.clear()
    assert len(c) == 0 and set(map(id, released)) == set(map(id, gs))
    bindgroups.ENABLED = False
    try:
        c2, _, rel2 = _cache()
        g = _get(c2, "p", ((1, bufs[0], 0, 4),))
        assert len(c2) == 0
        c2.done()
        assert rel2 == [g]
    finally:
        bindgroups.ENABLED = True


# ---------------------------------------------------------------------- on the device runtime
@pytest.fixture
def ctx():
    return HybridContext(backend=require_backend("wgpu"))


def _groups():
    rt = get_backend("wgpu").engine.rt
    if rt._groups is None:  # wgpu-py makes it at the first submit
        rt.submit([])
    return rt._groups


def _bind_chain(ctx, T, U, n):
    r = T
    for _ in range(n):
        r = ctx.bind(r, U)
    return r


def test_replayed_batch_hits_and_stays_exact(ctx):
    """The second batch of the same chain runs on recycled pool buffers: its bind groups come from
    the cache, and every result still equals numpy's (bind = trit-wise product)."""
    t = TernaryVec.random(1000, density=0.7, seed=3)
    u = TernaryVec.random(1000, density=0.7, seed=4)
    T, U = ctx.to_device(t), ctx.to_device(u)
    a = np.random.default_rng(5).integers(-50, 50, (48, 40)).astype(np.float32)
    b = np.random.default_rng(6).integers(-50, 50, (40, 40)).astype(np.float32)
    A, B = ctx.to_device(a), ctx.to_device(b)
    n = 6
    want_t = t.to_array() * u.to_array() ** n
    want_m = a
    for _ in range(n):
        want_m = (want_m[:, :, None] + b[None, :, :]).min(axis=1)
    g = _groups()
    for rep in range(3):
        hits = g.hits
        with ctx.batch():
            r = _bind_chain(ctx, T, U, n)
            x = A
            for _ in range(n):
                x = ctx.matmul(x, B, "min_plus")
        np.testing.assert_array_equal(ctx.to_host(r).to_array(), want_t)
        np.testing.assert_array_equal(ctx.to_host(x), want_m)
        del r, x
        gc.collect()
        if rep:
            assert g.hits - hits >= n  # the replay found bind groups again
    # eager calls in a loop recycle their buffers too
    hits = g.hits
    for _ in range(3):
        np.testing.assert_array_equal(ctx.to_host(ctx.bind(T, U)).to_array(),
                                      t.to_array() * u.to_array())
    assert g.hits > hits


def test_freed_resident_buffer_is_not_reused(ctx):
    """A resident operand's buffer is destroyed when the array goes; its bind groups are gone by the
    next submit (would fail without invalidation), the buffer object is freed, and a new operand
    (which may get the same device memory) computes with its own values."""
    u = TernaryVec.random(512, seed=8)
    U = ctx.to_device(u)
    g = _groups()
    for seed in (10, 11, 12):
        t = TernaryVec.random(512, density=0.6, seed=seed)
        T = ctx.to_device(t)
        with ctx.batch():
            r = ctx.bind(T, U)
        np.testing.assert_array_equal(ctx.to_host(r).to_array(), t.to_array() * u.to_array())
        buf = T.pos._storage.handle
        assert g.holds(buf)
        ref = weakref.ref(buf)
        del T, r, buf
        gc.collect()
        ctx.to_host(ctx.bind(ctx.to_device(u), U))  # any submit drains
        assert ref() is None  # destroyed, dropped from the cache, collected


def test_trimmed_pool_buffers_leave_the_cache(ctx):
    t, u = TernaryVec.random(256, seed=1), TernaryVec.random(256, seed=2)
    T, U = ctx.to_device(t), ctx.to_device(u)
    eng = get_backend("wgpu").engine
    g = _groups()
    with ctx.batch():
        r = ctx.bind(T, U)
    out = r.pos._storage.handle
    assert g.holds(out)
    del r
    gc.collect()
    with eng.lock:
        eng.pool.trim(0)  # destroys every idle pool buffer (the result's came back when it went)
    ctx.to_host(ctx.bind(T, U))
    assert not any(g.holds(h) for h in [out])
    with ctx.batch():
        r = ctx.bind(T, U)
    np.testing.assert_array_equal(ctx.to_host(r).to_array(), t.to_array() * u.to_array())
