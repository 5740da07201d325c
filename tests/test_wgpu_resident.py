"""wgpu device-resident operands (WgpuArray through ctx.to_device): same results as numpy operands
(results resident: WgpuArrays), no re-upload per call, round trips, immutability, pool isolation,
and other backends accepting them."""

from __future__ import annotations

import gc
import pickle

import numpy as np
import pytest

from conftest import require_backend
from pytropical_gpu import HybridContext, PackedCols, PackedRows, TernaryVec, _arrays
from pytropical_gpu.backends import get_backend


@pytest.fixture(scope="module")
def ctx():
    require_backend("wgpu")
    return HybridContext(backend="wgpu")


@pytest.fixture(scope="module")
def WgpuArray():
    from pytropical_gpu.backends.wgpu.array import WgpuArray

    return WgpuArray


@pytest.fixture
def written(ctx):
    """Bytes written host -> device through the runtime while the test runs."""
    rt = get_backend("wgpu").engine.rt
    count = {"bytes": 0}
    orig = rt.write

    def write(buf, data, offset=0):
        count["bytes"] += memoryview(data).nbytes
        return orig(buf, data, offset)

    rt.write = write
    yield count
    del rt.write  # back to the class method


def _tv(dim, batch, seed):
    return TernaryVec.random(dim, batch=batch, seed=seed)


def test_array_basics(ctx, WgpuArray):
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    d = ctx.to_device(a)
    assert isinstance(d, WgpuArray) and d.stats == {"min": 0, "max": 23}  # facts, once
    back = pickle.loads(pickle.dumps(d))  # comes back resident (copyreg in wgpu/device.py)
    assert isinstance(back, WgpuArray) and np.array_equal(back.get(), a)
    assert (d.shape, d.dtype, d.ndim, d.size, d.nbytes) == ((4, 6), np.int32, 2, 24, 96)
    assert "WgpuArray" in repr(d)
    assert np.array_equal(d.get(), a) and np.array_equal(np.asarray(d), a)
    assert np.array_equal(d.reshape(-1, 3).get(), a.reshape(-1, 3))
    assert np.array_equal(d[1:3].get(), a[1:3]) and np.array_equal(d[2].get(), a[2])
    assert np.array_equal(d[None].get(), a[None])
    with pytest.raises(TypeError):
        d[:, 1:3]  # strided: not a device view
    with pytest.raises(TypeError):
        d[0, 0] = 1
    assert _arrays.kind_of(d)[0] == "wgpu"
    assert isinstance(_arrays.to_numpy(d), np.ndarray)
    assert np.array_equal(ctx.to_host(d), a)
    assert isinstance(get_backend("wgpu").to_device(a), WgpuArray)
    with pytest.raises(TypeError):
        ctx.to_device(a.astype(np.float64))


@pytest.mark.parametrize("dtype, semirings", [
    (np.float32, ["min_plus", "max_plus", "plus_times", "max_min"]),
    (np.int32, ["min_plus", "max_plus", "plus_times"]),
])
def test_matmul_resident(ctx, rng, dtype, semirings):
    if dtype == np.float32:
        a = rng.random((33, 21), dtype=np.float32)
        b = rng.random((21, 18), dtype=np.float32)
        c = rng.random((33, 18), dtype=np.float32)
        a[3, 4] = np.inf  # the guarded kernel must be chosen from the recorded facts
    else:
        a = rng.integers(-50, 50, (33, 21), dtype=np.int32)
        b = rng.integers(-50, 50, (21, 18), dtype=np.int32)
        c = rng.integers(-50, 50, (33, 18), dtype=np.int32)
        b[2, 5] = np.iinfo(np.int32).min
    A, B, C = (ctx.to_device(x) for x in (a, b, c))
    for sr in semirings:
        got = ctx.matmul(A, B, sr, c=C)
        assert _arrays.is_wgpu(got)  # resident in, resident out
        got = ctx.to_host(got)
        np.testing.assert_array_equal(got, ctx.matmul(a, b, sr, c=c), err_msg=sr)
        np.testing.assert_allclose(got, get_backend("cpu").matmul(a, b, sr, c=c), rtol=1e-5,
                                   err_msg=sr)  # float sums may round differently on the cpu
    d1, i1 = ctx.matmul(A, B, "min_plus", return_argmax=True)
    d2, i2 = ctx.matmul(a, b, "min_plus", return_argmax=True)
    np.testing.assert_array_equal(d1, d2)
    np.testing.assert_array_equal(i1, i2)
    # batched and mixed resident / host operands
    a3 = np.stack([a, a[::-1]])
    np.testing.assert_array_equal(ctx.matmul(ctx.to_device(a3), b, "max_plus"),
                                  ctx.matmul(a3, b, "max_plus"))
    np.testing.assert_array_equal(ctx.matmul(a, B, "max_plus"), ctx.matmul(a, b, "max_plus"))


