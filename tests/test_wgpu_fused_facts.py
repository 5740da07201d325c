"""Facts computed in a small GEMM's own epilogue (``FACTS`` in ``wgsl/gemm_tiled.wgsl``, taken by the
batch fast path of ``backends/wgpu/fastpath.py``): one dispatch per queued GEMM instead of two.

The facts must be exactly the ones numpy's values give (NaN, ±inf, subnormals, smallest and largest
magnitude, integer extremes) over results spread over one or many workgroups, including partial edge
tiles, because later calls decide from them (the NaN refusal, the guard on ⊗, a flushing adapter's
subnormal rule); and they must equal the separate facts pass's."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from conftest import require_backend
from pytropical_gpu import HybridContext, facts
from pytropical_gpu.backends import get_backend
from pytropical_gpu.backends.wgpu import fastpath, stats
from pytropical_gpu.errors import SubnormalFlushError

TINY = float(np.finfo(np.float32).tiny)


@pytest.fixture
def ctx():
    return HybridContext(backend=require_backend("wgpu"))


def _eng():
    return get_backend("wgpu").engine


def _cases(dtype, rng, m, k):
    """Operands ``a`` (m, k) whose product with the identity is ``a`` itself, as stored."""
    if dtype == np.float32:
        base = rng.standard_normal((m, k)).astype(np.float32)
        out = []
        for special in ([], [np.inf], [-np.inf], [np.inf, -np.inf], [1e-40, -3e-39],
                        [np.float32(2.0**-149)], [np.float32(TINY * 0.99), -TINY], [np.nan], [3e38, -3.4e38]):
            a = base.copy()
            for i, v in enumerate(special):  # at the far corner too: the last (partial) tile
                a[(i * 7) % m, (i * 5) % k] = v
                a[m - 1 - i % m, k - 1] = v
            out.append(a)
        return out + [np.zeros((m, k), np.float32), np.full((m, k), -0.0, np.float32)]
    if dtype == np.int32:
        i = np.iinfo(np.int32)
        rngs = ((-5, 5), (i.min, 0), (0, i.max), (i.min, i.max), (7, 7))
    else:
        i = np.iinfo(np.uint32)
        rngs = ((0, 5), (0, i.max), (i.max - 3, i.max), (9, 9))
    return [rng.integers(lo, hi, (m, k), dtype=dtype, endpoint=True) for lo, hi in rngs]


def _ident(k, dtype):
    """The identity of the semiring :func:`_product` uses (bor_band for uint32: all bits set)."""
    one = np.iinfo(np.uint32).max if dtype == np.uint32 else 1
    return np.eye(k, dtype=dtype) * np.asarray(one, dtype)


def _product(ctx, a, ident):
    """``a`` through plus_times (bor_band for uint32) with the identity, in a batch (the fast path);
    a NaN operand is refused, so NaN is made on the device there (inf * 0)."""
    if np.isnan(a).any():
        a = np.where(np.isnan(a), np.float32(np.inf), a)
        ident = ident.copy()
        ident[0, 0] = 0
    A, ID = ctx.to_device(a), ctx.to_device(ident)
    before = _eng().stats.get("fast_calls", 0)
    with ctx.batch():
        got = ctx.matmul(A, ID, "bor_band" if a.dtype == np.uint32 else "plus_times")
    assert _eng().stats.get("fast_calls", 0) == before + 1
    return got


def _compare(got, host):
    want = facts.Facts.of_host(host)
    g, w = got.stats.as_dict(), want.as_dict()
    if g.get("nan"):  # as numpy's: NaN makes the small end moot
        g.pop("min_abs"), w.pop("min_abs")
    assert g == w
    if not g.get("nan"):
        assert got.stats.absmax == want.absmax
    if host.dtype.kind != "f":
        assert (got.stats["min"], got.stats["max"]) == (int(host.min()), int(host.max()))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32])
@pytest.mark.parametrize("m,k", [(1, 1), (50, 37), (64, 64), (97, 128), (33, 31)])
def test_fused_facts_equal_host_facts(ctx, rng, dtype, m, k, monkeypatch):
    if get_backend("wgpu").flushes_subnormals:  # subnormal results are refused there (below)
        monkeypatch.setattr(_eng(), "flushes_subnormals", False)
    ident = _ident(k, dtype)
    for a in _cases(dtype, rng, m, k):
        got = _product(ctx, a, ident)
        rec = [r for key, r in fastpath.records(_eng()).items() if key[0] == "mm" and key[3:6] ==
               (m, k, k) and isinstance(r, fastpath._GemmRecord)]
        fused = all(r.fslots for r in rec)
        assert rec and fused == (m > 1 or k > 16)  # 1 x 1 x 1 is a skinny kernel: the facts pass
        if fused:
            assert rec[-1].fslots == -(-m // 32) * -(-k // 32) and got.stats._reader.slots == \
                rec[-1].fslots
        _compare(got, ctx.to_host(got))


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_fused_and_separate_facts_passes_agree(ctx, rng, dtype, monkeypatch):
    """The same products with the epilogue's facts and with the separate pass: same facts, same bits."""
    if get_backend("wgpu").flushes_subnormals:
        monkeypatch.setattr(_eng(), "flushes_subnormals", False)
    ident = _ident(70, dtype)
    for a in _cases(dtype, rng, 90, 70):
        got = {}
        for groups in (64, 0):
            monkeypatch.setattr(fastpath, "FUSED_FACTS_GROUPS", groups)
            r = _product(ctx, a, ident)
            assert (r.stats._reader.slots > 1) == bool(groups)  # 3 x 3 workgroups, or the pass
            got[groups] = (ctx.to_host(r), r.stats.as_dict())
        (h1, f1), (h0, f0) = got.values()
        np.testing.assert_array_equal(h1, h0)
        if f1.get("nan"):
            f1.pop("min_abs"), f0.pop("min_abs")
        assert f1 == f0


