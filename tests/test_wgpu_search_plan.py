"""wgpu search through a cached plan (backends/wgpu/search_plan.py): resident memory, one query
write, one submit, one small read (mapread.Staging on wgpu-py, the runtime's read on Dawn).

Every result is compared with an independent int64 numpy reference (lexicographic (-score, index));
the engine's counters say which path ran, so a test of the plan cannot pass through the generic one.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from test_search import reference

import pytropical_gpu as tg
from conftest import require_backend
from pytropical_gpu.backends import get_backend
from pytropical_gpu.backends.wgpu.runtime import Dispatch
from pytropical_gpu.vsa import TernaryVec


@pytest.fixture(scope="module")
def be():
    require_backend("wgpu")
    return get_backend("wgpu")


@pytest.fixture
def sp(be):
    from pytropical_gpu.backends.wgpu import search_plan

    search_plan.clear(be.engine)
    yield search_plan
    search_plan.clear(be.engine)


def trits(rng, shape):
    return rng.integers(-1, 2, shape).astype(np.int8)


def planned(be) -> int:
    return be.engine.stats.get("search_planned", 0)


def run(be, q, mv, mem, k, qv=None):
    before = planned(be)
    idx, scores = tg.search(qv if qv is not None else TernaryVec.from_array(q), mv, k=k,
                            backend="wgpu")
    want_i, want_s = reference(q, mem, k)
    idx, scores = np.asarray(idx), np.asarray(scores)
    assert idx.dtype == np.int64 and scores.dtype == np.int64
    np.testing.assert_array_equal(idx, want_i)
    np.testing.assert_array_equal(scores, want_s)
    return planned(be) - before


@pytest.mark.parametrize("rows,dim,k", [(1, 5, 1), (777, 100, 7), (2600, 313 * 32, 10),
                                        (3000, 33, 64), (64, 64, 64)])
def test_repeated_queries_one_plan(be, sp, rng, rows, dim, k):
    """Several host queries against one resident memory: every call planned, one plan made."""
    mem = trits(rng, (rows, dim))
    mv = tg.HybridContext(backend="wgpu").to_device(TernaryVec.from_array(mem))
    made = be.engine.stats.get("search_plans", 0)
    for _ in range(3):
        assert run(be, trits(rng, (1, dim)), mv, mem, k) == 1
    assert run(be, trits(rng, (5, dim)), mv, mem, k) == 1  # another Q: another plan
    assert be.engine.stats.get("search_plans", 0) - made == 2


def test_ties_go_to_the_smaller_index(be, sp, rng):
    """Copies of one row across pass-one workgroups and selection groups; a query equal to it, and
    an all-zero query (every score 0: the first k rows)."""
    m, dim = 2600, 90
    mem = trits(rng, (m, dim))
    copies = [3, 63, 64, 1023, 1024, 2047, 2599]
    mem[copies] = mem[3]
    mv = tg.HybridContext(backend="wgpu").to_device(TernaryVec.from_array(mem))
    q = mem[3][None].copy()
    assert run(be, q, mv, mem, 10) == 1
    idx, _ = tg.search(TernaryVec.from_array(q), mv, k=10, backend="wgpu")
    assert list(np.asarray(idx)[0, :len(copies)]) == copies
    assert run(be, np.zeros((1, dim), np.int8), mv, mem, 10) == 1


def test_resident_query_and_numpy_out(be, sp, rng):
    """A resident query is bound in place; the pairs come back as numpy arrays either way."""
    mem = trits(rng, (1500, 320))
    q = trits(rng, (1, 320))
    ctx = tg.HybridContext(backend="wgpu")
    mv = ctx.to_device(TernaryVec.from_array(mem))
    for _ in range(2):
        assert run(be, q, mv, mem, 5, qv=ctx.to_device(TernaryVec.from_array(q))) == 1
    assert run(be, q, mv, mem, 5) == 1  # the same plan with a host query


def test_same_results_as_the_generic_path(be, sp, rng, monkeypatch):
    mem = trits(rng, (2000, 200))
    mv = tg.HybridContext(backend="wgpu").to_device(TernaryVec.from_array(mem))
    q = trits(rng, (3, 200))
    assert run(be, q, mv, mem, 9) == 1
    monkeypatch.setattr(sp, "ENABLED", False)
    assert run(be, q, mv, mem, 9) == 0


def test_new_memory_new_plan_and_eviction(be, sp, rng, monkeypatch):
    """A memory that died is never searched through its old plan; plans beyond MAX_PLANS close
    (their scratch returns to the pool) and the results stay exact."""
    monkeypatch.setattr(sp, "MAX_PLANS", 2)
    ctx = tg.HybridContext(backend="wgpu")
    for i in range(5):
        mem = trits(rng, (500 + i, 64))
        mv = ctx.to_device(TernaryVec.from_array(mem))
        assert run(be, trits(rng, (1, 64)), mv, mem, 4) == 1
        del mv
        gc.collect()
        assert len(sp.plans(be.engine)) <= 2


def test_a_dead_memorys_plan_gives_its_scratch_back_without_another_search(be, sp, rng):
    """A plan holds pool scratch while its memory lives; when the memory dies the scratch returns
    to the pool at once, not only when the plan is next looked up or evicted (a program that
    searched once must not keep pool buffers live for good)."""
    pool = be.engine.pool
    gc.collect()
    pool._reclaim()  # settle what earlier tests gave back
    base = pool.live_bytes
    mem = trits(rng, (300, 64))
    mv = tg.HybridContext(backend="wgpu").to_device(TernaryVec.from_array(mem))
    assert run(be, trits(rng, (1, 64)), mv, mem, 5) == 1
    assert pool.live_bytes > base  # the plan's scratch is live
    del mv
    gc.collect()
    pool._reclaim()
    assert len(sp.plans(be.engine)) == 1  # the plan itself stays until it is looked up
    assert pool.live_bytes == base


def test_host_memory_and_batches_take_the_generic_path(be, sp, rng):
    mem = trits(rng, (300, 64))
    q = trits(rng, (1, 64))
    assert run(be, q, TernaryVec.from_array(mem), mem, 3) == 0  # host memory: uploaded per call
    ctx = tg.HybridContext(backend="wgpu")
    mv = ctx.to_device(TernaryVec.from_array(mem))
    with ctx.batch():
        assert run(be, q, mv, mem, 3) == 0


@pytest.mark.parametrize("rows", [20_000, 40_000, 110_000])
def test_merge_passes(be, sp, rng, rows):
    """Candidate lists of 1,025-2,048 per query (one last merge pass with 8 slots a thread:
    20,000 rows at k = 64, 110,000 at k = 10) and beyond (a 4-slot pass first: 40,000 at k = 64),
    on memories of few distinct rows, so that every selection is all ties."""
    k = 10 if rows > 100_000 else 64
    mem = trits(rng, (5, 40))[rng.integers(0, 5, rows)]
    mv = tg.HybridContext(backend="wgpu").to_device(TernaryVec.from_array(mem))
    assert run(be, mem[rows // 2][None].copy(), mv, mem, k) == 1
    assert run(be, trits(rng, (1, 40)), mv, mem, k) == 1
    (plan,) = sp.plans(be.engine).values()
    passes = [c.pipeline for c in plan.cmds if isinstance(c, Dispatch)]
    assert len(passes) == (4 if rows == 40_000 else 3)  # pass one, the score pass, the merges


def test_plan_copies_strided_host_queries(be, sp, rng):
    """The plan copies a host query into views of its upload buffer made once: a strided or
    Fortran-ordered query, and new values in the same arrays between calls, must all be seen."""
    mem = trits(rng, (500, 300))
    mv = tg.HybridContext(backend="wgpu").to_device(TernaryVec.from_array(mem))
    q = trits(rng, (3, 300))
    qv = TernaryVec.from_array(q)
    assert run(be, q[::2], mv, mem, 4, TernaryVec(qv.pos[::2], qv.neg[::2], 300)) == 1
    fp, fn = np.asfortranarray(qv.pos[::2]), np.asfortranarray(qv.neg[::2])
    assert run(be, q[::2], mv, mem, 4, TernaryVec(fp, fn, 300)) == 1
    q2 = trits(rng, (2, 300))
    q2v = TernaryVec.from_array(q2)
    fp[...], fn[...] = q2v.pos, q2v.neg  # same arrays, new values: the next call sees them
    assert run(be, q2, mv, mem, 4, TernaryVec(fp, fn, 300)) == 1
