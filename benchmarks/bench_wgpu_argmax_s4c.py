"""WGSL GEMM issue 14, session 4, not yet run: the argmax's second pass with four threads an output.

Run b found ``gemm_argfix`` at 0.56 ms whether Bᵀ came from DRAM or L2 (column panels). One
thread per output makes each vec4 load of a warp touch 32 cache lines (32 outputs' random k-tiles);
8 such loads a thread → ≈ 0.5 ms of one line a cycle per SM over 16 M outputs: the likely bound.
``gemm_argfix_coop`` (``gemm_passes.ARGFIX_COOP``) gives an output four threads, each reading 16
bytes of the tile's 64: 8 lines an instruction. Prediction: the second pass 0.56 → 0.15–0.25 ms,
the whole argmax 7.69 → ≈ 7.35 ms (≈ 86 % of the plain kernel's 6.30). Checks first (as run b),
then GPU timestamps round-robin: the first pass, the default second pass, COOP with PW 0 / 512 /
2048, and the plain kernel.

    python benchmarks/bench_wgpu_argmax_s4c.py --json wgpu_argmax_h200_s4c.json [--quick]
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
from bench_wgpu_argmax_s4 import OUT, T128, check_argmax_ties, round_robin  # noqa: E402
from bench_wgpu_argmax_s4b import check_argfix  # noqa: E402

import pytropical_gpu as ptg  # noqa: E402
from pytropical_gpu.backends.wgpu import gemm_passes as passes  # noqa: E402
from pytropical_gpu.backends.wgpu.device import get_engine  # noqa: E402

#: (COOP, PW) of each second pass timed
FIXES = {"default (PW512, one thread)": (False, 512), "COOP PW0": (True, 0),
         "COOP PW512": (True, 512), "COOP PW2048": (True, 2048)}


def checks() -> bool:
    ok = True
    for name, (coop, pw) in FIXES.items():
        passes.ARGFIX_COOP = coop
        ok &= check_argfix(f"argfix {name}", pw, 32)
        if coop and pw == 512:
            ok &= check_argmax_ties("AT 128 PF2 COOP", dict(T128, PF=2))
    passes.ARGFIX_COOP = False
    return ok


def time_fix(eng, size, rounds):
    p = Problem(eng, size, size, size, True)
    q = Problem(eng, size, size, size, False)
    kpa = dict(T128, PF=2, ARGMAX=True, AT=True)
    first = p.tiled(kpa)
    rows, oks, tmps = {"AT 128 PF2 first": [first]}, {}, []
    keep = passes.ARGFIX_COOP, passes.ARGFIX_PW
    for name, (coop, pw) in FIXES.items():
        try:
            passes.ARGFIX_COOP, passes.ARGFIX_PW = coop, pw
            fix, tmp = passes.argfix_commands(eng, p.code, kpa, p.binds, size, size, size, bt=True)
            tmps += tmp
            oks[name] = p.check([first] + fix)
            rows[f"total {name}"] = [first] + fix
        except Exception as e:  # noqa: BLE001
            OUT["errors"].append(f"argfix {name}: {type(e).__name__}: {e}")
    passes.ARGFIX_COOP, passes.ARGFIX_PW = keep
    d = q.tiled(dict(T128, ARGMAX=False))
    oks["plain"] = q.check([d])
    rows["plain 128 PF0 (default)"] = [d]
    log(f"{size}^3 sampled checks: {oks}")
    res = round_robin(eng, rows, 3, rounds)
    base, f1 = res["plain 128 PF0 (default)"]["median_ms"], res["AT 128 PF2 first"]["median_ms"]
    for x, r in res.items():
        r["plain_default_over_this"] = base / r["median_ms"]
        if x.startswith("total"):
            r["second_pass_ms"], r["ok"] = r["median_ms"] - f1, oks.get(x[6:])
        log(f"{size}^3 {x}: {r['median_ms']:.3f} ms [q1 {r['q1_ms']:.3f}, q3 {r['q3_ms']:.3f}] "
            f"plain/this {r['plain_default_over_this']:.3f}"
            + (f" second pass {r['second_pass_ms']:.3f} ok={r['ok']}" if "ok" in r else ""))
        OUT["argmax"].append(dict(r, label=x, m=size))
    eng.release(*tmps)
    p.release()
    q.release()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default="wgpu_argmax_s4c.json")
    args = ap.parse_args(argv)
    eng = get_engine()
    OUT["device"] = f"{eng.rt.info.name} ({eng.rt.info.backend}, {eng.rt.name})"
    log(f"device {OUT['device']}; package {ptg.__file__}")
    t0 = time.time()
    ok = checks()
    log(f"checks {'passed' if ok else 'FAILED'} ({time.time() - t0:.0f} s)")
    timing.run_steps([lambda: time_fix(eng, 256 if args.quick else 4096, 2 if args.quick else 9)],
                     OUT, args.json, t0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
