"""The queued GEMM's per-signature plans (``backends/wgpu/fastgemm.py``): a plan keeps only what the
call signature fixes, so a call whose shapes, dtype, semiring, data (NaN, ±inf, subnormals on a
flushing adapter), operand buffers or runtime differ from the plan's first call still gets numpy's
bits or the eager call's exception. References: numpy / the cpu backend, and the eager call."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from test_wgpu_fastpath import _eng, _stat

from conftest import require_backend
from pytropical_gpu import HybridContext
from pytropical_gpu.backends import get_backend
from pytropical_gpu.backends.wgpu import fastpath


@pytest.fixture
def ctx():
    return HybridContext(backend=require_backend("wgpu"))


def _cpu(a, b, sr):
    return get_backend("cpu").matmul(a, b, sr)


def _minplus(a, b):
    """min_plus in numpy (+inf, the zero, annihilates: also against -inf)."""
    x, y = a[:, :, None], b[None, :, :]
    with np.errstate(invalid="ignore"):
        s = np.where((x == np.inf) | (y == np.inf), np.float32(np.inf), x + y)
    return s.min(axis=1)


def _error(fn):
    with pytest.raises(Exception) as e:
        fn()
    return type(e.value), str(e.value)


def test_interleaved_signatures_in_one_batch_each_get_their_own_plan(ctx, rng):
    """Shapes, dtype and semiring change from call to call inside one batch (a plan returned for
    the wrong signature would give a wrong shape, dtype or value)."""
    f = rng.integers(-20, 20, (16, 16)).astype(np.float32)
    g = rng.integers(-20, 20, (16, 9)).astype(np.float32)
    i = rng.integers(-20, 20, (16, 16)).astype(np.int32)
    F, G, I = ctx.to_device(f), ctx.to_device(g), ctx.to_device(i)
    calls = [(F, F, f, f, "min_plus"), (F, G, f, g, "min_plus"), (I, I, i, i, "min_plus"),
             (F, F, f, f, "max_plus"), (F, G, f, g, "max_min"), (I, I, i, i, "max_plus")] * 3
    before = _stat("fast_calls")
    with ctx.batch():
        got = [ctx.matmul(p, q, sr) for p, q, _, _, sr in calls]
    assert _stat("fast_calls") - before == len(calls)
    for r, (_, _, p, q, sr) in zip(got, calls):
        want = _cpu(p, q, sr)
        if sr == "min_plus" and p.dtype == np.float32:
            np.testing.assert_array_equal(want, _minplus(p, q))  # the reference itself
        h = ctx.to_host(r)
        assert h.dtype == want.dtype and h.shape == want.shape
        np.testing.assert_array_equal(h, want)


def test_a_semiring_object_and_its_name_share_the_record(ctx, rng):
    from pytropical_gpu.semirings import get_semiring

    a = rng.integers(0, 9, (12, 12)).astype(np.float32)
    A = ctx.to_device(a)
    with ctx.batch():
        x = ctx.matmul(A, A, "min_plus")
    r0 = _stat("fast_records")
    with ctx.batch():
        y = ctx.matmul(A, A, get_semiring("min_plus"))
    assert _stat("fast_records") == r0  # a new plan, the same compiled record
    np.testing.assert_array_equal(ctx.to_host(x), ctx.to_host(y))
    np.testing.assert_array_equal(ctx.to_host(y), _minplus(a, a))


def test_the_plan_holds_no_data_facts(ctx, rng):
    """Same signature, other data: ±inf needs the guarded ⊗, NaN is refused, the eager way."""
    a = rng.integers(0, 9, (11, 11)).astype(np.float32)  # a shape no other test uses
    inf = a.copy()
    inf[2, :] = np.inf
    inf[:, 5] = -np.inf
    nan = a.copy()
    nan[4, 4] = np.nan
    A, INF, NAN = ctx.to_device(a), ctx.to_device(inf), ctx.to_device(nan)
    fastpath.records(_eng()).clear()  # (a per-process cache: no earlier test's keys counted)
    r0 = _stat("fast_records")
    with ctx.batch():
        x = ctx.matmul(A, A, "min_plus")  # finite: the plain ⊗
        y = ctx.matmul(INF, INF, "min_plus")  # the same plan, the guarded record
        z = ctx.matmul(x, INF, "min_plus")  # pending a: the guarded record too
    assert _stat("fast_records") - r0 == 2  # (lavapipe's min skips NaN: only the count tells)
    assert {k[6] for k in fastpath.records(_eng()) if k[0] == "mm" and k[3:6] == (11, 11, 11)
            and len(k) == 8} == {False, True}
    np.testing.assert_array_equal(ctx.to_host(x), _minplus(a, a))
    np.testing.assert_array_equal(ctx.to_host(y), _minplus(inf, inf))
    np.testing.assert_array_equal(ctx.to_host(z), _minplus(_minplus(a, a), inf))
    want = _error(lambda: ctx.matmul(A, NAN, "min_plus"))
    assert want == (ValueError, "matmul: b contains NaN")

    def batched():
        with ctx.batch():
            ctx.matmul(A, A, "min_plus")
            ctx.matmul(A, NAN, "min_plus")
    assert _error(batched) == want


def test_new_operand_buffers_after_the_old_ones_are_gone(ctx, rng):
    """The plan keeps no buffer: operands freed and replaced (their buffers destroyed, their
    handles perhaps reused) bind the new ones."""
    vals = []
    for seed in range(3):
        a = np.random.default_rng(seed).integers(0, 50, (20, 20)).astype(np.float32)
        A = ctx.to_device(a)
        with ctx.batch():
            x = ctx.matmul(ctx.matmul(A, A, "min_plus"), A, "min_plus")
        vals.append((ctx.to_host(x), _minplus(_minplus(a, a), a)))
        del A, x
        gc.collect()
    for got, want in vals:
        np.testing.assert_array_equal(got, want)


def test_a_new_runtime_or_fused_setting_gets_a_new_plan(ctx, rng, monkeypatch):
    a = rng.integers(0, 9, (64, 64)).astype(np.float32)  # a tiled GEMM: facts in its epilogue
    A = ctx.to_device(a)
    with ctx.batch():
        ctx.matmul(A, A, "min_plus")
    eng = _eng()
    plans = [k for k in fastpath.records(eng) if k[0] == "plan"]
    assert plans
    eng._fast_records = (object(), eng._fast_records[1])  # as if the runtime had changed
    r0 = _stat("fast_records")
    with ctx.batch():
        x = ctx.matmul(A, A, "min_plus")
    assert _stat("fast_records") - r0 == 1  # a fresh table: plan and record made again
    np.testing.assert_array_equal(ctx.to_host(x), _minplus(a, a))
    monkeypatch.setattr(fastpath, "FUSED_FACTS_GROUPS", 0)  # the separate facts dispatch
    with ctx.batch():
        y = ctx.matmul(A, A, "min_plus")
        z = ctx.matmul(y, A, "min_plus")
        # the facts words in a small buffer of their own, not in the fused GEMMs' arena
        assert y.stats._reader.arena is None and z.stats._reader.arena is None
    with ctx.batch():  # and back
        monkeypatch.setattr(fastpath, "FUSED_FACTS_GROUPS", 64)
        w = ctx.matmul(A, A, "min_plus")
        assert w.stats._reader.arena is not None
    np.testing.assert_array_equal(ctx.to_host(w), _minplus(a, a))
    recs = fastpath.records(eng)  # other tests read every 64³ record: drop the unfused ones
    for key in [key for key in recs if key[0] in ("mm", "plan") and len(key) > 6 and key[-1] == 0]:
        del recs[key]
    np.testing.assert_array_equal(ctx.to_host(z), _minplus(_minplus(a, a), a))


def test_a_not_covered_key_stays_not_covered_and_errors_repeat(ctx):
    """A cached "not covered" answer (mixed dtypes) keeps sending the call to the generic path,
    which raises; a failing semiring check is never cached (it raises every time)."""
    A = ctx.to_device(np.ones((4, 4), np.float32))
    I = ctx.to_device(np.ones((4, 4), np.int32))
    for fn in (lambda: ctx.matmul(A, I, "min_plus"), lambda: ctx.matmul(A, A, "no_such"),
               lambda: ctx.matmul(A, A, ["min_plus"])):
        want = _error(fn)
        for _ in range(3):
            def batched(fn=fn):
                with ctx.batch():
                    fn()
            assert _error(batched) == want


def test_pending_operands_checks_run_in_call_order(ctx, monkeypatch):
    """Two products whose pending operand holds NaN, one as a, one as b, with a generic call's
    check between: the batch raises the first one's error (as the eager calls would)."""
    a = np.ones((40, 40), np.float32)
    a[3, 0] = np.inf
    z = np.eye(40, dtype=np.float32)
    A, Z = ctx.to_device(a), ctx.to_device(z)
    for first in ("a", "b"):
        def batched(first=first):
            with ctx.batch():
                y = ctx.matmul(A, Z, "plus_times")  # NaN (inf * 0), known only at the end
                if first == "a":
                    ctx.matmul(y, Z, "min_plus")
                    ctx.matmul(Z, y, "min_plus")
                else:
                    ctx.matmul(Z, y, "min_plus")
                    ctx.matmul(y, Z, "min_plus")
        assert _error(batched) == (ValueError, f"matmul: {first} contains NaN")


