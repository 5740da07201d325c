"""Item-memory search on every backend against an independent numpy reference: int64 dots of the
unpacked trits and a lexicographic (-score, row) sort. Odd sizes (rows and dims off every tile,
word and k-step boundary), ties, k = rows, k past the top-k kernels' lists, one and many queries,
the extremes (score = +-dim), and bad k."""

from __future__ import annotations

import numpy as np
import pytest

import pytropical_gpu as tg
from pytropical_gpu import TernaryVec


def trits(rng, shape, density=0.7):
    t = rng.integers(-1, 2, shape).astype(np.int8)
    return np.where(rng.random(shape) < density, t, 0).astype(np.int8)


def reference(q, mem, k):
    """(idx, scores) int64 (Q, k): descending dot, ties to the smaller row."""
    scores = np.atleast_2d(q).astype(np.int64) @ mem.astype(np.int64).T
    rows = np.arange(mem.shape[0])
    order = np.stack([np.lexsort((rows, -s))[:k] for s in scores])
    return order, np.take_along_axis(scores, order, axis=1)


def check(backend, q, mem, k):
    idx, scores = tg.search(TernaryVec.from_array(q), TernaryVec.from_array(mem), k=k,
                            backend=backend)
    idx, scores = np.asarray(idx), np.asarray(scores)
    want_i, want_s = reference(q, mem, k)
    if q.ndim == 1:
        want_i, want_s = want_i[0], want_s[0]
    assert idx.shape == want_i.shape and idx.dtype == np.int64 and scores.dtype == np.int64
    np.testing.assert_array_equal(scores, want_s)
    np.testing.assert_array_equal(idx, want_i)
    return idx, scores


# (queries, rows, dim, k): rows off the 16/32-row tiles and the 128-row blocks, dims off 32
# (a word) and 256 (a tensor-core k-step), k below/at/above the 16- and 64-long top-k lists
SHAPES = [(1, 1, 1, 1), (1, 37, 33, 5), (2, 129, 255, 16), (3, 100, 257, 100), (9, 250, 300, 17),
          (17, 143, 500, 64), (33, 161, 1000, 65), (64, 515, 777, 10), (70, 300, 2049, 3)]


@pytest.mark.parametrize("nq,rows,dim,k", SHAPES)
def test_search_matches_reference(backend, rng, nq, rows, dim, k):
    check(backend, trits(rng, (nq, dim)), trits(rng, (rows, dim)), k)


def test_one_unbatched_query(backend, rng):
    mem = trits(rng, (300, 1001))
    idx, _ = check(backend, mem[123].copy(), mem, 4)
    assert idx.shape == (4,) and idx[0] == 123


def test_ties_go_to_the_smaller_row(backend, rng):
    """Five distinct rows repeated over the whole memory, and all-zero rows: every score is tied
    many times, in every block of rows."""
    base = trits(rng, (5, 300))
    mem = base[rng.integers(0, 5, 700)]
    mem[rng.integers(0, 700, 100)] = 0
    check(backend, trits(rng, (6, 300)), mem, 40)
    check(backend, base[2].copy(), mem, 70)
    # an all-zero query: every score is 0, so rows 0..k-1
    idx, scores = check(backend, np.zeros((2, 300), np.int8), mem, 12)
    assert idx.tolist() == [list(range(12))] * 2 and not scores.any()


def test_extreme_scores(backend):
    dim = 4097
    mem = np.ones((20, dim), np.int8)
    mem[::2] = -1
    mem[7, :] = 0
    q = np.ones((2, dim), np.int8)
    q[1] = -1
    idx, scores = check(backend, q, mem, 20)
    assert scores[0, 0] == dim and scores[0, -1] == -dim and scores[1, 0] == dim


def test_k_equals_rows_and_k_one(backend, rng):
    for rows in (1, 7, 16, 17, 64):
        mem = trits(rng, (rows, 40))
        check(backend, trits(rng, (3, 40)), mem, rows)
        check(backend, trits(rng, (3, 40)), mem, 1)


