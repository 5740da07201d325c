"""``with ctx.batch():`` and resident results on the GPU backends (wgpu: lavapipe here; cuda on the
device): bit-identical to eager calls and to the numpy reference, chains that never read back, errors
raised where the eager call raises them (deferred device checks at the batch's end, with the eager
message), nesting, results used after the batch, and a body that raises discarding what was queued."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import require_backend
from pytropical_gpu import HybridContext, TernaryVec, _arrays, _fact_scans, facts
from pytropical_gpu.backends import get_backend
from pytropical_gpu.batch import current
from pytropical_gpu.errors import SubnormalFlushError

GPUS = ["wgpu", "cuda"]
CPU = None


def cpu():
    global CPU
    CPU = CPU or get_backend("cpu")
    return CPU


@pytest.fixture(params=GPUS)
def ctx(request):
    return HybridContext(backend=require_backend(request.param))


def resident(ctx, x) -> bool:
    return _arrays.is_wgpu(x) if ctx.backend == "wgpu" else _arrays.is_cupy(x)


@pytest.fixture
def reads(ctx, monkeypatch):
    """Device-to-host reads while the test runs: the runtime's reads on wgpu, the operand facts'
    host reads on cuda (each one a wait for the device)."""
    count = {"n": 0}
    if ctx.backend == "wgpu":
        rt = get_backend("wgpu").engine.rt
        orig = rt.read

        def read(*a, **k):
            count["n"] += 1
            return orig(*a, **k)

        monkeypatch.setattr(rt, "read", read)
    else:
        orig = _fact_scans._host

        def host(x):
            count["n"] += 1
            return orig(x)

        monkeypatch.setattr(_fact_scans, "_host", host)
    return count


def _graph(rng, n=40):
    w = rng.integers(1, 50, (n, n)).astype(np.float32)
    w[rng.random((n, n)) < 0.7] = np.inf
    np.fill_diagonal(w, 0)
    return w


def _squarings(ctx, d, steps):
    """``steps`` min_plus squarings with argmax (the APSP step), whatever kind d is."""
    ks = []
    for _ in range(steps):
        d, k = ctx.matmul(d, d, "min_plus", c=d, return_argmax=True)
        ks.append(k)
    return d, ks


def test_chain_bit_identical_to_eager_and_reference(ctx, rng):
    w = _graph(rng)
    want, want_k = _squarings(cpu(), w, 3)  # the numpy reference
    eager, eager_k = _squarings(ctx, w, 3)  # host operands, one call at a time
    with ctx.batch():
        got, got_k = _squarings(ctx, ctx.to_device(w), 3)
        assert resident(ctx, got) and all(resident(ctx, k) for k in got_k)
    for x in (eager, ctx.to_host(got)):
        np.testing.assert_array_equal(x, want)
    for k, ek, wk in zip(got_k, eager_k, want_k):
        np.testing.assert_array_equal(ctx.to_host(k), wk)
        np.testing.assert_array_equal(ek, wk)
    # int32 with the extremes (the semiring's zero, saturation) and a resident c
    i32 = np.iinfo(np.int32)
    a = rng.integers(-1000, 1000, (17, 9), dtype=np.int32)
    b = rng.integers(-1000, 1000, (9, 23), dtype=np.int32)
    a[0, :] = i32.min
    b[:, 3] = i32.max - 5
    c = rng.integers(-5, 5, (17, 23), dtype=np.int32)
    with ctx.batch():
        A, B, C = (ctx.to_device(x) for x in (a, b, c))
        d1 = ctx.matmul(A, B, "max_plus", c=C)
        d2 = ctx.matmul(d1, ctx.to_device(b.T.copy()), "min_plus")
    r1 = cpu().matmul(a, b, "max_plus", c=c)
    np.testing.assert_array_equal(ctx.to_host(d1), r1)
    np.testing.assert_array_equal(ctx.to_host(d2), cpu().matmul(r1, b.T.copy(), "min_plus"))


def test_vsa_pipeline_bit_identical(ctx):
    dim = 1000
    keys, vals = TernaryVec.random(dim, batch=(6,), seed=1), TernaryVec.random(dim, batch=(6,), seed=2)
    ref_rec = cpu().permute(cpu().bundle(cpu().bind(keys, vals), threshold=2), 3)
    ref_q = cpu().bind(ref_rec, keys[2])
    with ctx.batch():
        K, V = ctx.to_device(keys), ctx.to_device(vals)
        pairs = ctx.bind(K, V)
        rec = ctx.permute(ctx.bundle(pairs, threshold=2), 3)
        q = ctx.bind(rec, K[2])
        assert resident(ctx, pairs.pos) and resident(ctx, rec.neg) and resident(ctx, q.pos)
        idx, scores = ctx.search(q, ctx.bind(K, V), 2)  # a host value: may flush, stays correct
    np.testing.assert_array_equal(ctx.to_host(rec).to_array(), ref_rec.to_array())
    np.testing.assert_array_equal(ctx.to_host(q).to_array(), ref_q.to_array())
    wi, ws = cpu().search(ref_q, cpu().bind(keys, vals), 2)
    np.testing.assert_array_equal(_arrays.to_numpy(idx), wi)
    np.testing.assert_array_equal(_arrays.to_numpy(scores), ws)
    # eager calls on resident operands give resident results too
    e = ctx.bind(ctx.to_device(keys), ctx.to_device(vals))
    assert resident(ctx, e.pos)
    np.testing.assert_array_equal(ctx.to_host(e).to_array(), cpu().bind(keys, vals).to_array())


def test_chain_never_reads_back(ctx, rng, reads):
    w = _graph(rng, 24)
    mem, mem2 = TernaryVec.random(640, batch=(8,), seed=3), TernaryVec.random(640, batch=(8,), seed=4)
    D, M, M2 = ctx.to_device(w), ctx.to_device(mem), ctx.to_device(mem2)
    eng = get_backend("wgpu").engine if ctx.backend == "wgpu" else None
    submits = eng.stats.get("batch_submits", 0) if eng else 0
    reads["n"] = 0
    with ctx.batch() as b:
        d, _ = _squarings(ctx, D, 3)  # the operands of squarings 2 and 3 are device results
        v = ctx.bind(M, M2)  # (a resident operand broadcast against a batch comes to the host)
        v = ctx.permute(ctx.bundle(v, threshold=1), 5)
        assert reads["n"] == 0, "a read inside the batch"
        assert current() is b
    assert current() is None
    if eng is not None:
        assert eng.stats["batch_submits"] == submits + 1  # one command buffer
        assert b.ops == 3 + 1 + 1 + 2  # permute: one dispatch per plane
    np.testing.assert_array_equal(ctx.to_host(d), _squarings(cpu(), w, 3)[0])
    np.testing.assert_array_equal(ctx.to_host(v).to_array(),
                                  cpu().permute(cpu().bundle(cpu().bind(mem, mem2)), 5).to_array())


def _nan_maker(ctx):
    """A resident float result holding NaN (inf * 0 in plus_times), made on the device."""
    a = np.array([[np.inf, 1.0], [2.0, 3.0]], np.float32)
    b = np.array([[0.0, 1.0], [1.0, 1.0]], np.float32)
    return ctx.matmul(ctx.to_device(a), ctx.to_device(b), "plus_times")


def test_nan_in_a_device_result_raises_like_eager(ctx, reads):
    ones = np.ones((2, 3), np.float32)
    x = _nan_maker(ctx)  # eager: the call that uses it raises
    with pytest.raises(ValueError, match="^matmul: a contains NaN$"):
        ctx.matmul(x, ones, "min_plus")
    reads["n"] = 0
    with pytest.raises(ValueError, match="^matmul: a contains NaN$"):  # at the batch's end
        with ctx.batch() as b:
            y = _nan_maker(ctx)
            z = ctx.matmul(y, ones, "min_plus")  # no exception here: the facts are on the device
            assert b.checks and reads["n"] == 0  # (cuda: the plus_times operands' checks too)
            reached = True
    assert reached
    if ctx.backend == "wgpu":  # the failed batch's results cannot be read
        with pytest.raises(RuntimeError, match="batch failed"):
            z.get()
    # the context is still usable, in a batch and out of one
    with ctx.batch():
        ok = ctx.matmul(ctx.to_device(ones.T.copy()), ctx.to_device(ones), "max_plus")
    np.testing.assert_array_equal(ctx.to_host(ok), np.ones((3, 3), np.float32) * 2)
    # a NaN in an operand put on the device: wgpu knows it from to_device (raises at the call);
    # cupy operands are the caller's mutable arrays, checked on the device (at the batch's end)
    bad = np.ones((2, 2), np.float32)
    bad[0, 1] = np.nan
    B = ctx.to_device(bad)
    with pytest.raises(ValueError, match="^matmul: b contains NaN$"):
        with ctx.batch():
            try:
                ctx.matmul(np.ones((2, 2), np.float32), B, "min_plus")
            except ValueError:
                assert ctx.backend == "wgpu"
                raise
            assert ctx.backend == "cuda"


def test_bad_shape_raises_at_the_call_and_discards(ctx):
    a = ctx.to_device(np.ones((3, 4), np.float32))
    eng = get_backend("wgpu").engine if ctx.backend == "wgpu" else None
    submits = eng.stats.get("batch_submits", 0) if eng else 0
    with pytest.raises(ValueError):
        with ctx.batch():
            before = ctx.matmul(a, ctx.to_device(np.ones((4, 2), np.float32)), "min_plus")
            ctx.matmul(a, a, "min_plus")  # (3, 4) x (3, 4): raises now, as eagerly
    assert current() is None
    if eng is not None:
        assert eng.stats.get("batch_submits", 0) == submits  # nothing recorded was submitted
        assert eng.recording is None and eng.pool.hold is None
        with pytest.raises(RuntimeError, match="discarded"):
            before.get()
    got = ctx.matmul(a, ctx.to_device(np.ones((4, 2), np.float32)), "min_plus")
    np.testing.assert_array_equal(ctx.to_host(got), np.full((3, 2), 2, np.float32))


def test_exception_in_body_discards_queued_work(ctx, rng):
    w = _graph(rng, 16)

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with ctx.batch():
            d, _ = _squarings(ctx, ctx.to_device(w), 2)
            raise Boom
    if ctx.backend == "wgpu":
        with pytest.raises(RuntimeError, match="discarded"):
            ctx.to_host(d)
    with ctx.batch():  # usable again, and the pool gives correct results
        d2, _ = _squarings(ctx, ctx.to_device(w), 2)
    np.testing.assert_array_equal(ctx.to_host(d2), _squarings(cpu(), w, 2)[0])


def test_nested_batches_submit_once(ctx, rng, reads):
    w = _graph(rng, 20)
    eng = get_backend("wgpu").engine if ctx.backend == "wgpu" else None
    submits = eng.stats.get("batch_submits", 0) if eng else 0
    reads["n"] = 0
    with ctx.batch() as outer:
        D = ctx.to_device(w)
        with ctx.batch() as inner:
            d1, _ = _squarings(ctx, D, 1)
        assert current() is outer and inner is not outer
        assert reads["n"] == 0  # the inner block's end submitted and waited for nothing
        d2, _ = _squarings(ctx, d1, 1)
    if eng is not None:
        assert eng.stats["batch_submits"] == submits + 1
    np.testing.assert_array_equal(ctx.to_host(d2), _squarings(cpu(), w, 2)[0])


def test_results_usable_after_the_batch(ctx, rng):
    w = _graph(rng, 30)
    with ctx.batch():
        d, _ = _squarings(ctx, ctx.to_device(w), 1)
    e, _ = _squarings(ctx, d, 1)  # eager, on the batch's resident result
    with ctx.batch():
        f, _ = _squarings(ctx, e, 1)  # and a later batch
    np.testing.assert_array_equal(np.asarray(ctx.to_host(f)), _squarings(cpu(), w, 3)[0])
    np.testing.assert_array_equal(ctx.from_device(d), _squarings(cpu(), w, 1)[0])


def test_wgpu_result_buffers_go_back_to_the_pool():
    ctx = HybridContext(backend=require_backend("wgpu"))
    eng = get_backend("wgpu").engine
    a = ctx.to_device(np.ones((64, 64), np.float32))
    for _ in range(3):
        with ctx.batch():
            x = a
            for _ in range(4):
                x = ctx.matmul(x, a, "min_plus")
    created = eng.pool.created
    for _ in range(5):  # steady state: results of earlier batches are recycled
        with ctx.batch():
            x = a
            for _ in range(4):
                x = ctx.matmul(x, a, "min_plus")
    assert eng.pool.created == created
    np.testing.assert_array_equal(x.get(), np.full((64, 64), 5, np.float32))  # 1 + 4 x (min over k of 1)


def test_cpu_context_batch_is_a_no_op():
    ctx = HybridContext(backend="cpu")
    with ctx.batch() as b:
        d = ctx.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), "min_plus")
    assert isinstance(d, np.ndarray) and b.target is None and not b.checks


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_wgpu_device_facts_equal_host_facts(dtype, rng):
    """The facts a GEMM result gets on the device (wgsl/facts.wgsl) are the ones numpy gives the
    same values (NaN, ±inf, subnormals, integer extremes), so later calls decide as eagerly."""
    ctx = HybridContext(backend=require_backend("wgpu"))
    ident = np.eye(37, dtype=dtype)  # plus_times with the identity: the result is a, as stored
    cases = []
    if dtype == np.float32:
        base = rng.standard_normal((50, 37)).astype(np.float32)
        for special in ([], [np.inf], [-np.inf], [np.inf, -np.inf], [1e-40, -3e-39], [np.nan]):
            a = base.copy()
            for i, v in enumerate(special):
                a[i, i] = v
            cases.append(a)
        cases.append(np.zeros((50, 37), np.float32))
    else:
        i32 = np.iinfo(np.int32)
        for lo, hi in ((-5, 5), (i32.min, 0), (0, i32.max), (i32.min, i32.max), (7, 8)):
            cases.append(rng.integers(lo, hi, (50, 37), dtype=np.int32, endpoint=True))
    flushes = get_backend("wgpu").flushes_subnormals
    for a in cases:
        if flushes and np.any((a != 0) & (np.abs(a) < np.finfo(np.float32).tiny)):
            with pytest.raises(SubnormalFlushError):  # refused on this adapter, as eagerly
                ctx.matmul(ctx.to_device(a), ctx.to_device(ident), "plus_times")
            continue
        got = ctx.matmul(ctx.to_device(a), ctx.to_device(ident), "plus_times") if dtype != \
            np.float32 or not np.isnan(a).any() else None
        if got is None:  # a NaN operand is refused: make the NaN on the device (inf * 0)
            b = a.copy()
            b[np.isnan(b)] = np.inf
            z = ident.copy()
            z[0, 0] = 0
            got = ctx.matmul(ctx.to_device(b), ctx.to_device(z), "plus_times")
        host = ctx.to_host(got)
        want = facts.Facts.of_host(host)
        assert got.stats._reader is not None and hasattr(got.stats._reader, "read_many")
        g, w = got.stats.as_dict(), want.as_dict()
        if g.get("nan"):  # as numpy's: NaN makes the small end NaN too
            assert np.isnan(g.pop("min_abs")) and np.isnan(w.pop("min_abs"))
        assert g == w
        assert got.stats.absmax == want.absmax


def test_wgpu_device_facts_of_a_large_result(monkeypatch):
    """Many workgroups (initial words written by the host) give the same facts as one."""
    from pytropical_gpu.backends.wgpu import stats

    ctx = HybridContext(backend=require_backend("wgpu"))
    a = np.arange(-3000, 3000, dtype=np.int32).reshape(60, 100)
    a[17, 3] = np.iinfo(np.int32).min
    monkeypatch.setattr(stats, "ONE_GROUP_ITEMS", 1)  # 6000 elements: 24 workgroups
    got = ctx.matmul(ctx.to_device(a), ctx.to_device(np.eye(100, dtype=np.int32)), "plus_times")
    assert got.stats.as_dict() == {"min": int(np.iinfo(np.int32).min), "max": 2999}


def test_device_facts_are_queued_and_read_at_the_end():
    """The cuda path of a batch without a GPU: facts of a device operand (here numpy behind a
    stand-in array module, so they count as device facts) are not computed at the call: their
    reductions start, the operand is let go, and the check runs at the batch's end."""
    import types

    from pytropical_gpu import batch

    dev = types.SimpleNamespace(stack=np.stack)  # not numpy: Facts treats the operand as device data
    x = np.array([[1.0, np.nan], [2.0, 3.0]], np.float32)
    fx, fy = facts.Facts(x, dev), facts.Facts(np.ones(3, np.float32), dev)
    assert fx.on_device and not batch.defer(lambda: None, fx)  # outside a batch: check now
    seen = []

    def check(name, f):
        seen.append(name)
        if f.nan:
            raise ValueError(f"matmul: {name} contains NaN")

    with pytest.raises(ValueError, match="^matmul: a contains NaN$"):
        with batch.Batch(None) as b:
            assert batch.defer(lambda: check("b", fy), fy) and batch.defer(lambda: check("a", fx), fx)
            assert fx._x is None and fx._pre is not None and not fx.computed and len(b.checks) == 2
            assert seen == []
    assert seen == ["b", "a"] and fx.nan and not fy.nan and fy.absmax == 1.0
    with pytest.raises(RuntimeError, match="small-end"):
        _ = fx.min_abs  # only a flushing wgpu adapter asks it, never of a device (cupy) operand


