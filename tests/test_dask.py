"""pytropical_gpu.dask on dask's threads scheduler against references written here (numpy loops over
k, plain sorting, integer trit sums) and against one call of the library: odd chunk sizes, chunks
along k, batches, argmax ties across k chunks, ties across search shards, bundle thresholds, c=, ±inf."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import pytropical_gpu as tg
from conftest import SEED

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
tgd = pytest.importorskip("pytropical_gpu.dask")

I32 = np.iinfo(np.int32)


@pytest.fixture(autouse=True)
def _threads():
    with dask.config.set(scheduler="threads", num_workers=2):
        yield


# ---------------------------------------------------------------- references
def ref_matmul(a, b, name, c=None):
    """Loop over k with the semiring's scalar rules; returns (d, argmax) as numpy (3-D)."""
    a3 = a if a.ndim == 3 else a[None]
    b3 = b if b.ndim == 3 else b[None]
    batch = max(a3.shape[0], b3.shape[0], 1 if c is None or c.ndim == 2 else c.shape[0])
    m, k, n = a3.shape[1], a3.shape[2], b3.shape[2]
    dt = a.dtype
    lo = name.startswith("min")
    if dt.kind == "f":
        zero = dt.type(np.inf if lo else -np.inf)
    else:
        zero = dt.type(I32.max if lo else I32.min)
    d = np.full((batch, m, n), zero, dt)
    idx = np.full((batch, m, n), -1, np.int32)
    for bi in range(batch):
        A, B = a3[bi % a3.shape[0]], b3[bi % b3.shape[0]]
        for kk in range(k):
            x, y = A[:, kk, None], B[None, kk, :]
            if dt.kind == "f":
                with np.errstate(invalid="ignore"):
                    t = x + y if name.endswith("plus") else x * y
                t = np.where((x == zero) | (y == zero) | np.isnan(t), zero, t).astype(dt)
            else:
                s = x.astype(np.int64) + y.astype(np.int64)
                t = np.where((x == zero) | (y == zero), zero, np.clip(s, I32.min, I32.max)).astype(dt)
            imp = t < d[bi] if lo else t > d[bi]
            d[bi][imp] = t[imp]
            idx[bi][imp] = kk
    if c is not None:
        cb = np.broadcast_to(c if c.ndim == 3 else c[None], d.shape)
        imp = d < cb if lo else d > cb
        idx[~imp] = -1
        d = np.where(imp, d, cb)
    return d, idx


def lazy(x, chunks):
    return da.from_array(x, chunks=chunks)


def squeeze2(d, a, b, c=None):
    return d[0] if a.ndim == 2 and b.ndim == 2 and (c is None or c.ndim == 2) else d


