"""All-pairs shortest paths of a random road network, kept on the GPU across the squarings.

``D`` starts as the edge-weight matrix (0 on the diagonal, inf where there is no edge) and

    D, K <- D ⊕ (D ⊗ D), argmin        (⊕ = min, ⊗ = +; K = the midpoint that improved a pair)

doubles the number of edges a path may use, so ceil(log2(n - 1)) squarings give every shortest
path. The next-hop table follows K: nxt[i, j] <- nxt[i, K[i, j]] where K[i, j] >= 0. A fixed number
of squarings (no "did anything change?" test) means nothing has to come back to the host until the
end: the operands are put on the device once with ``ctx.to_device`` and each squaring's result is
the next one's operand.

Where the data lives: the results of an operation on resident operands are resident (cupy arrays
on cuda, WgpuArrays on wgpu), so ``D`` never leaves the GPU. On cuda the next-hop gather runs in
cupy, so the next-hop table stays there too; on wgpu ``K`` comes to the host for the gather (the
library has no gather kernel), one read per squaring. On cpu ``to_device`` changes nothing.

The squarings run inside ``with ctx.batch():``: on cuda nothing waits for the host until the end
(the NaN checks of the operands, which ``D`` as a device result needs, run once, at the batch's
end); on wgpu the commands go out together and the block synchronises once (plus each ``K`` read).
On cuda the two 64 MiB results come back through pinned memory (``pytropical_gpu._pinned``): one
DMA each, into pages the next run reuses.

Timing: the end-to-end time (from the numpy weights to numpy distances and next hops, uploads and
downloads included) beside the sum of the per-squaring times, taken with CUDA events on cuda (GPU
time between an event before and after each squaring's calls) and as wall time with the result in
hand otherwise (that run steps eagerly, no batch). On an idle GPU with resident data the first
should be close to the second. The warm-up runs a graph large enough to compile the kernels the
big one uses (a tiny one would take the skinny GEMM kernel, leaving the compile in the timing).

Check: distances from a sample of sources against ``scipy.sparse.csgraph.dijkstra`` (exact: the
weights are small integers, exact in float32), and every recovered route walked edge by edge.

    python examples/apsp_resident.py --n 4096 [--backend cuda] [--checks 16] [--repeats 3]
"""

from __future__ import annotations

import contextlib
import math
import statistics
import sys
import time

import numpy as np
from _common import Progress, check_backend, make_parser, report

import pytropical_gpu as tg


def random_network(n: int, degree: int = 6, seed: int = 0) -> np.ndarray:
    """float32 (n, n) weights: ``degree`` random out-edges per node (integer weights 1..100, exact in
    float32 sums), a ring so most pairs are reachable, inf where there is no edge, inf diagonal."""
    rng = np.random.default_rng(seed)
    w = np.full((n, n), np.inf, np.float32)
    src = np.repeat(np.arange(n), degree)
    dst = rng.integers(0, n, n * degree)
    w[src, dst] = rng.integers(1, 101, n * degree).astype(np.float32)
    if n > 1:
        w[np.arange(n), (np.arange(n) + 1) % n] = rng.integers(50, 101, n).astype(np.float32)
    np.fill_diagonal(w, np.inf)
    return w


def _xp(x):
    """numpy or cupy for an array the library returned (None for another resident kind)."""
    if isinstance(x, np.ndarray):
        return np
    if type(x).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy
    return None


class _Timer:
    """Per-step GPU time with CUDA events on cuda; wall time (result in hand) elsewhere."""

    def __init__(self, on_cuda: bool):
        self.cp = None
        if on_cuda:
            import cupy

            self.cp = cupy
        self.steps: list[float] = []

    def start(self):
        if self.cp is not None:
            self._e0 = self.cp.cuda.Event()
            self._e0.record()
        self._t0 = time.perf_counter()

    def stop(self):
        if self.cp is not None:
            e1 = self.cp.cuda.Event()
            e1.record()
            e1.synchronize()  # timing only: the loop itself never waits on the host
            self.steps.append(self.cp.cuda.get_elapsed_time(self._e0, e1) / 1e3)
        else:
            self.steps.append(time.perf_counter() - self._t0)