def test_wgpu_dropped_results_are_not_recycled_before_submission():
    """A result dropped inside a batch keeps its buffer until the recorded commands are submitted:
    a host operand uploaded later (a queue write, which lands before the recorded commands) must
    not get a buffer that a recorded command still writes."""
    ctx = HybridContext(backend=require_backend("wgpu"))
    t, u = TernaryVec.random(1024, batch=(4,), seed=5), TernaryVec.random(1024, batch=(4,), seed=6)
    T = ctx.to_device(t)
    with ctx.batch():
        for _ in range(6):
            ctx.bind(T, T)  # each result dropped at once
        r = ctx.bind(T, u)  # u's planes are written into pool buffers now
        a = ctx.matmul(ctx.to_device(np.ones((8, 8), np.float32)), np.eye(8, dtype=np.float32),
                       "plus_times")
        del a  # its facts' words too
        m = ctx.matmul(ctx.to_device(np.ones((8, 8), np.float32)), np.full((8, 8), 2, np.float32),
                       "min_plus")
    np.testing.assert_array_equal(r.to_array(), cpu().bind(t, u).to_array())
    np.testing.assert_array_equal(ctx.to_host(m), np.full((8, 8), 3, np.float32))
    assert m.stats.as_dict()["nan"] is False and m.stats.absmax == 3
