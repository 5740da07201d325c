"""The vectorised CUDA VSA kernels (cuda/vsa_vec.cu) and the previous ones (``vsa_launch.VECTORISED``
False) against int8 arithmetic on the unpacked trits: odd word counts, planes starting 4, 8 or 12
bytes past a 16-byte boundary (all alike or mixed), batches, long rows (the dot's block kernel),
bundles of 8 to 1,025 vectors with thresholds, soft counters of 1 to 31 bits. Every backend runs
the same references; on cuda the planes are CuPy views at those offsets."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_bundle, ref_soft

import pytropical_gpu as tg
from pytropical_gpu import SoftTernaryVec, TernaryVec

WORDS = [1, 3, 5, 31, 33, 1023]
#: word offsets of (a.pos, a.neg, b.pos, b.neg) from an allocation's start
OFFSETS = [(0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3), (1, 2, 3, 0), (0, 0, 1, 1)]


@pytest.fixture(params=["vectorised", "previous"])
def be(request, backend, monkeypatch):
    """The backend; on cuda once with each kernel set."""
    if request.param == "previous":
        if backend != "cuda":
            pytest.skip("only cuda has a previous kernel set")
    if backend == "cuda":
        from pytropical_gpu.backends.cuda import vsa_launch

        monkeypatch.setattr(vsa_launch, "VECTORISED", request.param == "vectorised")
    return backend


def trits(rng, shape, density=0.7):
    t = rng.integers(-1, 2, shape).astype(np.int8)
    return np.where(rng.random(shape) < density, t, 0).astype(np.int8)


def placed(words: np.ndarray, off: int, backend: str):
    """The same words as a contiguous view starting ``off`` words into its allocation (CuPy on cuda)."""
    flat = np.ascontiguousarray(words).reshape(-1)
    buf = np.zeros(flat.size + 4, np.uint32)
    buf[off:off + flat.size] = flat
    if backend == "cuda":
        import cupy

        buf = cupy.asarray(buf)
    return buf[off:off + flat.size].reshape(words.shape)


def tv(x, backend, offs=(0, 0)):
    v = TernaryVec.from_array(x)
    return TernaryVec(placed(v.pos, offs[0], backend), placed(v.neg, offs[1], backend), v.dim)


def host(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def dim_of(words: int) -> int:
    return 32 * words - 5 if words > 1 else 27  # a partial last word


@pytest.mark.parametrize("words", WORDS)
@pytest.mark.parametrize("offs", OFFSETS)
@pytest.mark.parametrize("batch", [(), (3,)])
def test_bind_odd_words_and_offsets(be, rng, words, offs, batch):
    x, y = trits(rng, batch + (dim_of(words),)), trits(rng, batch + (dim_of(words),))
    got = tg.bind(tv(x, be, offs[:2]), tv(y, be, offs[2:]), backend=be)
    np.testing.assert_array_equal(host(got.to_array()), x * y)


@pytest.mark.parametrize("words", [1, 33, 1023, 2048, 2051, 4099, 40_003])
@pytest.mark.parametrize("offs", OFFSETS[:5])
def test_dot_long_rows_and_offsets(be, rng, words, offs):
    dim = dim_of(words)
    x, y = trits(rng, (2, dim)), trits(rng, (3, dim))
    got = tg.dot(tv(x, be, offs[:2]), tv(y, be, offs[2:]), backend=be)
    np.testing.assert_array_equal(host(got), x.astype(np.int64) @ y.astype(np.int64).T)
    one = tg.dot(tv(x[1], be, offs[:2]), tv(y[2], be, offs[2:]), backend=be)
    assert one == int(x[1].astype(np.int64) @ y[2].astype(np.int64))


def test_dot_all_equal_rows_is_the_dimension(be):
    x = np.ones(32 * 70_001, np.int8)  # the largest possible score: no int32 overflow anywhere
    assert tg.dot(tv(x, be), tv(x, be), backend=be) == x.size
    assert tg.dot(tv(x, be), tv(-x, be), backend=be) == -x.size


@pytest.mark.parametrize("nvec,words", [(8, 1023), (9, 33), (64, 31), (64, 1023), (1024, 33),
                                        (1025, 5), (300, 1)])
@pytest.mark.parametrize("rel", ["one", "three", "half", "all", "over"])
def test_bundle_many_vectors_with_thresholds(be, rng, nvec, words, rel):
    t = {"one": 1, "three": 3, "half": nvec // 2 + 1, "all": nvec, "over": nvec + 1}[rel]
    x = trits(rng, (nvec, dim_of(words)))
    k = min(40, x.shape[1])
    x[:, :k] = np.where(rng.random((nvec, k)) < 0.9, 1, x[:, :k])  # large sums in the first trits
    got = tg.multiset(tv(x, be, (1, 3)), threshold=t, backend=be)
    np.testing.assert_array_equal(host(got.to_array()), ref_bundle(x, t))


def test_bundle_batched_rows(be, rng):
    x = trits(rng, (40, 3, 2, 70))
    got = tg.multiset(tv(x, be, (2, 2)), threshold=2, backend=be)
    assert got.batch_shape == (3, 2)
    np.testing.assert_array_equal(host(got.to_array()), ref_bundle(x, 2))


def _soft(bits, batch, dim, be, off):
    soft = SoftTernaryVec(dim, bits=bits, batch=batch)
    soft.sign = placed(soft.sign, off, be)
    soft.mag = placed(soft.mag, off, be)
    return soft


@pytest.mark.parametrize("bits", [1, 3, 4, 5, 8, 9, 16, 31])
@pytest.mark.parametrize("words,batch", [(1, ()), (3, (2,)), (4, (2,)), (33, ()), (1023, ())])
@pytest.mark.parametrize("off", [0, 1, 3])
def test_soft_accumulate_and_harden(be, rng, bits, words, batch, off):
    dim = dim_of(words)
    steps = 2 ** bits + 3 if bits <= 3 else 7
    seq = [trits(rng, batch + (dim,)) for _ in range(steps)]
    seq += [np.ones(batch + (dim,), np.int8)] * (2 ** bits + 1 if bits <= 3 else 2)
    seq += [-np.ones(batch + (dim,), np.int8)]
    soft = _soft(bits, batch, dim, be, off)
    for i, h in enumerate(seq):
        soft.accumulate(tv(h, be, (i % 4, (i + off) % 4)), backend=be)
    want = ref_soft(seq, bits)
    np.testing.assert_array_equal(host(soft.to_array()), want)
    for t in sorted({1, 2, 2 ** bits - 1, 2 ** bits}):
        hard = host(soft.harden(t, backend=be).to_array())
        np.testing.assert_array_equal(hard, np.where(want >= t, 1, np.where(want <= -t, -1, 0)))


@pytest.mark.parametrize("words", [1, 3, 33])
@pytest.mark.parametrize("off", [1, 2])
def test_permute_on_offset_views(be, rng, words, off):
    x = trits(rng, (2, dim_of(words)))
    got = tg.permute(tv(x, be, (off, off)), 7, backend=be)
    np.testing.assert_array_equal(host(got.to_array()), np.roll(x, 7, axis=-1))