# ---------------------------------------------------------------- matmul
@pytest.mark.parametrize("name", ["min_plus", "max_plus"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("chunks", [((3, 4), (4, 5)), ((7, 1), (1, 6)), ((2, 13), (13, 2))])
def test_matmul_float_inf_odd_chunks(name, dtype, chunks, rng):
    m, k, n = 11, 13, 9
    a = rng.integers(-4, 5, (m, k)).astype(dtype)
    b = rng.integers(-4, 5, (k, n)).astype(dtype)
    a[rng.random(a.shape) < 0.2] = np.inf
    a[rng.random(a.shape) < 0.2] = -np.inf
    b[rng.random(b.shape) < 0.2] = np.inf
    b[rng.random(b.shape) < 0.1] = -np.inf
    a[3] = np.inf if name == "min_plus" else -np.inf  # a row with no path
    d, i = tgd.matmul(lazy(a, chunks[0]), lazy(b, chunks[1]), name, return_argmax=True)
    rd, ri = ref_matmul(a, b, name)
    got_d, got_i = dask.compute(d, i)
    assert got_d.dtype == dtype and got_i.dtype == np.int32
    np.testing.assert_array_equal(got_d, rd[0], err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(got_i, ri[0], err_msg=f"seed {SEED}")
    one_d, one_i = tg.matmul(a, b, name, return_argmax=True, backend="cpu")
    assert got_d.tobytes() == one_d.tobytes() and got_i.tobytes() == one_i.tobytes()


@pytest.mark.parametrize("kchunk", [1, 2, 3, 5])
def test_argmax_ties_across_k_chunks(kchunk, rng):
    """Few distinct values: most cells tie between k in different chunks; the smaller k wins."""
    m, k, n = 6, 17, 5
    a = rng.integers(0, 2, (m, k)).astype(np.int32)
    b = rng.integers(0, 2, (k, n)).astype(np.int32)
    for name in ("min_plus", "max_plus"):
        d, i = tgd.matmul(lazy(a, (4, kchunk)), lazy(b, (kchunk, 3)), name, return_argmax=True,
                          split_every=2)
        rd, ri = ref_matmul(a, b, name)
        np.testing.assert_array_equal(d.compute(), rd[0])
        np.testing.assert_array_equal(i.compute(), ri[0], err_msg=f"{name} seed {SEED}")


def test_int32_extremes_saturate_and_absorb(rng):
    a = rng.integers(-5, 5, (7, 9)).astype(np.int32)
    b = rng.integers(-5, 5, (9, 4)).astype(np.int32)
    a[0, :4] = I32.max - 1
    b[:3, 1] = I32.max - 2  # saturates
    a[2, :] = I32.min  # absorbing for max_plus: no path
    b[5, :] = I32.min + 1
    for name in ("max_plus", "min_plus"):
        d, i = tgd.matmul(lazy(a, (3, 4)), lazy(b, (4, 3)), name, return_argmax=True)
        rd, ri = ref_matmul(a, b, name)
        np.testing.assert_array_equal(d.compute(), rd[0])
        np.testing.assert_array_equal(i.compute(), ri[0])


@pytest.mark.parametrize("shapes", [((3, 5, 7), (7, 4)), ((1, 5, 7), (3, 7, 4)), ((3, 5, 7), (3, 7, 4)),
                                    ((5, 7), (2, 7, 4))])
@pytest.mark.parametrize("zchunk", [1, -1])
@pytest.mark.parametrize("kchunk", [3, -1])
def test_batched(shapes, zchunk, kchunk, rng):
    a = rng.integers(-3, 4, shapes[0]).astype(np.float32)
    b = rng.integers(-3, 4, shapes[1]).astype(np.float32)
    ca = (zchunk, 2, kchunk) if a.ndim == 3 else (2, kchunk)
    cb = (zchunk, kchunk, 3) if b.ndim == 3 else (kchunk, 3)
    d, i = tgd.matmul(lazy(a, ca), lazy(b, cb), "max_plus", return_argmax=True)
    rd, ri = ref_matmul(a, b, "max_plus")
    assert d.shape == rd.shape and d.chunks == i.chunks
    gd, gi = dask.compute(d, i)
    assert gd.shape == rd.shape  # the chunks the graph declares are the ones it makes
    np.testing.assert_array_equal(gd, rd)
    np.testing.assert_array_equal(gi, ri)
    np.testing.assert_array_equal(tgd.matmul(lazy(a, ca), lazy(b, cb), "max_plus").compute(), rd)


@pytest.mark.parametrize("cshape", ["2d", "3d", "numpy"])
def test_c_applied_once(cshape, rng):
    a = rng.integers(0, 3, (2, 6, 8)).astype(np.float32)
    b = rng.integers(0, 3, (8, 5)).astype(np.float32)
    c = rng.integers(0, 4, (6, 5)).astype(np.float32)  # many ties with the product: argmax -1
    c[0] = np.inf
    c[1] = -np.inf
    if cshape == "3d":
        c = np.stack([c, c[::-1]])
    cc = c if cshape == "numpy" else lazy(c, (1, 4, 2) if c.ndim == 3 else (4, 2))
    d, i = tgd.matmul(lazy(a, (1, 4, 3)), lazy(b, (3, 2)), "min_plus", c=cc, return_argmax=True)
    rd, ri = ref_matmul(a, b, "min_plus", c=c)
    np.testing.assert_array_equal(d.compute(), rd)
    np.testing.assert_array_equal(i.compute(), ri)
    one_d, one_i = tg.matmul(a, b, "min_plus", c=c, return_argmax=True, backend="cpu")
    assert np.array_equal(d.compute(), one_d) and np.array_equal(i.compute(), one_i)
    np.testing.assert_array_equal(tgd.matmul(lazy(a, (1, 4, 3)), lazy(b, (3, 2)), "min_plus",
                                             c=cc).compute(), rd)


def test_c_carries_the_batch(rng):
    a = rng.integers(0, 3, (4, 6)).astype(np.float32)
    b = rng.integers(0, 3, (6, 3)).astype(np.float32)
    c = rng.integers(0, 5, (3, 4, 3)).astype(np.float32)
    d = tgd.matmul(lazy(a, 2), lazy(b, 3), "min_plus", c=lazy(c, 2)).compute()
    assert d.shape == (3, 4, 3)
    np.testing.assert_array_equal(d, ref_matmul(a, b, "min_plus", c=c)[0])


def test_other_semirings_equal_one_call(rng):
    ai = rng.integers(-2**31, 2**31, (9, 14), dtype=np.int64).astype(np.int32)
    bi = rng.integers(-2**31, 2**31, (14, 6), dtype=np.int64).astype(np.int32)
    with np.errstate(over="ignore"):
        ref = np.zeros((9, 6), np.int32)
        for kk in range(14):
            ref += ai[:, kk, None] * bi[None, kk, :]  # wraps, like numpy int32
    np.testing.assert_array_equal(tgd.matmul(lazy(ai, (4, 5)), lazy(bi, (5, 4)), "plus_times").compute(), ref)
    ab, bb = rng.random((9, 14)) < 0.2, rng.random((14, 6)) < 0.2
    refb = np.zeros((9, 6), bool)
    refx = np.zeros((9, 6), bool)
    for kk in range(14):
        refb |= ab[:, kk, None] & bb[None, kk, :]
        refx ^= ab[:, kk, None] & bb[None, kk, :]
    np.testing.assert_array_equal(tgd.matmul(lazy(ab, (4, 3)), lazy(bb, (3, 4)), "lor_land").compute(), refb)
    np.testing.assert_array_equal(tgd.matmul(lazy(ab, (4, 3)), lazy(bb, (3, 4)), "gf2").compute(), refx)
    au = rng.integers(0, 2**32, (5, 7), dtype=np.uint64).astype(np.uint32)
    bu = rng.integers(0, 2**32, (7, 3), dtype=np.uint64).astype(np.uint32)
    refu = np.zeros((5, 3), np.uint32)
    for kk in range(7):
        refu |= au[:, kk, None] & bu[None, kk, :]
    np.testing.assert_array_equal(tgd.matmul(lazy(au, 2), lazy(bu, 2), "bor_band").compute(), refu)
    af, bf = rng.random((9, 14)).astype(np.float32), rng.random((14, 6)).astype(np.float32)
    np.testing.assert_allclose(tgd.matmul(lazy(af, 5), lazy(bf, 5), "plus_times").compute(),
                               af.astype(np.float64) @ bf, rtol=1e-5)


def test_user_semiring_argmax(rng):
    sr = tg.Semiring("max_min_user", np.maximum, np.minimum, -np.inf, np.inf, selective=True)
    a = rng.integers(0, 4, (5, 9)).astype(np.float64)
    b = rng.integers(0, 4, (9, 4)).astype(np.float64)
    d, i = tgd.matmul(lazy(a, 2), lazy(b, 2), sr, return_argmax=True)
    ref = np.minimum(a[:, :, None], b[None]).max(axis=1)
    first = np.argmax(np.minimum(a[:, :, None], b[None]) == ref[:, None, :], axis=1)
    np.testing.assert_array_equal(d.compute(), ref)
    np.testing.assert_array_equal(i.compute(), first)


def test_empty_and_k0():
    a = lazy(np.zeros((3, 0), np.float32), (2, 1))
    b = lazy(np.zeros((0, 4), np.float32), (1, 3))
    d, i = tgd.matmul(a, b, "min_plus", return_argmax=True)
    assert np.all(d.compute() == np.inf) and np.all(i.compute() == -1)
    e = tgd.matmul(lazy(np.zeros((0, 5), np.float32), 2), lazy(np.zeros((5, 2), np.float32), 2), "min_plus")
    assert e.compute().shape == (0, 2)


def test_errors():
    a = lazy(np.zeros((3, 4), np.float32), 2)
    with pytest.raises(ValueError, match=r"\(3, 4\) and \(5, 2\)"):
        tgd.matmul(a, lazy(np.zeros((5, 2), np.float32), 2), "min_plus")
    with pytest.raises(TypeError, match="mixed dtypes"):
        tgd.matmul(a, lazy(np.zeros((4, 2), np.float64), 2), "min_plus")
    with pytest.raises(ValueError, match="selective"):
        tgd.matmul(a, lazy(np.zeros((4, 2), np.float32), 2), "plus_times", return_argmax=True)
    with pytest.raises(TypeError, match="does not accept"):
        tgd.matmul(lazy(np.zeros((3, 4), np.uint32), 2), lazy(np.zeros((4, 2), np.uint32), 2), "min_plus")
    nan = np.zeros((3, 4), np.float32)
    nan[1, 2] = np.nan
    lazy_d = tgd.matmul(lazy(nan, 2), lazy(np.zeros((4, 2), np.float32), 2), "min_plus")
    with pytest.raises(ValueError, match="NaN"):
        lazy_d.compute()


# ---------------------------------------------------------------- search
def ref_search(q, mem, k):
    """Plain integer dots, then sort by (-score, index)."""
    q2 = q.reshape(-1, q.shape[-1]).astype(np.int64)
    out_i, out_s = [], []
    for row in q2:
        s = mem.astype(np.int64) @ row
        order = sorted(range(len(s)), key=lambda j: (-s[j], j))[:k]
        out_i.append(order)
        out_s.append([s[j] for j in order])
    shape = q.shape[:-1] + (k,)
    return np.array(out_i).reshape(shape), np.array(out_s).reshape(shape)


@pytest.mark.parametrize("chunks", [5, 7, (1, 9, 2, 11, 3, 1, 3), 30])
@pytest.mark.parametrize("k", [1, 4, 12, 30])
def test_search_ties_across_shards(chunks, k, rng):
    dim = 45
    base = rng.integers(-1, 2, (6, dim)).astype(np.int8)
    mem = base[rng.integers(0, 6, 30)]  # many duplicate rows in different shards: exact ties
    q = rng.integers(-1, 2, (3, dim)).astype(np.int8)
    q[1] = mem[17]
    memory = tgd.from_ternary(tg.TernaryVec.from_array(mem), chunks=chunks)
    query = tg.TernaryVec.from_array(q)
    idx, sc = tgd.search(query, memory, k, split_every=2)
    gi, gs = dask.compute(idx, sc)
    ri, rs = ref_search(q, mem, k)
    np.testing.assert_array_equal(gs, rs, err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(gi, ri, err_msg=f"seed {SEED}")
    oi, os_ = tg.search(query, tg.TernaryVec.from_array(mem), k, backend="cpu")
    assert np.array_equal(gi, oi) and np.array_equal(gs, os_)


def test_search_single_query_and_errors(rng):
    mem = rng.integers(-1, 2, (10, 70)).astype(np.int8)
    memory = tgd.from_ternary(tg.TernaryVec.from_array(mem), chunks=3)
    q = tg.TernaryVec.from_array(mem[4])
    idx, sc = tgd.search(q, memory, 2)
    assert idx.shape == (2,) and idx.compute()[0] == 4
    ri, rs = ref_search(mem[4], mem, 2)
    np.testing.assert_array_equal(sc.compute(), rs)
    with pytest.raises(ValueError, match="k=11"):
        tgd.search(q, memory, 11)
    with pytest.raises(ValueError, match="dimension mismatch"):
        tgd.search(tg.TernaryVec.from_array(mem[0, :60]), memory, 1)
    with pytest.raises(TypeError, match="dask planes"):
        tgd.search(q, tg.TernaryVec.from_array(mem), 1)


def test_from_planes_validates_each_shard(rng):
    mem = tg.TernaryVec.from_array(rng.integers(-1, 2, (9, 40)).astype(np.int8))
    pos, neg = mem.pos.copy(), mem.neg.copy()
    ok = tgd.from_planes(da.from_array(pos, chunks=(4, 2)), da.from_array(neg, chunks=(4, 2)), 40)
    q = mem[2]
    np.testing.assert_array_equal(tgd.search(q, ok, 3)[1].compute(), tg.search(q, mem, 3, backend="cpu")[1])
    neg[7, 0] |= pos[7, 0] | 1  # a bit in both planes, in the last shard
    pos[7, 0] |= 1
    bad = tgd.from_planes(da.from_array(pos, chunks=(4, 2)), da.from_array(neg, chunks=(4, 2)), 40)
    with pytest.raises(ValueError, match="both pos and neg"):
        tgd.search(q, bad, 3)[0].compute()
    with pytest.raises(ValueError, match="dim 73"):
        tgd.from_planes(da.from_array(pos), da.from_array(neg), 41 + 32)
    with pytest.raises(TypeError, match="uint32"):
        tgd.from_planes(da.from_array(pos.astype(np.int64)), da.from_array(neg), 40)


class _Marked(np.ndarray):
    """A numpy chunk that the test's chunk_backend takes for a cupy one (kept through dask's
    concatenation of blocks, as cupy chunks are)."""

    def __array_function__(self, func, types, args, kwargs):
        out = super().__array_function__(func, types, args, kwargs)
        return out.view(_Marked) if func is np.concatenate else out


@pytest.mark.parametrize("explicit", [None, "cpu"])
def test_block_backend_follows_the_chunk_not_the_meta(explicit, rng, monkeypatch):
    """A dask array's _meta is a guess (map_blocks without meta= on cupy chunks records numpy):
    each block picks its backend from its own chunk; an explicit backend wins."""
    import pytropical_gpu.dask._common as common
    import pytropical_gpu.dask._gemm as gemm
    import pytropical_gpu.dask._vsa as vsa
    import pytropical_gpu.routing as routing

    seen = []
    cpu = tg.backends.get_backend("cpu")

    def record(backend, chunk):
        name = common.chunk_backend(backend, chunk)
        if isinstance(chunk, _Marked):  # not a block still running from an earlier test's failed graph
            seen.append(name)
        return name
    monkeypatch.setattr(routing, "_is_cupy", lambda x: isinstance(x, _Marked))
    for mod in (gemm, vsa):
        monkeypatch.setattr(mod, "chunk_backend", record)
        monkeypatch.setattr(mod, "get_backend", lambda name: cpu)
    a = rng.integers(0, 9, (6, 5)).astype(np.float32)
    b = rng.integers(0, 9, (5, 4)).astype(np.float32)
    mark = partial(_view, cls=_Marked)
    da_a = da.from_array(a, chunks=(3, 2)).map_blocks(mark, meta=np.empty((0, 0), np.float32))
    da_b = da.from_array(b, chunks=(2, 4)).map_blocks(mark, meta=np.empty((0, 0), np.float32))
    assert type(da_a._meta) is np.ndarray
    d = tgd.matmul(da_a, da_b, "min_plus", backend=explicit).compute()
    np.testing.assert_array_equal(np.asarray(d), ref_matmul(a, b, "min_plus")[0][0])
    mem = tg.TernaryVec.from_array(rng.integers(-1, 2, (9, 40)).astype(np.int8))
    planes = [da.from_array(x, chunks=(4, -1)).map_blocks(mark, meta=np.empty((0, 0), np.uint32))
              for x in (mem.pos, mem.neg)]
    idx, _ = tgd.search(mem[3], tgd.from_planes(*planes, 40, validate=False), 2, backend=explicit)
    assert idx.compute()[0] == 3
    assert seen and set(seen) == {explicit or "cuda"}


def _view(x, cls):
    return x.view(cls)


# ---------------------------------------------------------------- bundle
@pytest.mark.parametrize("threshold", [0, 1, 2, 3, 7, 100])
@pytest.mark.parametrize("chunks", [(5, 1), (1, 2), (13, 3)])
def test_bundle_exact_thresholds(threshold, chunks, rng):
    dim, nvec = 77, 13
    t = rng.integers(-1, 2, (nvec, dim)).astype(np.int8)
    t[:, 5] = 1  # sum 13
    t[:7, 6], t[7:, 6] = 1, -1  # sum 1
    vs = tg.TernaryVec.from_array(t)
    lazy_vs = tgd.from_planes(da.from_array(vs.pos, chunks=chunks), da.from_array(vs.neg, chunks=chunks),
                              dim)
    out = tgd.bundle(lazy_vs, threshold=threshold)
    p, n = dask.compute(out.pos, out.neg)
    got = tg.TernaryVec(p, n, dim).to_array()
    s = t.astype(np.int64).sum(axis=0)
    ref = np.where(np.abs(s) >= max(threshold, 1), np.sign(s), 0)
    np.testing.assert_array_equal(got, ref, err_msg=f"seed {SEED}")
    one = tg.bundle(vs, threshold=threshold, backend="cpu")
    assert np.array_equal(p, one.pos) and np.array_equal(n, one.neg)


def test_bundle_batched_rest(rng):
    t = rng.integers(-1, 2, (9, 3, 50)).astype(np.int8)
    vs = tgd.from_ternary(tg.TernaryVec.from_array(t), chunks=4)
    out = tgd.bundle(vs, threshold=2)
    assert out.batch_shape == (3,)
    got = tg.TernaryVec(*dask.compute(out.pos, out.neg), 50).to_array()
    s = t.astype(int).sum(axis=0)
    np.testing.assert_array_equal(got, np.where(np.abs(s) >= 2, np.sign(s), 0))
    with pytest.raises(TypeError, match="dask planes"):
        tgd.bundle(tg.TernaryVec.from_array(t))


# ---------------------------------------------------------------- the 2-GPU benchmark's code path
def test_bench_dask_runs_on_numpy_chunks(tmp_path):
    """benchmarks/bench_dask.py --cpu --tiny: the same code the GPU run uses (distributed client,
    data made on the workers, one-device and plain-loop baselines, every check), on numpy chunks."""
    pytest.importorskip("distributed")
    pytest.importorskip("scipy")
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_dask.py"
    spec = importlib.util.spec_from_file_location("bench_dask", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "r.json"
    assert bench.main(["--cpu", "--tiny", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["ok"] and len(res["checks"]) >= 10
    assert {"matmul", "apsp", "search"} <= set(res)
    assert res["complete"] and res["matmul"]["dask_rows"]["median_s"] > 0
    for rec in (res["matmul"]["dask_rows"], res["search"]["dask"]):
        assert rec["gather_s"] >= 0 and rec["holdings_gb"]
    # every worker ran its share: the row blocks are pinned to the workers that hold their rows
    assert len(res["matmul"]["dask_rows"]["where"]) == 2 and len(res["apsp"]["dask"]["where"]) == 2
    assert all(w["tasks"] for w in res["matmul"]["dask_rows"]["where"].values())
    # the timed graphs move no operand between workers (counted from distributed's transfer logs): the
    # rows matmul nothing at all (B replicated before timing and used under its own key), the search
    # only the per-shard top-k candidates (int64 indices and scores), never a memory shard or a
    # rows-long array
    assert res["matmul"]["dask_rows"]["transfer_bytes"] == 0, res["matmul"]["dask_rows"]["transfers"]
    size, shards = res["sizes"], 2
    assert 0 < res["search"]["dask"]["transfer_bytes"] <= shards * 2 * size["nq"] * res["search"]["k"] * 8, \
        res["search"]["dask"]["transfers"]
    assert res["apsp"]["dask"]["transfer_bytes"] > 0  # the all-gather of the row bands is counted


@pytest.mark.parametrize("kchunk", [1, 3, 7])
@pytest.mark.parametrize("argmax", [False, True])
def test_zero_sign_ordered_across_k_chunks(kchunk, argmax, rng):
    """Zeros of both signs tie in different k chunks: the combined zero is ordered (-0 < +0), the
    bits one call gives (tests/test_zero_sign.py pins that call against the reference)."""
    m, k, n = 5, 13, 4
    zeros = np.array([0.0, -0.0], np.float32)
    a, b = rng.choice(zeros, (m, k)), rng.choice(zeros, (k, n))
    for name in ("min_plus", "max_plus", "min_max", "max_min", "max_times"):
        got = tgd.matmul(lazy(a, (2, kchunk)), lazy(b, (kchunk, 3)), name, return_argmax=argmax,
                         split_every=2)
        one = tg.matmul(a, b, name, return_argmax=argmax, backend="cpu")
        gd, od = (got[0], one[0]) if argmax else (got, one)
        np.testing.assert_array_equal(gd.compute().view(np.int32), od.view(np.int32),
                                      err_msg=f"{name} seed {SEED}")