def test_matmul_nan_validated_once(ctx):
    a = np.ones((4, 4), np.float32)
    a[1, 1] = np.nan
    A = ctx.to_device(a)  # allowed: the check happens where NaN is an error
    with pytest.raises(ValueError, match="NaN"):
        ctx.matmul(A, np.ones((4, 4), np.float32), "min_plus")


def test_matmul_bool_and_u64_fallback(ctx, rng):
    a = rng.random((9, 40)) < 0.3
    b = rng.random((40, 7)) < 0.3
    np.testing.assert_array_equal(ctx.matmul(ctx.to_device(a), ctx.to_device(b), "lor_land"),
                                  ctx.matmul(a, b, "lor_land"))
    u = rng.integers(0, 2**63, (5, 6), dtype=np.uint64)
    v = rng.integers(0, 2**63, (6, 4), dtype=np.uint64)
    np.testing.assert_array_equal(ctx.matmul(ctx.to_device(u), ctx.to_device(v), "bor_band"),
                                  ctx.matmul(u, v, "bor_band"))


def test_andor_resident(ctx, rng):
    a = rng.random((45, 100)) < 0.1
    b = rng.random((100, 37)) < 0.1
    pa, pb = ctx.pack_rows(a), ctx.pack_cols(b)
    PA, PB = ctx.to_device(pa), ctx.to_device(pb)
    assert isinstance(PA, PackedRows) and isinstance(PB, PackedCols)
    assert _arrays.is_wgpu(PA.words) and PA.shape == pa.shape
    want = get_backend("cpu").andor_matmul(a, b)
    np.testing.assert_array_equal(ctx.andor_matmul(PA, PB), want)
    np.testing.assert_array_equal(ctx.andor_matmul(PA, pb), want)
    np.testing.assert_array_equal(ctx.andor_matmul(ctx.to_device(a), b), want)  # pack on device
    back = ctx.to_host(PA)
    assert isinstance(back.words, np.ndarray) and np.array_equal(back.words, pa.words)


def test_vsa_resident(ctx):
    dim = 1000
    mem, q, one = _tv(dim, (300,), 1), _tv(dim, (4,), 2), _tv(dim, (), 3)
    M, Q, O = ctx.to_device(mem), ctx.to_device(q), ctx.to_device(one)
    assert _arrays.is_wgpu(M.pos) and _arrays.is_wgpu(M.neg)
    cpu = get_backend("cpu")
    np.testing.assert_array_equal(ctx.bind(Q, M[:4]).to_array(), cpu.bind(q, mem[:4]).to_array())
    np.testing.assert_array_equal(ctx.bind(O, M).to_array(), cpu.bind(one, mem).to_array())
    np.testing.assert_array_equal(ctx.bundle(M, threshold=3).to_array(),
                                  cpu.bundle(mem, threshold=3).to_array())
    np.testing.assert_array_equal(ctx.bundle([Q[0], Q[1], O]).to_array(),
                                  cpu.bundle([q[0], q[1], one]).to_array())
    assert ctx.dot(O, Q[0]) == cpu.dot(one, q[0])
    np.testing.assert_array_equal(ctx.dot(Q, M), cpu.dot(q, mem))
    np.testing.assert_allclose(ctx.cosine(Q, M), cpu.cosine(q, mem))
    for k in (1, 7):
        gi, gs = ctx.search(Q, M, k)
        wi, ws = cpu.search(q, mem, k)
        assert type(gi) is np.ndarray
        np.testing.assert_array_equal(gi, wi)
        np.testing.assert_array_equal(gs, ws)
    # an unaligned row view (device-side copy) and a host query against resident memory
    gi, gs = ctx.search(q, M[5:200], 3)
    wi, ws = cpu.search(q, mem[5:200], 3)
    np.testing.assert_array_equal(gi, wi)
    np.testing.assert_array_equal(gs, ws)
    np.testing.assert_array_equal(ctx.permute(M, 5).to_array(), cpu.permute(mem, 5).to_array())
    np.testing.assert_array_equal(M.to_array(), mem.to_array())
    back = ctx.to_host(M)
    assert isinstance(back.pos, np.ndarray) and np.array_equal(back.to_array(), mem.to_array())