def test_fold_combines_workgroups_as_the_atomics_do():
    inf = 0x7F800000
    w = [0, 1, 0, 10, inf, 2, 50, 60] + [0, 0, 1, 30, 5, 3, 40, 55] + [0, 0, 0, 0, inf, 0,
                                                                         0xFFFFFFFF, 0]
    assert stats.fold(w) == [0, 1, 1, 30, 5, 5, 40, 60]
    assert stats.decode("i32", stats.fold(w))["min"] == 40 - (1 << 31)


def test_a_flushing_adapter_refuses_a_chain_through_a_tiny_result(ctx, monkeypatch):
    """Forced flushing: a result whose values are all 2**-103 (normal, known only from the epilogue's
    facts) makes the next min_plus with another such operand fail at the batch's end (a sum could
    cancel into the subnormal range), with the message the eager chain raises at the call."""
    monkeypatch.setattr(_eng(), "flushes_subnormals", True)
    z = np.full((64, 64), np.inf, np.float32)
    np.fill_diagonal(z, 0)  # min_plus(x, z) = x
    H = ctx.to_device(np.full((64, 64), np.float32(2.0**-103), np.float32))
    Z, A = ctx.to_device(z), ctx.to_device(np.ones((64, 64), np.float32))
    x = ctx.matmul(H, Z, "min_plus")  # eager: its facts come from the device
    with pytest.raises(SubnormalFlushError) as eager:
        ctx.matmul(x, H, "min_plus")
    with pytest.raises(SubnormalFlushError) as batched:
        with ctx.batch():
            y = ctx.matmul(H, Z, "min_plus")
            ctx.matmul(y, H, "min_plus")
    assert str(batched.value) == str(eager.value)
    recs = [r for key, r in fastpath.records(_eng()).items()
            if key[0] == "mm" and key[3:6] == (64, 64, 64) and isinstance(r, fastpath._GemmRecord)]
    assert recs and all(r.fslots == 4 for r in recs)  # the epilogue's facts decided it
    with ctx.batch():  # a chain that stays normal passes
        y = ctx.matmul(A, Z, "min_plus")
        y = ctx.matmul(y, A, "min_plus")
    np.testing.assert_array_equal(ctx.to_host(y), np.full((64, 64), 2, np.float32))


