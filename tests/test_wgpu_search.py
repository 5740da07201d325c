"""wgpu search: fused dot + top-k on the GPU (vsa_search), GPU nnz, and the host fallback for large k.

Every result is compared with an independent numpy reference written here: int64 dots of the trit
arrays and a lexicographic (-score, index) sort.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_search import reference

from conftest import require_backend
from pytropical_gpu.backends import get_backend
from pytropical_gpu.ops._planes import flat
from pytropical_gpu.vsa import TernaryVec


@pytest.fixture(scope="module")
def be():
    require_backend("wgpu")
    return get_backend("wgpu")


@pytest.fixture(scope="module")
def vsa_mod():
    from pytropical_gpu.backends.wgpu import vsa

    return vsa


def trits(rng, shape):
    return rng.integers(-1, 2, shape).astype(np.int8)


def check(be, q, mem, k):
    idx, scores = be.search(TernaryVec.from_array(q), TernaryVec.from_array(mem), k=k)
    want_i, want_s = reference(q, mem, k)
    assert idx.dtype == np.int64 and scores.dtype == np.int64
    np.testing.assert_array_equal(idx, want_i)
    np.testing.assert_array_equal(scores, want_s)
    return idx, scores


@pytest.fixture
def gpu_only(monkeypatch, vsa_mod):
    """Fail if search reads back the (Q, M) scores: the host path's dot must not run."""
    def no_dot(*a, **kw):
        raise AssertionError("search went through vsa.dot (host top-k) instead of vsa_search")

    monkeypatch.setattr(vsa_mod, "dot", no_dot)


def test_ties_across_workgroups(be, rng, gpu_only):
    """Identical rows 3 and M-2 lie in different workgroups (TR = 1024 rows each) and merge passes."""
    m = 3001
    mem = trits(rng, (m, 96))
    mem[m - 2] = mem[3]
    idx, scores = check(be, mem[3][None].copy(), mem, 2)
    assert list(idx[0]) == [3, m - 2]
    # ties everywhere: five distinct rows repeated over every workgroup, k = 64
    mem = trits(rng, (5, 96))[rng.integers(0, 5, m)]
    check(be, trits(rng, (3, 96)), mem, 64)


def test_k_equals_m_and_k_one(be, rng, gpu_only):
    for m in (1, 7, 64):
        mem = trits(rng, (m, 40))
        check(be, trits(rng, (2, 40)), mem, m)
        check(be, trits(rng, (2, 40)), mem, 1)
    check(be, trits(rng, (3, 200)), trits(rng, (2500, 200)), 1)


def test_many_queries_and_ragged_m(be, rng, gpu_only):
    """300 queries; M = 1023 and 2049 are not multiples of 256 nor of the 1024-row group."""
    check(be, trits(rng, (300, 50)), trits(rng, (1023, 50)), 5)
    check(be, trits(rng, (4, 33)), trits(rng, (2049, 33)), 17)


def test_negative_scores(be, rng, gpu_only):
    """Every row scores < 0 with the query: the best is the least negative (no sentinel leaks)."""
    d, m = 64, 1500
    q = rng.choice(np.array([-1, 1], np.int8), d)
    mask = (rng.random((m, d)) < 0.5).astype(np.int8)
    mask[:, 0] = 1
    mem = (-q[None] * mask).astype(np.int8)
    idx, scores = check(be, q[None].copy(), mem, 64)
    assert (scores < 0).all()


def test_only_q_by_k_comes_back(be, rng, gpu_only, monkeypatch):
    eng = be.engine
    real = eng.download
    got = []

    def counting(buf, dtype, shape, offset=0):
        got.append(int(np.prod(shape)) * np.dtype(dtype).itemsize)
        return real(buf, dtype, shape, offset)

    monkeypatch.setattr(eng, "download", counting)
    check(be, trits(rng, (2, 64)), trits(rng, (5000, 64)), 5)
    assert sum(got) == 2 * 5 * 8, got  # int32 scores + uint32 indices of (2, 5)


def test_large_k_falls_back_to_the_host(be, rng, vsa_mod, monkeypatch):
    """k > TOPK_MAX reads back every score (vsa.dot) and sorts on the host, with the same result."""
    def no_fused(*a, **kw):
        raise AssertionError("vsa_search ran for k > TOPK_MAX")

    calls = []
    real_dot = vsa_mod.dot

    def dot(*a, **kw):
        calls.append(1)
        return real_dot(*a, **kw)

    monkeypatch.setattr(vsa_mod, "search", no_fused)
    monkeypatch.setattr(vsa_mod, "dot", dot)
    k = vsa_mod.TOPK_MAX + 1
    mem = trits(rng, (300, 70))
    mem[250] = mem[10]
    check(be, np.stack([mem[10], trits(rng, 70)]), mem, k)
    check(be, trits(rng, (2, 70)), mem, 300)
    assert len(calls) == 2


def _small(limit=1 << 16, wg=64):
    from pytropical_gpu.backends.wgpu.backend import WgpuBackend
    from pytropical_gpu.backends.wgpu.device import get_engine
    from pytropical_gpu.backends.wgpu.engine import Engine

    eng = Engine(get_engine().rt)
    eng.limits = dataclasses.replace(eng.limits, max_storage_binding=limit, max_workgroups_per_dim=wg)
    return WgpuBackend(engine=eng)


def test_search_and_nnz_tile_under_small_limits(be, rng, gpu_only):
    """64 KiB bindings: memory in row chunks (their k best merged on the host), queries in chunks,
    workgroup grids over 64 per dimension."""
    small = _small()
    mem = trits(rng, (3500, 300))
    mem[3490] = mem[2]
    q = trits(rng, (150, 300))
    q[7] = mem[2]
    idx, _ = check(small, q, mem, 64)
    assert list(idx[7, :2]) == [2, 3490]
    check(small, q[:3], mem, 1)
    x = trits(rng, (3000, 300))
    x[5] = 0
    got = small._nnz(*flat(small, TernaryVec.from_array(x)))
    np.testing.assert_array_equal(got, (x != 0).sum(axis=1))


def test_nnz_and_cosine_on_the_gpu(be, rng, vsa_mod, monkeypatch):
    calls = []
    real = vsa_mod.nnz

    def nnz(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(vsa_mod, "nnz", nnz)
    x, y = trits(rng, (4, 333)), trits(rng, (6, 333))
    x[1] = 0
    got = be.cosine(TernaryVec.from_array(x), TernaryVec.from_array(y))
    d = x.astype(np.float64) @ y.T.astype(np.float64)
    den = np.sqrt(np.multiply.outer((x != 0).sum(1), (y != 0).sum(1)).astype(np.float64))
    want = np.where(den > 0, d / np.where(den > 0, den, 1), 0.0)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert len(calls) == 2
