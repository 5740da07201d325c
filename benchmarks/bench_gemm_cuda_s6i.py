"""Issue 14, CUDA GEMM (sixth session, int32 helper): int32 max_plus / min_plus, every variant in one
device run.

(1) The "dpxw_" tiles (``PlusDpx<MAX, true>``: DPX max(a + b, acc) with identity maps, exact when
    neither operand holds the zero and every |x| < 2^30) on |x| in [2^28, 2^30) without the zero,
    against the guarded ``big`` tile those inputs ran before (its DPX slab body, "clean slabs") and
    the sentinel DPX tile (``dpx_big3``, |x| < 2^28: the rate the row is held to); ``dpxw_big3`` also
    on the DPX data (which of the two is faster where both are exact).
(2) The guarded tile with what it still sees (the zero in every slab; |x| >= 2^30 in every slab):
    ``big`` (128x128x8 2/SM, spills) against 64x128x8 3/SM (no spill).
(3) argmax (max_plus, |x| in [2^28, 2^30), no zero): ``dpxw_small_arg`` against the guarded
    ``small_arg`` (HOT loop) and the same 64x64x16 2/SM tile without argmax.
(4) ``tg.matmul`` on cupy operands (the range pass included) for the DPX and the new inputs.
Checks first, bit for bit against the int64 reference of tests/test_cuda_dpxw.py (odd shapes, split
k 2 / 3, ``c`` holding the zero, ±(2^30 - 1), ties; the guarded tiles also with the zero, with
|x| >= 2^30 and saturating sums): a failed variant is not timed. Timings: CUDA events, median, beside
a device copy and cuBLAS SGEMM.

``python3 benchmarks/bench_gemm_cuda_s6i.py --json $OUT/x.json``
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from _gemm_run import check_run, run_record, split_plan  # noqa: E402
from bench_gemm_cuda_s2 import int_operands  # noqa: E402
from bench_gemm_sweep import _compile, baselines  # noqa: E402
from ref_int_plus import ref_plus, wide_operands  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch, kernels  # noqa: E402

ARG_T, T3 = (64, 64, 16, 4, 4, 2), (64, 128, 8, 8, 8, 3)
I32 = np.iinfo(np.int32)
NAMES = ("max_plus", "min_plus")
W = 2**30


def zero_of(name):
    return int(I32.min if name == "max_plus" else I32.max)


def rname(cfg, arg):
    return "s6i_" + "_".join(map(str, cfg)) + ("_arg" if arg else "")


#: (label, name) -> (functor, check kinds, [(cfg, arg)]): tiles outside the library's roles
EXTRA = {}
for _n, _f in (("max_plus", "Max"), ("min_plus", "Min")):
    EXTRA[("guarded", _n)] = (f"ptg::{_f}Plus<int>", ("wide", "zeroed", "wild", "sat"), [(T3, False)])
    EXTRA[("dpxw", _n)] = (f"ptg::{_f}PlusDpxW", ("wide", "ties", "dpx_nz"), [(ARG_T, False)])
#: library roles checked: (name, role) -> kinds
LIB = {}
for _n in NAMES:
    LIB[(_n, "dpx_big3")] = ("dpx", "dpx_nz")
    for _r in ("dpxw_big3", "dpxw_small", "dpxw_small_arg"):
        LIB[(_n, _r)] = ("wide", "ties", "dpx_nz")
    LIB[(_n, "big")] = ("wide", "zeroed", "wild", "sat")
    LIB[(_n, "small_arg")] = ("wide", "zeroed", "wild", "sat")


def extra_specs():
    out = {}
    for (label, name), (functor, _, variants) in EXTRA.items():
        for cfg, arg in variants:
            bm, bn, bk, tm, tn, mb = cfg
            rl = rname(cfg, arg)
            kernels.TILES[rl] = cfg
            names = {rl: f"ptg::sr_gemm<{functor}, {bm}, {bn}, {bk}, {tm}, {tn}, {mb}, "
                         f"{'true' if arg else 'false'}>",
                     "combine": f"ptg::sr_combine<ptg::{name.split('_')[0].capitalize()}Plus<int>, false>",
                     "combine_arg": f"ptg::sr_combine<ptg::{name.split('_')[0].capitalize()}Plus<int>, true>"}
            out[(label, name, rl)] = kernels.ModuleSpec(f"s6i:{label}:{name}:{rl}", "semiring_gemm.cu", names)
    return out


def check_operands(rng, name, kind, m, k, n):
    """int32 operands of one kind: "wide" no zero, |x| < 2^30 (±(2^30 - 1) present); "ties" the
    same from five values; "dpx_nz" |x| < 2^28, no zero; "dpx" |x| < 2^28 and the zero; "zeroed"
    |x| < 2^30 and the zero in every slab; "wild" zeroed plus |x| >= 2^30 in some slabs; "sat" no
    zero, the other extreme in a row and ±2^30 (saturating sums)."""
    z = zero_of(name)
    if kind in ("wide", "ties"):
        return wide_operands(rng, m, k, n, ties=kind == "ties")
    if kind == "dpx_nz":
        return wide_operands(rng, m, k, n, lim=2**28 - 1)
    if kind in ("dpx", "zeroed", "wild"):
        return int_operands(rng, kind, (m, k), (k, n), z)
    a, b = wide_operands(rng, m, k, n)
    a[min(5, m - 1), :] = -z - (name == "max_plus")  # INT_MAX (max_plus) / INT_MIN + 1 (min_plus)
    b[:, 0] = W
    b[min(3, k - 1), :] = -W
    return a, b


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s6i.json")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    p.add_argument("--confirm", action="store_true", help="only the library's own choice (part 4)")
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg
    from pytropical_gpu.semirings import get_semiring

    be = tg.get_backend("cuda")
    timer, out, rows, failed, save = run_record(cp, be, args.json)
    log = print

    full = {name: kernels.gemm_spec(get_semiring(name), np.dtype(np.int32)) for name in NAMES}
    # the library's instantiations, one small module a role (compiled in parallel, the same names),
    # while the two whole modules (what tg.matmul and the tests load) compile beside the run
    lib = {name: {} for name in NAMES}
    for (name, role) in LIB:
        names = full[name].names
        lib[name][role] = kernels.ModuleSpec(f"s6i:lib:{name}:{role}", "semiring_gemm.cu", {
            role: names[role], "combine": names["combine"], "combine_arg": names["combine_arg"]})
    ext = extra_specs()
    if args.confirm:
        lib, ext = {name: {} for name in NAMES}, {}
    t0 = time.perf_counter()
    pool = ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn"))
    whole = [pool.submit(_compile, (s.code(), list(s.names.values()))) for s in full.values()]
    small = [s for d in lib.values() for s in d.values()] + list(ext.values())
    cpu_s = sum(pool.map(_compile, [(s.code(), list(s.names.values())) for s in small]))
    out["compile"] = {"wall_s": time.perf_counter() - t0, "cpu_s": cpu_s}
    log(f"compiled {out['compile']}")

    def run_tile(spec, role, a, b, c, arg, ks, k):
        """role: a library role ("dpxw_big3", "big", ...) or an extra spec's own."""
        pre = next((x for x in ("dpxw_", "dpx_") if role.startswith(x)), "")
        return gemm_launch.run(be, spec, a, b, c, arg, split_plan(role[len(pre):], k, ks), prefix=pre)

    # ------------------------------------------------------------------ checks
    crng = np.random.default_rng(6)
    shapes = [(67, 97, 83, 1), (130, 132, 260, 1), (70, 600, 36, 3), (256, 72, 256, 1), (9, 33, 130, 1),
              (64, 1024, 128, 2), (200, 1000, 130, 1), (5, 70, 3, 1)]
    cache = {}

    def inputs(name, kind, m, k, n, use_c):
        key = (name, kind, m, k, n, use_c)
        if key not in cache:
            a, b = check_operands(crng, name, kind, m, k, n)
            c = None
            if use_c:
                c = crng.integers(-(2**31) + 1, 2**31 - 1, (m, n), dtype=np.int64).astype(np.int32)
                c[0, :] = zero_of(name)
            cache[key] = (a, b, c, *ref_plus(a, b, name, c))
        return cache[key]

    todo = [(name, role, lib[name][role], kinds, role.endswith("_arg"))
            for (name, role), kinds in LIB.items() if not args.confirm]
    todo += [(name, rl, spec, EXTRA[(label, name)][1], rl.endswith("_arg"))
             for (label, name, rl), spec in ext.items()]
    t0 = time.perf_counter()
    for name, role, spec, kinds, arg in todo:
        for kind in kinds:
            for (m, k, n, ks) in shapes:
                for use_c in (False, True):
                    a, b, c, want, widx = inputs(name, kind, m, k, n, use_c)
                    d, idx = run_tile(spec, role, cp.asarray(a)[None], cp.asarray(b)[None],
                                      None if c is None else cp.asarray(c)[None], arg, ks, k)
                    check_run(out, failed, log, {"name": name, "role": role, "kind": kind,
                                                 "shape": [m, k, n], "ks": ks, "c": use_c},
                              d, idx, want, widx if arg else None)
    log(f"checks: {len(out['checks'])} runs in {time.perf_counter() - t0:.1f} s, failed: {sorted(failed)}")
    save()

    # ------------------------------------------------------------------ timings
    S = 2048 if args.quick else 8192
    rng = np.random.default_rng(1)
    baselines(cp, timer, rows, log, (S,), rng)
    tcache = {}

    def timing_operands(name, kind):
        """On the device: "dpx" |x| < 2^28 no zero ("dpx_zero": and a few zeros); "wide" |x| < 2^30
        no zero (3/4 of the values beyond 2^28); "zeroed" wide with the zero in every 7th k column
        of A (every 8-wide slab) and sprinkled; "wild" no zero, the full int32 range but the zero
        (every slab guarded)."""
        key = (name, kind)
        if key not in tcache:
            tcache.clear()
            z = zero_of(name)
            small = (-(2**28) + 1, 2**28)
            lo, hi = {"dpx": small, "dpx_zero": small, "wild": (I32.min + 1, I32.max)}.get(kind, (-W + 1, W))
            a = cp.random.randint(lo, hi, (1, S, S), dtype=cp.int32)
            b = cp.random.randint(lo, hi, (1, S, S), dtype=cp.int32)
            if kind == "dpx_zero":  # |x| < 2^28 and the zero in a few places: the sentinel DPX
                a[0, 1::977, 3::1013] = z
            if kind == "zeroed":
                a[..., ::7] = z
                a[cp.random.random(a.shape) < 0.05] = z
                b[cp.random.random(b.shape) < 0.08] = z
            tcache[key] = a, b
        return tcache[key]

    def record(op, cfg, t, extra=None):
        r = {"op": op, "config": cfg, "size": f"{S}^3", "s": t, "TOPS": 2 * S**3 / t / 1e12, **(extra or {})}
        rows.append(r)
        save()
        log(f"{op:44s} {str(cfg):26s} {t * 1e3:9.3f} ms {r['TOPS']:6.2f} TOPS")
        return r

    def time_tile(name, role, spec, kind, arg=False, cfg=None):
        if (name, role) in failed:
            return None
        a, b = timing_operands(name, kind)
        t = timer(lambda: run_tile(spec, role, a, b, None, arg, 1, S), 5)
        return record(f"{name} {role} {kind}", cfg or kernels.tile_of(role), t)

    for name in () if args.confirm else NAMES:
        L = {r: lib[name][r] for r in lib[name]}
        g3 = ext[("guarded", name, rname(T3, False))]
        time_tile(name, "dpx_big3", L["dpx_big3"], "dpx")            # the DPX rate (row target: 85 % of it)
        time_tile(name, "dpxw_big3", L["dpxw_big3"], "wide")          # (1) the new variant on its inputs
        time_tile(name, "big", L["big"], "wide")                # (1) what those inputs ran before
        time_tile(name, "dpxw_big3", L["dpxw_big3"], "dpx")           # dpxw on the DPX data
        time_tile(name, "big", L["big"], "zeroed")              # (2) the guarded tile's inputs now
        time_tile(name, rname(T3, False), g3, "zeroed")
        time_tile(name, "big", L["big"], "wild")
        time_tile(name, rname(T3, False), g3, "wild")
        if name == "max_plus":
            time_tile(name, rname(T3, False), g3, "wide")  # the -4 % of session 5, again
            # (3) argmax
            time_tile(name, "small_arg", L["small_arg"], "wide", arg=True)
            time_tile(name, "dpxw_small_arg", L["dpxw_small_arg"], "wide", arg=True)
            time_tile(name, rname(ARG_T, False), ext[("dpxw", name, rname(ARG_T, False))], "wide")
    # (4) the library's own choice, range pass included (the whole modules: wait for them)
    t0 = time.perf_counter()
    out["compile"]["whole_s"] = [f.result() for f in whole]
    out["compile"]["whole_wait_s"] = time.perf_counter() - t0
    pool.shutdown()
    log(f"whole modules {out['compile']}")
    kinds = ("dpx", "dpx_zero", "wide", "wide_arg", "zeroed") if args.confirm else ("dpx", "wide")
    for name in NAMES:
        for kind in kinds:
            arg = kind.endswith("_arg")
            a, b = timing_operands(name, kind.removesuffix("_arg"))
            seen = []
            real = kernels.function

            def spy(spec, role, _real=real, _seen=seen):
                _seen.append(role)
                return _real(spec, role)

            kernels.function = spy
            try:
                d = tg.matmul(a[0], b[0], name, return_argmax=arg)
            finally:
                kernels.function = real
            d, idx = d if arg else (d, None)
            rows_s = np.r_[0:2, S - 2:S]
            ah, bh = a[0, rows_s].get(), b[0].get()
            want, widx = ref_plus(ah, bh, name)
            ok = bool(np.array_equal(d[rows_s].get(), want)) and (
                not arg or bool(np.array_equal(idx[rows_s].get(), widx)))
            out["checks"].append({"name": name, "role": "tg.matmul", "kind": kind, "ok": ok, "roles": seen})
            if not ok:
                failed.add((name, "tg.matmul " + kind))
                log(f"CHECK FAILED tg.matmul {name} {kind}")
                continue
            t = timer(lambda a=a, b=b, name=name, arg=arg: tg.matmul(a[0], b[0], name, return_argmax=arg), 5)
            record(f"{name} tg.matmul {kind}", "+".join(dict.fromkeys(seen)), t)
    if not args.confirm:
        time_tile("max_plus", "dpx_big3", lib["max_plus"]["dpx_big3"], "dpx")  # drift: the first row again
    save()
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
