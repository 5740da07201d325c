"""One verb call learns a host operand's facts once: "auto" routing asks a flushing wgpu adapter
whether a float32 matmul is exact, and the operation's own checks then read the same facts instead
of scanning the operand again (``facts.CALL``). Nothing survives the call: an in-place change
before the next call is seen.

Scans are counted by spying on :func:`pytropical_gpu.facts._range` and ``_small`` (the only
functions that read an operand's values for its facts); answers come from numpy broadcasting, not
from the code under test. The flushing adapter is lavapipe with its flag set (as in
tests/test_route_exact.py), so a call it keeps runs there and one it cannot run exactly goes to cpu.
"""

from __future__ import annotations

import numpy as np
import pytest

import pytropical_gpu as tg
from conftest import require_backend
from pytropical_gpu import HybridContext, facts, hybrid
from pytropical_gpu.errors import SubnormalFlushError

SUB = np.float32(2.0**-140)  # a float32 subnormal


@pytest.fixture
def ctx():
    """A context routing every matmul to wgpu (as on a machine whose hardware adapter is this one)."""
    require_backend("wgpu")
    c = HybridContext(cpu_threshold=0)
    c._gpu = "wgpu"
    return c


@pytest.fixture
def scans(monkeypatch) -> dict:
    """How many times each operand (by id) had its range / small end read, and the wgpu GEMMs run."""
    got = {"range": [], "small": [], "wgpu": 0}
    real_range, real_small = facts._range, facts._small

    def spy_range(x, *args, **kw):
        got["range"].append(id(x))
        return real_range(x, *args, **kw)

    def spy_small(x, *args, **kw):
        got["small"].append(id(x))
        return real_small(x, *args, **kw)

    monkeypatch.setattr(facts, "_range", spy_range)
    monkeypatch.setattr(facts, "_small", spy_small)
    be = tg.backends.get_backend("wgpu")
    real_gemm = type(be)._gemm

    def spy_gemm(self, *args):
        got["wgpu"] += 1
        return real_gemm(self, *args)

    monkeypatch.setattr(type(be), "_gemm", spy_gemm)
    return got


def _min_plus(a, b, c=None):
    d = (a[:, :, None] + b[None, :, :]).min(axis=1)
    return d if c is None else np.minimum(c, d)


def _verb(ctx, monkeypatch, which: str):
    if which == "module":  # the module verb routes through the default context
        monkeypatch.delenv("PYTROPICAL_BACKEND", raising=False)  # (CI's cpu job sets it)
        monkeypatch.setattr(hybrid, "default_context", lambda: ctx)
        return tg.matmul
    return ctx.matmul


@pytest.mark.parametrize("which", ["context", "module"])
@pytest.mark.parametrize("with_c", [False, True])
def test_each_operand_is_scanned_once_per_call(ctx, flushing, scans, monkeypatch, which, with_c,
                                               rng):
    verb = _verb(ctx, monkeypatch, which)
    a = rng.integers(-4, 5, (7, 5)).astype(np.float32)
    b = rng.integers(-4, 5, (5, 6)).astype(np.float32)
    c = rng.integers(-9, 9, (7, 6)).astype(np.float32) if with_c else None
    got = verb(a, b, "min_plus", c=c)
    np.testing.assert_array_equal(got, _min_plus(a, b, c))
    assert scans["wgpu"] == 1  # exact here whatever the flag: it ran on wgpu
    ops = [id(a), id(b)] + ([id(c)] if with_c else [])
    assert sorted(scans["range"]) == sorted(ops)  # once each: 2 per operand before on a flushing one
    assert sorted(scans["small"]) == (sorted(ops) if flushing else [])
    assert facts.CALL.shared is None


def test_one_array_in_every_place_is_scanned_once(ctx, flushing, scans, rng):
    a = rng.integers(-4, 5, (6, 6)).astype(np.float32)
    np.testing.assert_array_equal(ctx.matmul(a, a, "min_plus", c=a), _min_plus(a, a, a))
    assert scans["range"] == [id(a)] and scans["small"] == ([id(a)] if flushing else [])


def test_facts_do_not_outlive_the_call(ctx, flushing, scans, rng):
    """The next call after an in-place change learns the new values: a subnormal written into a
    kept operand is refused by wgpu (or routed away by auto) on a flushing adapter."""
    a = rng.integers(1, 5, (4, 3)).astype(np.float32)
    b = rng.integers(1, 5, (3, 5)).astype(np.float32)
    np.testing.assert_array_equal(ctx.matmul(a, b, "min_plus"), _min_plus(a, b))
    a[2, 1] = SUB  # in place, between two calls
    if flushing:
        with pytest.raises(SubnormalFlushError, match="a holds 1 subnormal"):  # no verb: no share
            tg.backends.get_backend("wgpu").matmul(a, b, "min_plus")
        with pytest.raises(SubnormalFlushError, match="a holds 1 subnormal"):
            ctx.matmul(a, b, "min_plus", backend="wgpu")
        before = scans["wgpu"]
        np.testing.assert_array_equal(ctx.matmul(a, b, "min_plus"), _min_plus(a, b))
        assert scans["wgpu"] == before  # auto sent it elsewhere (cuda or cpu): exact
    else:
        np.testing.assert_array_equal(ctx.matmul(a, b, "min_plus", backend="wgpu"), _min_plus(a, b))
    assert facts.CALL.shared is None


def test_a_refused_call_leaves_nothing_shared(ctx, flushing, rng):
    a = rng.integers(1, 5, (3, 3)).astype(np.float32)
    a[1, 1] = np.nan
    with pytest.raises(ValueError, match="matmul: a contains NaN"):
        ctx.matmul(a, a.T.copy(), "min_plus")
    assert facts.CALL.shared is None
    a[1, 1] = SUB
    if flushing:
        with pytest.raises(SubnormalFlushError, match="a holds 1 subnormal"):
            ctx.matmul(a, np.ones((3, 2), np.float32), "min_plus", backend="wgpu")
    a[1, 1] = 2
    b = np.ones((3, 2), np.float32)
    np.testing.assert_array_equal(ctx.matmul(a, b, "min_plus", backend="wgpu"), _min_plus(a, b))


def test_outside_a_verb_nothing_is_shared(rng):
    x = rng.standard_normal((3, 3)).astype(np.float32)
    assert facts.CALL.shared is None
    assert facts.of(x) is not facts.of(x)


def test_a_verb_called_inside_another_gives_the_outer_share_back():
    """A verb called during a verb (a user semiring's callback, a backend calling the API) runs
    with a share of its own and leaves the outer call's share as it found it."""
    from pytropical_gpu import facts

    assert facts.CALL.shared is None
    with facts.verb_call():
        outer = facts.CALL.shared
        x = np.ones((3, 3), np.float32)
        f = facts.of(x)
        tg.matmul(x, x, "min_plus", backend="cpu")  # the inner verb call
        assert facts.CALL.shared is outer
        assert facts.of(x) is f
    assert facts.CALL.shared is None
