"""wgpu search pass one (vsa_search_dot): query blocks, lane-split rows, row blocks, reduction rounds.

Each case compares with an independent int64 numpy reference (lexicographic (-score, index)) and
with the cpu backend. Sizes straddle the kernel's blocks: QB queries per pass (16 by default), 64
memory rows per pass-one workgroup (256 / L lanes x R rows), 1,024 scores per selection group.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_search import reference

import pytropical_gpu as tg
from conftest import require_backend
from pytropical_gpu.backends import get_backend
from pytropical_gpu.vsa import TernaryVec


@pytest.fixture(scope="module")
def be():
    require_backend("wgpu")
    return get_backend("wgpu")


@pytest.fixture(scope="module")
def sm():
    from pytropical_gpu.backends.wgpu import vsa_search

    return vsa_search


@pytest.fixture(autouse=True)
def gpu_only(monkeypatch):
    """Every case here must take the GPU path: the host top-k (vsa.dot) must not run."""
    from pytropical_gpu.backends.wgpu import vsa

    def no_dot(*a, **kw):
        raise AssertionError("search went through vsa.dot (host top-k)")

    monkeypatch.setattr(vsa, "dot", no_dot)


def trits(rng, shape):
    return rng.integers(-1, 2, shape).astype(np.int8)


def check(be, q, mem, k):
    qv, mv = TernaryVec.from_array(q), TernaryVec.from_array(mem)
    idx, scores = be.search(qv, mv, k=k)
    want_i, want_s = reference(q, mem, k)
    np.testing.assert_array_equal(idx, want_i)
    np.testing.assert_array_equal(scores, want_s)
    ci, cs = get_backend("cpu").search(qv, mv, k=k)
    np.testing.assert_array_equal(idx, ci)
    np.testing.assert_array_equal(scores, cs)
    return idx, scores


@pytest.mark.parametrize("nq", [1, 2, 7, 16, 17, 64, 65])
def test_query_counts(be, rng, nq):
    """Partial and whole query blocks; each query's best row is planted so a mixed-up query block
    or query offset shows."""
    mem = trits(rng, (333, 33))
    plant = rng.integers(0, 333, nq)
    q = mem[plant].copy()
    idx, _ = check(be, q, mem, 3)
    assert (idx[:, 0] <= plant).all()  # the planted row, or an equal one with a smaller index


@pytest.mark.parametrize("w", [1, 2, 7, 8, 9, 33, 313])
def test_word_counts(be, rng, w):
    """Rows shorter than, equal to and longer than the L = 8 lanes, and the issue's 313 words."""
    d = 32 * w - (5 if w > 1 else 0)
    m = 200 if w == 313 else 700
    check(be, trits(rng, (19, d)), trits(rng, (m, d)), 5)


@pytest.mark.parametrize("m", [1, 63, 64, 65, 64 * 3 + 5, 1023, 1025])
def test_rows_not_a_multiple_of_the_block(be, rng, m):
    check(be, trits(rng, (5, 70)), trits(rng, (m, 70)), min(m, 10))


def test_k_one_and_k_max(be, rng, sm):
    mem = trits(rng, (1500, 40))
    q = trits(rng, (18, 40))
    check(be, q, mem, 1)
    check(be, q, mem, sm.TOPK_MAX)
    check(be, q, mem[:sm.TOPK_MAX], sm.TOPK_MAX)


def test_ties_across_blocks(be, rng):
    """Copies of one row in different pass-one workgroups (64 rows) and selection groups (1,024),
    matched by copies of one query in different query blocks: ties go to the smaller index."""
    m = 2600
    mem = trits(rng, (m, 45))
    copies = [5, 63, 64, 130, 1023, 1024, 2047, 2599]
    mem[copies] = mem[5]
    q = trits(rng, (40, 45))
    q[[0, 15, 16, 33, 39]] = mem[5]
    idx, _ = check(be, q, mem, 10)
    for i in (0, 15, 16, 33, 39):
        assert list(idx[i, :len(copies)]) == copies
    # few distinct rows everywhere: every selection is all ties
    check(be, q, trits(rng, (3, 45))[rng.integers(0, 3, m)], 64)


@pytest.mark.parametrize("qb,lanes,rows", [(1, 8, 2), (4, 4, 1), (8, 16, 2), (16, 8, 4),
                                           (32, 8, 1), (16, 32, 2), (2, 1, 3)])
def test_kernel_variants(be, rng, sm, monkeypatch, qb, lanes, rows):
    """The variants the benchmark times (queries per pass, lanes per row, rows per thread); on an
    engine of its own, so these pipelines stay out of the process engine's cache (which
    test_variant_list_covers_what_the_backend_compiles compares with ``variants()``)."""
    monkeypatch.setattr(sm, "SEARCH_QB", qb)
    monkeypatch.setattr(sm, "SEARCH_LANES", lanes)
    monkeypatch.setattr(sm, "SEARCH_ROWS", rows)
    check(_limited(), trits(rng, (37, 100)), trits(rng, (777, 100)), 7)


def _limited(**limits):
    from pytropical_gpu.backends.wgpu.backend import WgpuBackend
    from pytropical_gpu.backends.wgpu.device import get_engine
    from pytropical_gpu.backends.wgpu.engine import Engine

    eng = Engine(get_engine().rt)
    eng.limits = dataclasses.replace(eng.limits, **limits)
    return WgpuBackend(engine=eng)


def test_small_workgroup_storage_and_bindings(be, rng):
    """A 2 KiB workgroup storage limit: one (row, query) pair per reduction round (32 rounds);
    64 KiB bindings and 8 workgroups a grid dimension: memory and queries in chunks."""
    mem = trits(rng, (900, 200))
    q = trits(rng, (40, 200))
    q[33] = mem[899]
    check(_limited(max_workgroup_storage=2048), q, mem, 4)
    idx, _ = check(_limited(max_storage_binding=1 << 16, max_workgroups_per_dim=8), q, mem, 4)
    assert idx[33, 0] == 899


def test_resident_memory(be, rng):
    """Planes on the device (WgpuArray): the memory is bound in place, results as from numpy."""
    mem = trits(rng, (1100, 313 * 32))
    q = trits(rng, (65, 313 * 32))
    q[64] = mem[1099]
    ctx = tg.HybridContext(backend="wgpu")
    mv = ctx.to_device(TernaryVec.from_array(mem))
    qv = ctx.to_device(TernaryVec.from_array(q))
    idx, scores = tg.search(qv, mv, k=10, backend="wgpu")
    want_i, want_s = reference(q, mem, 10)
    np.testing.assert_array_equal(np.asarray(idx), want_i)
    np.testing.assert_array_equal(np.asarray(scores), want_s)
    assert want_i[64, 0] == 1099
