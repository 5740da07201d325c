"""Issue 15's two CUDA search rows, session 4, second part: every variant in one run, checks first.

Memory 200,000 x 10,000 trits resident (cupy planes), k = 10, 1 and 64 queries.

1. Checks: every variant against the cpu backend (numpy, written apart from the CUDA kernels) on
   odd sizes (rows 1 ... 40,000, dims 1 ... 1,000, k 1 ... 40, a duplicate row for ties, calls
   whose scores fall from one case to the next), then at full size against CuPy float32
   ``dense @ q`` ranked on the host by (-score, row).
2. One query, ``tg.search``: CUDA events around each call (median of 300), the kernels alone
   (``be._search``), the host time of one public call (256 rows), the scan alone with and without
   its last-block merge (graph of 20). Variants: the s4 default (tma3, 2 blocks a SM, raw launch)
   against the global floor merge (search_fused.FLOOR_MERGE), with the results allocated a call
   ahead (OUT_AHEAD), and both with tma3v / tma4v.
3. 64 queries: ``tg.search`` events (median of 200), the top-k launch alone (graph of 20):
   topk_one_v at 4 vectors, 256 a thread (s4 default) against the one-warp last-block merge
   (search_two.WARP_MERGE), the scoring kernel launched by cuLaunchKernel (search_two.RAW_LAUNCH)
   and both; the scoring kernel alone. Parts 2 and 3 run in --rounds rounds (host drift).
4. Host parts (us a call, fastest of 5 blocks): the public call's Python with ``_search``
   stubbed, the fused path's look-up that 2+ queries now skip, CuPy's allocation and views.

    python benchmarks/bench_search_s4c.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_search_s4 as s4  # noqa: E402
from bench_search import random_vecs  # noqa: E402
from bench_search_host import per_call_us  # noqa: E402
from bench_search_plan import log  # noqa: E402
from bench_search_public import dense_f32  # noqa: E402

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu import TernaryVec  # noqa: E402
from pytropical_gpu.backends.cuda import search_fused, search_launch, search_two  # noqa: E402

_BASE = {"sl.SCAN": "tma3", "sl.TMA_BLOCKS": 2, "fused.RAW_LAUNCH": True,
         "fused.FLOOR_MERGE": False, "fused.OUT_AHEAD": False}
ONE = {"tma3 raw (s4 default)": _BASE,
       "tma3 raw floor": {**_BASE, "fused.FLOOR_MERGE": True},
       "tma3 raw floor ahead": {**_BASE, "fused.FLOOR_MERGE": True, "fused.OUT_AHEAD": True},
       "tma3v raw floor ahead": {**_BASE, "sl.SCAN": "tma3v", "fused.FLOOR_MERGE": True,
                                 "fused.OUT_AHEAD": True},
       "tma4v raw floor ahead": {**_BASE, "sl.SCAN": "tma4v", "fused.FLOOR_MERGE": True,
                                 "fused.OUT_AHEAD": True}}
_MB = {"two.TOPK_VEC": 4, "sl.TOPK_PER_THREAD": 256, "two.WARP_MERGE": False,
       "two.RAW_LAUNCH": False}
MANY = {"one_v4 256 (s4 default)": _MB,
        "one_v4 256 warp merge": {**_MB, "two.WARP_MERGE": True},
        "one_v4 256 raw": {**_MB, "two.RAW_LAUNCH": True},
        "one_v4 256 warp merge raw": {**_MB, "two.WARP_MERGE": True, "two.RAW_LAUNCH": True}}
s4.MODS["fused"], s4.MODS["two"] = search_fused, search_two
s4.ONE, s4.MANY = ONE, MANY  # s4.checks and s4.many_queries run these


def falling(out, cp):
    """Each one-query variant on pairs of calls whose scores fall from the first to the second
    (a floor left from the first would drop the second's results), against the cpu backend."""
    bad, n = [], 0
    rng = np.random.default_rng(5)
    for rows, dim in ((20_000, 640), (9, 640), (3001, 317)):
        q = rng.choice(np.array([-1, 1], np.int8), (1, dim))
        for sign in (1, -1, 1, -1):
            mem = np.repeat(q * sign, rows, axis=0)
            mem[:, : dim // 2] = rng.integers(-1, 2, (rows, dim // 2))
            qv, mv = TernaryVec.from_array(q), TernaryVec.from_array(mem)
            want = [np.asarray(x) for x in tg.search(qv, mv, k=min(9, rows), backend="cpu")]
            qd = TernaryVec._trusted(cp.asarray(qv.pos), cp.asarray(qv.neg), dim)
            md = TernaryVec._trusted(cp.asarray(mv.pos), cp.asarray(mv.neg), dim)
            for name, sets in ONE.items():
                with s4.switches(sets):
                    got = [cp.asnumpy(x) for x in tg.search(qd, md, k=min(9, rows), backend="cuda")]
                n += 1
                if not s4.same(got, *want):
                    bad.append(f"{name} rows={rows} sign={sign}")
    out["falling_checks"] = {"cases": n, "failed": bad}
    log(f"falling-score checks: {n} cases, failed: {bad}")


def host_parts(out, cp, be, qb, qc, mc, k):
    """us a call of the host pieces the public call is made of (device idle)."""
    from pytropical_gpu.backends.cuda.backend import CudaBackend
    from pytropical_gpu.ops._planes import flat

    qp, qn = flat(be, qc)
    mp, mn = flat(be, mc)
    o = cp.empty((2, 1, k), np.int64)
    parts = {
        "fused look-up, 64 queries (now skipped)": lambda: search_fused.search(
            be, search_launch, qp, qn, mp, mn, k, 16),
        "cp.empty((2, 1, k))": lambda: cp.empty((2, 1, k), np.int64),
        "two result views out[0], out[1]": lambda: (o[0], o[1]),
        "getDevice + current stream ptr": lambda: (cp.cuda.runtime.getDevice(),
                                                   cp.cuda.get_current_stream().ptr),
        "flat(query) + flat(memory)": lambda: (flat(be, qb), flat(be, mc))}
    res = out["host_parts_us"] = {n: per_call_us(f, 2000, 5)[0] for n, f in parts.items()}
    fixed = (cp.zeros((1, k), np.int64), cp.zeros((1, k), np.int64))
    orig = CudaBackend._search
    CudaBackend._search = lambda self, qp, qn, mp, mn, kk: fixed
    try:
        res["tg.search 1 query, _search stubbed"] = per_call_us(
            lambda: tg.search(qb, mc, k=k, backend="cuda"), 2000, 5)[0]
    finally:
        CudaBackend._search = orig
    log(f"host parts (us a call): {json.dumps(res)}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4,000 x 1,024 trits")
    ap.add_argument("--json")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    import cupy as cp

    from pytropical_gpu.ops._planes import flat

    t0 = time.time()
    rows, dim, k = (4_000, 1024, 10) if args.quick else (200_000, 10_000, 10)
    out = {"sizes": f"M={rows} x dim={dim}, k={k}, 1 and 64 queries", "errors": {},
           "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "one_query": [], "many_queries": []}
    s4.section(out, "checks", lambda: s4.checks(out, cp))
    s4.section(out, "falling", lambda: falling(out, cp))
    log(f"checks done at {time.time() - t0:.1f} s")
    mem = random_vecs(rows, dim, 1)
    q64 = random_vecs(64, dim, 3)
    mc = TernaryVec._trusted(cp.asarray(mem.pos), cp.asarray(mem.neg), dim)
    qc = TernaryVec._trusted(cp.asarray(q64.pos), cp.asarray(q64.neg), dim)
    qb = TernaryVec._trusted(qc.pos[:1], qc.neg[:1], dim)
    dense = dense_f32(cp, mem)
    s64 = cp.asnumpy(dense @ cp.asarray(q64.to_array(), dtype=cp.float32).T).astype(np.int64)
    del dense
    ref = [s4.ranked(s64[:, j], k) for j in range(64)]
    want64 = (np.stack([r[0] for r in ref]), np.stack([r[1] for r in ref]))
    be = tg.get_backend("cuda")
    log(f"{out['sizes']}: reference ready at {time.time() - t0:.1f} s")
    planes = (*flat(be, qb), *flat(be, mc))
    small = TernaryVec._trusted(mc.pos[:256], mc.neg[:256], mc.dim)
    gc.collect()
    per_call_us(lambda: tg.search(qb, small, k=k, backend="cuda"), 3000, 1)  # host warm-up
    cp.cuda.Device().synchronize()
    for r in range(args.rounds):  # rounds of every variant: host drift shows between rounds
        n1, n64 = len(out["one_query"]), len(out["many_queries"])
        for name, sets in ONE.items():
            s4.section(out, f"one {name} {r}", lambda name=name, sets=sets: s4.one_row(
                out, cp, be, mc, qb, ref[0], k, name, sets, planes, small,
                lambda: tg.search(qb, mc, k=k, backend="cuda")))
        s4.section(out, f"many {r}", lambda: s4.many_queries(out, cp, be, mc, qc, want64, k))
        for row in out["one_query"][n1:] + out["many_queries"][n64:]:
            row["round"] = r
        log(f"round {r} done at {time.time() - t0:.1f} s")
    s4.section(out, "host", lambda: host_parts(out, cp, be, qb, qc, mc, k))
    bad = [r["variant"] for r in out["one_query"] + out["many_queries"]
           if not r.get("checked") or r.get("checked_after") is False]
    out["all_checked"] = not bad and not out["errors"] and not out.get("odd_checks", {}).get(
        "failed") and not out.get("falling_checks", {}).get("failed")
    log(f"all checked: {out['all_checked']} {bad or ''} {out['errors'] or ''}; {time.time() - t0:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0 if out["all_checked"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
