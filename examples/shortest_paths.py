"""All-pairs shortest paths on a road-like grid by repeated min_plus squaring, with path recovery.

A city is a ``size`` x ``size`` grid of junctions; each street has a random travel time per
direction, some streets are closed and a few fast "highways" join distant junctions. ``D`` starts
as the street matrix (0 on the diagonal, inf where there is no street) and

    D <- D ⊕ (D ⊗ D)        (⊕ = min, ⊗ = +)

doubles the number of streets a path may use, so ceil(log2(n)) squarings give every shortest path.
``return_argmax=True`` names the junction k that gave each improvement; with it we keep a next-hop
table and can walk any route. The built-in check runs Dijkstra (plain Python, heapq) from a few
junctions and re-adds the street times along a recovered route.

    python examples/shortest_paths.py --size 20 [--backend cpu] [--plot apsp.png]
"""

from __future__ import annotations

import heapq
import math
import sys

import numpy as np
from _common import Progress, check_backend, make_parser, pyplot, ran_on, report

import pytropical_gpu as tg


def road_grid(size: int, seed: int = 0, closed: float = 0.1, highways: int | None = None) -> np.ndarray:
    """Street matrix of a size x size grid: w[i, j] = minutes from i to j (float32), inf = no street.

    The diagonal is inf too (no self-loops); add the zeros yourself for the distance recursion.
    """
    rng = np.random.default_rng(seed)
    n = size * size
    w = np.full((n, n), np.inf, np.float32)
    for r in range(size):
        for c in range(size):
            i = r * size + c
            for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0)):
                rr, cc = r + dr, c + dc
                if 0 <= rr < size and 0 <= cc < size and rng.random() >= closed:
                    # one-way times differ; quarter minutes keep float32 sums exact, so the
                    # "nothing improved" stopping test is not fooled by rounding
                    w[i, rr * size + cc] = rng.integers(4, 40) / 4
    if highways is None:
        highways = max(1, n // 50)
    for _ in range(highways):
        i, j = rng.integers(n, size=2)
        if i != j:
            manhattan = abs(i // size - j // size) + abs(i % size - j % size)
            w[i, j] = w[j, i] = 2.0 * manhattan  # fast: 2 minutes a block instead of 5.4
    return w


def all_pairs(w: np.ndarray, backend: str | None = None, quiet: bool = False):
    """Distances, next-hop table and per-squaring statistics for the street matrix ``w``.

    Returns ``(dist, nxt, history)``: ``nxt[i, j]`` is the junction after ``i`` on a shortest route
    to ``j`` (-1 if unreachable); ``history`` lists (reachable pairs, improved pairs) per squaring.
    """
    n = w.shape[0]
    d = w.copy()
    np.fill_diagonal(d, 0.0)
    nxt = np.where(np.isfinite(d), np.arange(n, dtype=np.int32)[None, :], -1).astype(np.int32)
    rows = np.arange(n)[:, None]
    history = [(int(np.isfinite(d).sum()), 0)]
    bar = Progress("squaring", math.ceil(math.log2(max(n, 2))) + 1, quiet=quiet)
    for step in range(1, 64):
        # d2 = d ⊕ (d ⊗ d); k[i, j] = the midpoint that strictly improved (i, j), or -1.
        d2, k = tg.matmul(d, d, "min_plus", c=d, return_argmax=True, backend=backend)
        better = k >= 0
        nxt = np.where(better, nxt[rows, np.maximum(k, 0)], nxt)  # first hop: towards k
        d = d2
        history.append((int(np.isfinite(d).sum()), int(better.sum())))
        bar.update(step, f"{history[-1][1]} pairs improved")
        if not better.any():
            break
    return d, nxt, history


def route(nxt: np.ndarray, i: int, j: int) -> list[int]:
    """Junctions on the recovered shortest route from i to j ([] if j is unreachable)."""
    if nxt[i, j] < 0:
        return []
    path = [i]
    while i != j:
        i = int(nxt[i, j])
        path.append(i)
        if len(path) > nxt.shape[0]:
            raise RuntimeError("next-hop table has a cycle")
    return path


def dijkstra(w: np.ndarray, src: int) -> list[float]:
    """Textbook Dijkstra on the dense street matrix (plain Python, float64): the built-in check."""
    n = w.shape[0]
    nbrs = [np.flatnonzero(np.isfinite(w[u])).tolist() for u in range(n)]
    dist = [math.inf] * n
    dist[src] = 0.0
    heap = [(0.0, src)]
    while heap:
        du, u = heapq.heappop(heap)
        if du > dist[u]:
            continue
        for v in nbrs[u]:
            nd = du + float(w[u, v])
            if nd < dist[v]:
                dist[v] = nd
                heapq.heappush(heap, (nd, v))
    return dist


def route_cost(w: np.ndarray, path: list[int]) -> float:
    return float(sum(float(w[a, b]) for a, b in zip(path, path[1:])))


def main(argv=None) -> int:
    p = make_parser(__doc__.splitlines()[0], plot=True)
    p.add_argument("--size", type=int, default=20, help="grid side: size*size junctions (default 20)")
    p.add_argument("--checks", type=int, default=4, help="Dijkstra sources to check (default 4)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    if (why := check_backend(args.backend)):
        print(why, file=sys.stderr)
        return 2

    w = road_grid(args.size, args.seed)
    n = w.shape[0]
    print(f"road grid: {args.size}x{args.size} = {n} junctions, {int(np.isfinite(w).sum())} one-way "
          f"streets; min_plus ran on: {ran_on(args.backend, 'matmul', n ** 3)}")
    dist, nxt, hist = all_pairs(w, args.backend, quiet=args.quiet)
    print(f"converged after {len(hist) - 1} squarings (the last one changed nothing)")
    for s, (reach, imp) in enumerate(hist):
        print(f"  squaring {s}: {reach} reachable pairs, {imp} improved")

    rng = np.random.default_rng(args.seed + 1)
    ok = True
    for src in rng.choice(n, size=min(args.checks, n), replace=False):
        ref = np.array(dijkstra(w, int(src)))
        good = np.allclose(dist[src], ref, rtol=1e-5, atol=1e-4) and \
            np.array_equal(np.isinf(dist[src]), np.isinf(ref))
        ok &= bool(good)
    far = np.where(np.isfinite(dist[0]), dist[0], -1.0)
    j = int(np.argmax(far))
    path = route(nxt, 0, j)
    cost = route_cost(w, path)
    ok &= bool(math.isclose(cost, float(dist[0, j]), rel_tol=1e-5))
    print(f"farthest junction from 0 is {j} at time {dist[0, j]:.2f}; route ({len(path) - 1} streets): "
          f"{' -> '.join(map(str, path[:8]))}{' -> ...' if len(path) > 8 else ''}; "
          f"street times add up to {cost:.2f}")

    if args.plot is not None:
        plt = pyplot()
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
        ax1.plot([h[0] for h in hist], "o-", label="reachable pairs")
        ax1.plot([h[1] for h in hist], "s-", label="improved pairs")
        ax1.set(xlabel="squarings", ylabel="pairs", yscale="symlog", title="APSP convergence")
        ax1.legend()
        img = ax2.imshow(np.where(np.isfinite(dist[0]), dist[0], np.nan).reshape(args.size, args.size))
        ys, xs = np.divmod(np.array(path), args.size)
        ax2.plot(xs, ys, "r-", lw=2)
        ax2.set_title(f"travel time from junction 0, route to {j}")
        fig.colorbar(img, ax=ax2)
        out = args.plot or "shortest_paths.png"
        fig.savefig(out, dpi=100, bbox_inches="tight")
        print(f"saved {out}")
    return report(ok, f"distances from {min(args.checks, n)} junctions match Dijkstra and the route "
                  "cost matches its distance")


if __name__ == "__main__":
    sys.exit(main())
