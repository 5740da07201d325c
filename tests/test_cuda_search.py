"""The CUDA search kernels one by one (cuda/vsa_search.cu, cuda/vsa_topk.cu through
search_launch.py): every tensor-core variant, the one-query kernels (16-byte scan, popcount), the
previous path, the query planes taken in several shared-memory chunks, several passes over the
memory, and the top-k kernels at their list lengths, each against the numpy reference of
test_search.py. Runs only where CUDA is usable."""

from __future__ import annotations

import numpy as np
import pytest
from test_search import reference, trits

from conftest import require_backend
from pytropical_gpu import TernaryVec
from pytropical_gpu.backends.cuda.search_launch import MMA_VARIANTS  # imports no cupy


@pytest.fixture(scope="module")
def sl():
    require_backend("cuda")
    from pytropical_gpu.backends.cuda import search_launch

    return search_launch


@pytest.fixture
def be(sl):
    from pytropical_gpu.backends import get_backend

    return get_backend("cuda")


def run(be, q, mem, k):
    import cupy as cp

    idx, scores = be.search(TernaryVec.from_array(cp.asarray(q)),
                            TernaryVec.from_array(cp.asarray(mem)), k=k)
    want_i, want_s = reference(q, mem, k)
    np.testing.assert_array_equal(cp.asnumpy(scores), want_s)
    np.testing.assert_array_equal(cp.asnumpy(idx), want_i)


@pytest.mark.parametrize("variant", [None, *MMA_VARIANTS])
@pytest.mark.parametrize("nq", [1, 5, 8, 9, 31, 64, 65])
def test_every_mma_variant(be, sl, monkeypatch, rng, variant, nq):
    monkeypatch.setattr(sl, "ENGINE", "mma")
    monkeypatch.setattr(sl, "VARIANT", variant)
    run(be, trits(rng, (nq, 1000)), trits(rng, (16 * 37 + 5, 1000)), 10)


@pytest.mark.parametrize("engine", ["popc", "scan", "old", "auto"])
@pytest.mark.parametrize("nq", [1, 2, 3, 70])
def test_engines(be, sl, monkeypatch, rng, engine, nq):
    monkeypatch.setattr(sl, "ENGINE", engine)
    run(be, trits(rng, (nq, 333)), trits(rng, (1001, 333)), 7)


@pytest.mark.parametrize("variant", [None, ("cp", 8, 16, 3), (8, 1, 8, 4), (1, 1, 8, 4)])
@pytest.mark.parametrize("budget", [512, 4096, 9000])
def test_query_planes_in_chunks(be, sl, monkeypatch, rng, budget, variant):
    """A shared-memory budget of one k-step (and a few) makes every block restage the queries
    per chunk of the row, for each tile of rows."""
    monkeypatch.setattr(sl, "ENGINE", "mma")
    monkeypatch.setattr(sl, "SMEM_BUDGET", budget)
    monkeypatch.setattr(sl, "VARIANT", variant)
    run(be, trits(rng, (40, 2500)), trits(rng, (700, 2500)), 5)
    run(be, trits(rng, (3, 2500)), trits(rng, (333, 2500)), 5)


def test_several_passes_over_memory(be, sl, monkeypatch, rng):
    monkeypatch.setattr(sl, "SCORES_BUDGET", 4 * 300 * 50)  # 50 queries a pass
    run(be, trits(rng, (130, 200)), trits(rng, (300, 200)), 9)


@pytest.mark.parametrize("k", [1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 500])
def test_topk_list_lengths(be, rng, k):
    mem = trits(rng, (5, 100))[rng.integers(0, 5, 3000)]  # heavy ties across blocks of rows
    run(be, trits(rng, (4, 100)), mem, k)


def test_long_rows(be, rng):
    run(be, trits(rng, (2, 70_001)), trits(rng, (40, 70_001)), 3)