def test_search_does_not_reupload(ctx, written):
    mem, q = _tv(2048, (2000,), 4), _tv(2048, (1,), 5)
    M = ctx.to_device(mem)
    plane_bytes = mem.pos.nbytes
    assert written["bytes"] >= 2 * plane_bytes
    ctx.search(q, M, 5)  # compile once
    written["bytes"] = 0
    for _ in range(5):
        idx, _ = ctx.search(q, M, 5)
    assert written["bytes"] < plane_bytes // 10, written["bytes"]  # only the query (+ params)
    np.testing.assert_array_equal(idx, get_backend("cpu").search(q, mem, 5)[0])
    written["bytes"] = 0
    ctx.search(q, mem, 5)  # the host path uploads the memory again
    assert written["bytes"] >= 2 * plane_bytes


def test_ops_do_not_modify_resident(ctx, rng):
    a = rng.random((20, 20), dtype=np.float32)
    A = ctx.to_device(a)
    mem = _tv(640, (50,), 6)
    M = ctx.to_device(mem)
    ctx.matmul(A, A, "min_plus", c=A)
    ctx.bind(M, M), ctx.bundle(M), ctx.permute(M, 3), ctx.search(M[:2], M, 4), ctx.cosine(M, M)
    np.testing.assert_array_equal(A.get(), a)
    np.testing.assert_array_equal(M.pos.get(), mem.pos)
    np.testing.assert_array_equal(M.neg.get(), mem.neg)


def test_pool_never_reuses_resident_buffer(ctx, rng):
    eng = get_backend("wgpu").engine
    a = rng.integers(0, 2**31, (64, 64), dtype=np.int32)
    keep = [ctx.to_device(a + i) for i in range(3)]
    handles = {id(x.handle) for x in keep}
    pool_handles = set()
    for i in range(30):  # many ops of the same size class: the pool recycles its own buffers
        b = rng.integers(-5, 5, (64, 64), dtype=np.int32)
        ctx.matmul(b, b, "max_plus")
        ctx.bind(_tv(64 * 32, (64,), i), _tv(64 * 32, (64,), i + 1))
        for lst in eng.pool._free.values():
            pool_handles |= {id(h) for _, h in lst}
    assert not handles & pool_handles
    for i, x in enumerate(keep):
        np.testing.assert_array_equal(x.get(), a + i)


def test_resident_buffer_freed(ctx, WgpuArray):
    import weakref

    x = ctx.to_device(np.ones(1000, np.uint32))
    storage = weakref.ref(x._storage)
    view = x[10:20]
    del x
    gc.collect()
    assert storage() is not None  # the view keeps the buffer alive
    np.testing.assert_array_equal(view.get(), np.ones(10, np.uint32))
    del view
    gc.collect()
    assert storage() is None


def test_other_backends_accept_wgpu_array(ctx, rng):
    a = rng.random((8, 5), dtype=np.float32)
    b = rng.random((5, 6), dtype=np.float32)
    A, B = ctx.to_device(a), ctx.to_device(b)
    cpu = get_backend("cpu")
    np.testing.assert_array_equal(cpu.matmul(A, B, "min_plus"), cpu.matmul(a, b, "min_plus"))
    mem, q = _tv(300, (20,), 7), _tv(300, (2,), 8)
    M, Q = ctx.to_device(mem), ctx.to_device(q)
    np.testing.assert_array_equal(cpu.dot(Q, M), cpu.dot(q, mem))
    np.testing.assert_array_equal(cpu.search(Q, M, 3)[0], cpu.search(q, mem, 3)[0])
    np.testing.assert_array_equal(cpu.bind(Q, M[:2]).to_array(), cpu.bind(q, mem[:2]).to_array())
    # a TernaryVec built directly from resident planes is validated (on a host copy)
    A2 = get_backend("wgpu").to_device(np.array([[1]], np.uint32))
    with pytest.raises(ValueError, match="invalid trit"):
        TernaryVec(A2, A2, 2)


def test_row_views_bind_in_place_or_copy_on_device(ctx, written):
    eng = get_backend("wgpu").engine
    mem, q = _tv(2048, (40,), 9), _tv(2048, (2,), 10)  # 64 words = 256 bytes per row
    M = ctx.to_device(mem)
    cpu = get_backend("cpu")
    written["bytes"] = 0
    copies = eng.stats.get("resident_copies", 0)
    for view, host_view in ((M[3:], mem[3:]), (M[1:7], mem[1:7])):  # offsets 768, 256 bytes
        np.testing.assert_array_equal(ctx.dot(q, view), cpu.dot(q, host_view))
        np.testing.assert_array_equal(ctx.bind(view, view).to_array(),
                                      cpu.bind(host_view, host_view).to_array())
    assert eng.stats.get("resident_copies", 0) == copies  # aligned: bound at their offset
    assert written["bytes"] < mem.pos.nbytes // 4
