"""The CUDA search's one-launch top-k and its two-kernel path (search_two.py; search_launch switches
PLANNED, SCORES16, LAST_MERGE): int16 or int32 scores, the top-k's last block of each query merging
(an atomic counter per query that it puts back to 0), and the one-query scan whose last block
merges, each against the numpy reference of test_search.py. The counters must be back at 0 after
every launch: repeated calls, calls of other grid sizes and query groups follow each other. Runs
only where CUDA is usable."""

from __future__ import annotations

import numpy as np
import pytest
import test_cuda_search
from test_search import trits

sl, be, run = test_cuda_search.sl, test_cuda_search.be, test_cuda_search.run  # the same fixtures


@pytest.fixture
def planned_only(sl, monkeypatch):
    """The two-kernel path must answer: the general path's entry points raise."""
    def general(*args, **kwargs):
        raise AssertionError("the general unfused path ran")

    for name in ("scores", "topk", "topk_blocks"):
        monkeypatch.setattr(sl, name, general)
    return sl


@pytest.mark.parametrize("last", [True, False])
@pytest.mark.parametrize("s16", [True, False])
@pytest.mark.parametrize("nq", [2, 9, 33, 64, 65])
def test_two_kernel_path(be, planned_only, monkeypatch, rng, nq, s16, last):
    """Ties over many top-k blocks a query (30,000 rows of 3 distinct ones), then rows off every
    tile, each twice (the counters reused)."""
    monkeypatch.setattr(planned_only, "SCORES16", s16)
    monkeypatch.setattr(planned_only, "LAST_MERGE", last)
    base = trits(rng, (3, 200))
    mem = base[rng.integers(0, 3, 30_000)]
    mem[rng.integers(0, 30_000, 3000)] = 0
    for _ in range(2):
        run(be, trits(rng, (nq, 200)), mem, 10)
        run(be, trits(rng, (nq, 200)), trits(rng, (16 * 37 + 5, 200)), 32)


@pytest.mark.parametrize("k", [1, 16, 17, 32])
def test_two_kernel_path_k(be, planned_only, rng, k):
    mem = trits(rng, (5, 90))[rng.integers(0, 5, 5000)]
    run(be, trits(rng, (12, 90)), mem, k)
    run(be, np.zeros((12, 90), np.int8), mem, k)  # every score 0: rows 0 .. k-1


@pytest.mark.parametrize("last", [True, False])
def test_two_kernel_query_groups(be, planned_only, monkeypatch, rng, last):
    """A score budget of a few queries: several launches of each kernel, one counter array."""
    monkeypatch.setattr(planned_only, "LAST_MERGE", last)
    monkeypatch.setattr(planned_only, "SCORES_BUDGET", 2 * 3000 * 20)
    run(be, trits(rng, (150, 200)), trits(rng, (3000, 200)), 9)
    run(be, trits(rng, (20, 200)), trits(rng, (3000, 200)), 32)


@pytest.mark.parametrize("dim", [32 * 1023, 32 * 1023 + 1])
def test_scores_at_the_int16_edge(be, planned_only, dim):
    """dim = 32,736 (the largest with int16 scores: 32 words * 1,023 < 2^15) and one trit more
    (int32 scores), each with the extreme scores +-dim in the top rows."""
    mem = np.zeros((300, dim), np.int8)
    mem[5], mem[77], mem[200, ::2] = 1, -1, 1
    q = np.ones((4, dim), np.int8)
    q[1::2] = -1
    run(be, q, mem, 3)


@pytest.mark.parametrize("variant", [(8, 1, 8, 4), (8, 1, 16, 2), (4, 1, 8, 4), (1, 1, 8, 4)])
def test_two_kernel_variants(be, planned_only, monkeypatch, rng, variant):
    monkeypatch.setattr(planned_only, "ENGINE", "mma")
    monkeypatch.setattr(planned_only, "VARIANT", variant)
    run(be, trits(rng, (64, 1000)), trits(rng, (16 * 37 + 5, 1000)), 10)
    run(be, trits(rng, (5, 1000)), trits(rng, (1001, 1000)), 16)


@pytest.mark.parametrize("last", [True, False])
def test_one_query_scan_last_block_merge(be, sl, monkeypatch, rng, last):
    """The fused one-query scan at several grid sizes in a row (1 block up to many), with ties
    across its blocks: the last block to finish must merge every block's list."""
    monkeypatch.setattr(sl, "LAST_MERGE", last)
    base = trits(rng, (3, 300))
    for rows in (1, 9, 700, 40_000, 700, 9):
        mem = base[rng.integers(0, 3, rows)]
        run(be, trits(rng, (1, 300)), mem, min(rows, 10))
        run(be, base[1:2], mem, min(rows, 16))
