"""Issue 15's one-query CUDA search row, session 5: every variant in one run, checks first.

Memory 200,000 x 10,000 trits resident (cupy planes), k = 10, 1 query (64 queries: the default,
checked and timed as before). Runs bench_search_s4c's parts (odd-size checks of every variant
against the cpu backend with ties, falling-score call pairs, the full size against CuPy float32
ranked by (-score, row), then CUDA events around each public call in --rounds rounds, the kernels
alone, the scan with and without its merge in a graph) with these one-query variants: the s4c
default (tma3, 2 blocks a SM) with the planes through the general ``flat`` (CudaBackend._flat2d
off: the s4d host path) against the same with ``_flat2d`` (the planes taken as they are), and
the grouped scan (search_group.py, "tmag<G>s<STAGES>[x][t]": G rows a bulk copy, in runs a warp
or dealt in turn, the last block's merge from the tighter floor; ONE_A: the first run's variants,
ONE: the second's). Also: the wall time of a public call (perf_counter around the call and a
synchronize, median of 300), the read floor (benchmarks/probe_read_bw.cu), the float32 baseline,
and the host parts with and without _flat2d.

    python benchmarks/bench_search_s5.py [--quick] [--json PATH]
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
import bench_search_s4c as s4c  # noqa: E402
from bench_search import random_vecs  # noqa: E402
from bench_search_host import per_call_us  # noqa: E402
from bench_search_plan import log  # noqa: E402
from bench_search_public import dense_f32  # noqa: E402

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu import TernaryVec  # noqa: E402
from pytropical_gpu.backends.cuda.backend import CudaBackend  # noqa: E402


def _general(self, v):  # CudaBackend._flat2d off: every plane through asnative and _contig
    return None


_OLD = {"sl.SCAN": "tma3", "sl.TMA_BLOCKS": 2, "be._flat2d": _general}
_NEW = {"sl.SCAN": "tma3", "sl.TMA_BLOCKS": 2}
#: s5a (the first run): the general flat, tma3, G = 1 ... 4 in runs a warp
ONE_A = {"tma3 general flat (s4d default)": _OLD,
         "tma3 flat2d": _NEW,
         "tmag1s3 2/SM": {**_NEW, "sl.SCAN": "tmag1s3"},
         "tmag2s2 2/SM": {**_NEW, "sl.SCAN": "tmag2s2"},
         "tmag2s3 1/SM": {**_NEW, "sl.SCAN": "tmag2s3", "sl.TMA_BLOCKS": 1},
         "tmag3s2 1/SM": {**_NEW, "sl.SCAN": "tmag3s2", "sl.TMA_BLOCKS": 1},
         "tmag4s2 1/SM": {**_NEW, "sl.SCAN": "tmag4s2", "sl.TMA_BLOCKS": 1}}
#: s5b (the second run, the default): the groups dealt in turn ("x") and the tighter merge floor
#: ("t") against s5a's best (tmag3s2 in runs) and tma3
ONE = {"tma3 general flat (s4d default)": _OLD,
       "tma3 flat2d": _NEW,
       **{f"{s} 1/SM": {**_NEW, "sl.SCAN": s} for s in (
           "tmag3s2", "tmag3s2t", "tmag3s2x", "tmag3s2xt", "tmag4s2xt", "tmag5s2xt", "tmag3s3xt")},
       "tmag2s2xt 2/SM": {**_NEW, "sl.SCAN": "tmag2s2xt"}}
#: s5c (--defaults): the defaults after s5b (tmag3s2xt) against tma3 with the s4d host path
ONE_C = {"defaults (tmag3s2xt)": {}, "tma3 general flat (s4d default)": _OLD}
MANY = {"default": {}}
s4.MODS["be"] = CudaBackend
s4.ONE = s4c.ONE = ONE
s4.MANY = s4c.MANY = MANY


def wall(out, cp, call, name):
    """Median wall time of one public call with the device idle before it: perf_counter around
    the call and a synchronize (300 calls)."""
    t = []
    for _ in range(20):
        call()
    cp.cuda.Device().synchronize()
    for _ in range(300):
        t0 = time.perf_counter()
        call()
        cp.cuda.Device().synchronize()
        t.append(time.perf_counter() - t0)
    out.setdefault("wall_ms", {})[name] = float(np.median(t) * 1e3)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4,000 x 1,024 trits")
    ap.add_argument("--json")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--defaults", action="store_true", help="ONE_C's variants only")
    args = ap.parse_args(argv)
    if args.defaults:
        s4.ONE = s4c.ONE = ONE_C
    import cupy as cp

    from pytropical_gpu.ops._planes import flat

    t0 = time.time()
    rows, dim, k = (4_000, 1024, 10) if args.quick else (200_000, 10_000, 10)
    out = {"sizes": f"M={rows} x dim={dim}, k={k}, 1 and 64 queries", "errors": {},
           "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "one_query": [], "many_queries": []}
    s4.section(out, "checks", lambda: s4.checks(out, cp))
    s4.section(out, "falling", lambda: s4c.falling(out, cp))
    log(f"checks done at {time.time() - t0:.1f} s")
    mem = random_vecs(rows, dim, 1)
    q64 = random_vecs(64, dim, 3)
    mc = TernaryVec._trusted(cp.asarray(mem.pos), cp.asarray(mem.neg), dim)
    qc = TernaryVec._trusted(cp.asarray(q64.pos), cp.asarray(q64.neg), dim)
    qb = TernaryVec._trusted(qc.pos[:1], qc.neg[:1], dim)
    dense = dense_f32(cp, mem)
    s64 = cp.asnumpy(dense @ cp.asarray(q64.to_array(), dtype=cp.float32).T).astype(np.int64)
    s4.section(out, "baselines", lambda d=dense: s4.baselines(out, cp, d, TernaryVec(
        q64.pos[0], q64.neg[0], dim), q64, k))
    del dense
    ref = [s4.ranked(s64[:, j], k) for j in range(64)]
    want64 = (np.stack([r[0] for r in ref]), np.stack([r[1] for r in ref]))
    be = tg.get_backend("cuda")
    log(f"{out['sizes']}: reference ready at {time.time() - t0:.1f} s")
    s4.section(out, "floors", lambda: s4.floors(out, cp, 2 * mem.pos.nbytes))
    planes = (*flat(be, qb), *flat(be, mc))
    small = TernaryVec._trusted(mc.pos[:256], mc.neg[:256], mc.dim)
    gc.collect()
    call = lambda: tg.search(qb, mc, k=k, backend="cuda")  # noqa: E731
    per_call_us(lambda: tg.search(qb, small, k=k, backend="cuda"), 3000, 1)  # host warm-up
    cp.cuda.Device().synchronize()
    for r in range(args.rounds):  # rounds of every variant: host drift shows between rounds
        n1, n64 = len(out["one_query"]), len(out["many_queries"])
        for name, sets in s4.ONE.items():
            s4.section(out, f"one {name} {r}", lambda name=name, sets=sets: s4.one_row(
                out, cp, be, mc, qb, ref[0], k, name, sets, planes, small, call))
            with s4.switches(sets):
                s4.section(out, f"wall {name} {r}", lambda name=name, r=r: wall(
                    out, cp, call, f"{name} round {r}"))
        s4.section(out, f"many {r}", lambda: s4.many_queries(out, cp, be, mc, qc, want64, k))
        for row in out["one_query"][n1:] + out["many_queries"][n64:]:
            row["round"] = r
        log(f"round {r} done at {time.time() - t0:.1f} s; wall {json.dumps(out.get('wall_ms'))}")
    s4.section(out, "host", lambda: s4c.host_parts(out, cp, be, qb, qc, mc, k))
    with s4.switches(_OLD):
        general = {}
        s4.section(out, "host general", lambda: s4c.host_parts(general, cp, be, qb, qc, mc, k))
        out["host_parts_us_general_flat"] = general.get("host_parts_us")
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
