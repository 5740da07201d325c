"""The CUDA search variants of issue 15's fourth session, each against the numpy reference of
test_search.py: the one-query scan whose rows arrive by sm_90 bulk copies (search_scan_tma, its
stages, blocks a SM, the query as words or as 4 shifted copies; scores and fused lists), the
one-query launch through ``cuLaunchKernel`` (search_fused.RAW_LAUNCH) or with the results passed
as addresses (PTR_ARGS), and the int16 top-k with 16-byte loads (search_two.TOPK_VEC). Ties to the
smaller row (a few distinct rows repeated), odd dims (rows at every 16-byte offset), fewer rows
than blocks, k up to 32 and past it. Runs only where CUDA is usable."""

from __future__ import annotations

import numpy as np
import pytest
import test_cuda_search
from test_search import trits

sl, be, run = test_cuda_search.sl, test_cuda_search.be, test_cuda_search.run  # the same fixtures

SCANS = ["tma3", "tma4", "tma6", "tma8", "tma3v", "tma4v", "tma6v", "tma8v"]


@pytest.fixture
def fused(sl):
    from pytropical_gpu.backends.cuda import search_fused

    return search_fused


@pytest.mark.parametrize("scan", SCANS)
@pytest.mark.parametrize("blocks", [None, 1, 2])
@pytest.mark.parametrize("dim", [1, 33, 333, 1000])
def test_tma_scan(be, sl, monkeypatch, rng, scan, blocks, dim):
    """Fused lists (k <= 32) and scores (k = 40: the sort path's kernel), rows at every offset."""
    monkeypatch.setattr(sl, "SCAN", scan)
    monkeypatch.setattr(sl, "TMA_BLOCKS", blocks)
    check_one_query_ties(be, rng, dim)


@pytest.mark.parametrize("scan", ["tma3v", "tma8v"])
@pytest.mark.parametrize("rows", [1, 7, 9, 2113])
def test_tma_scan_few_rows(be, sl, monkeypatch, rng, scan, rows):
    """Fewer rows than warps (blocks whose warps see none), k = rows."""
    monkeypatch.setattr(sl, "SCAN", scan)
    mem = trits(rng, (rows, 317))
    run(be, trits(rng, (1, 317)), mem, min(rows, 10))
    run(be, trits(rng, (1, 317)), mem, rows if rows <= 32 else 32)


@pytest.mark.parametrize("raw", [True, False])
@pytest.mark.parametrize("ptr", [True, False])
@pytest.mark.parametrize("scan", ["cp3", "tma4v"])
def test_one_query_launch(be, sl, fused, monkeypatch, rng, raw, ptr, scan):
    """Each launch path, called repeatedly on changing shapes (kept parameter blocks rewritten)."""
    monkeypatch.setattr(fused, "RAW_LAUNCH", raw)
    monkeypatch.setattr(fused, "PTR_ARGS", ptr)
    monkeypatch.setattr(sl, "SCAN", scan)
    for rows, dim in ((500, 100), (777, 333), (500, 100), (4099, 1000)):
        for k in (1, 10, 20):
            run(be, trits(rng, (1, dim)), trits(rng, (rows, dim)), k)


@pytest.mark.parametrize("vec", [4, 8])
@pytest.mark.parametrize("tpt", [16, 128, 512])
@pytest.mark.parametrize("nq", [2, 9, 64])
def test_vector_topk(be, sl, monkeypatch, rng, vec, tpt, nq):
    """int16 scores read 8 at a time: ties over many blocks, rows a multiple of 8 (the vector
    path) and not (the one-score path), k up to 32."""
    from pytropical_gpu.backends.cuda import search_two

    monkeypatch.setattr(search_two, "TOPK_VEC", vec)
    monkeypatch.setattr(sl, "TOPK_PER_THREAD", tpt)
    check_topk_ties(be, rng, nq)


def check_one_query_ties(be, rng, dim: int) -> None:
    """One query against 3,001 rows of 5 distinct ones (ties over many blocks) with 300 others,
    rows at every 16-byte offset; k <= 32 (fused lists) and 40 (the sort path's kernel)."""
    base = trits(rng, (5, dim))
    mem = base[rng.integers(0, 5, 3001)]
    mem[rng.integers(0, 3001, 300)] = trits(rng, (300, dim))
    q = trits(rng, (1, dim))
    for k in (1, 10, 17, 32, 40):
        run(be, q, mem, k)


def check_topk_ties(be, rng, nq: int) -> None:
    """nq queries against rows of 3 distinct ones and zeros (ties over many blocks), rows a multiple
    of 8 and not, k up to 32; then scores near zero (many ties)."""
    base = trits(rng, (3, 200))
    for rows in (30_000, 30_001, 8):
        mem = base[rng.integers(0, 3, rows)]
        mem[rng.integers(0, rows, rows // 10)] = 0
        for k in (1, 10, 32):
            run(be, trits(rng, (nq, 200)), mem, min(k, rows))
    mem = trits(rng, (4104, 1000))
    mem[:, :] = np.where(rng.random((4104, 1000)) < 0.01, mem, 0)  # scores near zero: many ties
    run(be, trits(rng, (nq, 1000)), mem, 10)
