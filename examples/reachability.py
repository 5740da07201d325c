"""Reachability (transitive closure) of a directed graph with the bit-packed AndOr product.

``R = I ∨ A`` says "j is reachable from i in at most one step"; the boolean product

    R <- R ∧∨ R        (out[i, j] = any(R[i, :] & R[:, j]))

doubles the number of steps, so about log2(n) products give the closure. ``pack_rows`` and
``pack_cols`` store 32 matrix entries per uint32 word, and ``andor_matmul`` multiplies the packed
handles directly. From the closure we also read the strongly connected components: i and j belong
to one component exactly when each reaches the other. The built-in check is a breadth-first search
in plain Python from a few vertices.

    python examples/reachability.py --n 1000 [--degree 1.5] [--backend cpu]
"""

from __future__ import annotations

import sys
from collections import deque

import numpy as np
from _common import Progress, check_backend, make_parser, ran_on, report

import pytropical_gpu as tg


def random_digraph(n: int, degree: float = 1.5, seed: int = 0) -> np.ndarray:
    """Adjacency (bool n x n) of a random directed graph with ``degree`` out-edges per vertex on average."""
    rng = np.random.default_rng(seed)
    adj = rng.random((n, n)) < degree / max(n, 1)
    np.fill_diagonal(adj, False)
    return adj


def transitive_closure(adj: np.ndarray, backend: str | None = None, quiet: bool = True):
    """Reflexive-transitive closure of bool ``adj`` by repeated AndOr squaring.

    Returns ``(reach, squarings)``: ``reach[i, j]`` is True when j can be reached from i (i itself
    included).
    """
    n = adj.shape[0]
    reach = adj | np.eye(n, dtype=bool)
    bar = Progress("squaring", quiet=quiet)
    for step in range(1, 64):
        rows = tg.pack_rows(reach, backend=backend)  # 32 columns per uint32 word
        cols = tg.pack_cols(reach, backend=backend)
        nxt = tg.andor_matmul(rows, cols, backend=backend)
        bar.update(step, f"{int(nxt.sum())} reachable pairs")
        if np.array_equal(nxt, reach):
            return reach, step
        reach = nxt
    raise RuntimeError("closure did not converge")  # cannot happen: paths have < n edges


def strong_components(reach: np.ndarray) -> np.ndarray:
    """Component label per vertex: i, j share a label iff each reaches the other."""
    mutual = reach & reach.T
    _, labels = np.unique(mutual, axis=0, return_inverse=True)
    return labels.ravel()


def bfs(adj: np.ndarray, src: int) -> set[int]:
    """Vertices reachable from ``src`` (itself included), by plain breadth-first search."""
    nbrs = [np.flatnonzero(row).tolist() for row in adj]
    seen, todo = {src}, deque([src])
    while todo:
        u = todo.popleft()
        for v in nbrs[u]:
            if v not in seen:
                seen.add(v)
                todo.append(v)
    return seen


def main(argv=None) -> int:
    p = make_parser(__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1000, help="vertices (default 1000)")
    p.add_argument("--degree", type=float, default=1.5, help="mean out-degree (default 1.5)")
    p.add_argument("--checks", type=int, default=8, help="BFS sources to check (default 8)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    if (why := check_backend(args.backend)):
        print(why, file=sys.stderr)
        return 2

    adj = random_digraph(args.n, args.degree, args.seed)
    n = args.n
    print(f"random digraph: {n} vertices, {int(adj.sum())} edges; andor_matmul ran on: "
          f"{ran_on(args.backend, 'andor_matmul', n * n * n // 32)}")
    reach, steps = transitive_closure(adj, args.backend, quiet=args.quiet)
    labels = strong_components(reach)
    sizes = np.bincount(labels)
    out_reach = reach.sum(axis=1)
    print(f"closure after {steps} squarings (the last one changed nothing): "
          f"{int(reach.sum())} of {n * n} ordered pairs reachable")
    print(f"vertex {int(out_reach.argmax())} reaches the most: {int(out_reach.max())} vertices")
    print(f"{len(sizes)} strongly connected components, largest has {int(sizes.max())} vertices")

    rng = np.random.default_rng(args.seed + 1)
    srcs = rng.choice(n, size=min(args.checks, n), replace=False)
    ok = all(set(np.flatnonzero(reach[s]).tolist()) == bfs(adj, int(s)) for s in srcs)
    return report(ok, f"reachable sets of {len(srcs)} vertices match breadth-first search")


if __name__ == "__main__":
    sys.exit(main())
