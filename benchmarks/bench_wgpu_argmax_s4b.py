"""WGSL GEMM issue 14, session 4, second run: the argmax's second pass, split-k's vec4 stores.

After run a (``bench_wgpu_argmax_s4.py``: the 128×128 first pass with PF 2 is 7.08 ms, the
transpose and second pass 0.65 ms): the second pass taking its outputs in column panels of PW
(so the resident threads read an L2-sized part of Bᵀ) and a 32×32 transpose tile, each checked
first (n beyond a panel and not a multiple of it, odd k, a batch, ±inf, ties, ``c``); then split-k
with scalar and vec4 partial stores on every shape the rule splits (and 2048³ unsplit, DV or not).

    python benchmarks/bench_wgpu_argmax_s4b.py --json wgpu_argmax_h200_s4b.json [--quick]
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
from bench_wgpu_argmax_s4 import (  # noqa: E402
    OUT,
    T128,
    _agree,
    check_argmax_ties,
    check_plain_dv,
    check_split,
    round_robin,
)

import pytropical_gpu as ptg  # noqa: E402
from pytropical_gpu.backends.wgpu import gemm_passes as passes  # noqa: E402
from pytropical_gpu.backends.wgpu.device import get_engine  # noqa: E402

FIX_VARIANTS = {"PW0 TS16 (s4a)": (0, 16), "PW0 TS32": (0, 32), "PW256 TS32": (256, 32),
                "PW512 TS32": (512, 32), "PW1024 TS32": (1024, 32), "PW2048 TS32": (2048, 32),
                "PW1024 TS16": (1024, 16)}


def check_argfix(label, pw, ts) -> bool:
    """The second pass in column panels and the 32-wide transpose: n beyond a panel and not a
    multiple of it, odd k, a batch, ±inf, ties, ``c``."""
    rng = np.random.default_rng(12)
    keep = passes.ARGFIX_PW, passes.TRANSPOSE_TS
    passes.ARGFIX_PW, passes.TRANSPOSE_TS = pw, ts
    ok = True
    try:
        with sweep.forced("gemm_tiled", dict(T128, PF=2, AT=True)):
            for lead, m, k, n in [((), 67, 40, 600), ((), 5, 33, 2100), ((2,), 9, 70, 300)]:
                a = rng.integers(0, 3, lead + (m, k)).astype(np.float32)
                b = rng.integers(0, 3, (k, n)).astype(np.float32)
                a[rng.random(a.shape) < 0.05] = np.inf
                b[rng.random(b.shape) < 0.05] = -np.inf
                c = rng.integers(-1, 3, lead + (m, n)).astype(np.float32)
                for sname, x, cc in [("min_plus", a, None), ("max_plus", -a, c)]:
                    same = _agree(x, b if sname == "max_plus" else np.abs(b), sname, cc)
                    if not same:
                        log(f"CHECK FAILED {label} {sname} {lead}x{m}x{k}x{n}")
                    ok &= same
    except Exception as e:  # noqa: BLE001
        ok = False
        OUT["errors"].append(f"{label}: {type(e).__name__}: {e}")
    finally:
        passes.ARGFIX_PW, passes.TRANSPOSE_TS = keep
    OUT["checks"].append({"label": label, "ok": ok})
    return ok


def checks_b() -> bool:
    ok = True
    for name, (pw, ts) in FIX_VARIANTS.items():
        ok &= check_argfix(f"argfix {name}", pw, ts)
    ok &= check_split(False) & check_split(True) & check_plain_dv()
    ok &= sweep.check_gemm("gemm_tiled", dict(T128, PF=2, AT=True), True, "AT 128 PF2")
    ok &= check_argmax_ties("AT 128 PF2", dict(T128, PF=2))
    OUT["checks"] += [c for c in sweep.OUT["checks"] if c not in OUT["checks"]]
    OUT["errors"] += sweep.OUT["errors"]
    return ok


def time_argfix(eng, size, rounds):
    """The first pass fixed (128×128 PF2), each second pass: total and the transpose alone."""
    p = Problem(eng, size, size, size, True)
    q = Problem(eng, size, size, size, False)
    rows, oks, tmps = {}, {}, []
    kpa = dict(T128, PF=2, ARGMAX=True, AT=True)
    first = p.tiled(kpa)
    rows["AT 128 PF2 first"] = [first]
    keep = passes.ARGFIX_PW, passes.TRANSPOSE_TS
    for name, (pw, ts) in FIX_VARIANTS.items():
        try:
            passes.ARGFIX_PW, passes.TRANSPOSE_TS = pw, ts
            fix, tmp = passes.argfix_commands(eng, p.code, kpa, p.binds, size, size, size, bt=True)
            tmps += tmp
            oks[name] = p.check([first] + fix)
            rows[f"total {name}"] = [first] + fix
            if pw in (0, 1024):
                rows[f"transpose TS{ts}"] = fix[:1]
        except Exception as e:  # noqa: BLE001
            OUT["errors"].append(f"argfix {name}: {type(e).__name__}: {e}")
    passes.ARGFIX_PW, passes.TRANSPOSE_TS = keep
    rows["AT 128 PF0 first (s4a default)"] = [p.tiled(dict(T128, ARGMAX=True, AT=True))]
    d = q.tiled(dict(T128, ARGMAX=False))
    oks["plain"] = q.check([d])
    rows["plain 128 PF0 (default)"] = [d]
    log(f"argfix {size}^3 sampled checks: {oks}")
    res = round_robin(eng, rows, 3, rounds)
    base = res["plain 128 PF0 (default)"]["median_ms"]
    f1 = res["AT 128 PF2 first"]["median_ms"]
    for x, r in res.items():
        r["tops"] = 2 * size ** 3 / r["median_ms"] / 1e9
        r["plain_default_over_this"] = base / r["median_ms"]
        if x.startswith("total"):
            r["second_pass_ms"] = r["median_ms"] - f1
            r["ok"] = oks.get(x[6:])
        log(f"{size}^3 {x}: {r['median_ms']:.3f} ms [q1 {r['q1_ms']:.3f}, q3 {r['q3_ms']:.3f}] "
            f"plain/this {r['plain_default_over_this']:.3f}"
            + (f" second pass {r['second_pass_ms']:.3f} ok={r['ok']}" if "second_pass_ms" in r
               else ""))
        OUT["argmax"].append(dict(r, label=x, m=size))
    eng.release(*tmps)
    p.release()
    q.release()


def time_dv(eng, shapes, rounds):
    """Split-k's partial stores scalar or vec4 over the shapes the rule splits; 2048³ unsplit."""
    keep = passes.SPLIT_DV
    for (m, k, n) in shapes:
        p = Problem(eng, m, k, n, False)
        rows, oks, tmps = {}, {}, []
        s, ks = passes.split_plan(m, n, k, eng.max_binding, 4)
        for dv in (False, True):
            passes.SPLIT_DV = dv
            if s > 1:
                cmds, tmp = passes.splitk_commands(eng, p.code, dict(T128, ARGMAX=False, SK=True),
                                                   s, ks, p.binds, m, n, k, 4)
                tmps += tmp
            else:
                cmds = [p.tiled(dict(T128, ARGMAX=False, **({"DV": True} if dv else {})))]
            oks[dv] = p.check(cmds)
            rows[f"layers {s} DV={dv}"] = cmds
        passes.SPLIT_DV = keep
        res = round_robin(eng, rows, 50 if m * n * k <= 1 << 32 else 5, rounds)
        for x, r in res.items():
            r["ok"] = oks[x.endswith("True")]
            log(f"{m}x{k}x{n} {x}: {r['median_ms']:.4f} ms [q1 {r['q1_ms']:.4f}, "
                f"q3 {r['q3_ms']:.4f}] ok={r['ok']}")
            OUT["split"].append(dict(r, label=x, shape=[m, k, n]))
        eng.release(*tmps)
        p.release()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default="wgpu_argmax_s4b.json")
    args = ap.parse_args(argv)
    eng = get_engine()
    OUT["device"] = f"{eng.rt.info.name} ({eng.rt.info.backend}, {eng.rt.name})"
    log(f"device {OUT['device']}; package {ptg.__file__}")
    t0 = time.time()
    q = args.quick
    ok = checks_b()
    log(f"checks {'passed' if ok else 'FAILED'} ({time.time() - t0:.0f} s)")
    steps = [lambda: time_argfix(eng, 256 if q else 4096, 2 if q else 9),
             lambda: time_dv(eng, [(256, 256, 256)] if q else
                             [(1024, 1024, 1024), (512, 512, 512), (768, 768, 768),
                              (1536, 1536, 1536), (2048, 2048, 2048), (2560, 2560, 2560),
                              (3072, 3072, 3072), (1024, 4096, 1024), (256, 8192, 256)],
                             2 if q else 15)]
    timing.run_steps(steps, OUT, args.json, t0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
