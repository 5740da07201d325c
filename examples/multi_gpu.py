"""Beyond one GPU: the same code on a laptop and on a GPU cluster, through dask.

Shortest routes on a road grid (repeated min-plus squaring with route recovery) and an item-memory
lookup, with the matrices and the memory split into chunks that dask schedules: on a laptop the
chunks are numpy arrays on dask's threads scheduler (or a ``LocalCluster``), on a GPU machine they
are cupy arrays on a ``dask_cuda.LocalCUDACluster`` with one worker per GPU. Nothing else changes.
When a distributed client is used, its dashboard link is printed (watch the tasks run).

    python examples/multi_gpu.py                        # laptop: threads, numpy chunks
    python examples/multi_gpu.py --cluster local        # laptop: LocalCluster + dashboard
    python examples/multi_gpu.py --cluster cuda --size 64 --rows 2000000   # every GPU

(Not called ``distributed.py``: a script of that name would shadow the ``distributed`` package.)
Needs ``pip install 'pytropical_gpu[dask]'`` (plus ``dask-cuda`` for ``--cluster cuda``).
"""

from __future__ import annotations

import contextlib
import math
import sys

import numpy as np
from _common import check_backend, make_parser, report
from shortest_paths import all_pairs, dijkstra, road_grid

import pytropical_gpu as tg


def start(cluster: str):
    """A context for the chosen engine; prints the dashboard link of a distributed client."""
    import dask

    if cluster == "threads":
        return dask.config.set(scheduler="threads")
    from distributed import Client

    if cluster == "cuda":
        from dask_cuda import LocalCUDACluster  # one worker per visible GPU

        client = Client(LocalCUDACluster())
    else:
        from distributed import LocalCluster

        client = Client(LocalCluster(n_workers=2, threads_per_worker=1, processes=False))
    print(f"dask dashboard: {client.dashboard_link}")
    return contextlib.closing(client)


def on_device(x, gpu: bool):
    """Chunks as cupy arrays on the workers when running on GPUs (numpy otherwise)."""
    if not gpu:
        return x
    import cupy

    return x.map_blocks(cupy.asarray)


def host(x):
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else np.asarray(x)


def shortest_routes(w, chunk: int, gpu: bool, backend: str | None):
    """All-pairs distances and next hops of ``w`` by repeated squaring on dask arrays."""
    import dask
    import dask.array as da

    import pytropical_gpu.dask as tgd

    n = w.shape[0]
    d0 = w.copy()
    np.fill_diagonal(d0, 0.0)
    d = on_device(da.from_array(d0, chunks=chunk), gpu)
    nxt = on_device(da.from_array(np.where(np.isfinite(d0), np.arange(n, dtype=np.int32)[None, :],
                                           -1).astype(np.int32), chunks=(chunk, n)), gpu)
    for _ in range(64):
        d2, k = tgd.matmul(d, d, "min_plus", c=d, return_argmax=True, backend=backend)
        nxt = nxt.map_blocks(first_hop, k.rechunk(nxt.chunks), dtype=np.int32)
        d, nxt, k = dask.persist(d2, nxt, k)
        if not bool((k >= 0).any().compute()):
            break
    return host(d.compute()), host(nxt.compute())


def first_hop(nxt, k):
    """Where the squaring went through midpoint k, the first hop is the first hop towards k."""
    from pytropical_gpu._arrays import xp_of

    xp = xp_of(nxt)
    return xp.where(k >= 0, xp.take_along_axis(nxt, xp.maximum(k, 0).astype(np.int64), axis=1), nxt)


def lookup(rows: int, dim: int, chunk: int, seed: int, gpu: bool, backend: str | None):
    """Noisy copies of 8 stored vectors, cleaned up against a row-sharded memory."""
    import dask

    import pytropical_gpu.dask as tgd

    rng = np.random.default_rng(seed)
    mem = tg.TernaryVec.random(dim, density=0.5, seed=seed, batch=rows)
    want = rng.choice(rows, 8, replace=False)
    t = mem.to_array()[want]
    flip = rng.random(t.shape) < 0.3  # 30 % of the trits replaced by noise
    t[flip] = rng.integers(-1, 2, int(flip.sum()))
    query = tg.TernaryVec.from_array(t)
    sharded = tgd.from_ternary(mem, chunks=chunk)
    if gpu:
        sharded = tg.TernaryVec._trusted(on_device(sharded.pos, True), on_device(sharded.neg, True), dim)
    idx, scores = dask.compute(*tgd.search(query, sharded, k=3, backend=backend))
    one = tg.search(query, mem, k=3, backend="cpu")
    return host(idx), host(scores), want, one


def main(argv=None) -> int:
    p = make_parser("Shortest routes and item-memory lookup on dask (laptop or GPU cluster)")
    p.add_argument("--cluster", choices=["threads", "local", "cuda"], default="threads",
                   help="threads: dask's threads scheduler; local: a distributed LocalCluster; "
                        "cuda: dask_cuda.LocalCUDACluster (one worker per GPU)")
    p.add_argument("--size", type=int, default=12, help="road grid side (junctions = size^2)")
    p.add_argument("--rows", type=int, default=20_000, help="item-memory rows")
    p.add_argument("--dim", type=int, default=2048, help="trits per vector")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    try:
        import dask  # noqa: F401
    except ImportError:
        print("this example needs dask: pip install 'pytropical_gpu[dask]'", file=sys.stderr)
        return 2
    gpu = args.cluster == "cuda" or args.backend == "cuda"
    backend = args.backend or ("cuda" if gpu else "cpu")
    why = check_backend(backend)
    if why:
        print(why, file=sys.stderr)
        return 2
    w = road_grid(args.size, seed=args.seed)
    n = w.shape[0]
    chunk = max(1, math.ceil(n / 3) + 1)  # uneven blocks, on purpose
    with start(args.cluster):
        kind = "cupy" if gpu else "numpy"
        print(f"engine: {args.cluster}; blocks run on backend {backend} ({kind} chunks)")
        dist, nxt = shortest_routes(w, chunk, gpu, backend)
        idx, scores, want, (one_i, one_s) = lookup(args.rows, args.dim, max(1, args.rows // 3 + 7),
                                                   args.seed, gpu, backend)
    ref_d, ref_n, _ = all_pairs(w, "cpu", quiet=True)
    ok_routes = np.array_equal(dist, ref_d) and np.array_equal(nxt, ref_n)
    for s in range(min(3, n)):
        ok_routes &= np.allclose(dist[s].astype(np.float64), dijkstra(w, s), rtol=1e-6)
    far = int(np.argmax(np.where(np.isfinite(dist[0]), dist[0], -1)))
    print(f"{n} junctions: farthest from 0 is {far} at time {dist[0, far]:.2f}")
    ok_lookup = (np.array_equal(idx[:, 0], want) and np.array_equal(idx, one_i)
                 and np.array_equal(scores, one_s))
    if not args.quiet:
        print(f"item memory {args.rows} x {args.dim}: noisy queries recovered rows {idx[:, 0].tolist()} "
              f"(stored {want.tolist()}), top scores {scores[:, 0].tolist()}")
    return report(bool(ok_routes and ok_lookup), "routes equal one-process squaring and Dijkstra; "
                  "lookups equal one search call and find the stored rows")


if __name__ == "__main__":
    sys.exit(main())
