"""Issue 14, CUDA GEMM rows still open (fourth session): every variant in one device run, the new
``cuda/semiring_gemm.cu`` against the committed one (``--baseline``, compiled and timed in the
same run).

(a) argmax, every selective semiring: the 64x64x16 tile with argmax chunks of AK = 16, 32, 64
    terms, beside the same tile without argmax and the old source. (b) max_min / min_max: tile and
    occupancy choices beside min_plus. (c) min_plus 2048³: 2048 x k x 2048 for k = 512 .. 8192
    (slope: the loop rate; intercept: a call's fixed cost), a 264-tile shape, the 3 blocks/SM tile.
Checks first (bit for bit against tests/reference.py: odd shapes, split k, ``c``, ±inf, ties,
chunks of NaN products, int32 extremes and the zero in every slab); a failed variant is not timed.
Timings: CUDA events, median, beside a device copy and cuBLAS SGEMM in the same run.

``git show REV:cuda/semiring_gemm.cu > OLD.cu``, then
``python3 benchmarks/bench_gemm_cuda_s4.py --baseline OLD.cu --json $OUT/x.json``
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
from bench_gemm_cuda_s2 import TextSpec, int_operands  # noqa: E402
from bench_gemm_sweep import baselines  # noqa: E402
from reference import ref_matmul  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch, kernels  # noqa: E402

ARG_T = (64, 64, 16, 4, 4, 2)
BIG, BIG1, BIG16, T3, T3T, WIDE = ((128, 128, 8, 8, 8, 2), (128, 128, 8, 8, 8, 1), (128, 128, 16, 8, 8, 1),
                                   (64, 128, 8, 8, 8, 3), (128, 64, 8, 8, 8, 3), (128, 256, 16, 8, 16, 1))
I32 = np.iinfo(np.int32)
#: label -> (semiring name, dtype, functor, plain functor for combine, [(cfg, arg, AK)])
CASES = {
    "min_plus f32": ("min_plus", "float32", "ptg::MinPlus<float>", None,
                     [(ARG_T, True, a) for a in (16, 32, 64)] + [(ARG_T, False, 0), (BIG, False, 0),
                                                                 (T3, False, 0), (WIDE, False, 0)]),
    "max_plus f32": ("max_plus", "float32", "ptg::MaxPlus<float>", None, [(ARG_T, True, 32)]),
    "max_times f32": ("max_times", "float32", "ptg::MaxTimes<float>", None,
                      [(ARG_T, True, a) for a in (16, 32)] + [(ARG_T, False, 0)]),
    "max_min f32": ("max_min", "float32", "ptg::MaxMin<float>", None,
                    [(ARG_T, True, a) for a in (16, 32)] + [(ARG_T, False, 0)]),
    "min_max f32": ("min_max", "float32", "ptg::MinMax<float>", None, [(ARG_T, True, 32)]),
    "max_min f32 key": ("max_min", "float32", "ptg::KeyMinMax<true>", "ptg::MaxMin<float>",
                        [(c, False, 0) for c in (BIG, BIG1, BIG16, T3, T3T, WIDE)]),
    "min_max f32 key": ("min_max", "float32", "ptg::KeyMinMax<false>", "ptg::MinMax<float>",
                        [(c, False, 0) for c in (BIG, BIG1, T3)]),
    "max_min i32": ("max_min", "int32", "ptg::MaxMin<int>", None,
                    [(ARG_T, True, a) for a in (16, 32)] + [(c, False, 0) for c in (ARG_T, BIG, BIG1, T3)]),
    "max_plus i32": ("max_plus", "int32", "ptg::MaxPlus<int>", None,
                     [(ARG_T, True, a) for a in (16, 32)] + [(ARG_T, False, 0)]),
}
ARG_T1, T3K16, T3T_ = (64, 64, 16, 4, 4, 1), (64, 128, 16, 8, 8, 3), (128, 64, 8, 8, 8, 3)
#: ``--second``: min_plus tiles around 64x128x8 3/SM; the argmax tile at 1 block/SM (two slab bodies)
CASES2 = {
    "min_plus f32": ("min_plus", "float32", "ptg::MinPlus<float>", None,
                     [(T3, False, 0), (T3K16, False, 0), (T3T_, False, 0), (ARG_T, True, 16),
                      (ARG_T, False, 0)]),
    "max_times f32": ("max_times", "float32", "ptg::MaxTimes<float>", None,
                      [(ARG_T, True, 16), (ARG_T1, True, 16), (ARG_T, False, 0)]),
    "max_plus i32": ("max_plus", "int32", "ptg::MaxPlus<int>", None,
                     [(ARG_T, True, 16), (ARG_T1, True, 16), (ARG_T, False, 0)]),
}


def rname(cfg, arg, ak):
    return "s4_" + "_".join(map(str, cfg)) + (f"_arg{ak}" if arg else "")


def expr(functor, cfg, arg, ak, old):
    bm, bn, bk, tm, tn, mb = cfg
    tail = "" if old or not arg else f", {ak}"
    return f"ptg::sr_gemm<{functor}, {bm}, {bn}, {bk}, {tm}, {tn}, {mb}, {'true' if arg else 'false'}{tail}>"


def specs_for(tag, text):
    """One module per case; the old source has no AK parameter (its chunk is one slab): only the
    AK = 16 argmax role and the plain roles exist there."""
    old = tag == "old"
    out = {}
    for label, (_, _, functor, plain, variants) in CASES.items():
        names = {}
        for cfg, arg, ak in variants:
            if old and arg and ak != 16:
                continue
            names[rname(cfg, arg, ak)] = expr(functor, cfg, arg, ak, old)
            kernels.TILES[rname(cfg, arg, ak)] = cfg
        names["combine"] = f"ptg::sr_combine<{plain or functor}, false>"
        names["combine_arg"] = f"ptg::sr_combine<{plain or functor}, true>"
        out[label] = TextSpec(f"s4:{tag}:{label}", "semiring_gemm.cu", names, "", text)
    return out


def float_operands(rng, name, m, k, n):
    """Quarter-integer floats (ties everywhere), ±inf in 10 % of places, 0.0 / -0.0; for min_plus
    / max_plus a row and a column whose first 40 k meet as inf + -inf (a chunk of NaN products)."""
    a = (rng.integers(-20, 20, (m, k)) / 4).astype(np.float32)
    b = (rng.integers(-20, 20, (k, n)) / 4).astype(np.float32)
    for x in (a, b):
        x.flat[rng.integers(0, x.size, x.size // 10)] = np.inf
        x.flat[rng.integers(0, x.size, x.size // 10)] = -np.inf
        x.flat[rng.integers(0, x.size, x.size // 20)] = -0.0
    if "plus" in name and m > 3 and n > 3:
        kk = min(40, k)
        a[3, :kk], b[:kk, 2] = np.inf, -np.inf
        a[2, :kk], b[:kk, 3] = -np.inf, np.inf
    if "times" in name and m > 3 and n > 3:  # 0 * inf products
        kk = min(40, k)
        a[3, :kk], b[:kk, 2] = 0.0, np.inf
    return a, b


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s4.json")
    p.add_argument("--baseline", required=True, help="the committed cuda/semiring_gemm.cu")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    p.add_argument("--second", action="store_true", help="the second run's variants (CASES2)")
    args = p.parse_args(argv)
    global CASES
    CASES = CASES2 if args.second else CASES
    import cupy as cp

    import pytropical_gpu as tg

    be = tg.get_backend("cuda")
    timer, out, rows, failed, save = run_record(cp, be, args.json)
    log = print  # PYTHONUNBUFFERED=1 on the device

    specs = {"new": specs_for("new", (ROOT / "cuda" / "semiring_gemm.cu").read_text()),
             "old": specs_for("old", Path(args.baseline).read_text())}
    compile_all(out, [s for d in specs.values() for s in d.values()], args.workers, log)

    # ------------------------------------------------------------------ baselines
    S = 2048 if args.quick else 8192
    rng = np.random.default_rng(1)
    baselines(cp, timer, rows, log, (2048, S), rng)

    def run_tile(spec, rl, a, b, c, arg, ks, k):
        return gemm_launch.run(be, spec, a, b, c, arg, split_plan(rl, k, ks))

    # ------------------------------------------------------------------ checks (new source)
    crng = np.random.default_rng(2)
    shapes = [(67, 97, 83, 1), (130, 132, 260, 1), (70, 600, 36, 3), (256, 72, 256, 1),
              (128, 264, 256, 2), (9, 33, 130, 1)]
    cache = {}

    def inputs(name, dt, kind, m, k, n, use_c):
        key = (name, dt.name, kind, m, k, n, use_c)
        if key not in cache:
            if dt == np.float32:
                a, b = float_operands(crng, name, m, k, n)
                c = (float_operands(crng, name, m, 1, n)[0][:, :1] * np.ones((1, n), np.float32)
                     if use_c else None)
            else:
                zero = I32.min if name.startswith("max") else I32.max
                a, b = int_operands(crng, kind, (m, k), (k, n), zero)
                if kind == "extremes":
                    a.flat[crng.integers(0, a.size, a.size // 10)] = I32.min
                    b.flat[crng.integers(0, b.size, b.size // 10)] = I32.max
                c = int_operands(crng, "zeroed", (m, n), (1, 1), zero)[0] if use_c else None
            cache[key] = (a, b, c, *ref_matmul(a, b, name, c))
        return cache[key]

    t0 = time.perf_counter()
    for label, (name, dts, _, _, variants) in CASES.items():
        dt = np.dtype(dts)
        kinds = ["mixed"] if dt == np.float32 else (["fast", "zeroed", "wild"] if "plus" in name
                                                     else ["mixed", "extremes"])
        for cfg, arg, ak in variants:
            rl = rname(cfg, arg, ak)
            for kind in kinds:
                if kind == "mixed" and dt == np.int32:
                    kind = "fast"
                for (m, k, n, ks) in shapes:
                    for use_c in ((False, True) if arg else (False,)):
                        a, b, c, want, widx = inputs(name, dt, kind, m, k, n, use_c)
                        d, idx = run_tile(specs["new"][label], rl, cp.asarray(a)[None], cp.asarray(b)[None],
                                          None if c is None else cp.asarray(c)[None], arg, ks, k)
                        ok = bool(np.array_equal(d.get()[0], want)) and (
                            not arg or bool(np.array_equal(idx.get()[0], widx)))
                        out["checks"].append({"case": label, "role": rl, "kind": kind, "shape": [m, k, n],
                                              "ks": ks, "c": use_c, "ok": ok})
                        if not ok:
                            log(f"CHECK FAILED {label} {rl} {kind} {m}x{k}x{n} ks={ks} c={use_c}")
                            failed.add((label, rl))
    log(f"checks: {len(out['checks'])} runs in {time.perf_counter() - t0:.1f} s, failed: {sorted(failed)}")

    # ------------------------------------------------------------------ timings
    tcache = {}

    def time_tile(tag, label, cfg, arg, ak, m, k, n, reps=None):
        rl = rname(cfg, arg, ak)
        spec = specs[tag][label]
        if (label, rl) in failed or rl not in spec.names:
            return None
        name, dt = CASES[label][0], np.dtype(CASES[label][1])
        key = (dt.name, name.endswith("plus") and dt == np.int32, m, k, n)
        if key not in tcache:
            if dt == np.int32:
                a = cp.random.randint(-(2**30) + 1, 2**30, (1, m, k), dtype=cp.int32)
                b = cp.random.randint(-(2**30) + 1, 2**30, (1, k, n), dtype=cp.int32)
            else:
                a = cp.asarray(rng.standard_normal((1, m, k), dtype=np.float32))
                b = cp.asarray(rng.standard_normal((1, k, n), dtype=np.float32))
            tcache[key] = a, b
        a, b = tcache[key]
        big = m * n * k >= 8192**3 // 4

        def call():
            return run_tile(spec, rl, a, b, None, arg, 1, k)

        t = timer(call, reps or (3 if big else 7), inner=1 if big else 10)
        r = {"op": label + (" argmax" if arg else ""), "src": tag, "config": cfg, "AK": ak if arg else None,
             "size": f"{m}x{k}x{n}", "s": t, "TOPS": 2 * m * n * k / t / 1e12}
        rows.append(r)
        save()
        log(f"{tag:3s} {r['op']:24s} {str(cfg):26s} AK={ak:2d} {r['size']:16s} {t * 1e3:9.3f} ms "
            f"{r['TOPS']:6.2f} TOPS")
        return r

    if args.second:
        for size in sorted({2048, S}):
            for cfg, arg, _ in CASES2["min_plus f32"][4]:
                if not arg and cfg != ARG_T:
                    time_tile("new", "min_plus f32", cfg, False, 0, size, size, size)
        for label in ("min_plus f32", "max_times f32", "max_plus i32"):
            for cfg, arg, ak in CASES2[label][4]:
                if cfg in (ARG_T, ARG_T1):
                    time_tile("new", label, cfg, arg, ak, S, S, S)
        save()
        return 1 if failed else 0
    # (c) min_plus first (the reference rate of the run)
    for tag in ("new", "old"):
        for cfg in (BIG, T3, WIDE):
            time_tile(tag, "min_plus f32", cfg, False, 0, S, S, S)
        time_tile(tag, "min_plus f32", BIG, False, 0, 2048, 2048, 2048)
    for cfg in (T3, WIDE):
        time_tile("new", "min_plus f32", cfg, False, 0, 2048, 2048, 2048)
    for k in (512, 1024, 4096, 8192):
        time_tile("new", "min_plus f32", BIG, False, 0, 2048, k, 2048)
    time_tile("new", "min_plus f32", BIG, False, 0, 1536, 2048, 2816)  # 12 x 22 = 264 tiles
    time_tile("new", "min_plus f32", BIG, False, 0, 1536, 8192, 2816)
    # (a) argmax, every selective semiring, against the same tile without argmax
    for label in CASES:
        for cfg, arg, ak in CASES[label][4]:
            if cfg == ARG_T:
                time_tile("new", label, cfg, arg, ak, S, S, S)
                if ak in (0, 16):
                    time_tile("old", label, cfg, arg, ak, S, S, S)
    # (b) max_min / min_max tiles
    for label in ("max_min f32 key", "min_max f32 key", "max_min i32"):
        for cfg, arg, _ak in CASES[label][4]:
            if not arg and cfg != ARG_T:
                time_tile("new", label, cfg, False, 0, S, S, S)
                if cfg == BIG:
                    time_tile("old", label, cfg, False, 0, S, S, S)
    time_tile("new", "max_min f32 key", BIG, False, 0, 2048, 2048, 2048)
    time_tile("new", "max_min f32 key", T3, False, 0, 2048, 2048, 2048)
    time_tile("new", "min_plus f32", BIG, False, 0, S, S, S)  # drift check: the first row again

    save()
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
