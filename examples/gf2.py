"""Linear algebra over GF(2) with ``lxor_land``: rank and the solution of ``A x = b``.

Over GF(2) addition is XOR and multiplication is AND, so ``matmul(x, y, "lxor_land")`` is the
matrix product mod 2. Gauss-Jordan elimination is done a panel of columns at a time (the idea behind
M4RI): inside a panel a few pivot rows ``P`` are chosen and reduced with plain numpy, then every other
row is cleared in those columns by one product with the XOR epilogue,

    X <- X ⊕ (X[:, pivots] ⊗ P)        (matmul(X[:, pivots], P, "lxor_land", c=X))

which is where nearly all the work happens. The result is the reduced row echelon form of the
augmented matrix [A | b]: its rank, whether A x = b is solvable, and one solution. The built-in check
multiplies back (A x == b, again with lxor_land) and recomputes the rank with Python integers as
bit rows.

    python examples/gf2.py --n 300 [--rows 320] [--panel 32] [--backend cpu]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import Progress, check_backend, make_parser, ran_on, report

import pytropical_gpu as tg


def _panel_pivots(block: np.ndarray) -> tuple[list[int], list[int]]:
    """Rows of ``block`` whose restriction is independent, and the pivot column each one covers."""
    e = block.copy()
    order = np.arange(e.shape[0])
    rows, cols, r = [], [], 0
    for j in range(e.shape[1]):
        hits = np.flatnonzero(e[r:, j])
        if hits.size == 0:
            continue
        s = r + hits[0]
        e[[r, s]], order[[r, s]] = e[[s, r]], order[[s, r]]
        below = r + 1 + np.flatnonzero(e[r + 1:, j])
        e[below] ^= e[r]
        rows.append(int(order[r]))
        cols.append(j)
        r += 1
    return rows, cols


def rref(m: np.ndarray, ncols: int | None = None, panel: int = 32, backend: str | None = None,
         quiet: bool = True):
    """Reduced row echelon form over GF(2), pivoting only in the first ``ncols`` columns.

    Returns ``(r, pivot_columns)``: the pivot rows come first, in pivot-column order; rows past
    ``len(pivot_columns)`` are zero in the first ``ncols`` columns.
    """
    r = m.astype(bool, copy=True)
    ncols = r.shape[1] if ncols is None else ncols
    top = 0  # rows [0, top) are finished pivot rows
    pivots: list[int] = []
    bar = Progress("column", ncols, quiet=quiet)
    for c0 in range(0, ncols, panel):
        c1 = min(ncols, c0 + panel)
        rows, cols = _panel_pivots(r[top:, c0:c1])
        if not rows:
            continue
        rows = [top + i for i in rows]
        pc = [c0 + j for j in cols]
        p = r[rows].copy()
        for t, c in enumerate(pc):  # make P[:, pc] the identity (small: at most `panel` rows)
            s = t + int(np.flatnonzero(p[t:, c])[0])
            p[[t, s]] = p[[s, t]]
            others = np.flatnonzero(p[:, c])
            p[others[others != t]] ^= p[t]
        rest = np.setdiff1d(np.arange(r.shape[0]), rows)
        x = r[rest]
        # the heavy step: clear columns pc in every other row with one GF(2) product
        x = tg.matmul(np.ascontiguousarray(x[:, pc]), p, "lxor_land", c=x, backend=backend)
        done, tail = rest < top, rest >= top
        r = np.concatenate([x[done], p, x[tail]])
        top += len(pc)
        pivots += pc
        bar.update(c1, f"rank so far {top}")
    return r, pivots


def solve(a: np.ndarray, b: np.ndarray, panel: int = 32, backend: str | None = None, quiet=True):
    """Rank of A and one solution of A x = b over GF(2) (None when the system has none)."""
    aug = np.concatenate([a, b[:, None]], axis=1)
    red, piv = rref(aug, a.shape[1], panel, backend, quiet)
    rank = len(piv)
    if red[rank:, -1].any():  # a row 0 = 1
        return rank, None
    x = np.zeros(a.shape[1], bool)
    x[piv] = red[:rank, -1]  # free variables set to 0
    return rank, x


def rank_bitrows(a: np.ndarray) -> int:
    """Rank over GF(2) with each row as a Python integer (the built-in check; no numpy algebra)."""
    basis: dict[int, int] = {}  # leading bit -> row
    for row in a:
        v = int("".join("1" if bit else "0" for bit in row) or "0", 2)
        while v:
            lead = v.bit_length() - 1
            if lead not in basis:
                basis[lead] = v
                break
            v ^= basis[lead]
    return len(basis)


def problem(rows: int, n: int, rank: int, seed: int = 0):
    """A random rows x n matrix of the given rank and a consistent right-hand side b = A x0."""
    rng = np.random.default_rng(seed)
    left = rng.random((rows, rank)) < 0.5
    right = rng.random((rank, n)) < 0.5
    a = tg.matmul(left, right, "lxor_land", backend="cpu")
    x0 = rng.random(n) < 0.5
    b = tg.matmul(a, x0[:, None], "lxor_land", backend="cpu")[:, 0]
    return a, b


def main(argv=None) -> int:
    p = make_parser(__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=300, help="unknowns (default 300)")
    p.add_argument("--rows", type=int, default=None, help="equations (default n + 20)")
    p.add_argument("--rank", type=int, default=None, help="rank of A (default n - 10)")
    p.add_argument("--panel", type=int, default=32, help="columns per elimination panel (default 32)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    if (why := check_backend(args.backend)):
        print(why, file=sys.stderr)
        return 2

    rows = args.rows or args.n + 20
    want = min(args.rank if args.rank is not None else max(args.n - 10, 1), rows, args.n)
    a, b = problem(rows, args.n, want, args.seed)
    print(f"GF(2) system: {rows} equations, {args.n} unknowns (built with rank <= {want}); "
          f"lxor_land ran on: {ran_on(args.backend, 'matmul', rows * args.panel * args.n)}")
    rank, x = solve(a, b, args.panel, args.backend, quiet=args.quiet)
    print(f"rank(A) = {rank}; {args.n - rank} free variables, so 2^{args.n - rank} solutions")
    ok = rank == rank_bitrows(a)
    if x is None:
        print("A x = b has no solution")
        ok = False  # problem() always builds a consistent system
    else:
        ax = tg.matmul(a, x[:, None], "lxor_land", backend=args.backend)[:, 0]
        print(f"one solution: x = {''.join('1' if v else '0' for v in x[:48])}...")
        ok &= bool(np.array_equal(ax, b))
    # an inconsistent right-hand side must be reported as such
    if rank < rows:
        bad = b.copy()
        red, piv = rref(np.concatenate([a, np.eye(rows, dtype=bool)], axis=1), args.n, args.panel,
                        args.backend)
        y = red[len(piv), args.n:]  # y^T A = 0: these equations add up to 0 = y^T b
        bad[np.flatnonzero(y)[0]] ^= True  # now y^T b = 1: no x can satisfy all equations
        _, xbad = solve(a, bad, args.panel, args.backend)
        ok &= xbad is None
        print(f"after flipping one bit of b where a left null vector of A is 1: "
              f"{'no solution (as it must be)' if xbad is None else 'still solvable?!'}")
    return report(ok, "rank equals plain-Python elimination, A x == b, and the inconsistent "
                  "system is detected")


if __name__ == "__main__":
    sys.exit(main())
