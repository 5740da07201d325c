"""The CUDA search changes of issue 15's fifth session, against the numpy reference of
test_search.py: the one-query scan with G rows a bulk copy (search_group.py,
``SCAN = "tmag<G>s<STAGES>[x][t]"``: rows in runs a warp or groups dealt in turn, the last
block's merge from the global floor or the tighter one; runs of every length mod G, fewer rows
than warps, rows at every 16-byte offset, ties across runs, falling scores between calls), and the
planes taken as they are where they are C-contiguous 2-d cupy arrays (``CudaBackend._flat2d``):
a resident memory changed in place, another memory of the same shape, a plane swapped on the
TernaryVec and non-contiguous planes must each give that call's own results. Runs only where
CUDA is usable (the pure-Python parts also on the cpu backend)."""

from __future__ import annotations

import numpy as np
import pytest
import test_cuda_search
from test_cuda_search_s4 import check_one_query_ties
from test_search import reference, trits

from pytropical_gpu import TernaryVec
from pytropical_gpu.ops._planes import flat

sl, be, run = test_cuda_search.sl, test_cuda_search.be, test_cuda_search.run  # the same fixtures

#: run orders ("x": groups dealt in turn), merges ("t": the tighter floor), G and STAGES
GROUP_SCANS = ["tmag1s3", "tmag2s2", "tmag2s3", "tmag3s2", "tmag4s2", "tmag3s2t", "tmag2s2x",
               "tmag3s2xt", "tmag3s3xt", "tmag5s2xt"]


@pytest.fixture
def group(sl, be, monkeypatch):
    """search_group, with its scan counted (so a test can tell the grouped kernel ran)."""
    from pytropical_gpu.backends.cuda import search_fused, search_group

    made = []
    orig = search_group.scan

    def counted(*args):
        out = orig(*args)
        made.append(out is not None)
        return out

    monkeypatch.setattr(search_group, "scan", counted)
    monkeypatch.setattr(search_fused, "_plans", {})  # plans made afresh under these switches
    search_group.made = made
    return search_group


def _sm90(be) -> bool:
    return int(be._cp.cuda.Device().compute_capability) >= 90


@pytest.mark.parametrize("scan", GROUP_SCANS)
@pytest.mark.parametrize("blocks", [None, 1, 2])
@pytest.mark.parametrize("dim", [1, 33, 1000])
def test_group_scan_ties(be, sl, group, monkeypatch, rng, scan, blocks, dim):
    """Ties over many blocks and runs, rows at every offset, k <= 32 (lists) and 40 (the sort)."""
    monkeypatch.setattr(sl, "SCAN", scan)
    monkeypatch.setattr(sl, "TMA_BLOCKS", blocks)
    check_one_query_ties(be, rng, dim)
    assert any(group.made) == _sm90(be)


@pytest.mark.parametrize("scan", GROUP_SCANS)
def test_group_scan_run_lengths(be, sl, group, monkeypatch, rng, scan):
    """Row counts that leave every remainder mod G in a warp's run, fewer rows than warps (empty
    runs), one row, and dims whose rows start at every word offset; the best row last and first."""
    monkeypatch.setattr(sl, "SCAN", scan)
    for rows in (1, 2, 3, 7, 9, 100, 2111, 2112, 2113, 4225, 8447, 20_001):
        for dim in (31, 320, 999):
            q, mem = trits(rng, (1, dim)), trits(rng, (rows, dim))
            mem[-1] = q[0]  # the best row is the last of the last run
            run(be, q, mem, min(rows, 10))
            mem[0] = q[0]  # and now tied with the first: the smaller index first
            run(be, q, mem, min(rows, 3))


@pytest.mark.parametrize("k", [10, 40])
def test_group_scan_large_dim_takes_tma3(be, sl, group, monkeypatch, rng, k):
    """Where the grouped scan's buffers do not fit in shared memory (22,400 trits: 700 words, 3
    rows a copy) and for k > 32 (unfused scores), the one-query call takes tma3, as before."""
    monkeypatch.setattr(sl, "SCAN", "tmag3s2xt")
    q, mem = trits(rng, (1, 22_400)), trits(rng, (3001, 22_400))
    mem[2999] = mem[5]  # a tie across blocks
    run(be, q, mem, k)
    if _sm90(be) and k <= 32:
        assert group.made and not any(group.made)


