"""The one-query CUDA search with its merge in a second kernel launched by programmatic dependent
launch (search_pdl.PDL_MERGE: the scan lets the merge launch at once, the merge waits on the
device), against the numpy reference of test_search.py, with the switch on and off: ties to the
smaller row over many blocks, odd dims, fewer rows than blocks, k up to 32 and past it (the
unfused path), calls whose scores fall from one to the next, results that stay the caller's.
Runs only where CUDA is usable."""

from __future__ import annotations

import numpy as np
import pytest
import test_cuda_search
from test_cuda_search_s4 import check_one_query_ties
from test_cuda_search_s4c import RESULTS_STAY, check_results_stay
from test_search import trits

sl, be, run = test_cuda_search.sl, test_cuda_search.be, test_cuda_search.run  # the same fixtures


@pytest.fixture
def pdl(sl):
    from pytropical_gpu.backends.cuda import search_pdl

    return search_pdl


@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("scan", ["tma3", "tma4", "tma3v", "tma4v", "tma6", "cp3"])
@pytest.mark.parametrize("dim", [1, 33, 1000])
def test_pdl_merge(be, sl, pdl, monkeypatch, rng, scan, dim, on):
    """Ties over many blocks, rows at every offset, k <= 32 and 40; tma6 and cp3 have no
    dependent-launch instantiation (the last-block merge as before)."""
    monkeypatch.setattr(pdl, "PDL_MERGE", on)
    monkeypatch.setattr(sl, "SCAN", scan)
    check_one_query_ties(be, rng, dim)


@pytest.mark.parametrize("on", [True, False])
@pytest.mark.parametrize("blocks", [1, 2, None])
def test_pdl_falling_scores(be, sl, pdl, monkeypatch, rng, blocks, on):
    """High scores, then a call whose best is below the first's: nothing of the first call's
    lists may reach the second's merge. Fewer rows than blocks too."""
    monkeypatch.setattr(pdl, "PDL_MERGE", on)
    monkeypatch.setattr(sl, "TMA_BLOCKS", blocks)
    dim = 640
    q = trits(rng, (1, dim), density=1.0)
    for rows, sign in ((20_000, 1), (20_000, -1), (9, 1), (9, -1), (3001, 1), (3001, -1)):
        mem = np.repeat(q * sign, rows, axis=0)
        mem[:, : dim // 2] = trits(rng, (rows, dim // 2))
        for k in (1, 9, 32):
            run(be, q, mem, min(k, rows))


@pytest.mark.parametrize("on", [True, False])
def test_pdl_results_stay(be, sl, pdl, monkeypatch, rng, on):
    """Each call's results are its own across later calls of the same and other shapes."""
    monkeypatch.setattr(pdl, "PDL_MERGE", on)
    check_results_stay(be, rng, RESULTS_STAY + ((500, 100, 32),))
