"""The CUDA search variants of issue 15's fourth session, second part, each against the numpy
reference of test_search.py: the one-query scan whose blocks put their k-th key into a global
floor and whose last block merges from it (search_fused.FLOOR_MERGE; the floor must be back at
EMPTY after every launch, so calls whose scores fall from one to the next are checked), the
results' buffer allocated a call ahead (OUT_AHEAD: a result must stay the caller's after later
calls), and the 64-query top-k's one-warp last-block merge (search_two.WARP_MERGE, with the
block merge past 256 keys). Ties to the smaller row, odd dims, fewer rows than blocks, k up to 32
and past it. Runs only where CUDA is usable."""

from __future__ import annotations

import numpy as np
import pytest
import test_cuda_search
from test_cuda_search_s4 import check_one_query_ties, check_topk_ties
from test_search import reference, trits

from pytropical_gpu import TernaryVec

sl, be, run = test_cuda_search.sl, test_cuda_search.be, test_cuda_search.run  # the same fixtures


@pytest.fixture
def fused(sl):
    from pytropical_gpu.backends.cuda import search_fused

    return search_fused


@pytest.mark.parametrize("scan", ["tma3", "tma4", "tma3v", "tma4v", "tma6"])
@pytest.mark.parametrize("blocks", [None, 1, 2])
@pytest.mark.parametrize("dim", [1, 33, 1000])
def test_floor_merge(be, sl, fused, monkeypatch, rng, scan, blocks, dim):
    """Ties over many blocks, rows at every offset, k <= 32 (floor lists) and 40 (the sort);
    tma6 has no floor instantiation (the plain merge)."""
    monkeypatch.setattr(fused, "FLOOR_MERGE", True)
    monkeypatch.setattr(sl, "SCAN", scan)
    monkeypatch.setattr(sl, "TMA_BLOCKS", blocks)
    check_one_query_ties(be, rng, dim)


@pytest.mark.parametrize("floor", [True, False])
@pytest.mark.parametrize("scan", ["tma3", "tma4v"])
def test_floor_reset_between_calls(be, sl, fused, monkeypatch, rng, scan, floor):
    """A call with high scores, then one whose best score is below the first's floor: a floor
    left over from the first would drop the second's results. Fewer rows than blocks too."""
    monkeypatch.setattr(fused, "FLOOR_MERGE", floor)
    monkeypatch.setattr(sl, "SCAN", scan)
    dim = 640
    q = trits(rng, (1, dim), density=1.0)
    for rows, sign in ((20_000, 1), (20_000, -1), (9, 1), (9, -1), (3001, 1), (3001, -1)):
        mem = np.repeat(q * sign, rows, axis=0)  # scores near +dim / 2, then near -dim / 2
        mem[:, : dim // 2] = trits(rng, (rows, dim // 2))
        for k in (1, 9):
            run(be, q, mem, min(k, rows))


@pytest.mark.parametrize("ahead", [True, False])
@pytest.mark.parametrize("raw", [True, False])
def test_out_ahead_results_stay(be, sl, fused, monkeypatch, rng, ahead, raw):
    """Each call's results are its own: kept across later calls of the same and other shapes."""
    monkeypatch.setattr(fused, "OUT_AHEAD", ahead)
    monkeypatch.setattr(fused, "RAW_LAUNCH", raw)
    check_results_stay(be, rng, RESULTS_STAY)


#: (rows, dim, k) of the one-query calls whose results must stay the caller's: repeats between
#: other shapes, so a result buffer reused a call too early shows as a changed earlier result
RESULTS_STAY = ((500, 100, 10), (500, 100, 10), (777, 333, 5), (500, 100, 10), (4099, 1000, 20),
                (500, 100, 10))


def check_results_stay(be, rng, shapes):
    """One-query searches of ``shapes`` in turn, every result kept and checked against the
    reference only after the last call."""
    import cupy as cp

    kept = []
    for rows, dim, k in shapes:
        q, mem = trits(rng, (1, dim)), trits(rng, (rows, dim))
        got = be.search(TernaryVec.from_array(cp.asarray(q)), TernaryVec.from_array(cp.asarray(mem)),
                        k=k)
        kept.append((got, reference(q, mem, k)))
    for (idx, val), (want_i, want_s) in kept:
        np.testing.assert_array_equal(cp.asnumpy(val), want_s)
        np.testing.assert_array_equal(cp.asnumpy(idx), want_i)


@pytest.mark.parametrize("warp", [True, False])
@pytest.mark.parametrize("tpt", [16, 256, 512])
@pytest.mark.parametrize("nq", [2, 9, 64])
def test_warp_merge(be, sl, monkeypatch, rng, tpt, nq, warp):
    """int16 top-k with the one-warp last-block merge: few blocks a query (one warp merges) and
    many (16 a thread: past 256 keys, the block merge), ties, k up to 32."""
    from pytropical_gpu.backends.cuda import search_two

    monkeypatch.setattr(search_two, "WARP_MERGE", warp)
    monkeypatch.setattr(sl, "TOPK_PER_THREAD", tpt)
    check_topk_ties(be, rng, nq)


@pytest.mark.parametrize("raw", [True, False])
@pytest.mark.parametrize("warp", [True, False])
def test_two_raw_launch(be, sl, monkeypatch, rng, warp, raw):
    """The 2+ query scoring kernel launched through cuLaunchKernel (search_two.RAW_LAUNCH), on
    changing shapes (the kept parameter blocks rewritten), int16 and int32 scores, with either
    last-block merge."""
    from pytropical_gpu.backends.cuda import search_two

    monkeypatch.setattr(search_two, "RAW_LAUNCH", raw)
    monkeypatch.setattr(search_two, "WARP_MERGE", warp)
    for nq, rows, dim in ((2, 500, 100), (64, 4104, 333), (9, 777, 1000), (2, 500, 100),
                          (64, 4104, 333), (3, 2000, 33 * 1024)):
        for k in (1, 10, 32):
            run(be, trits(rng, (nq, dim)), trits(rng, (rows, dim), density=0.3), k)
