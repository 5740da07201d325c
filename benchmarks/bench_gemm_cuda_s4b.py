"""Issue 14, CUDA GEMM (fourth session, second helper): every variant in one device run.

(1) argmax of max_times f32 / min_times f32 / int32 max_plus: ``sr_gemm``'s HOT instantiation (the
    slabs run in a loop holding only the fast body while every slab is fast, then the rest in the
    loop holding every body) against HOT = false (main's code), beside the same tile without argmax
    and min_plus argmax; also the plain big tile of max_times and int32 max_plus.
(2) min_plus f32: the 8x8-a-thread tiles at 4 blocks/SM (64x128x8, 128x64x8; 16 warps an SM, a
    2048³ grid of 512 tiles fills 528 slots) against the default 64x128x8 at 3 blocks/SM (``big3``)
    and 128x128x8 at 2, at 8192³ and 2048³.
Checks first, bit for bit against tests/reference.py (odd shapes, split k, ``c``, ±inf, -0.0, NaN
products, ties; "late": the zero or wild int32 values only after the first slabs, so a block leaves
the fast-only loop in the middle of k); a failed variant is not timed. Timings: CUDA events, median,
beside a device copy and cuBLAS SGEMM in the same run.

``python3 benchmarks/bench_gemm_cuda_s4b.py --json $OUT/x.json``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from _gemm_run import compile_all, run_record, split_plan  # noqa: E402
from bench_gemm_cuda_s2 import int_operands  # noqa: E402
from bench_gemm_sweep import baselines  # noqa: E402
from reference import ref_matmul  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch, kernels  # noqa: E402

ARG_T, BIG = (64, 64, 16, 4, 4, 2), (128, 128, 8, 8, 8, 2)
T3, T4, T4T = (64, 128, 8, 8, 8, 3), (64, 128, 8, 8, 8, 4), (128, 64, 8, 8, 8, 4)
I32 = np.iinfo(np.int32)
#: label -> (semiring name, dtype, functor, [(cfg, arg, hot)])
CASES = {
    "max_times f32": ("max_times", "float32", "ptg::MaxTimes<float>",
                      [(c, a, h) for c, a in ((ARG_T, True), (ARG_T, False), (BIG, False)) for h in (0, 1)]),
    "min_times f32": ("min_times", "float32", "ptg::MinTimes<float>", [(ARG_T, True, h) for h in (0, 1)]),
    "max_plus i32": ("max_plus", "int32", "ptg::MaxPlus<int>",
                     [(c, a, h) for c, a in ((ARG_T, True), (ARG_T, False), (BIG, False)) for h in (0, 1)]),
    "min_plus f32": ("min_plus", "float32", "ptg::MinPlus<float>",
                     [(ARG_T, True, 0), (ARG_T, False, 0), (T3, False, 0), (T4, False, 0), (T4T, False, 0),
                      (BIG, False, 0)]),
    "max_plus f32": ("max_plus", "float32", "ptg::MaxPlus<float>", [(T3, False, 0), (T4, False, 0)]),
}


def rname(cfg, arg, hot):
    return "s4b_" + "_".join(map(str, cfg)) + ("_arg" if arg else "") + ("_hot" if hot else "")


def specs():
    """One module per (case, variant): NVRTC compiles them in parallel."""
    out = {}
    for label, (_, _, functor, variants) in CASES.items():
        for cfg, arg, hot in variants:
            bm, bn, bk, tm, tn, mb = cfg
            rl = rname(cfg, arg, hot)
            kernels.TILES[rl] = cfg
            names = {rl: f"ptg::sr_gemm<{functor}, {bm}, {bn}, {bk}, {tm}, {tn}, {mb}, "
                         f"{'true' if arg else 'false'}, 16, {'true' if hot else 'false'}>",
                     "combine": f"ptg::sr_combine<{functor}, false>",
                     "combine_arg": f"ptg::sr_combine<{functor}, true>"}
            out[(label, rl)] = kernels.ModuleSpec(f"s4b:{label}:{rl}", "semiring_gemm.cu", names)
    return out


def float_operands(rng, name, m, k, n, kind):
    """Quarter-integer floats (ties), -0.0. "mixed": ±inf in 10 % of places, NaN-product chunks.
    "late": the zero of ⊕ only at k >= k // 3 (the other infinity anywhere): the first slabs are
    fast, later ones need the guarded body."""
    a = (rng.integers(-20, 20, (m, k)) / 4).astype(np.float32)
    b = (rng.integers(-20, 20, (k, n)) / 4).astype(np.float32)
    zero = np.float32(-np.inf if name.startswith("max") else np.inf)
    for x in (a, b):
        x.flat[rng.integers(0, x.size, x.size // 20)] = -0.0
        x.flat[rng.integers(0, x.size, x.size // 10)] = -zero
    if kind == "mixed":
        for x in (a, b):
            x.flat[rng.integers(0, x.size, x.size // 10)] = zero
        if "plus" in name and m > 3 and n > 3:
            kk = min(40, k)
            a[3, :kk], b[:kk, 2] = np.inf, -np.inf
            a[2, :kk], b[:kk, 3] = -np.inf, np.inf
        if "times" in name and m > 3 and n > 3:  # 0 * inf products
            kk = min(40, k)
            a[3, :kk], b[:kk, 2] = 0.0, np.inf
    else:
        k0 = k // 3
        a[:, k0:][rng.random((m, k - k0)) < 0.1] = zero
        b[k0:][rng.random((k - k0, n)) < 0.1] = zero
        a[: min(4, m), k0:] = zero  # rows whose winner lies before k0
    return a, b


def int_late(rng, m, k, n):
    """int32 max_plus: fast operands (|x| < 2^30, no zero) before k // 3; after it the zero and a
    few wild values (the masked, then the guarded body)."""
    a, b = int_operands(rng, "fast", (m, k), (k, n), I32.min)
    k0 = k // 3
    a[:, k0:][rng.random((m, k - k0)) < 0.1] = I32.min
    b[k0:][rng.random((k - k0, n)) < 0.1] = I32.min
    if k - k0 > 20:
        a[4:6, k0 + 20] = I32.max - 1
        b[k0 + 20, : min(3, n)] = 2**30
    return a, b


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s4b.json")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg

    be = tg.get_backend("cuda")
    timer, out, rows, failed, save = run_record(cp, be, args.json)
    log = print

    sp = specs()
    compile_all(out, list(sp.values()), args.workers, log)

    S = 2048 if args.quick else 8192
    rng = np.random.default_rng(1)
    baselines(cp, timer, rows, log, (2048, S), rng)

    def run_tile(spec, rl, a, b, c, arg, ks, k):
        return gemm_launch.run(be, spec, a, b, c, arg, split_plan(rl, k, ks))

    # ------------------------------------------------------------------ checks
    crng = np.random.default_rng(2)
    shapes = [(67, 97, 83, 1), (130, 132, 260, 1), (70, 600, 36, 3), (256, 72, 256, 1), (9, 33, 130, 1),
              (64, 1024, 128, 2)]
    cache = {}

    def inputs(name, dt, kind, m, k, n, use_c):
        key = (name, dt.name, kind, m, k, n, use_c)
        if key not in cache:
            if dt == np.float32:
                a, b = float_operands(crng, name, m, k, n, kind)
                c = (float_operands(crng, name, m, 1, n, "mixed")[0][:, :1] * np.ones((1, n), np.float32)
                     if use_c else None)
            else:
                a, b = (int_late(crng, m, k, n) if kind == "late"
                        else int_operands(crng, kind, (m, k), (k, n), I32.min))
                c = int_operands(crng, "zeroed", (m, n), (1, 1), I32.min)[0] if use_c else None
            cache[key] = (a, b, c, *ref_matmul(a, b, name, c))
        return cache[key]

    t0 = time.perf_counter()
    for (label, rl), spec in sp.items():
        name, dts, _, _ = CASES[label]
        dt = np.dtype(dts)
        arg = "_arg" in rl
        kinds = ["mixed", "late"] if dt == np.float32 else ["fast", "zeroed", "wild", "late"]
        for kind in kinds:
            for (m, k, n, ks) in shapes:
                for use_c in ((False, True) if arg else (False,)):
                    a, b, c, want, widx = inputs(name, dt, kind, m, k, n, use_c)
                    d, idx = run_tile(spec, rl, cp.asarray(a)[None], cp.asarray(b)[None],
                                      None if c is None else cp.asarray(c)[None], arg, ks, k)
                    ok = bool(np.array_equal(d.get()[0], want)) and (
                        not arg or bool(np.array_equal(idx.get()[0], widx)))
                    out["checks"].append({"case": label, "role": rl, "kind": kind, "shape": [m, k, n],
                                          "ks": ks, "c": use_c, "ok": ok})
                    if not ok:
                        log(f"CHECK FAILED {label} {rl} {kind} {m}x{k}x{n} ks={ks} c={use_c}")
                        failed.add((label, rl))
    log(f"checks: {len(out['checks'])} runs in {time.perf_counter() - t0:.1f} s, failed: {sorted(failed)}")
    save()

    # ------------------------------------------------------------------ timings
    tcache = {}

    def time_tile(label, cfg, arg, hot, m, k, n):
        rl = rname(cfg, arg, hot)
        if (label, rl) in failed:
            return None
        dt = np.dtype(CASES[label][1])
        key = (dt.name, m, k, n)
        if key not in tcache:
            tcache.clear()
            if dt == np.int32:  # |x| < 2^30: every slab fast (the int32 "any input" row's operands)
                a = cp.random.randint(-(2**30) + 1, 2**30, (1, m, k), dtype=cp.int32)
                b = cp.random.randint(-(2**30) + 1, 2**30, (1, k, n), dtype=cp.int32)
            else:
                a = cp.asarray(rng.standard_normal((1, m, k), dtype=np.float32))
                b = cp.asarray(rng.standard_normal((1, k, n), dtype=np.float32))
            tcache[key] = a, b
        a, b = tcache[key]
        big = m * n * k >= 8192**3 // 4
        t = timer(lambda: run_tile(sp[(label, rl)], rl, a, b, None, arg, 1, k), 5 if big else 9,
                  inner=1 if big else 10)
        r = {"op": label + (" argmax" if arg else ""), "config": cfg, "hot": hot, "size": f"{m}x{k}x{n}",
             "s": t, "TOPS": 2 * m * n * k / t / 1e12}
        rows.append(r)
        save()
        log(f"{r['op']:22s} {str(cfg):24s} hot={hot} {r['size']:16s} {t * 1e3:9.3f} ms {r['TOPS']:6.2f} TOPS")
        return r

    for size in sorted({2048, S}, reverse=True):  # (2) min_plus tiles (the run's reference rate)
        for cfg in (T3, T4, T4T, BIG):
            time_tile("min_plus f32", cfg, False, 0, size, size, size)
    for cfg in (T3, T4):
        time_tile("max_plus f32", cfg, False, 0, S, S, S)
    for label in ("min_plus f32", "max_times f32", "min_times f32", "max_plus i32"):  # (1)
        for cfg, arg, hot in CASES[label][3]:
            if cfg == ARG_T or (cfg == BIG and label != "min_plus f32"):
                time_tile(label, cfg, arg, hot, S, S, S)
    time_tile("min_plus f32", T3, False, 0, S, S, S)  # drift check: the first row again
    save()
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