def test_many_results_share_facts_arenas_and_give_them_back(ctx, rng, monkeypatch):
    """A batch of more fused results than one arena holds: every result's facts still equal
    numpy's (each read at its own offset), the arenas are shared (few buffers, one copy each at
    the batch's end), and they go back to the pool: a repeated batch creates no buffer."""
    monkeypatch.setattr(_eng(), "flushes_subnormals", False)
    eng = _eng()
    ident = ctx.to_device(np.eye(33, dtype=np.float32))
    ops = []
    for i in range(5):
        a = rng.standard_normal((33, 33)).astype(np.float32)
        a[i, 2 * i] = (np.inf, -np.inf, 1e-40, 0.0, 3e38)[i]
        ops.append((a, ctx.to_device(a)))
    n = 2 * stats.ARENA_BYTES // max(32, eng.limits.min_storage_offset_alignment, 128) + 3

    def run():
        with ctx.batch():
            return [ctx.matmul(ops[i % 5][1], ident, "plus_times") for i in range(n)]
    got = run()
    readers = [g.stats._reader for g in got]
    arenas = {id(r.arena) for r in readers}
    assert all(r.arena is not None and r.slots == 4 for r in readers) and 3 <= len(arenas) <= 4
    stats.Reader.read_many(readers)  # the batch's end's read: one copy per arena
    for i in (0, 1, 2, 3, 4, n - 1):  # inf * 0 makes NaN: the values numpy reads back decide
        _compare(got[i], ctx.to_host(got[i]))
    del got, readers
    run()
    created = eng.pool.created
    for _ in range(2):
        run()
    assert eng.pool.created == created


def test_a_batch_end_decodes_each_result_once(ctx, monkeypatch):
    """The generic path queues two checks per product whose operand's facts are pending (the NaN
    refusal and the operand rule), so the batch's end lists such a result twice: its words are
    decoded once. The fast path queues one group for the products' checks (one item each), which
    reads the words as arrays: no result is decoded until its facts are asked (then once)."""
    monkeypatch.setattr(_eng(), "flushes_subnormals", True)  # the operand rule defers too
    A = ctx.to_device(np.ones((64, 64), np.float32))
    calls = []
    real = stats.decode
    monkeypatch.setattr(stats, "decode", lambda *a: calls.append(1) or real(*a))
    for fast, queued in ((False, 8), (True, 1)):
        monkeypatch.setattr(fastpath, "ENABLED", fast)
        calls.clear()
        with ctx.batch() as b:
            x, xs = A, []
            for _ in range(5):
                x = ctx.matmul(x, A, "min_plus")
                xs.append(x)
            assert (len(b.checks), len(b.facts)) == (queued, 8 if not fast else 4)
            if fast:
                assert len(b.checks[0].items) == 4
        assert len(calls) == (0 if fast else 4)
        for _ in range(2):
            assert xs[1].stats.as_dict() == {"nan": False, "inf": False, "subnormal": 0,
                                             "min_abs": 3.0}
        assert len(calls) == (1 if fast else 4)
        np.testing.assert_array_equal(ctx.to_host(x), np.full((64, 64), 6, np.float32))


@pytest.mark.parametrize("flushing", [False, True])
def test_a_nan_made_in_the_batch_is_refused_at_its_end(ctx, monkeypatch, flushing):
    """A product's result holding NaN (inf * 0, known only from the epilogue's facts) used as the
    next product's b: the batch raises at its end what the eager call raises at once."""
    monkeypatch.setattr(_eng(), "flushes_subnormals", flushing)
    a = np.ones((40, 40), np.float32)
    a[3, 0] = np.inf
    z = np.eye(40, dtype=np.float32)
    A, Z = ctx.to_device(a), ctx.to_device(z)
    x = ctx.matmul(A, Z, "plus_times")  # row 3: inf * 0 = NaN
    with pytest.raises(ValueError) as eager:
        ctx.matmul(Z, x, "min_plus")
    assert str(eager.value) == "matmul: b contains NaN"
    with pytest.raises(ValueError) as batched:
        with ctx.batch():
            y = ctx.matmul(A, Z, "plus_times")
            ctx.matmul(Z, y, "min_plus")
    assert type(batched.value) is type(eager.value) and str(batched.value) == str(eager.value)


def test_a_batchs_facts_arena_goes_back_with_its_last_result(ctx, rng, monkeypatch):
    """The arena is the results' alone: once a batch has ended and its results are gone, the pool
    holds no more live bytes than before the batch (the engine kept the last batch's arena live
    until the next batch, so a later steady-state pool check failed)."""
    monkeypatch.setattr(_eng(), "flushes_subnormals", False)
    eng = _eng()
    a = ctx.to_device(rng.standard_normal((33, 33)).astype(np.float32))
    gc.collect()  # earlier tests' garbage, collected mid-test, would lower the count under us
    eng.pool._reclaim()
    before = eng.pool.live_bytes
    with ctx.batch():
        got = [ctx.matmul(a, a, "min_plus") for _ in range(3)]
    assert all(g.stats._reader.arena is not None for g in got)
    del got
    gc.collect()
    eng.pool._reclaim()
    assert eng.pool.live_bytes == before
