"""A one-minute tour of pytropical_gpu: semiring products, packed booleans and ternary hypervectors.

Every call takes ``backend=None`` (automatic: small problems stay on numpy, large ones go to the
best GPU) or ``"cpu"``, ``"wgpu"``, ``"cuda"``; the tour prints which backend ran each call.

    python examples/quickstart.py [--backend cpu|wgpu|cuda]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import check_backend, make_parser, ran_on, report

import pytropical_gpu as tg
from pytropical_gpu import SoftTernaryVec, TernaryVec

INF = np.inf


def main(argv=None) -> int:
    args = make_parser(__doc__.splitlines()[0]).parse_args(argv)
    if (why := check_backend(args.backend)):
        print(why, file=sys.stderr)
        return 2
    be = args.backend
    ok = True
    print(f"pytropical_gpu {tg.__version__}; backends here: {', '.join(tg.available_backends())}; "
          f"default context: {tg.default_context()!r}")

    def show(title: str, op: str, size: int, value) -> None:
        print(f"[{ran_on(be, op, size)}] {title}")
        if value is not None:
            print(value)

    # 1. min_plus: road times between 4 towns (inf = no direct road); d ⊗ d = best with one stop.
    d = np.array([[0, 4, INF, 9], [4, 0, 2, INF], [INF, 2, 0, 3], [9, INF, 3, 0]], np.float32)
    d2 = tg.matmul(d, d, "min_plus", backend=be)
    show("min_plus: shortest times with at most one stop (town 0 -> 2 via 1 is 6)", "matmul", 64, d2)
    ok &= d2[0, 2] == 6 and d2[0, 3] == 9

    # 2. max_plus with return_argmax: the best total and which middle term gave it.
    a = np.array([[1, 5, 2]], np.int32)
    b = np.array([[0, 7], [3, 1], [4, 4]], np.int32)
    best, k = tg.matmul(a, b, "max_plus", return_argmax=True, backend=be)
    show(f"max_plus: best a[0, k] + b[k, j] = {best.tolist()} attained at k = {k.tolist()}",
         "matmul", 6, None)
    ok &= best.tolist() == [[8, 8]] and k.tolist() == [[1, 0]]

    # 3. Booleans: who can reach whom in two steps, bit-packed 32 per word.
    adj = np.array([[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 0, 0, 0]], bool)
    two = tg.andor_matmul(tg.pack_rows(adj, backend=be), tg.pack_cols(adj, backend=be), backend=be)
    show("andor_matmul: two-step reachability of the path 0->1->2->3", "andor_matmul", 2, two.astype(int))
    ok &= bool(two[0, 2] and two[1, 3] and two.sum() == 2)

    # 4. GF(2): matrix product mod 2 (xor of ands).
    g = np.array([[1, 1], [0, 1]], bool)
    g2 = tg.matmul(g, g, "gf2", backend=be)
    show("lxor_land (gf2): [[1,1],[0,1]] squared mod 2 is the identity", "matmul", 8, g2.astype(int))
    ok &= bool(np.array_equal(g2, np.eye(2, dtype=bool)))

    # 5. 32 boolean problems in one product: bit l of every uint32 word is problem l.
    w = np.array([[0, 0b101], [0, 0]], np.uint32)
    v = np.array([[0, 0], [0b110, 0]], np.uint32)
    bw = tg.matmul(w, v, "bor_band", backend=be)
    show(f"bor_band: lanes where 0->1->0 exists: bits of {int(bw[0, 0]):#05b}", "matmul", 8, None)
    ok &= int(bw[0, 0]) == 0b100

    # 6. Ternary hypervectors: bind is reversible, bundle is a majority, search cleans up.
    dim = 4096
    items = TernaryVec.random(dim, density=1.0, seed=args.seed, batch=5)  # item memory, 5 rows
    key, value = items[0], items[1]
    pair = tg.bind(key, value, backend=be)
    got = tg.unbind(pair, key, backend=be)
    idx, score = tg.search(got, items, k=1, backend=be)
    show(f"bind/unbind/search: unbind(bind(key, value), key) is row {int(idx[0])} (value is row 1), "
         f"dot {int(score[0])} of {dim}", "search", 5 * dim // 32, None)
    ok &= int(idx[0]) == 1
    s = tg.bundle([items[1], items[2], items[3]], backend=be)
    cos = tg.cosine(s, items, backend=be)
    show("bundle of rows 1, 2, 3: cosine with each row (members about 0.5, others about 0)",
         "bundle", 3 * dim // 32, np.round(cos, 2))
    ok &= bool(cos[1:4].min() > 0.3 and abs(cos[[0, 4]]).max() < 0.1)
    rolled = tg.permute(items[0], 3, backend=be)
    show(f"permute by 3: trits {items[0].to_array()[:6].tolist()} -> {rolled.to_array()[3:9].tolist()}"
         " from position 3 on", "permute", dim // 32, None)
    ok &= bool(np.array_equal(rolled.to_array(), np.roll(items[0].to_array(), 3)))

    # 7. Soft counters: accumulate votes, then harden to a ternary vector.
    soft = SoftTernaryVec(8, bits=2)
    for t in ([1, 1, -1, 0, 1, 0, 0, 1], [1, -1, -1, 0, 1, 0, 0, 1], [1, 1, -1, 1, 0, 0, 0, -1]):
        soft.accumulate(TernaryVec.from_array(np.array(t, np.int8)), backend=be)
    hard = soft.harden(2, backend=be)
    show(f"SoftTernaryVec: counters {soft.to_array().tolist()} -> harden(2) {hard.to_array().tolist()}",
         "harden", 1, None)
    ok &= hard.to_array().tolist() == [1, 0, -1, 0, 1, 0, 0, 0]
    return report(bool(ok), "every answer in the tour is the expected one")


if __name__ == "__main__":
    sys.exit(main())
