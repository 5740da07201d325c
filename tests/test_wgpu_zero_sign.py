"""The wgpu zero-sign pass (``backends/wgpu/zsign.py``, ``wgsl/gemm_zsign.wgsl``) on every path that
records a float min/max GEMM: resident chains (eager, and queued through the fast path's plans,
its records and its separate facts dispatch), split-k, blocks beyond one binding, batches with a
broadcast ``c``, the argmax, ``out=``; and no pass where the rule does not apply. Compared as bits
with the reference (tests/reference.py), which states the rule on its own."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_matmul
from test_zero_sign import SELECTIVE, _assert_bits, _draw, keeps_subnormals

from conftest import require_backend
from pytropical_gpu import HybridContext
from pytropical_gpu.backends import get_backend
from pytropical_gpu.backends.wgpu import fastgemm, fastpath, gemm_passes, zsign
from pytropical_gpu.backends.wgpu.runtime import Dispatch

F32 = np.float32


@pytest.fixture
def ctx():
    return HybridContext(backend=require_backend("wgpu"))


def _operands(rng, m, k, n, zeros_only=True):
    tiny = keeps_subnormals("wgpu")  # a flushing adapter refuses 1e-30 * 1e-30 under times
    return _draw(rng, (m, k), F32, zeros_only, tiny), _draw(rng, (k, n), F32, zeros_only, tiny)


def _chain_ref(a, b, c, name):
    return ref_matmul(ref_matmul(a, b, name)[0], c, name)[0]


@pytest.mark.parametrize("name", SELECTIVE)
def test_resident_chain_eager(ctx, rng, name):
    """to_device -> matmul -> matmul, each result kept where the kernel wrote it: the second
    product's operand holds the first's ordered zeros."""
    a, b = _operands(rng, 13, 21, 17)
    c = _draw(rng, (17, 9), F32, True)
    X = ctx.matmul(ctx.to_device(a), ctx.to_device(b), name)
    Y = ctx.matmul(X, ctx.to_device(c), name)
    _assert_bits(ctx.to_host(X), ref_matmul(a, b, name)[0], f"{name} first")
    _assert_bits(ctx.to_host(Y), _chain_ref(a, b, c, name), f"{name} chain")


@pytest.mark.parametrize("route", ["plans", "records", "separate_facts"])
@pytest.mark.parametrize("name", SELECTIVE)
def test_resident_chain_in_a_batch(ctx, rng, monkeypatch, name, route):
    """The same chain queued: the fast path's plans (fastgemm), its records without plans
    (fastpath), and its second facts dispatch (no facts in the GEMM's epilogue)."""
    if route == "records":
        monkeypatch.setattr(fastgemm, "PLANS", False)
    if route == "separate_facts":
        monkeypatch.setattr(fastpath, "FUSED_FACTS_GROUPS", 0)
    a, b = _operands(rng, 12, 40, 33)
    c = _draw(rng, (33, 6), F32, True)
    A, B, C = ctx.to_device(a), ctx.to_device(b), ctx.to_device(c)
    eng = get_backend("wgpu").engine
    before = eng.stats.get("fast_calls", 0)
    with ctx.batch():
        X = ctx.matmul(A, B, name)
        Y = ctx.matmul(X, C, name)
    assert eng.stats.get("fast_calls", 0) - before == 2  # both took the fast path
    _assert_bits(ctx.to_host(X), ref_matmul(a, b, name)[0], f"{name} {route} first")
    _assert_bits(ctx.to_host(Y), _chain_ref(a, b, c, name), f"{name} {route} chain")


@pytest.mark.parametrize("name", SELECTIVE)
@pytest.mark.parametrize("shape", [(37, 70, 129), (8, 300, 12)], ids=lambda s: "x".join(map(str, s)))
def test_split_k(ctx, rng, monkeypatch, name, shape):
    """Split k's layers folded by ⊕, then the pass (with and without ``c``)."""
    m, k, n = shape
    monkeypatch.setattr(gemm_passes, "SPLIT_MIN_K", 16)
    monkeypatch.setattr(gemm_passes, "SPLIT_MIN_WORK", 0)
    assert gemm_passes.split_plan(m, n, k, 1 << 30, 4)[0] > 1
    for zeros_only in (True, False):
        a, b = _operands(rng, m, k, n, zeros_only)
        c = _draw(rng, (m, n), F32, True)
        _assert_bits(ctx.matmul(a, b, name), ref_matmul(a, b, name)[0], f"{name} split")
        _assert_bits(ctx.matmul(a, b, name, c=c), ref_matmul(a, b, name, c)[0], f"{name} split c")


@pytest.mark.parametrize("name", ["max_plus", "min_times", "min_max", "max_min"])
def test_blocks_beyond_one_binding(rng, name):
    """64 KiB bindings, 64 workgroups a dimension: the GEMM runs in blocks (batch entries x rows x
    columns), each with its own pass on the block's bindings."""
    from test_wgpu_engine import _small_engine

    require_backend("wgpu")
    be = _small_engine()
    a = _draw(rng, (2, 300, 70), F32, True)
    b = _draw(rng, (70, 90), F32, True)
    c = _draw(rng, (300, 90), F32, True)
    _assert_bits(be.matmul(a, b, name), ref_matmul(a, b[None], name)[0], f"{name} blocks")
    _assert_bits(be.matmul(a, b, name, c=c), ref_matmul(a, b[None], name, c)[0], f"{name} blocks c")


@pytest.mark.parametrize("name", SELECTIVE)
def test_batched_broadcast_c_and_argmax(ctx, rng, name):
    """Batch strides and broadcasts (a batched, b and c shared; then c batched), with the argmax
    (its second pass on k not a multiple of 4 and on one that is)."""
    for k in (23, 24):
        a = _draw(rng, (3, 9, k), F32, True)
        b = _draw(rng, (k, 19), F32, True)
        c = _draw(rng, (9, 19), F32, True)
        bb = b[None]
        _assert_bits(ctx.matmul(a, b, name, c=c), ref_matmul(a, bb, name, c)[0], f"{name} c shared")
        c3 = _draw(rng, (3, 9, 19), F32, True)
        d, idx = ctx.matmul(a, b, name, c=c3, return_argmax=True)
        want, widx = ref_matmul(a, bb, name, c3)
        _assert_bits(d, want, f"{name} k={k} c batched, argmax")
        np.testing.assert_array_equal(idx, widx)


@pytest.mark.parametrize("name", ["min_plus", "max_min"])
def test_out(rng, name):
    """``out=``: the ordered zeros are what lands in the caller's array."""
    import pytropical_gpu as pt

    require_backend("wgpu")
    a, b = _operands(rng, 11, 30, 14)
    out = np.full((11, 14), 7.0, F32)
    got = pt.matmul(a, b, semiring=name, out=out, backend="wgpu")
    assert got is out
    _assert_bits(out, ref_matmul(a, b, name)[0], f"{name} out=")


def _pass_dispatches(monkeypatch, fn) -> tuple[int, int]:
    """(zero-sign dispatches, all dispatches) that ``fn()`` submits (eagerly, or recorded)."""
    eng = get_backend("wgpu").engine
    sent: list = []
    submit = eng.rt.submit

    def spy(cmds):
        sent.extend(cmds)
        return submit(cmds)

    monkeypatch.setattr(eng.rt, "submit", spy)
    fn()
    eng.sync()
    passes = {id(p) for key, p in eng._pipelines.items() if key[0] == "gemm_zsign"}  # noqa: SLF001
    disp = [c for c in sent if isinstance(c, Dispatch)]
    return sum(id(d.pipeline) in passes for d in disp), len(disp)


def test_the_pass_runs_only_where_the_rule_applies(ctx, rng, monkeypatch):
    """One pass after a float min/max GEMM; none after int32, plus_times or a user semiring."""
    from pytropical_gpu.semirings import Semiring

    f = _draw(rng, (6, 20), F32, True)
    i = rng.integers(-3, 3, (6, 20)).astype(np.int32)
    user = Semiring("user_min_plus", np.minimum, np.add, np.inf, 0.0, dtypes=("float32",),
                    wgsl_add="min(a, b)", wgsl_mul="a + b")
    assert _pass_dispatches(monkeypatch, lambda: ctx.matmul(f, f.T.copy(), "min_plus"))[0] == 1
    F = ctx.to_device(f)
    FT = ctx.to_device(f.T.copy())

    def queued():
        with ctx.batch():
            ctx.matmul(F, FT, "max_min")
    assert _pass_dispatches(monkeypatch, queued)[0] == 1
    # a user float semiring is refused (TypeError) on an adapter that flushes subnormals
    cases = ((i, "max_plus"), (f, "plus_times")) + (((f, user),) if keeps_subnormals("wgpu") else ())
    for a, sr in cases:
        got = _pass_dispatches(monkeypatch, lambda a=a, sr=sr: ctx.matmul(a, a.T.copy(), sr))
        assert got[0] == 0 and got[1] >= 1, (sr, got)
    assert zsign.params(user, np.dtype(F32), False) is None