def start(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Host-side inputs: D (weights, 0 on the diagonal) and the one-edge next-hop table."""
    d = w.copy()
    np.fill_diagonal(d, 0.0)
    return d, first_hops(d, np)


def first_hops(d, xp):
    """The one-edge next-hop table of D (j where the edge i -> j exists, else -1), in ``xp``."""
    n = d.shape[0]
    return xp.where(xp.isfinite(d), xp.arange(n, dtype=np.int32)[None, :], -1).astype(np.int32)


def all_pairs(w: np.ndarray, ctx: tg.HybridContext, quiet: bool = True, timed: bool = False):
    """Distances and next hops (numpy) for weights ``w``: :func:`start`, then :func:`square`."""
    return square(start(w)[0], None, ctx, quiet=quiet, timed=timed)


def square(d: np.ndarray, nxt: np.ndarray | None, ctx: tg.HybridContext, quiet: bool = True,
           timed: bool = False, batch: bool | None = None, mark=None):
    """Repeated squaring from ``start``'s arrays; returns ``(dist, nxt, step_seconds)`` as numpy.

    ``nxt[i, j]`` is the node after ``i`` on a shortest route to ``j`` (-1: unreachable, or i == j
    where the route is empty); ``nxt=None`` builds the first table where D lives (on cuda: on the
    device, no upload). ``step_seconds`` is filled only with ``timed`` (it synchronises after each
    step, which the untimed run never does). ``batch`` (default: not ``timed``) runs the squarings
    inside ``ctx.batch()``. ``mark(phase)``, if given, is called after each phase ("upload",
    "first_hops", "gemm" and "next_hop" per squaring, "batch_end", "download_d", "download_nxt"):
    ``benchmarks/bench_apsp_breakdown.py`` times the phases with it; it must not wait."""
    mark = mark or (lambda phase: None)
    with ctx.batch() if (not timed if batch is None else batch) else contextlib.nullcontext():
        d, nxt, steps = _square(d, nxt, ctx, quiet, timed, mark)
    mark("batch_end")
    d = ctx.to_host(d)
    mark("download_d")
    nxt = ctx.to_host(nxt)
    mark("download_nxt")
    return d, nxt, steps


def _square(d, nxt, ctx, quiet: bool, timed: bool, mark):
    n = d.shape[0]
    squarings = math.ceil(math.log2(n - 1)) if n > 2 else 1
    host_d = d
    d = ctx.to_device(d)
    mark("upload")
    on_cuda = _xp(d) not in (np, None)
    if nxt is None:
        nxt = first_hops(d, _xp(d)) if on_cuda else first_hops(host_d, np)
    mark("first_hops")
    timer = _Timer(on_cuda) if timed else None
    bar = Progress("squaring", squarings, quiet=quiet)
    rows = None
    for step in range(squarings):
        if timer:
            timer.start()
        d2, k = ctx.matmul(d, d, "min_plus", c=d, return_argmax=True)
        mark("gemm")
        if _xp(k) is None:  # a resident kind numpy cannot index: K comes back for the gather
            k = ctx.to_host(k)
        xp = _xp(k)
        if _xp(nxt) is not xp:  # cuda: the next-hop table joins K on the device (once)
            nxt = ctx.to_device(nxt)
        if rows is None:
            rows = xp.arange(n)[:, None]
        nxt = xp.where(k >= 0, nxt[rows, xp.maximum(k, 0)], nxt)
        d = ctx.to_device(d2) if _xp(d2) is np else d2  # resident: stays (numpy only on cpu)
        mark("next_hop")
        if timer:
            timer.stop()
        bar.update(step + 1)
    return d, nxt, (timer.steps if timer else [])


def route(nxt: np.ndarray, i: int, j: int) -> list[int]:
    """Nodes on the recovered route from i to j ([i] for i == j, [] if unreachable)."""
    if i == j:
        return [i]
    if nxt[i, j] < 0:
        return []
    path = [i]
    while i != j:
        i = int(nxt[i, j])
        path.append(i)
        if len(path) > nxt.shape[0]:
            raise RuntimeError("next-hop table has a cycle")
    return path


def check(w: np.ndarray, dist: np.ndarray, nxt: np.ndarray, sources) -> tuple[bool, str]:
    """Rows of ``dist`` against scipy's Dijkstra; every route from the sources walked edge by edge."""
    from scipy.sparse.csgraph import csgraph_from_dense, dijkstra

    g = csgraph_from_dense(w.astype(np.float64), null_value=np.inf)
    ref = dijkstra(g, directed=True, indices=list(sources))
    for r, s in zip(ref, sources):
        if not np.array_equal(dist[s].astype(np.float64), r):
            bad = int(np.flatnonzero(dist[s].astype(np.float64) != r)[0])
            return False, f"source {s}: distance to {bad} is {dist[s, bad]}, scipy says {r[bad]}"
        for t in range(w.shape[0]):
            path = route(nxt, int(s), t)
            if not np.isfinite(r[t]):
                if path:
                    return False, f"route {s} -> {t} exists but scipy finds {t} unreachable"
                continue
            cost = 0.0
            for a, b in zip(path, path[1:]):
                if not np.isfinite(w[a, b]):
                    return False, f"route {s} -> {t} uses the missing edge {a} -> {b}"
                cost += float(w[a, b])
            if not path or path[-1] != t or cost != r[t]:
                return False, f"route {s} -> {t} costs {cost}, its distance is {r[t]}"
    return True, f"distances and routes from {len(sources)} sources match scipy's Dijkstra"


def main(argv=None) -> int:
    p = make_parser(__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=4096, help="nodes (default 4096)")
    p.add_argument("--degree", type=int, default=6, help="random out-edges per node (default 6)")
    p.add_argument("--checks", type=int, default=16, help="sources checked against scipy (default 16)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--repeats", type=int, default=3,
                   help="end-to-end runs; the median is reported (default 3)")
    args = p.parse_args(argv)
    if (why := check_backend(args.backend)):
        print(why, file=sys.stderr)
        return 2
    if args.n < 2:
        p.error("--n must be at least 2")
    if args.repeats < 1:
        p.error("--repeats must be at least 1")

    w = random_network(args.n, args.degree, args.seed)
    ctx = tg.HybridContext(backend=args.backend or "auto")
    n = args.n
    where = ctx.backend if ctx.backend != "auto" else (ctx.gpu or "cpu")  # data lives there
    print(f"graph: {n} nodes, {int(np.isfinite(w).sum())} edges; min_plus squarings ran on: {where}")
    m = min(n, 256)  # warm-up (kernel compiles): the GEMM kernels of the big graph, not the skinny one
    all_pairs(w[:m, :m], ctx)
    all_pairs(w[:m, :m], ctx, timed=True)
    t0 = time.perf_counter()
    d0, _ = start(w)
    t1 = time.perf_counter()
    totals = []
    for r in range(args.repeats):  # the first run also fills the allocators' pools at this size
        dist = nxt = None  # the last run's results go first: their memory is the next run's
        t2 = time.perf_counter()
        dist, nxt, _ = square(d0, None, ctx, quiet=args.quiet or r > 0)  # next hops start on D's side
        totals.append(time.perf_counter() - t2)
    total = statistics.median(totals)
    _, _, steps = square(d0, None, ctx, timed=True)  # the same run again, timed step by step
    what = "CUDA events" if where == "cuda" else "wall clock, synchronised"
    print(f"inputs prepared on the host in {(t1 - t0) * 1e3:.1f} ms; end-to-end (upload, "
          f"{len(steps)} squarings, download; median of {len(totals)}, first {totals[0] * 1e3:.1f} "
          f"ms) {total * 1e3:.1f} ms; sum of per-squaring times ({what}) {sum(steps) * 1e3:.1f} ms; "
          f"ratio {total / max(sum(steps), 1e-12):.2f}")
    reach = np.isfinite(dist).mean()
    print(f"{reach:.1%} of pairs reachable; longest shortest path "
          f"{np.max(np.where(np.isfinite(dist), dist, -1)):.0f}")
    rng = np.random.default_rng(args.seed + 1)
    sources = rng.choice(n, size=min(args.checks, n), replace=False).tolist()
    ok, what = check(w, dist, nxt, sources)
    return report(ok, what)


if __name__ == "__main__":
    sys.exit(main())
