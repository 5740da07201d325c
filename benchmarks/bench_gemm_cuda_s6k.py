"""Issue 14, CUDA GEMM (sixth session): min_plus f32 2048³ on work units instead of one tile a block.

``sr_gemm_units`` (run 1: benchmarks/gemm_units_s6.cu, an experiment on the ``big3`` tile; run 2's
register-lean "v2" ("units2" in the notes) is the library's cuda/semiring_gemm_units.cu): whole tiles
and k-split units in one launch, split tiles folded exactly in-kernel (last arrival folds with ⊕),
handed out by the hardware (one unit a block, ``grid``) or by an atomic ticket to 396 persistent
blocks (``dyn``), beside the default ``big3`` grid and plain split k 3 + ``sr_combine``, with a
device copy and cuBLAS SGEMM in the same run. Checks first, bit for bit: odd shapes against
tests/reference.py (±inf, -0.0, ties, NaN products, ``c``) for every unit layout, the counters
back at 0 after each call, the bits against the default kernel (±0 included); the timed shapes
equal to the default kernel in full plus 8 rows against numpy. A failed variant is not timed.
Timings: CUDA events, median of 9 × 10 pipelined calls, two rounds (noise), default timed first
and last in each round (drift).

``python3 benchmarks/bench_gemm_cuda_s6k.py --json $OUT/gemm_cuda_s6k_h200_s6.json``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_gemm_cuda_s4b import float_operands  # noqa: E402
from bench_gemm_cuda_s5c import nozero_operands  # noqa: E402
from bench_gemm_sweep import Timer, baselines, precompile  # noqa: E402
from reference import ref_matmul  # noqa: E402

from pytropical_gpu.backends.base import ceil_div  # noqa: E402
from pytropical_gpu.backends.cuda import gemm_launch, gemm_units, kernels  # noqa: E402

SHAPES = [(67, 97, 83), (130, 132, 260), (200, 1000, 130), (256, 2048, 384), (9, 33, 130),
          (64, 1024, 128), (333, 517, 700)]  # (m, k, n)
TIMED = [(2048, 2048, 2048), (1536, 1536, 1536), (3072, 3072, 3072)]
#: run 2 (--run 2): the same and the shapes a shape rule would have to cover
TIMED2 = TIMED + [(4096, 4096, 4096), (1024, 1024, 1024), (1536, 2048, 2048), (2048, 8192, 2048),
                  (8192, 8192, 8192)]
BM, BN, BK = kernels.TILES["big3"][:3]
FUNCTORS = {"min_plus": "ptg::MinPlus<float>", "max_plus": "ptg::MaxPlus<float>"}


def units_spec(name):
    return kernels.ModuleSpec(
        f"s6units:{name}", "semiring_gemm.cu",
        {"units": f"ptg::sr_gemm_units<{FUNCTORS[name]}, 64, 128, 8, 8, 8, 3>"},
        extra=(ROOT / "benchmarks" / "gemm_units_s6.cu").read_text())


def layouts(T, slots, run=1):
    """name -> (W whole tiles, U split units, dyn, blocks, kernel version) for T output tiles."""
    w = (T // slots) * slots
    tail = T - w
    if run == 2:
        sk_all = slots * (T // slots + 2)
        lay = {"v1 grid whole": (T, 0, 0, T, 1), "v1 grid tail-sk": (w, slots, 0, w + slots, 1),
               "v2 grid whole": (T, 0, 0, T, 2), "v2 grid tail-sk": (w, slots, 0, w + slots, 2),
               "v2 grid tail-sk2": (w, 2 * slots, 0, w + 2 * slots, 2),
               "v2 grid sk-all": (0, sk_all, 0, sk_all, 2), "v2 dyn tail-sk": (w, slots, 1, slots, 2)}
        out = {}
        for k, v in lay.items():
            if (v[0] < T or "whole" in k) and v not in out.values():
                out[k] = v
        return out
    lay = {"grid whole": (T, 0, 0, T), "grid split3": (0, 3 * T, 0, 3 * T),
           "grid tail3": (w, 3 * tail, 0, w + 3 * tail), "grid tail-sk": (w, slots, 0, w + slots),
           "grid sk-all": (0, slots * (T // slots + 2), 0, slots * (T // slots + 2)),
           "dyn whole": (T, 0, 1, slots), "dyn split3": (0, 3 * T, 1, slots),
           "dyn tail3": (w, 3 * tail, 1, slots), "dyn tail-sk": (w, slots, 1, slots)}
    lay = {k: v + (1,) for k, v in lay.items()}
    seen, out = set(), {}
    for k, v in lay.items():
        if v[1] == 0 and v[0] < T or v in seen:
            continue
        seen.add(v)
        out[k] = v
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s6k.json")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--run", type=int, default=1, help="2: the register-lean kernel (units2), more shapes")
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg
    from pytropical_gpu.semirings import get_semiring

    be = tg.get_backend("cuda")
    timer = Timer(cp)
    out = {"device": be.describe(), "rows": [], "checks": [], "failed": []}
    rows, failed = out["rows"], set()
    log = print

    def save():
        out["failed"] = sorted(failed)
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))

    sp = {name: kernels.gemm_spec(get_semiring(name), np.dtype(np.float32)) for name in FUNCTORS}
    us = {name: units_spec(name) for name in FUNCTORS}
    t0 = time.perf_counter()
    out["compile"] = {"cpu_s": precompile(list(sp.values()) + list(us.values()) + list(gemm_units.SPECS),
                                          args.workers),
                      "wall_s": time.perf_counter() - t0}
    log(f"compiled {out['compile']}")
    sms = be._sm_count()
    slots = 3 * sms
    bufs = {}

    def default(name, a, b, c=None, ks=1):
        _, m, k = a.shape
        pl = gemm_launch.plan(m, b.shape[2], k, 1, 4, False, True, sms, sp[name].names, "big3")
        if ks > 1:
            pl = gemm_launch.Plan("tile", "big3", ks, ceil_div(ceil_div(k, ks), BK) * BK)
        return gemm_launch.run(be, sp[name], a, b, c, False, pl)[0], pl

    def units(name, a, b, c, lay):
        W, U, dyn, G, ver = lay
        _, m, k = a.shape
        n = b.shape[2]
        assert k > 0
        T = ceil_div(m, BM) * ceil_div(n, BN)
        ts = T - W
        U = min(U, ts * ceil_div(k, BK)) if ts else 0
        maxc = ceil_div(U, ts) + 1 if ts else 1
        key = (ts, maxc)
        if key not in bufs:
            bufs[key] = (cp.empty(max(1, ts * maxc * BM * BN), np.float32), cp.zeros(2 + ts, np.int32))
        ws, cnt = bufs[key]
        d = cp.empty((1, m, n), np.float32)
        vec = int(k % 4 == 0 and n % 4 == 0 and a.data.ptr % 16 == 0 and b.data.ptr % 16 == 0)
        args = (a, b, np.uint64(0) if c is None else c, d, ws, cnt, np.int64(m), np.int64(n), np.int64(k),
                np.int32(vec), np.int32(W), np.int32(U), np.int32(maxc), np.int32(dyn))
        if ver == 2:
            ki = ceil_div(k, BK)
            args += (np.int64(ki), np.int64(ceil_div(m, BM)), np.int64(ts * ki))
        fn = (kernels.function(us[name], "units") if ver == 1
              else kernels.function(gemm_units.spec(name), gemm_units.ROLE))  # run 2's units2
        fn((G if dyn else W + U,), (128,), args)
        return d, cnt

    rng = np.random.default_rng(1)
    baselines(cp, timer, rows, log, (1536, 2048, 3072), rng)

    # ------------------------------------------------------------------ checks
    crng = np.random.default_rng(2)
    t0 = time.perf_counter()
    for (m, k, n) in SHAPES:
        T = ceil_div(m, BM) * ceil_div(n, BN)
        lays = dict(layouts(T, slots, args.run))
        for ver in (1,) if args.run == 1 else (2,):
            vp = "" if ver == 1 else "v2 "
            lays.update({vp + "grid half+crossing": (T // 2, 7 * (T - T // 2) // 3 + 1, 0, 0, ver),
                         vp + "dyn5 third+crossing": (T // 3, 2 * (T - T // 3) + 1, 1, 5, ver),
                         vp + "dyn2 split3": (0, 3 * T, 1, 2, ver),
                         vp + "dyn1 sk": (0, 5 * T + 1, 1, 1, ver)})
        lays = {kk: (v[0], v[1], v[2], v[3] or v[0] + v[1], v[4]) for kk, v in lays.items()
                if v[0] < T or v[1] == 0}
        for name in FUNCTORS:
            for kind in ("mixed", "nozero"):
                for use_c in (False, True):
                    a, b = (float_operands(crng, name, m, k, n, "mixed") if kind == "mixed"
                            else nozero_operands(crng, name, m, k, n))
                    c = (float_operands(crng, name, m, 1, n, "mixed")[0][:, :1] * np.ones((1, n), np.float32)
                         if use_c else None)
                    want = ref_matmul(a, b, name, c)[0]
                    ga, gb = cp.asarray(a)[None], cp.asarray(b)[None]
                    gc = None if c is None else cp.asarray(c)[None]
                    base = default(name, ga, gb, gc)[0].get()[0]
                    res = {"default": (base, None)}
                    if args.run == 1:
                        res["split3+combine"] = (default(name, ga, gb, gc, ks=3)[0].get()[0], None)
                    for ln, lay in lays.items():
                        for rep in range(2):  # twice: the counters must be back at 0
                            d, cnt = units(name, ga, gb, gc, lay)
                            res[f"{ln}#{rep}"] = (d.get()[0], int(cp.count_nonzero(cnt)))
                    for vn, (d, nzc) in res.items():
                        ok = bool(np.array_equal(d, want)) and nzc in (None, 0)
                        bits = bool(np.array_equal(d.view(np.uint32), base.view(np.uint32)))
                        out["checks"].append({"case": name, "kind": kind, "shape": [m, k, n], "c": use_c,
                                              "variant": vn, "ok": ok, "bits_eq_default": bits,
                                              "counters_left": nzc})
                        if not (ok and bits):
                            vv = vn.split("#")[0]
                            log(f"CHECK FAILED {name} {kind} {m}x{k}x{n} c={use_c} {vn} ok={ok} bits={bits}")
                            failed.add(vv)
    log(f"small checks: {len(out['checks'])} in {time.perf_counter() - t0:.1f} s, failed {sorted(failed)}")
    save()
    big = {}
    for (m, k, n) in TIMED if args.run == 1 else TIMED2:
        a = cp.asarray(rng.standard_normal((1, m, k), dtype=np.float32))
        b = cp.asarray(rng.standard_normal((1, k, n), dtype=np.float32))
        big[(m, k, n)] = (a, b)
        T = ceil_div(m, BM) * ceil_div(n, BN)
        name = "min_plus"
        want = default(name, a, b)[0]
        ah, bh = a.get()[0], b.get()[0]
        rws = np.random.default_rng(3).choice(m, 8, replace=False)
        okn = all(np.array_equal(want.get()[0][r], np.min(ah[r][:, None] + bh, axis=0)) for r in rws)
        out["checks"].append({"case": name, "shape": [m, k, n], "variant": "default vs numpy rows",
                              "ok": okn})
        if not okn:
            failed.add("default")
        vs = {"split3+combine": lambda a=a, b=b, name=name: default(name, a, b, ks=3)[0]}
        if args.run == 2:
            vs = {}
        for ln, lay in layouts(T, slots, args.run).items():
            vs[ln] = lambda lay=lay, a=a, b=b, name=name: units(name, a, b, None, lay)[0]
        for vn, fn in vs.items():
            d = fn()
            ok = bool(cp.array_equal(d.view(cp.uint32), want.view(cp.uint32)))
            dh = d.get()[0]
            ok = ok and all(np.array_equal(dh[r], np.min(ah[r][:, None] + bh, axis=0)) for r in rws)
            out["checks"].append({"case": name, "shape": [m, k, n], "variant": vn, "ok": ok})
            if not ok:
                log(f"CHECK FAILED {name} {m}x{k}x{n} {vn}")
                failed.add(vn)
    log(f"checks: {len(out['checks'])} in {time.perf_counter() - t0:.1f} s, failed: {sorted(failed)}")
    save()

    # ------------------------------------------------------------------ timings
    def record(op, size, t, flops, **kw):
        r = {"op": op, "size": size, "s": t, "TOPS": flops / t / 1e12, **kw}
        rows.append(r)
        save()
        log(f"{op:28s} {size:16s} {t * 1e3:9.4f} ms {r['TOPS']:6.2f} TOPS {kw or ''}")

    name = "min_plus"
    for rnd in (1, 2):
        for (m, k, n), (a, b) in big.items():
            size, fl = f"{m}x{k}x{n}", 2 * m * n * k
            T = ceil_div(m, BM) * ceil_div(n, BN)
            vs = {"default": lambda a=a, b=b: default(name, a, b)}
            if "split3+combine" not in failed and args.run == 1:
                vs["split3+combine"] = lambda a=a, b=b: default(name, a, b, ks=3)
            for ln, lay in layouts(T, slots, args.run).items():
                if ln not in failed:
                    vs[ln] = lambda lay=lay, a=a, b=b: units(name, a, b, None, lay)
            vs["default (end)"] = vs["default"]
            for vn, fn in vs.items():
                t = timer(fn, 5, inner=1) if m * n * k > 2**36 else timer(fn, 9, inner=10)
                lay = layouts(T, slots, args.run).get(vn)
                record(vn, size, t, fl, round=rnd, layout=lay)
    save()
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
