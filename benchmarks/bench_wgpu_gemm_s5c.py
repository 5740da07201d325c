"""WGSL GEMM issue 14, session 5, run c (not yet run): WA where the s5b run did not measure it.

s5b: WA (workgroup tiles as k rows of vec4) took the big tile from 22.51 to 23.91 TOPS at 8192³
(min_plus f32); ``gemm.TILE`` now has it, while the argmax tile (``gemm.TILE_ARGMAX``, PF=2), the
split-k tile (``gemm_passes.SPLIT_TILE``) and the small tile (``gemm.TILE_SMALL``) keep the flat
layout. This run checks each WA form bit for bit first (odd shapes, ±inf, ``c``, batches; argmax
ties across k-tiles and k running downhill), then times, GPU timestamps round-robin: the argmax
by k-tile's first pass and whole (4096³), the plain big tile at 2048³ and 4096³ with and without
WA, the small tile on 1024 × 8192 × 120 (min(m, n) < 128: the small tile's shape), and split-k's
tile at 1024³ (4 layers; the timed commands include the fold).

    python benchmarks/bench_wgpu_gemm_s5c.py --json $OUT/wgpu_gemm_h200_s5c.json [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("PYTROPICAL_WEBGPU", "wgpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _wgpu_timing as timing  # noqa: E402
from _wgpu_timing import log  # noqa: E402
from bench_wgpu_argmax import Problem  # noqa: E402
from bench_wgpu_argmax_s4 import check_argmax_ties, round_robin  # noqa: E402
from bench_wgpu_gemm_s5 import OUT, check_variant  # noqa: E402

import pytropical_gpu as ptg  # noqa: E402
from pytropical_gpu.backends.wgpu import gemm_passes as passes  # noqa: E402
from pytropical_gpu.backends.wgpu.device import get_engine  # noqa: E402

T128 = {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "PF": 0}
T64 = {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "PF": 0}
PLAIN = {"128": T128, "128 WA": dict(T128, WA=True), "64": T64, "64 WA": dict(T64, WA=True)}
ARG = {"AT 128 PF2": dict(T128, PF=2), "AT 128 PF2 WA": dict(T128, PF=2, WA=True)}


def checks() -> bool:
    ok = True
    for x, kp in PLAIN.items():
        ok &= check_variant(x, kp)
    for x, kp in ARG.items():
        ok &= check_argmax_ties(x, kp)
    log(f"checks {'passed' if ok else 'FAILED'}")
    return ok


def _report(res, size, tag, base):
    for x, r in res.items():
        r.update(label=f"{tag} {x}", m=size, base_over_this=res[base]["median_ms"] / r["median_ms"])
        log(f"{tag} {x}: {r['median_ms']:.4f} ms [q1 {r['q1_ms']:.4f}, q3 {r['q3_ms']:.4f}] "
            f"{base}/this {r['base_over_this']:.3f} ok={r.get('ok')}")
        OUT["wgpu"].append(r)


def time_plain(eng, m, k, n, names, rounds, reps):
    q = Problem(eng, m, k, n, False)
    rows = {x: [q.tiled(dict(PLAIN[x], ARGMAX=False))] for x in names}
    oks = {x: q.check(c) for x, c in rows.items()}
    res = round_robin(eng, {x: c for x, c in rows.items() if oks[x]}, reps, rounds)
    for x in res:
        res[x]["ok"] = oks[x]
    _report(res, m, f"min_plus {m}x{k}x{n}", names[0])
    q.release()


def time_split(eng, size, rounds, reps):
    """split-k (4 layers of 128×128, DV partial stores, then the fold) with and without WA."""
    q = Problem(eng, size, size, size, False)
    layers, ks = 4, size // 4
    rows, tmps = {}, []
    for x, kp in (("split4 128", T128), ("split4 128 WA", dict(T128, WA=True))):
        sk = dict(kp, ARGMAX=False, SK=True)
        cmds, tmp = passes.splitk_commands(eng, q.code, sk, layers, ks, q.binds[:3], size, size,
                                           size, 4)
        rows[x], tmps = cmds, tmps + tmp
    oks = {x: q.check(c) for x, c in rows.items()}
    res = round_robin(eng, {x: c for x, c in rows.items() if oks[x]}, reps, rounds)
    for x in res:
        res[x]["ok"] = oks[x]
    _report(res, size, f"min_plus {size}^3", "split4 128")
    eng.release(*tmps)
    q.release()


def time_argmax(eng, size, rounds, reps):
    p = Problem(eng, size, size, size, True)
    rows, oks, tmps = {}, {}, []
    for x, kp in ARG.items():
        kpa = dict(kp, ARGMAX=True, AT=True, DV=True)
        first = p.tiled(kpa)
        fix, tmp = passes.argfix_commands(eng, p.code, kpa, p.binds, size, size, size, bt=True)
        tmps += tmp
        rows[f"{x} first"], rows[f"{x} whole"] = [first], [first] + fix
        oks[f"{x} whole"] = p.check(rows[f"{x} whole"])
        oks[f"{x} first"] = oks[f"{x} whole"]
    res = round_robin(eng, {x: c for x, c in rows.items() if oks[x]}, reps, rounds)
    for x in res:
        res[x]["ok"] = oks[x]
    _report(res, size, f"min_plus argmax {size}^3", "AT 128 PF2 whole")
    eng.release(*tmps)
    p.release()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (lavapipe smoke)")
    ap.add_argument("--json", default="wgpu_gemm_s5c.json")
    args = ap.parse_args(argv)
    eng = get_engine()
    OUT["device"] = f"{eng.rt.info.name} ({eng.rt.info.backend}, {eng.rt.name})"
    log(f"device {OUT['device']}; package {ptg.__file__}")
    t0 = time.time()
    ok = checks()
    big, mid, rounds = (256, 128, 3) if args.quick else (4096, 2048, 9)
    r_big, r_mid = (2, 2) if args.quick else (3, 10)
    steps = [lambda: time_plain(eng, big, big, big, ["128", "128 WA"], rounds, r_big),
             lambda: time_plain(eng, mid, mid, mid, ["128", "128 WA"], rounds, r_mid),
             lambda: time_plain(eng, mid // 2, mid * 4, 120, ["64", "64 WA"], rounds, r_mid),
             lambda: time_split(eng, mid // 2, rounds, 5 * r_mid),
             lambda: time_argmax(eng, big, rounds, r_big)]
    timing.run_steps(steps, OUT, args.json, t0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
