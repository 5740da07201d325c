"""Beyond one GPU: pytropical_gpu.dask on a ``dask_cuda.LocalCUDACluster`` (one worker per GPU), each
benchmark beside the same work on one GPU in the same run, and beside the same blocks run by a plain
loop over the GPUs (one thread per ``cupy.cuda.Device``) to measure what the engine costs.

1. min_plus float32 n×n×n (32768): A sharded by rows over the workers, B replicated (``layout
   rows``); ``--layouts rows,grid`` adds square blocks (n/g) with dask moving the blocks.
   Target >= 1.8x one GPU on two. Checked: rows bit-identical to the one-GPU product, cells against
   a host loop.
2. All-pairs shortest paths of a random n-node digraph (32768, ~8 out-edges, integer weights) by
   repeated squaring ``D = D ⊕ D ⊗ D`` with argmax path recovery (next hops), until nothing improves.
   Checked: sampled sources' distances against scipy's Dijkstra, their routes walked edge by edge, and
   distances and next hops identical to the one-GPU run.
3. Item-memory search: 64 queries (8 of them copies of memory rows) in a rows × dim-trit memory
   (10,000,000 × 10,000) sharded over the workers. Target >= 1.8x. Checked: identical to one GPU,
   planted rows found with score dim, scores recomputed on the host.

Data are made where they are used (a counter-based hash of the global index, so every layout and the
one-GPU run see the same numbers without shipping them). Timings are medians; each dask timing also
records the task stream (compute time per worker, transfers) in the JSON.

    python benchmarks/bench_dask.py --out results/dask_2xh200.json              # every visible GPU
    python benchmarks/bench_dask.py --quick --out /tmp/dask_quick.json          # smoke test, 1 GPU ok
    python benchmarks/bench_dask.py --cpu --tiny --out /tmp/x.json              # no GPU: numpy chunks

Exit status 1 when a check fails (after writing the JSON).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without an install
    sys.path.insert(0, str(ROOT))

from pytropical_gpu._arrays import xp_of  # noqa: E402

SIZES = {  # matmul n, apsp n, search rows, search dim, queries
    "full": dict(mm=32768, apsp=32768, rows=10_000_000, dim=10_000, nq=64),
    "quick": dict(mm=4096, apsp=2048, rows=400_000, dim=2_000, nq=64),
    "tiny": dict(mm=96, apsp=64, rows=3_000, dim=200, nq=8),
}
_M1, _M2, _G = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), 0x9E3779B97F4A7C15


class CheckFailed(AssertionError):
    pass


# ---------------------------------------------------------------- data made where it is used
def _xp(gpu: bool):
    if gpu:
        import cupy
        return cupy
    return np


def _hash(xp, r0, r1, c0, c1, ncols, seed):
    """splitmix64 of the global index row * ncols + col: the same numbers on any device/layout."""
    i = xp.arange(r0, r1, dtype=np.uint64)[:, None]
    j = xp.arange(c0, c1, dtype=np.uint64)[None, :]
    x = i * np.uint64(ncols) + j + np.uint64((seed * _G) % 2**64)
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def gen(kind, xp, r0, r1, c0, c1, ncols, seed, **kw):
    """Rows r0:r1, columns c0:c1 of a generated matrix, made in row slices to bound temporaries."""
    dt = np.uint32 if kind == "planes" else np.float32
    out = xp.empty((r1 - r0, c1 - c0), dt)
    step = max(1, (1 << 27) // max(1, c1 - c0))
    for s0 in range(r0, r1, step):
        s1 = min(r1, s0 + step)
        h = _hash(xp, s0, s1, c0, c1, ncols, seed)
        if kind == "values":  # integers 0..999 as float32: sums stay exact
            v = (h >> np.uint64(40)) % np.uint64(1000)
            out[s0 - r0:s1 - r0] = v.astype(np.float32)
        elif kind == "graph":  # ~deg out-edges per node, weights 1..100, 0 on the diagonal
            edge = (h & np.uint64(0xFFFFFFFF)) < np.uint64(int(kw["deg"] / ncols * 2**32))
            w = (np.uint64(1) + (h >> np.uint64(32)) % np.uint64(100)).astype(np.float32)
            blk = xp.where(edge, w, np.float32(np.inf))
            ii = xp.arange(s0, s1)[:, None]
            jj = xp.arange(c0, c1)[None, :]
            out[s0 - r0:s1 - r0] = xp.where(ii == jj, np.float32(0), blk)
        else:  # planes: dense ±1 trits; "pos" words, neg = ~pos with a zero tail
            out[s0 - r0:s1 - r0] = (h & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return out


def trit_planes(pos, dim, xp):
    neg = ~pos
    if dim % 32:
        mask = np.uint32((1 << (dim % 32)) - 1)
        pos[..., -1] &= mask
        neg[..., -1] &= mask
    return pos, neg


def _block_gen(kind, shape, seed, gpu, kw, block_info=None):
    (r0, r1), (c0, c1) = block_info[None]["array-location"]
    return gen(kind, _xp(gpu), r0, r1, c0, c1, shape[1], seed, **kw)


def lazy_gen(kind, shape, chunks, seed, gpu, **kw):
    """A dask array whose blocks are generated on the workers that hold them."""
    import dask.array as da

    dt = np.uint32 if kind == "planes" else np.float32
    meta = _xp(gpu).empty((0, 0), dt)
    return da.map_blocks(_block_gen, kind, shape, seed, gpu, kw, dtype=dt, meta=meta,
                         chunks=da.core.normalize_chunks(chunks, shape, dtype=dt))


# ---------------------------------------------------------------- environment
class Env:
    """The cluster (LocalCUDACluster, or an in-process LocalCluster with numpy chunks for --cpu)."""

    def __init__(self, cpu: bool, workers: int | None):
        from distributed import Client, LocalCluster

        self.gpu = not cpu
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [
            os.environ.get("PYTHONPATH")] if p])  # spawned workers import this checkout
        if cpu:
            self.cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=False,
                                        dashboard_address=None)
            self.devices = list(range(workers or 2))
        else:
            import cupy
            from dask_cuda import LocalCUDACluster
            count = cupy.cuda.runtime.getDeviceCount()
            self.devices = list(range(workers or count))
            self.cluster = LocalCUDACluster(
                CUDA_VISIBLE_DEVICES=",".join(map(str, self.devices)), threads_per_worker=1)
        self.client = Client(self.cluster)
        self.client.wait_for_workers(len(self.devices))
        self.workers = sorted(self.client.scheduler_info()["workers"])

    @property
    def g(self) -> int:
        return len(self.devices)

    def device(self, d):
        if not self.gpu:
            return contextlib.nullcontext()
        import cupy
        return cupy.cuda.Device(d)

    def sync(self, d=None):
        if self.gpu:
            import cupy
            with self.device(d if d is not None else 0):
                cupy.cuda.Device().synchronize()

    def free(self):
        """Release the client's and the workers' cached device memory between sections."""
        if self.gpu:
            def _free():
                import cupy
                cupy.get_default_memory_pool().free_all_blocks()
            for d in self.devices:
                with self.device(d):
                    _free()
            self.client.run(_free)

    def describe(self) -> dict:
        info = {"host": platform.node(), "python": platform.python_version(), "workers": len(self.workers),
                "gpu": self.gpu}
        import dask
        import distributed
        info.update(dask=dask.__version__, distributed=distributed.__version__)
        if self.gpu:
            import cupy
            import dask_cuda
            info.update(cupy=cupy.__version__, dask_cuda=dask_cuda.__version__, gpus=[
                cupy.cuda.runtime.getDeviceProperties(d)["name"].decode() for d in self.devices])
        return info

    def close(self):
        self.client.close()
        self.cluster.close()


def parallel(env, fns):
    """Run one callable per device, each in its own thread inside that device's context; wall time."""
    out, errs = [None] * len(fns), []
    barrier = threading.Barrier(len(fns) + 1)

    def work(i, fn):
        with env.device(env.devices[i]):
            barrier.wait()
            try:
                out[i] = fn()
                env.sync(env.devices[i])
            except Exception as e:  # reported, and the run fails
                errs.append(f"device {env.devices[i]}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    if errs:
        raise RuntimeError("; ".join(errs))
    return time.perf_counter() - t0, out


def timed(fn, repeats, warmup=1):
    """Median wall time of ``fn()`` over ``repeats`` calls after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    ts = []
    res = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = fn()
        ts.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(ts), "all_s": ts}, res


def stream_summary(data: list) -> dict:
    """Where the time went, from distributed's task stream: compute and transfer seconds per worker."""
    per = {}
    for rec in data:
        w = per.setdefault(rec.get("worker", "?"), {"compute_s": 0.0, "transfer_s": 0.0, "tasks": 0})
        w["tasks"] += 1
        for ss in rec.get("startstops", ()):
            key = "compute_s" if ss["action"] == "compute" else "transfer_s"
            if ss["action"] in ("compute", "transfer"):
                w[key] += ss["stop"] - ss["start"]
    return per


def _same(x):
    return x


def dask_timed(env, make, repeats):
    """Time ``persist`` + wait of the collection ``build(*inputs)``, fresh keys every repeat.

    ``make()`` returns ``(build, inputs)`` with the inputs persisted; each repeat passes them through
    a renamed identity (no copy) so nothing downstream is already in memory. The first run warms the
    workers (kernel compilation) and is not timed; the last one records the task stream."""
    import uuid

    from distributed import get_task_stream, wait

    build, inputs = make()
    ts, last, stream = [], None, None
    for r in range(repeats + 1):
        fresh = build(*[x.map_blocks(_same, name=f"in-{uuid.uuid4().hex}") for x in inputs])
        cm = get_task_stream(env.client) if r == repeats else contextlib.nullcontext()
        with cm as st:
            t0 = time.perf_counter()
            fresh = env.client.persist(fresh)
            wait(fresh)
            dt = time.perf_counter() - t0
        stream = st or stream
        if r:
            ts.append(dt)
        last = fresh
    return {"median_s": statistics.median(ts), "all_s": ts, "where": stream_summary(stream.data)}, last


def check(results, name, ok, detail=""):
    results["checks"].append({"check": name, "ok": bool(ok), "detail": detail})
    if not ok:
        print(f"CHECK FAILED: {name} {detail}", flush=True)


def speed(base, ours):
    return round(base["median_s"] / ours["median_s"], 3) if ours["median_s"] else None


# ---------------------------------------------------------------- 1. min_plus
def bench_matmul(env, n, repeats, layouts, results):
    import dask.array as da

    import pytropical_gpu as tg
    import pytropical_gpu.dask as tgd

    xp, be = _xp(env.gpu), ("cuda" if env.gpu else "cpu")
    rows = [0, n // 3, n - 1]
    cols = [0, 7 % n, n // 2, n - 1]
    rec = {"n": n, "op": "min_plus float32", "work_ops": 2 * n**3}

    def one(ro):  # the plain product of rows ro on the current device
        a = gen("values", xp, ro[0], ro[1], 0, n, n, 1)
        b = gen("values", xp, 0, n, 0, n, n, 2)
        return lambda: tg.matmul(a, b, "min_plus", backend=be)

    with env.device(env.devices[0]):
        f = one((0, n))
        single, d1 = timed(lambda: (f(), env.sync(env.devices[0]))[0], repeats)
    rec["one_gpu"] = single
    ref_rows = _host(d1[rows])
    f = d1 = None
    # host check of a few cells
    wrong = []
    for r in rows:
        a_host = gen("values", np, r, r + 1, 0, n, n, 1)[0]
        for c in cols:
            bcol = gen("values", np, 0, n, c, c + 1, n, 2)[:, 0]
            want = np.min(a_host + bcol)
            if ref_rows[rows.index(r), c] != want:
                wrong.append((r, c))
    check(results, "matmul one-GPU cells vs host loop", not wrong, str(wrong))
    env.free()

    # the same blocks, a plain loop (thread per device)
    splits = np.linspace(0, n, env.g + 1).astype(int)
    parts = []
    for i, d in enumerate(env.devices):
        with env.device(d):
            parts.append(one((splits[i], splits[i + 1])))
    plain, outs = timed(lambda: parallel(env, parts)[1], repeats)
    rec["plain_loop"] = plain
    got = np.concatenate([_host(o) for o in outs])[rows]
    check(results, "matmul plain loop == one GPU (bit for bit)", got.tobytes() == ref_rows.tobytes())
    parts = outs = None
    env.free()

    for layout in layouts:
        def make(layout=layout):
            if layout == "rows":
                a = lazy_gen("values", (n, n), (math.ceil(n / env.g), n), 1, env.gpu)
                b = lazy_gen("values", (n, n), (n, n), 2, env.gpu)
            else:
                c = math.ceil(n / env.g)
                a = lazy_gen("values", (n, n), (c, c), 1, env.gpu)
                b = lazy_gen("values", (n, n), (c, c), 2, env.gpu)
            a, b = env.client.persist([a, b])
            if layout == "rows":
                env.client.replicate(b)
            return (lambda x, y: tgd.matmul(x, y, "min_plus")), [a, b]
        t, d = dask_timed(env, make, repeats)
        t["speedup_vs_one_gpu"] = speed(single, t)
        t["engine_overhead_s"] = round(t["median_s"] - plain["median_s"], 4)
        rec[f"dask_{layout}"] = t
        got = _host(d[rows].compute())
        check(results, f"matmul dask ({layout}) == one GPU (bit for bit)",
              got.tobytes() == ref_rows.tobytes())
        del d
        env.free()
    rec["target"] = ">= 1.8x one GPU"
    rec["target_met"] = rec["dask_rows"]["speedup_vs_one_gpu"] >= 1.8 if env.g >= 2 else None
    _ = da  # dask.array imported for the workers' unpickling
    results["matmul"] = rec


def _host(x):
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else np.asarray(x)


# ---------------------------------------------------------------- 2. APSP
def _next_hop(nxt, arg):
    """Where the squaring improved through k = arg, the first hop is the first hop towards k."""
    xp = xp_of(nxt)
    via = xp.take_along_axis(nxt, xp.maximum(arg, 0).astype(np.int64), axis=1)
    return xp.where(arg >= 0, via, nxt)


def _initial_next(w):
    xp = xp_of(w)
    j = xp.arange(w.shape[1], dtype=np.int32)[None, :]
    return xp.where(xp.isfinite(w), j, np.int32(-1)).astype(np.int32)


def _initial_next_block(w, block_info=None):
    (r0, _), (c0, _) = block_info[0]["array-location"]
    xp = xp_of(w)
    j = xp.arange(c0, c0 + w.shape[1], dtype=np.int32)[None, :]
    return xp.where(xp.isfinite(w), j, np.int32(-1)).astype(np.int32)


def bench_apsp(env, n, samples, results):
    import scipy.sparse as sp
    from scipy.sparse.csgraph import dijkstra

    import pytropical_gpu as tg
    import pytropical_gpu.dask as tgd

    xp, be = _xp(env.gpu), ("cuda" if env.gpu else "cpu")
    deg = 8
    rng = np.random.default_rng(5)
    src = np.sort(rng.choice(n, size=min(samples, n), replace=False))
    rec = {"n": n, "out_degree": deg, "sources_checked": src.tolist()}

    # one GPU
    with env.device(env.devices[0]):
        t0 = time.perf_counter()
        d = gen("graph", xp, 0, n, 0, n, n, 3, deg=deg)
        nxt = _initial_next(d)
        steps = 0
        while True:
            d2, arg = tg.matmul(d, d, "min_plus", c=d, return_argmax=True, backend=be)
            nxt = _next_hop(nxt, arg)
            d = d2
            steps += 1
            if not bool((arg >= 0).any()) or steps > 64:
                break
        env.sync(env.devices[0])
        rec["one_gpu"] = {"median_s": time.perf_counter() - t0, "squarings": steps}
        d_one, nxt_one = _host(d[src]), _host(nxt[src])
        del d, d2, arg, nxt
    env.free()

    # dask
    c = math.ceil(n / env.g)
    t0 = time.perf_counter()
    dd = env.client.persist(lazy_gen("graph", (n, n), (c, c), 3, env.gpu, deg=deg))
    nx = env.client.persist(dd.rechunk((c, n)).map_blocks(_initial_next_block, dtype=np.int32))
    steps, per = 0, []
    while True:
        t1 = time.perf_counter()
        d2, arg = tgd.matmul(dd, dd, "min_plus", c=dd, return_argmax=True)
        nx2 = nx.map_blocks(_next_hop, arg.rechunk(nx.chunks), dtype=np.int32)
        dd, nx, arg = env.client.persist([d2, nx2, arg])
        improved = bool((arg >= 0).any().compute())
        del arg
        steps += 1
        per.append(time.perf_counter() - t1)
        if not improved or steps > 64:
            break
    rec["dask"] = {"median_s": time.perf_counter() - t0, "squarings": steps, "per_squaring_s": per}
    rec["dask"]["speedup_vs_one_gpu"] = speed(rec["one_gpu"], rec["dask"])
    d_dask, nxt_dask = _host(dd[src].compute()), _host(nx[src].compute())
    check(results, "apsp dask == one GPU (distances, next hops)",
          d_dask.tobytes() == d_one.tobytes() and nxt_dask.tobytes() == nxt_one.tobytes())
    check(results, "apsp squarings equal", steps == rec["one_gpu"]["squarings"])
    del dd, nx
    env.free()

    # scipy's Dijkstra from the sampled sources, on the edge list of the same graph
    w = gen("graph", np, 0, n, 0, n, n, 3, deg=deg) if n <= 8192 else None
    if w is not None:
        from scipy.sparse.csgraph import csgraph_from_dense
        g = csgraph_from_dense(w, null_value=np.inf)
    else:
        r_, c_, v_ = [], [], []
        step = 2048
        for r0 in range(0, n, step):
            blk = gen("graph", np, r0, min(n, r0 + step), 0, n, n, 3, deg=deg)
            ii, jj = np.nonzero(np.isfinite(blk))
            r_.append(ii + r0)
            c_.append(jj)
            v_.append(blk[ii, jj])
        g = sp.csr_matrix((np.concatenate(v_), (np.concatenate(r_), np.concatenate(c_))), shape=(n, n))
    rec["edges"] = int(g.nnz)
    ref = dijkstra(g, indices=src)
    check(results, "apsp distances == scipy Dijkstra (sampled sources)",
          np.array_equal(d_one.astype(np.float64), ref))
    rec["route_check"] = "first hops: edge exists and w(s, h) + dist(h, t) == dist(s, t)"
    bad = _check_first_hops(g, src, nxt_one, ref)
    check(results, "apsp next hops are edges on shortest routes", bad == 0, f"{bad} bad")
    results["apsp"] = rec


def _check_first_hops(g, src, nxt, ref):
    """Every reachable t: h = next(s, t) is an edge s->h and w(s, h) + dist(h, t) == dist(s, t);
    unreachable t have no next hop."""
    hops = np.unique(nxt[nxt >= 0])
    rows = dijkstra_rows(g, hops)
    gr = g.tocsr()
    bad = 0
    for si, s in enumerate(src):
        lo, hi = gr.indptr[s], gr.indptr[s + 1]
        out = dict(zip(gr.indices[lo:hi].tolist(), gr.data[lo:hi].tolist()))
        for t in np.flatnonzero(np.isfinite(ref[si])).tolist():
            if t == s:
                continue
            h = int(nxt[si, t])
            if h not in out or out[h] + rows[h][t] != ref[si, t]:
                bad += 1
        if (nxt[si][~np.isfinite(ref[si])] != -1).any():
            bad += 1
    return bad


def dijkstra_rows(g, nodes):
    from scipy.sparse.csgraph import dijkstra
    if len(nodes) == 0:
        return {}
    d = dijkstra(g, indices=nodes)
    return {int(v): d[i] for i, v in enumerate(nodes)}


# ---------------------------------------------------------------- 3. search
def _query(nq, dim, words, rows, planted):
    """nq queries: the first `planted` are memory rows (spread out), the rest random."""
    import pytropical_gpu as tg

    pos = gen("planes", np, 0, nq, 0, words, words, 77)
    at = np.linspace(0, rows - 1, planted).astype(int)
    for i, r in enumerate(at):
        pos[i] = gen("planes", np, r, r + 1, 0, words, words, 4)[0]
    p, n = trit_planes(pos, dim, np)
    return tg.TernaryVec(p, n, dim), at


def bench_search(env, rows, dim, nq, repeats, k, results):
    import pytropical_gpu as tg
    import pytropical_gpu.dask as tgd

    xp, be = _xp(env.gpu), ("cuda" if env.gpu else "cpu")
    words = (dim + 31) // 32
    planted = min(8, nq)
    q, at = _query(nq, dim, words, rows, planted)
    rec = {"rows": rows, "dim": dim, "queries": nq, "k": k, "work_ops": 2 * nq * rows * dim}

    def shard(r0, r1):
        p, n = trit_planes(gen("planes", xp, r0, r1, 0, words, words, 4), dim, xp)
        return tg.TernaryVec._trusted(p, n, dim)

    with env.device(env.devices[0]):
        mem = shard(0, rows)
        single, res = timed(lambda: (tg.search(q, mem, k, backend=be), env.sync(env.devices[0]))[0],
                            repeats)
        i1, s1 = _host(res[0]), _host(res[1])
        mem = res = None
    rec["one_gpu"] = single
    env.free()
    check(results, "search planted rows found with score dim",
          np.array_equal(i1[:planted, 0], at) and np.all(s1[:planted, 0] == dim))
    qt = q.to_array().astype(np.int64)
    ok = True
    for qi in sorted({0, min(planted, nq - 1), nq - 1}):
        for j in range(k):
            r = int(i1[qi, j])
            row = tg.TernaryVec(*trit_planes(gen("planes", np, r, r + 1, 0, words, words, 4), dim, np), dim)
            ok &= int(row.to_array()[0].astype(np.int64) @ qt[qi]) == int(s1[qi, j])
    check(results, "search scores recomputed on the host", ok)
    ok_order = bool(np.all(np.diff(s1, axis=1) <= 0))
    check(results, "search scores descending", ok_order)

    splits = np.linspace(0, rows, env.g + 1).astype(int)
    shards = []
    for i, d in enumerate(env.devices):
        with env.device(d):
            shards.append(shard(splits[i], splits[i + 1]))

    def plain():
        _, outs = parallel(env, [lambda s=s: tg.search(q, s, k, backend=be) for s in shards])
        cand_i = np.concatenate([_host(o[0]) + splits[i] for i, o in enumerate(outs)], axis=1)
        cand_s = np.concatenate([_host(o[1]) for o in outs], axis=1)
        order = np.lexsort((cand_i, -cand_s), axis=1)[:, :k]
        return np.take_along_axis(cand_i, order, 1), np.take_along_axis(cand_s, order, 1)

    rec["plain_loop"], (pi, ps) = timed(plain, repeats)
    check(results, "search plain loop == one GPU", np.array_equal(pi, i1) and np.array_equal(ps, s1))
    shards = None
    env.free()

    import dask

    c = math.ceil(rows / env.g)
    pos = lazy_gen("planes", (rows, words), (c, words), 4, env.gpu)
    pos, neg = pos.map_blocks(_planes_pos, dim), pos.map_blocks(_planes_neg, dim)
    memory = tgd.from_planes(pos, neg, dim, validate=False)
    memory = tg.TernaryVec._trusted(*env.client.persist([memory.pos, memory.neg]), dim)
    dask.compute(*tgd.search(q, memory, k))  # warm
    ts = []
    from distributed import get_task_stream
    for r in range(repeats):
        cm = get_task_stream(env.client) if r == repeats - 1 else contextlib.nullcontext()
        with cm as st:
            stream = st
            t0 = time.perf_counter()
            di, ds = dask.compute(*tgd.search(q, memory, k))
            ts.append(time.perf_counter() - t0)
    t = {"median_s": statistics.median(ts), "all_s": ts, "where": stream_summary(stream.data)}
    t["speedup_vs_one_gpu"] = speed(single, t)
    t["engine_overhead_s"] = round(t["median_s"] - rec["plain_loop"]["median_s"], 4)
    rec["dask"] = t
    check(results, "search dask == one GPU", np.array_equal(_host(di), i1) and np.array_equal(_host(ds), s1))
    rec["target"] = ">= 1.8x one GPU"
    rec["target_met"] = t["speedup_vs_one_gpu"] >= 1.8 if env.g >= 2 else None
    del memory
    env.free()
    results["search"] = rec


def _planes_pos(h, dim):
    return trit_planes(h.copy(), dim, xp_of(h))[0]


def _planes_neg(h, dim):
    return trit_planes(h.copy(), dim, xp_of(h))[1]


# ---------------------------------------------------------------- main
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="write the JSON results here")
    p.add_argument("--quick", action="store_true", help="small sizes (a 1-GPU smoke test)")
    p.add_argument("--tiny", action="store_true", help="tiny sizes (the CPU test)")
    p.add_argument("--cpu", action="store_true", help="numpy chunks on an in-process LocalCluster")
    p.add_argument("--workers", type=int, default=None, help="GPUs (workers) to use; default all")
    p.add_argument("--only", default="matmul,apsp,search", help="comma list of benchmarks")
    p.add_argument("--layouts", default=None, help="matmul layouts: rows, grid (default rows; quick: both)")
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--samples", type=int, default=8, help="APSP sources checked against Dijkstra")
    args = p.parse_args(argv)
    size = SIZES["tiny" if args.tiny else "quick" if args.quick else "full"]
    repeats = args.repeats or (2 if args.tiny else 3)
    layouts = (args.layouts or ("rows,grid" if (args.quick or args.tiny) else "rows")).split(",")
    if "rows" not in layouts:
        layouts.insert(0, "rows")
    only = set(args.only.split(","))
    results = {"sizes": size, "checks": [], "argv": sys.argv[1:] if argv is None else list(argv)}
    env = Env(args.cpu, args.workers)
    results["machine"] = env.describe()
    print(f"dask: {env.g} worker(s), {'GPU' if env.gpu else 'numpy'} chunks", flush=True)
    try:
        for name in ("matmul", "apsp", "search"):
            if name not in only:
                continue
            t0 = time.perf_counter()
            try:
                if name == "matmul":
                    bench_matmul(env, size["mm"], repeats, layouts, results)
                elif name == "apsp":
                    bench_apsp(env, size["apsp"], args.samples, results)
                else:
                    bench_search(env, size["rows"], size["dim"], size["nq"], repeats, 10, results)
            except Exception as e:
                check(results, f"{name} ran", False, f"{type(e).__name__}: {e}")
                import traceback
                traceback.print_exc()
            brief = {k: v for k, v in results.get(name, {}).items() if k != "sources_checked"}
            print(f"{name}: {time.perf_counter() - t0:.1f} s {json.dumps(brief, default=str)[:800]}",
                  flush=True)
    finally:
        env.close()
        results["ok"] = all(c["ok"] for c in results["checks"])
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=1, default=str))
    print("ALL CHECKS PASSED" if results["ok"] else "SOME CHECK FAILED", flush=True)
    return 0 if results["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
