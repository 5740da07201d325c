"""WGSL GEMM issue 14, session 4: argmax by k-tile's first pass variants, split-k's partial stores.

Checks first (every variant exact against the cpu backend: odd shapes with ±inf, ``c``, batches,
k = 0, argmax ties across k-tiles, k running downhill so every k-tile improves every output; split-k
with vec4 partial layers on n a multiple of 4 or not), then GPU timestamps, the variants of a row
sampled round-robin (one sample = one compute pass of R dispatches), median and spread:

* min_plus f32 argmax 4096³: the first pass and the whole argmax (first pass + B transposed +
  ``gemm_argfix``) for the 128×128 tile with PF 0/1/2, 8×4 per thread (512 threads), and 128×64 /
  64×64 with PF 2; the plain kernels of the same tiles in the same run (the baseline: 128×128 PF 0,
  the default plain GEMM). Run a also timed IW (the index stored to I on improvement instead of
  held in registers): 45 % slower, removed from gemm_tiled after it (the commit that made PF=2
  the argmax's default still has it);
* min_plus f32 1024³ split-k: the default (4 layers, 128×128) with scalar and vec4 (DV) partial
  stores, 8 layers, 128×64, and the 64×64 tile unsplit.

    python benchmarks/bench_wgpu_argmax_s4.py --json wgpu_argmax_h200_s4.json [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

os.environ.setdefault("PYTROPICAL_WEBGPU", "wgpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _wgpu_timing as timing  # noqa: E402
import bench_wgpu_sweep as sweep  # noqa: E402
from _wgpu_timing import log  # noqa: E402
from bench_wgpu_argmax import Problem  # noqa: E402

import pytropical_gpu as ptg  # noqa: E402
from pytropical_gpu.backends.wgpu import gemm_passes as passes  # noqa: E402
from pytropical_gpu.backends.wgpu.device import get_engine  # noqa: E402

OUT: dict = {"checks": [], "argmax": [], "split": [], "errors": []}
T128 = {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "PF": 0}
T128N4 = dict(T128, TN=4)  # 512 threads, 8x4 outputs each
T128x64 = {"BM": 128, "BN": 64, "BK": 16, "TM": 8, "TN": 4, "PF": 0}
T64 = {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "PF": 0}
AT_VARIANTS = {
    "128 PF0 (default)": T128, "128 PF1": dict(T128, PF=1), "128 PF2": dict(T128, PF=2),
    "128 8x4 PF0": T128N4, "128 8x4 PF2": dict(T128N4, PF=2),
    "128x64 PF2": dict(T128x64, PF=2), "64 PF0": T64,
}
PLAIN_VARIANTS = {"128 PF0 (default)": T128, "128 PF2": dict(T128, PF=2),
                  "128 8x4": T128N4, "128 DV": dict(T128, DV=True), "64 PF0": T64}


def _agree(a, b, sname, c=None, argmax=True) -> bool:
    got = ptg.matmul(a, b, sname, c=c, backend="wgpu", return_argmax=argmax)
    want = ptg.matmul(a, b, sname, c=c, backend="cpu", return_argmax=argmax)
    if not argmax:
        return bool(np.array_equal(got, want, equal_nan=True))
    return bool(np.array_equal(got[0], want[0], equal_nan=True) and np.array_equal(got[1], want[1]))


def check_argmax_ties(label, kp) -> bool:
    """Ties across k-tiles (values in {0, 1, 2, inf}), k running downhill (every tile improves),
    a max semiring, ``c`` winning some outputs."""
    rng = np.random.default_rng(11)
    ok = True
    with sweep.forced("gemm_tiled", dict(kp, AT=True)):
        for m, k, n in [(70, 300, 132), (129, 517, 67)]:
            a = rng.integers(0, 3, (m, k)).astype(np.float32)
            b = rng.integers(0, 3, (k, n)).astype(np.float32)
            a[rng.random((m, k)) < 0.05] = np.inf
            down = np.broadcast_to(-np.arange(k, dtype=np.float32), (m, k)).copy()
            c = rng.integers(-1, 2, (m, n)).astype(np.float32)
            for sname, x, cc in [("min_plus", a, None), ("max_plus", -a, None),
                                 ("min_plus", down, None), ("min_plus", a, c)]:
                try:
                    same = _agree(x, b, sname, cc)
                except Exception as e:  # noqa: BLE001
                    same = False
                    OUT["errors"].append(f"{label} ties: {type(e).__name__}: {e}")
                if not same:
                    log(f"CHECK FAILED {label} ties {sname} {m}x{k}x{n} c={cc is not None}")
                ok &= same
    OUT["checks"].append({"label": f"{label} ties", "ok": ok})
    return ok


def check_plain_dv() -> bool:
    """The tiled kernel with vec4 stores of D (n a multiple of 4, no ``c``), ±inf, partial tiles."""
    rng = np.random.default_rng(6)
    ok = True
    with sweep.forced("gemm_tiled", dict(T128, DV=True)):
        for m, k, n in [(37, 129, 68), (130, 40, 260), (1, 7, 4)]:
            a = sweep._operands(rng, (m, k), np.dtype(np.float32), True)
            b = sweep._operands(rng, (k, n), np.dtype(np.float32), True)
            same = _agree(a, b, "min_plus", argmax=False)
            if not same:
                log(f"CHECK FAILED plain DV {m}x{k}x{n}")
            ok &= same
    OUT["checks"].append({"label": "plain 128 DV", "ok": ok})
    return ok


def check_split(dv: bool) -> bool:
    """Split-k with and without vec4 partial stores, n a multiple of 4 or not, ±inf, ``c``."""
    rng = np.random.default_rng(5)
    keep = passes.SPLIT_MIN_K, passes.SPLIT_MIN_WORK, passes.SPLIT_DV
    passes.SPLIT_MIN_K, passes.SPLIT_MIN_WORK, passes.SPLIT_DV = 16, 0, dv
    ok = True
    try:
        for m, k, n in [(37, 129, 68), (133, 300, 260), (1, 200, 4), (45, 130, 71)]:
            a = sweep._operands(rng, (m, k), np.dtype(np.float32), True)
            b = sweep._operands(rng, (k, n), np.dtype(np.float32), True)
            c = sweep._operands(rng, (m, n), np.dtype(np.float32), True)
            for sname in ("min_plus", "max_plus"):
                for cc in (None, c):
                    same = _agree(a, b, sname, cc, argmax=False)
                    if not same:
                        log(f"CHECK FAILED split DV={dv} {sname} {m}x{k}x{n} c={cc is not None}")
                    ok &= same
    except Exception as e:  # noqa: BLE001
        ok = False
        OUT["errors"].append(f"split DV={dv}: {type(e).__name__}: {e}")
    finally:
        passes.SPLIT_MIN_K, passes.SPLIT_MIN_WORK, passes.SPLIT_DV = keep
    OUT["checks"].append({"label": f"split-k DV={dv}", "ok": ok})
    return ok


def checks(quick) -> bool:
    ok = True
    names = ["128 PF0 (default)", "128 PF2", "64 PF0"] if quick else list(AT_VARIANTS)
    for name in names:
        kp = AT_VARIANTS[name]
        ok &= sweep.check_gemm("gemm_tiled", dict(kp, AT=True), True, f"AT {name}")
        ok &= check_argmax_ties(f"AT {name}", kp)
    for name, kp in PLAIN_VARIANTS.items():
        if not (quick or kp.get("DV")):  # DV: n a multiple of 4 and no c (check_plain_dv)
            ok &= sweep.check_gemm("gemm_tiled", kp, False, f"plain {name}")
    ok &= check_plain_dv()
    ok &= check_split(False) & check_split(True)
    OUT["checks"] += [c for c in sweep.OUT["checks"] if c not in OUT["checks"]]
    OUT["errors"] += sweep.OUT["errors"]
    return ok


def sample(eng, cmds, reps) -> float:
    """One timestamped compute pass of ``reps`` × ``cmds`` (after one unmeasured pass), ms each."""
    return timing._timestamps(eng, list(cmds), reps, 1) * 1e3


def round_robin(eng, rows: dict, reps: int, rounds: int) -> dict:
    """{label: cmds} -> {label: stats of ``rounds`` samples taken in turn (drift hits all alike)}."""
    got = {x: [] for x in rows}
    for _ in range(rounds):
        for x, cmds in rows.items():
            got[x].append(sample(eng, cmds, reps))
    out = {}
    for x, v in got.items():
        q1, med, q3 = np.percentile(v, [25, 50, 75])
        out[x] = {"median_ms": float(med), "q1_ms": float(q1), "q3_ms": float(q3),
                  "min_ms": float(min(v)), "max_ms": float(max(v)), "samples": v}
    return out


def time_argmax(eng, size, rounds):
    p = Problem(eng, size, size, size, True)
    q = Problem(eng, size, size, size, False)
    down = Problem(eng, size, size, size, True)  # A[i, k] = -k: every k-tile improves every output
    down.a[:] = -np.arange(size, dtype=np.float32) * 16
    eng.release(down.A)
    down.A = eng.upload(down.a)
    down.binds[0] = down.A.binding()
    rows, tmps, oks = {}, [], {}
    for name, kp in AT_VARIANTS.items():
        for prob, tag in ((p, ""), (down, " downhill")):
            if tag and not name.startswith("128 PF0"):
                continue
            try:
                kpa = dict(kp, ARGMAX=True, AT=True)
                first = prob.tiled(kpa)
                fix, tmp = passes.argfix_commands(eng, prob.code, kpa, prob.binds, size, size, size,
                                                  bt=True)
                tmps += tmp
                oks[f"AT {name}{tag}"] = prob.check([first] + fix)
                rows[f"AT {name}{tag} first"] = [first]
                rows[f"AT {name}{tag} total"] = [first] + fix
            except Exception as e:  # noqa: BLE001
                OUT["errors"].append(f"argmax {name}{tag}: {type(e).__name__}: {e}")
    for name, kp in PLAIN_VARIANTS.items():
        try:
            d = q.tiled(dict(kp, ARGMAX=False))
            oks[f"plain {name}"] = q.check([d])
            rows[f"plain {name}"] = [d]
        except Exception as e:  # noqa: BLE001
            OUT["errors"].append(f"plain {name}: {type(e).__name__}: {e}")
    log(f"argmax {size}^3 sampled checks: {oks}")
    res = round_robin(eng, rows, 3 if size >= 4096 else 20, rounds)
    base = res.get("plain 128 PF0 (default)", {}).get("median_ms")
    for x, r in res.items():
        r["ok"] = oks.get(x.replace(" first", "").replace(" total", ""))
        r["tops"] = 2 * size ** 3 / r["median_ms"] / 1e9
        if base:
            r["plain_default_over_this"] = base / r["median_ms"]
        log(f"{size}^3 {x}: {r['median_ms']:.3f} ms [q1 {r['q1_ms']:.3f}, q3 {r['q3_ms']:.3f}, "
            f"min {r['min_ms']:.3f}, max {r['max_ms']:.3f}] {r['tops']:.2f} TOPS "
            f"plain/this {r.get('plain_default_over_this', 0):.3f} ok={r['ok']}")
        OUT["argmax"].append(dict(r, label=x, m=size))
    eng.release(*tmps)
    for prob in (p, q, down):
        prob.release()


def time_split(eng, size, rounds):
    p = Problem(eng, size, size, size, False)
    rows, oks, tmps = {}, {}, []
    variants = {"split 4 128 scalar (old default)": (T128, 4, False),
                "split 4 128 DV": (T128, 4, True), "split 8 128 DV": (T128, 8, True),
                "split 2 128 DV": (T128, 2, True), "split 4 128x64 DV": (T128x64, 4, True),
                "split 4 128 PF1 DV": (dict(T128, PF=1), 4, True), "64 unsplit": (T64, 1, False)}
    keep = passes.SPLIT_DV
    for name, (tile, layers, dv) in variants.items():
        try:
            passes.SPLIT_DV = dv
            s, ks = passes.split_plan(size, size, size, eng.max_binding, 4, tile, layers)
            if s > 1:
                kpx = dict(tile, ARGMAX=False, SK=True)
                cmds, tmp = passes.splitk_commands(eng, p.code, kpx, s, ks, p.binds, size, size,
                                                   size, 4)
                tmps += tmp
                rows[f"{name} fold"] = cmds[1:]
            else:
                cmds = [p.tiled(dict(tile, ARGMAX=False))]
            oks[name] = p.check(cmds)
            rows[name] = cmds
        except Exception as e:  # noqa: BLE001
            OUT["errors"].append(f"split {name}: {type(e).__name__}: {e}")
    passes.SPLIT_DV = keep
    res = round_robin(eng, rows, 50, rounds)
    for x, r in res.items():
        r["ok"] = oks.get(x.replace(" fold", ""))
        r["tops"] = 2 * size ** 3 / r["median_ms"] / 1e9
        log(f"{size}^3 {x}: {r['median_ms']:.4f} ms [q1 {r['q1_ms']:.4f}, q3 {r['q3_ms']:.4f}, "
            f"min {r['min_ms']:.4f}, max {r['max_ms']:.4f}] {r['tops']:.2f} TOPS ok={r['ok']}")
        OUT["split"].append(dict(r, label=x, m=size))
    eng.release(*tmps)
    p.release()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default="wgpu_argmax_s4.json")
    args = ap.parse_args(argv)
    eng = get_engine()
    OUT["device"] = f"{eng.rt.info.name} ({eng.rt.info.backend}, {eng.rt.name})"
    log(f"device {OUT['device']}; package {ptg.__file__}")
    t0 = time.time()
    q = args.quick
    ok = checks(q)
    log(f"checks {'passed' if ok else 'FAILED'} ({time.time() - t0:.0f} s)")
    steps = [lambda: time_argmax(eng, 128 if q else 4096, 2 if q else 9),
             lambda: time_split(eng, 256 if q else 1024, 2 if q else 31)]
    timing.run_steps(steps, OUT, args.json, t0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