@pytest.mark.parametrize("scan", ["tmag2s2", "tmag3s2", "tmag3s2xt", "tmag4s2t"])
def test_group_floor_reset_between_calls(be, sl, group, monkeypatch, rng, scan):
    """A call with high scores, then one whose best is below the first's floor (a floor left over
    would drop the second's results); fewer rows than blocks too."""
    monkeypatch.setattr(sl, "SCAN", scan)
    dim = 640
    q = trits(rng, (1, dim), density=1.0)
    for rows, sign in ((20_000, 1), (20_000, -1), (9, 1), (9, -1), (3001, 1), (3001, -1)):
        mem = np.repeat(q * sign, rows, axis=0)
        mem[:, : dim // 2] = trits(rng, (rows, dim // 2))
        for k in (1, 9):
            run(be, q, mem, min(k, rows))


def _check(be, qv, mv, q, mem, k):
    import cupy as cp

    idx, scores = be.search(qv, mv, k=k)
    want_i, want_s = reference(q, mem, k)
    np.testing.assert_array_equal(cp.asnumpy(scores), want_s)
    np.testing.assert_array_equal(cp.asnumpy(idx), want_i)


@pytest.mark.parametrize("scan", ["tma3", "tmag2s2"])
def test_resident_memory_changed_in_place(be, sl, monkeypatch, rng, scan):
    """The same resident TernaryVec searched again after its planes were rewritten in place (and
    after one row was): each call answers for the values it sees, nothing kept from before."""
    import cupy as cp

    monkeypatch.setattr(sl, "SCAN", scan)
    rows, dim = 5000, 700
    q = trits(rng, (1, dim))
    mem = trits(rng, (rows, dim))
    qv, mv = TernaryVec.from_array(cp.asarray(q)), TernaryVec.from_array(cp.asarray(mem))
    _check(be, qv, mv, q, mem, 10)
    mem2 = trits(rng, (rows, dim))
    new = TernaryVec.from_array(cp.asarray(mem2))
    mv.pos[...] = new.pos  # in place: the same array objects, other values
    mv.neg[...] = new.neg
    _check(be, qv, mv, q, mem2, 10)
    mem2[4321] = q[0]  # one row becomes the best
    one = TernaryVec.from_array(cp.asarray(mem2[4321:4322]))
    mv.pos[4321], mv.neg[4321] = one.pos[0], one.neg[0]
    _check(be, qv, mv, q, mem2, 10)
    q2 = trits(rng, (1, dim))  # the query changed in place too
    qn = TernaryVec.from_array(cp.asarray(q2))
    qv.pos[...], qv.neg[...] = qn.pos, qn.neg
    _check(be, qv, mv, q2, mem2, 10)


@pytest.mark.parametrize("scan", ["tma3", "tmag2s2"])
def test_other_memory_same_shape(be, sl, monkeypatch, rng, scan):
    """Memories of one shape in turn (new TernaryVecs, and a plane swapped on the same one): each
    call searches the memory it was given."""
    import cupy as cp

    monkeypatch.setattr(sl, "SCAN", scan)
    rows, dim = 3001, 333
    q = trits(rng, (1, dim))
    qv = TernaryVec.from_array(cp.asarray(q))
    mems = [trits(rng, (rows, dim)) for _ in range(3)]
    vecs = [TernaryVec.from_array(cp.asarray(m)) for m in mems]
    for m, v in [*zip(mems, vecs), *zip(mems[::-1], vecs[::-1])]:
        _check(be, qv, v, q, m, 7)
    mixed = mems[0].copy()
    mixed[:] = 0
    mixed[mems[1] == 1] = 1  # pos of mems[1] with no neg: the planes of two memories
    mv = TernaryVec.from_array(cp.asarray(mems[0]))
    _check(be, qv, mv, q, mems[0], 7)
    mv.neg = vecs[2].neg * 0  # a new array object on the same TernaryVec
    mv.pos = vecs[1].pos
    _check(be, qv, mv, q, mixed, 7)


def test_non_contiguous_planes(be, sl, rng):
    """Planes that are strided views (every other row of a resident memory) take the general
    path (contiguous copies, the right rows); a (1, W) query that is a row view at an offset of
    a larger array is contiguous and is searched in place."""
    import cupy as cp

    rows, dim = 4001, 500
    q, mem = trits(rng, (1, dim)), trits(rng, (2 * rows, dim))
    big = TernaryVec.from_array(cp.asarray(mem))
    half = TernaryVec._trusted(big.pos[::2], big.neg[::2], dim)
    assert be._flat2d(half) is None
    p, n = flat(be, half)
    assert p.flags.c_contiguous and n.flags.c_contiguous
    _check(be, TernaryVec.from_array(cp.asarray(q)), half, q, mem[::2], 10)
    qbig = TernaryVec.from_array(cp.asarray(mem[:3]))
    qcut = TernaryVec._trusted(qbig.pos[1:2, :], qbig.neg[1:2, :], dim)
    _check(be, qcut, big, mem[1:2], mem, 5)


def test_flat2d_takes_only_plain_2d_cupy(be, sl, rng):
    """_flat2d: the very plane objects for C-contiguous 2-d cupy planes; None for 1-d planes
    (reshaped by flat) and for numpy planes (converted by asnative)."""
    import cupy as cp

    v = TernaryVec.from_array(cp.asarray(trits(rng, (7, 70))))
    p, n = be._flat2d(v)
    assert p is v.pos and n is v.neg
    one = TernaryVec.from_array(cp.asarray(trits(rng, (70,))))
    assert be._flat2d(one) is None and flat(be, one)[0].shape == (1, 3)
    host = TernaryVec.from_array(trits(rng, (7, 70)))
    assert be._flat2d(host) is None and type(flat(be, host)[0]) is cp.ndarray


def test_flat2d_is_none_off_cuda(rng):
    """Other backends keep the general path (their planes always go through asnative)."""
    from pytropical_gpu.backends import get_backend

    cpu = get_backend("cpu")
    v = TernaryVec.from_array(trits(rng, (3, 40)))
    assert cpu._flat2d(v) is None
    p, n = flat(cpu, v)
    np.testing.assert_array_equal(p, v.pos)
    np.testing.assert_array_equal(n, v.neg)