@pytest.mark.parametrize("scale,fires", [(2.0**-110, True), (2.0**-70, False), (1.0, False)])
def test_flushing_rule_on_pending_facts_is_not_screened_away(ctx, monkeypatch, scale, fires):
    """On a flushing adapter (forced), a product of two operands both below 2**-102 may sum to a
    subnormal: refused at the batch's end exactly as the eager call refuses it; the screen that
    skips the rule only skips it where it cannot fire."""
    monkeypatch.setattr(_eng(), "flushes_subnormals", True)
    t = np.full((8, 8), np.float32(scale), np.float32)
    zero = np.zeros((8, 8), np.float32)
    T, ZERO = ctx.to_device(t), ctx.to_device(zero)
    x = ctx.matmul(T, ZERO, "min_plus")  # = t (eager: its facts are read back)

    def eager():
        return ctx.to_host(ctx.matmul(x, T, "min_plus"))

    def batched():
        with ctx.batch():
            y = ctx.matmul(T, ZERO, "min_plus")  # pending facts
            r = ctx.matmul(y, T, "min_plus")
        return ctx.to_host(r)
    if fires:
        want = _error(eager)
        assert want[0].__name__ == "SubnormalFlushError" and "subnormal" in want[1]
        assert _error(batched) == want
    else:
        np.testing.assert_array_equal(batched(), eager())
        np.testing.assert_array_equal(batched(), t + t)