@pytest.mark.parametrize("u", [2, 4, "cp3", "cp5"])
@pytest.mark.parametrize("rows,dim", [(1, 1), (3, 31), (257, 33), (100, 1000), (41, 4099)])
def test_one_query_scan(be, sl, monkeypatch, rng, u, rows, dim):
    monkeypatch.setattr(sl, "ENGINE", "scan")
    monkeypatch.setattr(sl, "SCAN", u)
    run(be, trits(rng, (1, dim)), trits(rng, (rows, dim)), min(rows, 5))


def test_one_query_scan_reads_the_query_from_global_memory(be, sl, monkeypatch, rng):
    monkeypatch.setattr(sl, "ENGINE", "scan")
    run(be, trits(rng, (1, 200_001)), trits(rng, (13, 200_001)), 4)  # 2 x 6,251 words > 48 KiB


def test_memory_planes_off_16_bytes(be, rng):
    """Memory rows starting 44 bytes into the allocation (a view): the one-query path must not use
    16-byte reads there, and the answer stays exact."""
    import cupy as cp

    full = trits(rng, (301, 350))  # 11 words a row
    q = trits(rng, (1, 350))
    v = TernaryVec.from_array(cp.asarray(full))
    mem = TernaryVec._trusted(v.pos[1:], v.neg[1:], 350)
    assert mem.pos.data.ptr % 16 != 0
    idx, scores = be.search(TernaryVec.from_array(cp.asarray(q)), mem, k=6)
    want_i, want_s = reference(q, full[1:], 6)
    np.testing.assert_array_equal(cp.asnumpy(scores), want_s)
    np.testing.assert_array_equal(cp.asnumpy(idx), want_i)


# ---------------------------------------------------------------------------- fused top-k (k <= 32)
@pytest.fixture
def fused_only(sl, monkeypatch):
    """The fused kernels must answer: the unfused scoring and top-k entry points raise."""
    def unfused(*args, **kwargs):
        raise AssertionError("the unfused path ran")

    for name in ("scores", "topk", "topk_blocks"):
        monkeypatch.setattr(sl, name, unfused)
    monkeypatch.setattr(sl, "FUSED_NT", (1, 2, 4, 8))  # every width, not only the routed ones
    return sl


@pytest.mark.parametrize("k", [1, 10, 16, 17, 31, 32])
@pytest.mark.parametrize("nq", [1, 2, 7, 8, 9, 16, 17, 33, 64, 65])
def test_fused_topk(be, fused_only, rng, nq, k):
    """Rows off the 16-row tile and the 128-row round of a block; every query count's NT."""
    run(be, trits(rng, (nq, 300)), trits(rng, (16 * 37 + 5, 300)), k)


@pytest.mark.parametrize("nq", [1, 3, 64])
@pytest.mark.parametrize("k", [16, 32])
def test_fused_ties_across_blocks(be, fused_only, rng, nq, k):
    """Three distinct rows repeated over 40,000 rows (more than one round of tiles a block on any
    GPU of up to 300 SMs, and hundreds of one-query blocks) and zero rows: every block holds the
    same best scores, so the lists and the merge must keep the smallest rows."""
    base = trits(rng, (3, 70))
    mem = base[rng.integers(0, 3, 40_000)]
    mem[rng.integers(0, 40_000, 5000)] = 0
    run(be, trits(rng, (nq, 70)), mem, k)
    run(be, np.repeat(base[1:2], nq, axis=0), mem, k)
    run(be, np.zeros((nq, 70), np.int8), mem, k)  # every score 0: rows 0 .. k-1


@pytest.mark.parametrize("nq", [1, 5, 40])
@pytest.mark.parametrize("rows", [1, 2, 15, 16, 17, 31, 32])
def test_fused_k_equals_rows(be, fused_only, rng, nq, rows):
    mem = trits(rng, (rows, 90))
    run(be, trits(rng, (nq, 90)), mem, rows)
    run(be, trits(rng, (nq, 90)), mem, 1)


