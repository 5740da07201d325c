"""32 reachability problems in one product: bit-lane ``bor_band`` on uint32 words.

Bit ``l`` of ``W[i, j]`` is the edge i -> j of graph number ``l``. Under the ``bor_band`` semiring
(⊕ = bitwise or, ⊗ = bitwise and) one matrix product squares all 32 reachability matrices at once:

    R <- R ∨& R,   R = (0xFFFFFFFF on the diagonal) | W

Here the 32 graphs are random digraphs whose mean out-degree sweeps from 0.25 to 4: a percolation
experiment, where a giant strongly connected part appears once the degree passes 1. The built-in
check solves every lane again on its own with example 2 (packed AndOr closure) and compares.

    python examples/bitlanes.py --n 300 [--backend cpu] [--plot lanes.png]
"""

from __future__ import annotations

import sys
import time

import numpy as np
from _common import Progress, check_backend, make_parser, pyplot, ran_on, report
from reachability import random_digraph, transitive_closure

import pytropical_gpu as tg

LANES = 32


def lane_degrees(lanes: int = LANES) -> np.ndarray:
    return np.linspace(0.25, 4.0, lanes)


def pack_lanes(adjs: list[np.ndarray]) -> np.ndarray:
    """Stack up to 32 bool adjacency matrices into one uint32 matrix, graph l in bit l."""
    words = np.zeros(adjs[0].shape, np.uint32)
    for lane, adj in enumerate(adjs):
        words |= adj.astype(np.uint32) << np.uint32(lane)
    return words


def lane(words: np.ndarray, l: int) -> np.ndarray:
    """Bit ``l`` of every word, as a bool matrix."""
    return ((words >> np.uint32(l)) & np.uint32(1)).astype(bool)


def closure_all_lanes(words: np.ndarray, backend: str | None = None, quiet: bool = True):
    """Reflexive-transitive closure of all 32 graphs at once; returns (reach words, squarings)."""
    reach = words.copy()
    np.fill_diagonal(reach, np.uint32(0xFFFFFFFF))
    bar = Progress("squaring", quiet=quiet)
    for step in range(1, 64):
        nxt = tg.matmul(reach, reach, "bor_band", backend=backend)
        bar.update(step)
        if np.array_equal(nxt, reach):
            return reach, step
        reach = nxt
    raise RuntimeError("closure did not converge")


def main(argv=None) -> int:
    p = make_parser(__doc__.splitlines()[0], plot=True)
    p.add_argument("--n", type=int, default=300, help="vertices per graph (default 300)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    if (why := check_backend(args.backend)):
        print(why, file=sys.stderr)
        return 2

    n = args.n
    degrees = lane_degrees()
    adjs = [random_digraph(n, d, seed=args.seed * LANES + l) for l, d in enumerate(degrees)]
    words = pack_lanes(adjs)
    print(f"{LANES} random digraphs of {n} vertices in one uint32 matrix; bor_band ran on: "
          f"{ran_on(args.backend, 'matmul', n ** 3)}")
    t0 = time.perf_counter()
    reach, steps = closure_all_lanes(words, args.backend, quiet=args.quiet)
    t_lanes = time.perf_counter() - t0
    print(f"all {LANES} closures after {steps} bor_band squarings in {t_lanes:.2f} s")

    t0 = time.perf_counter()
    ok, frac = True, []
    for l, adj in enumerate(adjs):
        ref, _ = transitive_closure(adj, args.backend)  # example 2, one graph at a time
        got = lane(reach, l)
        ok &= bool(np.array_equal(got, ref))
        frac.append(got.mean())
    t_one = time.perf_counter() - t0
    print(f"(the same 32 closures one graph at a time with andor_matmul took {t_one:.2f} s)")
    print(" mean degree | reachable pairs")
    for l in range(0, LANES, 4):
        print(f"   {degrees[l]:8.2f}  | {frac[l]:6.1%}")
    if args.plot is not None:
        plt = pyplot()
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.plot(degrees, frac, "o-")
        ax.set(xlabel="mean out-degree", ylabel="fraction of pairs reachable",
               title=f"percolation in random digraphs, n={n}")
        out = args.plot or "bitlanes.png"
        fig.savefig(out, dpi=100, bbox_inches="tight")
        print(f"saved {out}")
    return report(ok, f"each of the {LANES} lanes matches its own packed AndOr closure")


if __name__ == "__main__":
    sys.exit(main())