def test_quiet_screen_bound():
    """The screen's bound: both smallest magnitudes at 2**-63 keep a product normal, and it is far
    above the sum rule's 2**-102 (the rules are in backends/wgpu/flush.py)."""
    from pytropical_gpu.backends.wgpu import fastchecks, flush

    assert fastchecks._QUIET * fastchecks._QUIET >= flush.TINY
    assert fastchecks._QUIET > flush.PLUS_LIMIT


def test_a_discarded_batchs_result_raises_at_the_call(ctx):
    """An operand whose contents are invalid (made in a discarded batch) raises RuntimeError at the
    call, as a or as b, not only when the batch ends (the checks it queued are then moot: its
    facts words were never written)."""
    A = ctx.to_device(np.ones((64, 64), np.float32))
    with pytest.raises(KeyError):
        with ctx.batch():
            x = ctx.matmul(A, A, "min_plus")
            raise KeyError("boom")
    for call in (lambda: ctx.matmul(x, A, "min_plus"), lambda: ctx.matmul(A, x, "min_plus")):
        with pytest.raises(RuntimeError, match="discarded"):
            with ctx.batch():
                call()
                pytest.fail("not raised at the call")
    with ctx.batch():
        y = ctx.matmul(A, A, "min_plus")
    np.testing.assert_array_equal(ctx.to_host(y), np.full((64, 64), 2, np.float32))