@pytest.mark.parametrize("budget", [512, 4096])
def test_fused_query_planes_in_chunks(be, fused_only, monkeypatch, rng, budget):
    monkeypatch.setattr(fused_only, "SMEM_BUDGET", budget)
    run(be, trits(rng, (40, 2500)), trits(rng, (700, 2500)), 12)
    run(be, trits(rng, (3, 2500)), trits(rng, (333, 2500)), 5)


def test_fused_query_groups(be, fused_only, monkeypatch, rng):
    """A candidate budget of one block of queries: several launches, each merged into its slice."""
    monkeypatch.setattr(fused_only, "SCORES_BUDGET", 1)
    run(be, trits(rng, (150, 200)), trits(rng, (3000, 200)), 9)
    run(be, trits(rng, (20, 200)), trits(rng, (3000, 200)), 32)


def test_fused_repeat_calls_reuse_plans(be, fused_only, rng):
    """The kept plan and candidate buffer: a second call of the same shape, then a smaller and a
    larger one, each exact (a stale buffer or plan would give the previous answer)."""
    mem = trits(rng, (2000, 500))
    for nq in (64, 64, 8, 100, 1, 1):
        run(be, trits(rng, (nq, 500)), mem, 20)


@pytest.mark.parametrize("fuse", [True, False])
@pytest.mark.parametrize("engine", ["auto", "mma", "scan"])
def test_fuse_switch(be, sl, monkeypatch, rng, fuse, engine):
    monkeypatch.setattr(sl, "FUSE", fuse)
    monkeypatch.setattr(sl, "ENGINE", engine)
    for nq in (1, 12):
        run(be, trits(rng, (nq, 1000)), trits(rng, (999, 1000)), 16)


@pytest.mark.parametrize("scan", [2, "cp5"])
def test_one_query_not_fused_falls_back(be, sl, monkeypatch, rng, scan):
    """A one-query kernel without a fused instantiation takes the unfused path, still exact."""
    monkeypatch.setattr(sl, "SCAN", scan)
    run(be, trits(rng, (1, 640)), trits(rng, (1000, 640)), 10)


@pytest.mark.parametrize("narrow", [True, False])
@pytest.mark.parametrize("dbl", [True, False])
@pytest.mark.parametrize("nq", [3, 9, 33, 64])
def test_fused_score_buffers(be, fused_only, monkeypatch, rng, dbl, narrow, nq):
    """One or two round buffers (one barrier a round with two), int16 or int32 round scores, over
    several rounds a block."""
    monkeypatch.setattr(fused_only, "DOUBLE_BUFFER", dbl)
    monkeypatch.setattr(fused_only, "NARROW", narrow)
    base = trits(rng, (4, 300))
    mem = base[rng.integers(0, 4, 20_000)]
    run(be, trits(rng, (nq, 300)), mem, 10)
    run(be, trits(rng, (nq, 300)), trits(rng, (16 * 37 + 5, 300)), 32)


@pytest.mark.parametrize("k", [1, 10, 16, 17, 32])
@pytest.mark.parametrize("nq", [1, 20, 64])
def test_unfused_lists_kept_to_k(be, sl, monkeypatch, rng, nq, k):
    """The unfused top-k's warp lists keep k lanes exact (the rest real keys): ties across blocks."""
    monkeypatch.setattr(sl, "FUSE", False)
    base = trits(rng, (3, 100))
    run(be, trits(rng, (nq, 100)), base[rng.integers(0, 3, 30_000)], k)


def test_fused_wide_scores_stay_int32(be, fused_only, rng):
    """dim >= 2^15: the round scores do not fit int16 (extremes +-dim); the int32 buffer is used."""
    dim = 40_000
    mem = trits(rng, (300, dim))
    mem[5], mem[77] = 1, -1
    q = np.ones((20, dim), np.int8)
    q[1::2] = -1
    run(be, q, mem, 4)
