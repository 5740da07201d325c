"""WGSL GEMM issue 14, session 6: WA on the argmax, small, tiny and split-k tiles, every selective
semiring's argmax against the plain default (WA).

Session 5's run c (``bench_wgpu_gemm_s5c.py``, never run on a GPU) timed WA on min_plus only and
held the argmax to the plain tile without WA. This run adds, before any timing, a bit-for-bit check
of every WA form against ``tests/reference.py`` (numpy, written apart from the kernels) with the
extreme values (±inf, subnormals, ties, int32 extremes through the guarded ⊗, k = 0, odd shapes,
``c``, batches) for the four selective semirings, the argmax's ties across k-tiles (s5c), split-k
with WA; then run c's timings, the argmax first pass with WA at PF 0 / 1 / 2, and per selective
semiring at 4096³: the plain tile without WA (session 5's baseline), with WA (the library's
default), the argmax (DV first pass + row second pass) without and with WA. GPU timestamps,
round-robin, median of 9; each timed result checked on sampled rows.

    python benchmarks/bench_wgpu_gemm_s6.py --json $OUT/wgpu_gemm_h200_s6.json [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

os.environ.setdefault("PYTROPICAL_WEBGPU", "wgpu")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "tests")]

import _wgpu_timing as timing  # noqa: E402
import bench_wgpu_argmax_s4 as s4  # noqa: E402
import bench_wgpu_gemm_s5c as s5c  # noqa: E402
import bench_wgpu_sweep as sweep  # noqa: E402
from _wgpu_timing import log  # noqa: E402
from bench_wgpu_argmax import Problem  # noqa: E402
from bench_wgpu_argmax_s4 import check_argmax_ties, check_split, round_robin  # noqa: E402
from bench_wgpu_gemm_s5 import OUT  # noqa: E402
from reference import ref_matmul  # noqa: E402

s4.OUT = OUT  # the s4 checks record into this run's JSON

import pytropical_gpu as ptg  # noqa: E402
from pytropical_gpu.backends.wgpu import gemm_passes as passes  # noqa: E402
from pytropical_gpu.backends.wgpu.device import get_engine  # noqa: E402

T128, T64 = s5c.T128, s5c.T64
T32 = {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4, "PF": 0}  # gemm.TILE_TINY
SELECTIVE = ("min_plus", "max_plus", "max_min", "min_max")
#: plain forms checked with the extreme values (the timed ones and the tiny tile's candidates)
PLAIN = {"128 WA": dict(T128, WA=True), "64 WA": dict(T64, WA=True), "32 WA": dict(T32, WA=True),
         "32 PF2": dict(T32, PF=2), "32 PF2 WA": dict(T32, PF=2, WA=True)}
#: argmax first passes (by k-tile; DV where n % 4 == 0 and no c, as the library does)
ARG = {"AT 128 PF2": dict(T128, PF=2), "AT 128 PF2 WA": dict(T128, PF=2, WA=True),
       "AT 128 PF1 WA": dict(T128, PF=1, WA=True), "AT 128 PF0 WA": dict(T128, WA=True)}


#: f32 specials; subnormals only where the adapter keeps them (one that flushes them raises
#: SubnormalFlushError before any upload, by the library's rule; the H200 through Vulkan flushes)
SPECIALS = [np.inf, -np.inf, np.float32(-0.0), np.float32(0.0)]
SUBNORMALS = [np.float32(1e-45), np.float32(-3e-39)]


def _ops(rng, shape, dt):
    """Small values (ties), ±inf, ±0 and subnormals (f32); int32 extremes (the guarded ⊗)."""
    if int(np.prod(shape)) == 0:
        return np.zeros(shape, dt)
    if dt.kind == "f":
        x = rng.integers(-6, 6, shape).astype(dt) / 2
        for v in SPECIALS:
            x[rng.random(shape) < 0.03] = v
        return x
    info = np.iinfo(np.int32)
    x = rng.integers(-5, 5, shape).astype(dt)
    for v in (info.max, info.min, info.max - 2, info.min + 1):
        x[rng.random(shape) < 0.03] = v
    return x


#: (semiring, dtype) pairs of the extreme-value checks: each a pipeline with and without ``c`` per
#: form (an argmax 128 tile takes ~2 s to compile on the H200's host, so int32 on two semirings)
CASES = [(s, "float32") for s in SELECTIVE] + [("min_plus", "int32"), ("max_min", "int32")]


def check_extremes(label, kp, argmax) -> bool:
    """``kp`` forced on every tiled GEMM: :data:`CASES` against numpy's reference
    (``tests/reference.py``), odd shapes (k cut inside a k-tile, several tiles each way), k = 0,
    ``c``, batches (A and B, B broadcast)."""
    rng = np.random.default_rng(61)
    shapes = [((), (), 131, 77, 263), ((2,), (2,), 67, 141, 130), ((3,), (), 70, 45, 36),
              ((), (), 259, 33, 131), ((), (), 37, 0, 40)]
    ok = True
    with sweep.forced("gemm_tiled", dict(kp, AT=True) if argmax else kp):
        for sname, dts in CASES:
            dt = np.dtype(dts)
            for i, (la, lb, m, k, n) in enumerate(shapes):
                a, b = _ops(rng, la + (m, k), dt), _ops(rng, lb + (k, n), dt)
                c = _ops(rng, (la or lb) + (m, n), dt) if i % 2 or k == 0 else None
                try:
                    got = ptg.matmul(a, b, sname, c=c, backend="wgpu", return_argmax=argmax)
                    want = ref_matmul(a, b, sname, c)
                    same = (np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
                            if argmax else np.array_equal(got, want[0]))
                except Exception as e:  # noqa: BLE001
                    same = False
                    OUT["errors"].append(f"{label} {sname} {dts}: {type(e).__name__}: {e}")
                if not same:
                    log(f"CHECK FAILED {label} {sname} {dts} {la}x{m}x{k}x{n} c={c is not None}")
                ok &= bool(same)
    OUT["checks"].append({"label": f"{label} extremes", "kp": kp, "argmax": argmax, "ok": ok})
    return ok


def checks(quick) -> bool:
    if quick:  # lavapipe compiles a 128 tile in seconds: one case a form
        CASES[:] = CASES[:1]
    if not get_engine().flushes_subnormals:
        SPECIALS.extend(SUBNORMALS)
    log(f"f32 specials in the checks: {SPECIALS}")
    ok = True
    for x, kp in PLAIN.items():
        ok &= check_extremes(x, kp, False)
        ok &= s5c.check_variant(x, kp)
    for x, kp in ARG.items():
        if x in ("AT 128 PF2 WA", "AT 128 PF1 WA"):  # the candidates for TILE_ARGMAX
            ok &= check_extremes(x, kp, True)
            ok &= check_argmax_ties(x, kp)
    keep = passes.SPLIT_TILE
    try:
        passes.SPLIT_TILE = dict(keep, WA=True)
        for dv in (False, True):
            ok &= check_split(dv)
    finally:
        passes.SPLIT_TILE = keep
    log(f"checks {'passed' if ok else 'FAILED'}: {sum(c['ok'] for c in OUT['checks'])} of "
        f"{len(OUT['checks'])}")
    return ok


def time_argmax_forms(eng, size, rounds, reps):
    """min_plus argmax, the first pass at PF 0 / 1 / 2 with WA and PF 2 without, and whole."""
    p = Problem(eng, size, size, size, True)
    rows, oks, tmps = {}, {}, []
    for x, kp in ARG.items():
        kpa = dict(kp, ARGMAX=True, AT=True, DV=True)
        first = p.tiled(kpa)
        fix, tmp = passes.argfix_commands(eng, p.code, kpa, p.binds, size, size, size, bt=True)
        tmps += tmp
        rows[f"{x} first"], rows[f"{x} whole"] = [first], [first] + fix
        oks[f"{x} whole"] = oks[f"{x} first"] = p.check(rows[f"{x} whole"])
    res = round_robin(eng, {x: c for x, c in rows.items() if oks[x]}, reps, rounds)
    for x in res:
        res[x]["ok"] = oks[x]
    s5c._report(res, size, f"min_plus argmax {size}^3", "AT 128 PF2 whole")
    eng.release(*tmps)
    p.release()


#: run a's argmax forms in the semiring step
FORMS_A = {"argmax": ARG["AT 128 PF2"], "argmax WA": ARG["AT 128 PF2 WA"],
           "argmax PF1 WA": ARG["AT 128 PF1 WA"]}
#: run b: 8x4 outputs a thread (512 threads, ≈ 120 registers; s4 without WA: argmax first pass
#: 7.58 ms, 3 % over its own plain loop, which was 17 % slower than 8x8's, with 3 workgroup reads
#: per 32 pairs: the clamps WA removes are a larger share there)
T84 = dict(T128, TN=4)
FORMS_B = {"argmax PF1 WA": ARG["AT 128 PF1 WA"], "argmax 8x4 WA PF0": dict(T84, WA=True),
           "argmax 8x4 WA PF2": dict(T84, PF=2, WA=True)}


def time_semirings(eng, size, rounds, reps, names, forms=FORMS_A):
    """Per selective semiring: plain without / with WA, the argmax ``forms`` (DV first pass + row
    second pass); the issue's ratio is the plain default (WA) over the argmax."""
    summary = {}
    for sname in names:
        p = Problem(eng, size, size, size, True, sname)
        q = Problem(eng, size, size, size, False, sname)
        rows, tmps = {"plain": [q.tiled(dict(T128, ARGMAX=False))],
                      "plain WA": [q.tiled(dict(T128, WA=True, ARGMAX=False))]}, []
        for x, kp in forms.items():
            kpa = dict(kp, ARGMAX=True, AT=True, DV=True)
            fix, tmp = passes.argfix_commands(eng, p.code, kpa, p.binds, size, size, size, bt=True)
            rows[x], tmps = [p.tiled(kpa)] + fix, tmps + tmp
        oks = {x: (q if x.startswith("plain") else p).check(c) for x, c in rows.items()}
        res = round_robin(eng, {x: c for x, c in rows.items() if oks[x]}, reps, rounds)
        for x, r in res.items():
            r.update(ok=oks[x], label=f"{sname} {x}", m=size,
                     plain_wa_over_this=res["plain WA"]["median_ms"] / r["median_ms"],
                     plain_over_this=res["plain"]["median_ms"] / r["median_ms"])
            log(f"{size}^3 {sname} {x}: {r['median_ms']:.3f} ms [q1 {r['q1_ms']:.3f}, q3 "
                f"{r['q3_ms']:.3f}] plain WA/this {r['plain_wa_over_this']:.3f} plain/this "
                f"{r['plain_over_this']:.3f} ok={r['ok']}")
            OUT["wgpu"].append(r)
        summary[sname] = {x: round(r["plain_wa_over_this"], 4) for x, r in res.items()}
        eng.release(*tmps)
        p.release()
        q.release()
    OUT["argmax_ratio_vs_plain_wa"] = summary
    log(f"plain WA / argmax: {summary}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (lavapipe smoke)")
    ap.add_argument("--json", default="wgpu_gemm_s6.json")
    ap.add_argument("--run", default="a", choices=("a", "b"),
                    help="b: the 8x4 argmax tile with WA (min_plus, max_plus) only")
    args = ap.parse_args(argv)
    if args.run == "b":
        return run_b(args)
    eng = get_engine()
    OUT["device"] = f"{eng.rt.info.name} ({eng.rt.info.backend}, {eng.rt.name})"
    log(f"device {OUT['device']}; package {ptg.__file__}")
    t0 = time.time()
    ok = checks(args.quick)
    big, mid, rounds = (256, 128, 3) if args.quick else (4096, 2048, 9)
    r_big, r_mid = (2, 2) if args.quick else (3, 10)
    # the row first (a run cut by its time limit keeps it), then run c's rows
    steps = [lambda: time_semirings(eng, big, rounds, r_big, SELECTIVE),
             lambda: time_argmax_forms(eng, big, rounds, r_big),
             lambda: s5c.time_plain(eng, mid // 2, mid * 4, 120, ["64", "64 WA"], rounds, r_mid),
             lambda: s5c.time_split(eng, mid // 2, rounds, 5 * r_mid),
             lambda: s5c.time_plain(eng, big, big, big, ["128", "128 WA"], rounds, r_big),
             lambda: s5c.time_plain(eng, mid, mid, mid, ["128", "128 WA"], rounds, r_mid)]
    timing.run_steps(steps, OUT, args.json, t0)  # a form whose check failed is not adopted
    return 0 if ok else 1


def run_b(args) -> int:
    """The 8x4 argmax forms: f32 extreme-value and tie checks first, then min_plus / max_plus."""
    eng = get_engine()
    OUT["device"] = f"{eng.rt.info.name} ({eng.rt.info.backend}, {eng.rt.name})"
    t0 = time.time()
    CASES[:] = CASES[:1] if args.quick else [(s, "float32") for s in SELECTIVE]
    ok = True
    for x in ("argmax 8x4 WA PF0", "argmax 8x4 WA PF2"):
        ok &= check_extremes(x, FORMS_B[x], True)
        ok &= check_argmax_ties(x, FORMS_B[x])
    log(f"checks {'passed' if ok else 'FAILED'}")
    size, rounds, reps = (256, 3, 2) if args.quick else (4096, 9, 3)
    timing.run_steps([lambda: time_semirings(eng, size, rounds, reps, ("min_plus", "max_plus"),
                                             FORMS_B)], OUT, args.json, t0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