@pytest.mark.parametrize("k", [0, -1, 8])
def test_k_out_of_range_raises(backend, rng, k):
    mem, q = TernaryVec.from_array(trits(rng, (7, 50))), TernaryVec.from_array(trits(rng, 50))
    with pytest.raises(ValueError, match="k="):
        tg.search(q, mem, k=k, backend=backend)


@pytest.mark.parametrize("nq", [1, 20])
@pytest.mark.parametrize("k", [16, 32])
def test_ties_across_many_blocks(backend, rng, nq, k):
    """Two distinct rows over 6,000 rows (many blocks of rows and tiles on every backend): each
    block's best scores tie with every other block's."""
    base = trits(rng, (2, 40))
    mem = base[rng.integers(0, 2, 6000)]
    check(backend, trits(rng, (nq, 40)), mem, k)
    check(backend, np.repeat(base[:1], nq, axis=0), mem, k)


def test_strided_and_fortran_planes(backend, rng):
    """Planes that are views (every other row, every other word, Fortran order): the 2-d memory
    planes are used without a reshape when already contiguous, so these must still be copied."""
    mem, q = trits(rng, (301, 640)), trits(rng, (2, 640))
    mv, qv = TernaryVec.from_array(mem), TernaryVec.from_array(q)
    want_i, want_s = reference(q[0], mem[::2], 6)
    for mp, mn in ((mv.pos[::2], mv.neg[::2]),
                   (np.asfortranarray(mv.pos[::2]), np.asfortranarray(mv.neg[::2]))):
        m2 = TernaryVec(mp, mn, 640)
        for qq in (TernaryVec(qv.pos[0], qv.neg[0], 640),  # one vector: (k,) out
                   TernaryVec(qv.pos[:1], qv.neg[:1], 640),  # a batch of one: (1, k) out
                   TernaryVec(np.asfortranarray(qv.pos)[0], np.asfortranarray(qv.neg)[0], 640)):
            idx, sc = tg.search(qq, m2, k=6, backend=backend)
            shape = (1, 6) if qq.pos.ndim == 2 else (6,)
            assert np.asarray(idx).shape == shape and np.asarray(sc).shape == shape
            np.testing.assert_array_equal(np.asarray(idx).reshape(-1), want_i[0])
            np.testing.assert_array_equal(np.asarray(sc).reshape(-1), want_s[0])
    # word-strided planes (every other word of a wider plane): not contiguous along the row
    pos, neg = np.zeros((301, 40), np.uint32), np.zeros((301, 40), np.uint32)
    pos[:, ::2], neg[:, ::2] = mv.pos, mv.neg
    m3 = TernaryVec(pos[:, ::2], neg[:, ::2], 640)
    assert not m3.pos.flags.c_contiguous
    idx, sc = tg.search(TernaryVec.from_array(q), m3, k=5, backend=backend)
    want_i, want_s = reference(q, mem, 5)
    np.testing.assert_array_equal(np.asarray(idx), want_i)
    np.testing.assert_array_equal(np.asarray(sc), want_s)


@pytest.mark.parametrize("k,err,msg", [(True, TypeError, "search: k must be an integer"),
                                       (2.5, TypeError, "search: k must be an integer"),
                                       ("3", TypeError, "search: k must be an integer"),
                                       (np.int64(0), ValueError, "k=0")])
def test_k_not_an_int_raises(backend, rng, k, err, msg):
    mem, q = TernaryVec.from_array(trits(rng, (7, 50))), TernaryVec.from_array(trits(rng, 50))
    with pytest.raises(err, match=msg):
        tg.search(q, mem, k=k, backend=backend)


def test_k_numpy_int_and_dim_mismatch(backend, rng):
    mem, q = trits(rng, (9, 50)), trits(rng, 50)
    idx, _ = tg.search(TernaryVec.from_array(q), TernaryVec.from_array(mem), k=np.int32(3),
                       backend=backend)
    np.testing.assert_array_equal(np.asarray(idx), reference(q, mem, 3)[0][0])
    with pytest.raises(ValueError, match=r"search: dimension mismatch \(49 != 50\)"):
        tg.search(TernaryVec.from_array(q[:49]), TernaryVec.from_array(mem), k=1, backend=backend)
