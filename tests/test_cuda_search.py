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
