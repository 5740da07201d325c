"""Beyond one GPU: pytropical_gpu.dask on a ``dask_cuda.LocalCUDACluster`` (one worker per GPU), each
benchmark beside the same work on one GPU in the same run, and beside the same blocks run by a plain
loop over the GPUs (one thread per ``cupy.cuda.Device``) to measure what the engine costs.

1. min_plus float32 n×n×n (32768), layout ``rows``: row block i of A made on worker i, B made once
   and copied to every worker before timing; each result row block is computed (pinned) on the
   worker holding its rows and stays there. ``--layouts rows,grid`` adds square blocks (n/g) that
   dask places and moves itself. Target >= 1.8x one GPU on two. Checked: every element bit-identical
   to the one-GPU product, cells against a host loop.
2. All-pairs shortest paths of a random n-node digraph (32768, ~8 out-edges, integer weights) by
   repeated squaring ``D = D ⊕ D ⊗ D`` with argmax path recovery (next hops), until nothing improves.
   Row band i of D and of the next hops lives on worker i, which receives a copy of the other bands
   each squaring (the all-gather a squaring needs). Checked: sampled sources' distances against
   scipy's Dijkstra, their first hops on shortest routes, distances and next hops identical to the
   one-GPU run.
3. Item-memory search: 64 queries (8 of them copies of memory rows) in a rows × dim-trit memory
   (10,000,000 × 10,000) whose shard i is made on worker i. Target >= 1.8x. Checked: identical to
   one GPU, planted rows found with score dim, scores recomputed on the host.

Data are made where they are used, vectorised on the device (a counter-based hash of the global
index, so every layout and the one-GPU run see the same numbers without shipping them). Every timing
follows an untimed warm-up (kernels compile on first use in each process) and ends when the GPUs are
done; dask timings are ``persist`` + ``wait`` with the results left on the workers (bringing them to
the client is timed apart: ``gather_s``); the task stream of the last run gives, per worker, compute
seconds (GPU time included), seconds receiving data and the tasks by name, and distributed's transfer
logs the bytes each worker received from the others (``transfer_bytes``, ``transfers`` by key name):
0 for the rows matmul (B is replicated before timing), the per-shard top-k candidates for the search.
Progress is printed with timestamps and the JSON is rewritten after every step, so a run cut short
still leaves its numbers (``"complete": false``).

    python benchmarks/bench_dask.py --only matmul,search --out results/dask_mm_search.json   # all GPUs
    python benchmarks/bench_dask.py --only apsp --out results/dask_apsp.json
    python benchmarks/bench_dask.py --quick --out /tmp/dask_quick.json          # smoke test, 1 GPU ok
    python benchmarks/bench_dask.py --cpu --tiny --out /tmp/x.json              # no GPU: numpy chunks

Exit status 1 when a check fails (after writing the JSON).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without an install
    sys.path.insert(0, str(ROOT))

from benchmarks._dask_env import (  # noqa: E402
    Env,
    dask_timed,
    gathered,
    gen,
    host,
    lazy_gen,
    log,
    parallel,
    renamed,
    speed,
    stream_summary,
    synced,
    timed,
    transfers,
    trit_planes,
    xp_for,
)
from pytropical_gpu._arrays import xp_of  # noqa: E402

SIZES = {  # matmul n, apsp n, search rows, search dim, queries
    "full": dict(mm=32768, apsp=32768, rows=10_000_000, dim=10_000, nq=64),
    "quick": dict(mm=4096, apsp=2048, rows=400_000, dim=2_000, nq=64),
    "tiny": dict(mm=96, apsp=64, rows=3_000, dim=200, nq=8),
}
_OUT: list = []  # the JSON path: results are written after every step


class CheckFailed(AssertionError):
    pass


def save(results) -> None:
    """Write what we have so far (a run cut off by a time limit still leaves its numbers)."""
    if _OUT:
        results["ok"] = all(c["ok"] for c in results["checks"])
        Path(_OUT[0]).parent.mkdir(parents=True, exist_ok=True)
        Path(_OUT[0]).write_text(json.dumps(results, indent=1, default=str))


def check(results, name, ok, detail=""):
    results["checks"].append({"check": name, "ok": bool(ok), "detail": detail})
    log(f"check {'ok' if ok else 'FAILED'}: {name} {detail}")
    save(results)


# ---------------------------------------------------------------- 1. min_plus
def bench_matmul(env, n, repeats, layouts, results):
    import dask.array as da

    import pytropical_gpu as tg
    import pytropical_gpu.dask as tgd

    xp, be = xp_for(env.gpu), ("cuda" if env.gpu else "cpu")
    rows = [0, n // 3, n - 1]
    cols = [0, 7 % n, n // 2, n - 1]
    rec = results["matmul"] = {"n": n, "op": "min_plus float32", "work_ops": 2 * n**3}

    def one(ro):  # the plain product of rows ro on the current device
        a = gen("values", xp, ro[0], ro[1], 0, n, n, 1)
        b = gen("values", xp, 0, n, 0, n, n, 2)
        return lambda: tg.matmul(a, b, "min_plus", backend=be)

    log(f"matmul {n}^3: one device")
    with env.device(env.devices[0]):
        f = one((0, n))
        single, d1 = timed(lambda: (f(), env.sync(env.devices[0]))[0], repeats, "one device")
        f = None
    rec["one_gpu"] = single
    ref_rows = host(d1[rows])
    wrong = []  # a few cells against a host loop
    for r in rows:
        a_host = gen("values", np, r, r + 1, 0, n, n, 1)[0]
        for c in cols:
            bcol = gen("values", np, 0, n, c, c + 1, n, 2)[:, 0]
            if ref_rows[rows.index(r), c] != np.min(a_host + bcol):
                wrong.append((r, c))
    check(results, "matmul one-GPU cells vs host loop", not wrong, str(wrong))

    log("matmul: plain loop, one thread per device")
    splits = np.linspace(0, n, env.g + 1).astype(int)
    parts = []
    for i, d in enumerate(env.devices):
        with env.device(d):
            parts.append(one((splits[i], splits[i + 1])))
    plain, outs = timed(lambda: parallel(env, parts)[1], repeats, "plain loop")
    rec["plain_loop"] = plain
    got = np.concatenate([host(o) for o in outs])[rows]
    check(results, "matmul plain loop == one GPU (bit for bit)", got.tobytes() == ref_rows.tobytes())
    parts = outs = None
    env.free()
    save(results)

    for layout in layouts:
        log(f"matmul: dask, layout {layout}")
        t0 = time.perf_counter()
        if layout == "rows":  # A: row block i made on worker i; B: made once, copied to every worker
            c = math.ceil(n / env.g)
            a = da.concatenate(env.place_rows(lazy_gen("values", (n, n), (c, n), 1, env.gpu)))
            b = env.client.persist(lazy_gen("values", (n, n), (n, n), 2, env.gpu))
            from distributed import wait
            wait(b)
            t1 = time.perf_counter()
            env.client.replicate(b)
            info = {"make_inputs_s": round(t1 - t0, 3), "replicate_b_s": round(time.perf_counter() - t1, 3),
                    "holdings_gb": env.holdings([a, b])}
            keep = (1,)
        else:  # square blocks placed by the scheduler; dask moves them as the products need
            c = math.ceil(n / env.g)
            a, b = env.client.persist([lazy_gen("values", (n, n), (c, c), 1, env.gpu),
                                       lazy_gen("values", (n, n), (c, c), 2, env.gpu)])
            from distributed import wait
            wait([a, b])
            info = {"make_inputs_s": round(time.perf_counter() - t0, 3), "holdings_gb": env.holdings([a, b])}
            keep = ()
        log(f"  inputs ready: {info}")
        t, outs = dask_timed(env, lambda x, y: tgd.matmul(x, y, "min_plus"), [a, b], repeats,
                             f"dask {layout}", keep=keep, pin_rows=layout == "rows")
        t.update(info)
        t["speedup_vs_one_gpu"] = speed(single, t)
        t["engine_overhead_s"] = round(t["median_s"] - plain["median_s"], 4)
        t["result_holdings_gb"] = env.holdings(outs)
        t["gather_s"], (d,) = gathered(outs)
        rec[f"dask_{layout}"] = t
        log(f"  dask {layout}: median {t['median_s']:.4f} s, {t['speedup_vs_one_gpu']}x one device; "
            f"gather to the client {t['gather_s']:.3f} s; where {t['where']}")
        same = bool((xp_of(d).asarray(d).view(np.uint32) == xp_of(d1).asarray(d1).view(np.uint32)).all())
        check(results, f"matmul dask ({layout}) == one GPU (every element, bit for bit)", same)
        a = b = d = outs = None
        env.free()
    rec["target"] = ">= 1.8x one GPU"
    rec["target_met"] = rec["dask_rows"]["speedup_vs_one_gpu"] >= 1.8 if env.g >= 2 else None
    d1 = None
    env.free()
    save(results)


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


def _square(d, nxt, be):
    """One squaring on one device: D <- D ⊕ D ⊗ D with next hops; True if anything improved."""
    import pytropical_gpu as tg

    d2, arg = tg.matmul(d, d, "min_plus", c=d, return_argmax=True, backend=be)
    return d2, _next_hop(nxt, arg), bool((arg >= 0).any())


def _dask_square(env, dd, nx):
    """One squaring over row bands: band i of D and of the next hops live on worker i, which computes
    its band ``D_i ⊕ D_i ⊗ D`` (its own band and a copy of every other: the all-gather a squaring
    needs, 2 GB per worker at 32768 on 2 GPUs) with every task pinned there, so the only traffic is
    the copies of the other bands. Returns the new bands and whether anything improved."""
    import dask.array as da
    from distributed import wait

    import pytropical_gpu.dask as tgd

    outs = []
    for i, w in enumerate(env.workers[:len(dd)]):
        # band i's own renamed copy of every band: per-band graphs must share no keys (a shared key
        # is computed on one worker only and moved to the other)
        dk = da.concatenate([renamed(b, f"apsp-b{i}") for b in dd])
        a = dd[i].rechunk((dd[i].shape[0], dk.chunks[0]))
        d2, arg = tgd.matmul(a, dk, "min_plus", c=dd[i], return_argmax=True)
        nx2 = da.map_blocks(_next_hop, nx[i], arg, dtype=np.int32, meta=nx[i]._meta)
        flag = (arg >= 0).any()
        outs.append(env.client.persist([d2.map_blocks(synced, dtype=d2.dtype, meta=d2._meta), nx2, flag],
                                       workers=[w], allow_other_workers=False))
    wait(outs)
    improved = any(bool(f) for f in env.client.gather(env.client.compute([o[2] for o in outs])))
    return [o[0] for o in outs], [o[1] for o in outs], improved


def bench_apsp(env, n, samples, results, max_squarings=64):
    import dask
    import dask.array as da
    from distributed import get_task_stream, wait

    xp, be = xp_for(env.gpu), ("cuda" if env.gpu else "cpu")
    deg = 8
    rng = np.random.default_rng(5)
    src = np.sort(rng.choice(n, size=min(samples, n), replace=False))
    rec = results["apsp"] = {"n": n, "out_degree": deg, "sources_checked": src.tolist()}

    # one device: warm up (kernels compile on first use) on a small graph, then time the squarings
    log(f"apsp {n} nodes: one device")
    with env.device(env.devices[0]):
        w = gen("graph", xp, 0, 256, 0, 256, 256, 9, deg=deg)
        _square(w, _initial_next(w), be)
        d = gen("graph", xp, 0, n, 0, n, n, 3, deg=deg)
        nxt = _initial_next(d)
        env.sync(env.devices[0])
        per, t0 = [], time.perf_counter()
        while True:
            t1 = time.perf_counter()
            d, nxt, improved = _square(d, nxt, be)
            per.append(round(time.perf_counter() - t1, 4))
            log(f"  one device squaring {len(per)}: {per[-1]:.3f} s, improved {improved}")
            if not improved or len(per) >= max_squarings:
                break
        env.sync(env.devices[0])
        rec["one_gpu"] = {"median_s": time.perf_counter() - t0, "squarings": len(per), "per_squaring_s": per}
        d_one, nxt_one = host(d[src]), host(nxt[src])
        d = nxt = w = None
    env.free()
    save(results)

    # dask: row band i made on worker i (distances and initial next hops), one warm-up squaring of a
    # small graph in the same layout (every worker compiles its kernels), then the timed squarings
    log("apsp: dask, row bands")
    c = math.ceil(n / env.g)

    def bands(m, c, seed):
        dd = env.place_rows(lazy_gen("graph", (m, m), (c, m), seed, env.gpu, deg=deg))
        meta = xp_for(env.gpu).empty((0, 0), np.int32)
        nx = [env.client.persist(b.map_blocks(_initial_next_block, dtype=np.int32, meta=meta), workers=[w],
                                 allow_other_workers=False) for b, w in zip(dd, env.workers)]
        wait(nx)
        return dd, nx

    wm = 256 * env.g
    _dask_square(env, *bands(wm, 256, 9))
    t0 = time.perf_counter()
    dd, nx = bands(n, c, 3)
    rec["dask_make_inputs_s"] = round(time.perf_counter() - t0, 3)
    rec["dask_holdings_gb"] = env.holdings(dd + nx)
    per = []
    transfers(env.client, clear=True)
    with get_task_stream(env.client) as st:
        t0 = time.perf_counter()
        while True:
            t1 = time.perf_counter()
            dd, nx, improved = _dask_square(env, dd, nx)
            per.append(round(time.perf_counter() - t1, 4))
            log(f"  dask squaring {len(per)}: {per[-1]:.3f} s, improved {improved}")
            if not improved or len(per) >= max_squarings:
                break
        total = time.perf_counter() - t0
    moved = transfers(env.client)  # the all-gather of the row bands, every squaring
    rec["dask"] = {"median_s": total, "squarings": len(per), "per_squaring_s": per,
                   "where": stream_summary(st.data),
                   "transfer_bytes": sum(w["bytes"] for w in moved.values()), "transfers": moved}
    rec["dask"]["speedup_vs_one_gpu"] = speed(rec["one_gpu"], rec["dask"])
    log(f"  dask: {total:.3f} s, {rec['dask']['speedup_vs_one_gpu']}x one device; "
        f"where {rec['dask']['where']}")
    d_dask, nxt_dask = (host(x) for x in dask.compute(da.concatenate(dd)[src], da.concatenate(nx)[src]))
    check(results, "apsp dask == one GPU (distances, next hops)",
          d_dask.tobytes() == d_one.tobytes() and nxt_dask.tobytes() == nxt_one.tobytes())
    check(results, "apsp squarings equal", len(per) == rec["one_gpu"]["squarings"])
    dd = nx = None
    env.free()

    # scipy's Dijkstra from the sampled sources, on the edge list of the same graph (made on a GPU)
    log("apsp: Dijkstra check")
    g = _edge_list(env, n, deg)
    rec["edges"] = int(g.nnz)
    from scipy.sparse.csgraph import dijkstra
    ref = dijkstra(g, indices=src)
    check(results, "apsp distances == scipy Dijkstra (sampled sources)",
          np.array_equal(d_one.astype(np.float64), ref))
    rec["route_check"] = "first hops: edge exists and w(s, h) + dist(h, t) == dist(s, t)"
    bad = _check_first_hops(g, src, nxt_one, ref)
    check(results, "apsp next hops are edges on shortest routes", bad == 0, f"{bad} bad")
    save(results)


def _edge_list(env, n, deg):
    """The graph's edges (no diagonal) as a scipy CSR matrix, found band by band on the first device."""
    import scipy.sparse as sp

    xp = xp_for(env.gpu)
    r_, c_, v_ = [], [], []
    step = max(1, (1 << 26) // n)
    with env.device(env.devices[0]):
        for r0 in range(0, n, step):
            blk = gen("graph", xp, r0, min(n, r0 + step), 0, n, n, 3, deg=deg)
            ii, jj = xp.nonzero(xp.isfinite(blk))
            keep = (ii + r0) != jj
            ii, jj = ii[keep], jj[keep]
            r_.append(host(ii) + r0)
            c_.append(host(jj))
            v_.append(host(blk[ii, jj]))
    return sp.csr_matrix((np.concatenate(v_), (np.concatenate(r_), np.concatenate(c_))), shape=(n, n))


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
    import dask.array as da

    import pytropical_gpu as tg
    import pytropical_gpu.dask as tgd

    xp, be = xp_for(env.gpu), ("cuda" if env.gpu else "cpu")
    words = (dim + 31) // 32
    planted = min(8, nq)
    q, at = _query(nq, dim, words, rows, planted)
    rec = results["search"] = {"rows": rows, "dim": dim, "queries": nq, "k": k,
                               "work_ops": 2 * nq * rows * dim}

    def shard(r0, r1):
        p = gen("tpos", xp, r0, r1, 0, words, words, 4, dim=dim)
        n = gen("tneg", xp, r0, r1, 0, words, words, 4, dim=dim)
        return tg.TernaryVec._trusted(p, n, dim)

    log(f"search {rows} x {dim} trits, {nq} queries: one device")
    with env.device(env.devices[0]):
        mem = shard(0, rows)
        single, res = timed(lambda: (tg.search(q, mem, k, backend=be), env.sync(env.devices[0]))[0],
                            repeats, "one device")
        i1, s1 = host(res[0]), host(res[1])
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
    check(results, "search scores descending", bool(np.all(np.diff(s1, axis=1) <= 0)))

    log("search: plain loop, one thread per device")
    splits = np.linspace(0, rows, env.g + 1).astype(int)
    shards = []
    for i, d in enumerate(env.devices):
        with env.device(d):
            shards.append(shard(splits[i], splits[i + 1]))

    def plain():
        _, outs = parallel(env, [lambda s=s: tg.search(q, s, k, backend=be) for s in shards])
        cand_i = np.concatenate([host(o[0]) + splits[i] for i, o in enumerate(outs)], axis=1)
        cand_s = np.concatenate([host(o[1]) for o in outs], axis=1)
        order = np.lexsort((cand_i, -cand_s), axis=1)[:, :k]
        return np.take_along_axis(cand_i, order, 1), np.take_along_axis(cand_s, order, 1)

    rec["plain_loop"], (pi, ps) = timed(plain, repeats, "plain loop")
    check(results, "search plain loop == one GPU", np.array_equal(pi, i1) and np.array_equal(ps, s1))
    shards = None
    env.free()
    save(results)

    # dask: shard i of both planes made on worker i, persisted before timing
    log("search: dask, row shards")
    t0 = time.perf_counter()
    c = math.ceil(rows / env.g)
    pos = da.concatenate(env.place_rows(lazy_gen("tpos", (rows, words), (c, words), 4, env.gpu, dim=dim)))
    neg = da.concatenate(env.place_rows(lazy_gen("tneg", (rows, words), (c, words), 4, env.gpu, dim=dim)))
    info = {"make_inputs_s": round(time.perf_counter() - t0, 3), "holdings_gb": env.holdings([pos, neg])}
    log(f"  memory ready: {info}")
    t, outs = dask_timed(
        env, lambda p, n: tgd.search(q, tgd.from_planes(p, n, dim, validate=False), k), [pos, neg],
        repeats, "dask")
    t.update(info)
    t["speedup_vs_one_gpu"] = speed(single, t)
    t["engine_overhead_s"] = round(t["median_s"] - rec["plain_loop"]["median_s"], 4)
    t["gather_s"], (di, ds) = gathered(outs)
    rec["dask"] = t
    log(f"  dask: median {t['median_s']:.4f} s, {t['speedup_vs_one_gpu']}x one device; gather "
        f"{t['gather_s']:.4f} s; where {t['where']}")
    check(results, "search dask == one GPU", np.array_equal(host(di), i1) and np.array_equal(host(ds), s1))
    rec["target"] = ">= 1.8x one GPU"
    rec["target_met"] = t["speedup_vs_one_gpu"] >= 1.8 if env.g >= 2 else None
    pos = neg = outs = None
    env.free()
    save(results)


# ---------------------------------------------------------------- main
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="write the JSON results here (after every step)")
    p.add_argument("--quick", action="store_true", help="small sizes (a 1-GPU smoke test)")
    p.add_argument("--tiny", action="store_true", help="tiny sizes (the CPU test)")
    p.add_argument("--cpu", action="store_true", help="numpy chunks on an in-process LocalCluster")
    p.add_argument("--workers", type=int, default=None, help="GPUs (workers) to use; default all")
    p.add_argument("--only", default="matmul,search,apsp", help="benchmarks, run in this order")
    p.add_argument("--layouts", default=None, help="matmul layouts: rows, grid (default rows; quick: both)")
    p.add_argument("--repeats", type=int, default=None, help="timed runs after a warm-up (2; quick 3)")
    p.add_argument("--samples", type=int, default=8, help="APSP sources checked against Dijkstra")
    p.add_argument("--apsp-n", type=int, default=None, help="APSP nodes (default: the size's)")
    p.add_argument("--max-squarings", type=int, default=64, help="APSP: stop after this many squarings")
    args = p.parse_args(argv)
    size = dict(SIZES["tiny" if args.tiny else "quick" if args.quick else "full"])
    if args.apsp_n:
        size["apsp"] = args.apsp_n
    repeats = args.repeats or (3 if args.quick else 2)
    layouts = (args.layouts or ("rows,grid" if (args.quick or args.tiny) else "rows")).split(",")
    if "rows" not in layouts:
        layouts.insert(0, "rows")
    only = [x for x in args.only.split(",") if x]
    bad = set(only) - {"matmul", "apsp", "search"}
    if bad:
        p.error(f"--only: unknown benchmark(s) {sorted(bad)}")
    results = {"sizes": size, "repeats": repeats, "checks": [],
               "argv": sys.argv[1:] if argv is None else list(argv), "complete": False}
    _OUT[:] = [args.out]
    log("starting the cluster")
    env = Env(args.cpu, args.workers)
    results["machine"] = env.describe()
    log(f"dask: {env.g} worker(s), {'GPU' if env.gpu else 'numpy'} chunks; {env.client.dashboard_link}")
    save(results)
    try:
        for name in only:
            t0 = time.perf_counter()
            try:
                if name == "matmul":
                    bench_matmul(env, size["mm"], repeats, layouts, results)
                elif name == "apsp":
                    bench_apsp(env, size["apsp"], args.samples, results, args.max_squarings)
                else:
                    bench_search(env, size["rows"], size["dim"], size["nq"], repeats, 10, results)
            except Exception as e:
                check(results, f"{name} ran", False, f"{type(e).__name__}: {e}")
                import traceback
                traceback.print_exc()
            brief = {k: v for k, v in results.get(name, {}).items() if k != "sources_checked"}
            log(f"{name} done in {time.perf_counter() - t0:.1f} s {json.dumps(brief, default=str)[:1500]}")
            save(results)
        results["complete"] = True
    finally:
        save(results)
        env.close()
    log("ALL CHECKS PASSED" if results["ok"] else "SOME CHECK FAILED")
    return 0 if results["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
