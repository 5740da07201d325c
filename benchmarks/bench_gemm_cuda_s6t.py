"""Issue 14, CUDA GEMM (sixth session, s6targ): float32 min_times / max_times with the zero present.

The guarded functor now maps the zero to NaN as it enters shared memory (``TropTimes::load_map``,
"ZN"): every slab runs the plain product, with no per-slab test and no ``__syncthreads_and`` vote.
Compared in one run, on the same operands: ``old`` (the functor before: per-slab test + block vote,
the HOT argmax loop; rebuilt here as ``OldTimesF``), ``zn`` (the library's functor now), ``nz`` (no
map at all; exact only without the zero: timed on those operands only), and ``prepass`` (the zero
mapped to NaN by a CuPy pass over A and B, then the NZ kernel: the pre-pass design, its pass
timed with it). Tiles: the argmax tile 64x64x16 (``_arg``), the same tile without argmax (the
target's baseline), ``big3`` (the plain default now) and the old plain default ``big``. Operands
(standard normal): (0) no zero, (i) one zero in A, (ii) the zero in whole k columns of A at three
k (a few slabs, every block), (iii) the zero in every 8-wide slab of every 64-row block.
Checks first, bit for bit against tests/reference.py (odd shapes, split k 2 and 3, ``c``, the zero
in the first / last partial / a middle / every slab, ±0, the other infinity, subnormals, 0 x inf
chunks, ties), then the library path (``tg.matmul``: skinny, wide, tiles, split k, batch, float64),
then old == zn bit for bit on the timed 4096³ outputs; a failed variant is not timed. Timings: CUDA
events, median, beside a device copy and cuBLAS SGEMM.

``python3 benchmarks/bench_gemm_cuda_s6t.py --json $OUT/gemm_cuda_s6t_h200_s6.json``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from _gemm_run import compile_all, run_record, split_plan, tile_name, tile_specs  # noqa: E402
from bench_gemm_cuda_s4b import float_operands  # noqa: E402
from bench_gemm_sweep import baselines  # noqa: E402
from reference import ref_matmul  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))  # tests/conftest.py, not the root one
sys.modules.pop("conftest", None)
from test_cuda_times_zn import PLACES, _operands, _place  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch, kernels  # noqa: E402

ARG_T, BIG, T3 = (64, 64, 16, 4, 4, 2), (128, 128, 8, 8, 8, 2), (64, 128, 8, 8, 8, 3)
#: the guarded float times before session 6: per-slab test (kSplit), block vote, HOT argmax loop
EXTRA = """
namespace ptg {
template <bool MAX> struct OldTimesF : TropTimes<float, MAX, true> {
  typedef TropTimes<float, MAX, true> P;
  static constexpr bool kSplit = true;
  __device__ __forceinline__ static float mul(float a, float b) { return gtimes(a, b, P::zero()); }
  __device__ __forceinline__ static float fma(float acc, float a, float b) { return P::add(acc, mul(a, b)); }
  __device__ __forceinline__ static float first(float a, float b) { return mul(a, b); }
};
}  // namespace ptg
"""
#: label -> (semiring, functor, exact with the zero, [(cfg, arg)])
CASES = {
    "max_times old": ("max_times", "ptg::OldTimesF<true>", True,
                      [(ARG_T, True), (ARG_T, False), (BIG, False)]),
    "max_times zn": ("max_times", "ptg::MaxTimes<float>", True,
                     [(ARG_T, True), (ARG_T, False), (T3, False), (BIG, False)]),
    "max_times nz": ("max_times", "ptg::MaxTimesNZ<float>", False,
                     [(ARG_T, True), (ARG_T, False), (T3, False)]),
    "min_times old": ("min_times", "ptg::OldTimesF<false>", True, [(ARG_T, True), (ARG_T, False)]),
    "min_times zn": ("min_times", "ptg::MinTimes<float>", True, [(ARG_T, True), (ARG_T, False), (T3, False)]),
    "min_times nz": ("min_times", "ptg::MinTimesNZ<float>", False, [(ARG_T, True), (ARG_T, False)]),
    "min_plus": ("min_plus", "ptg::MinPlus<float>", True, [(ARG_T, True), (ARG_T, False)]),
}
#: timing operands: (0) .. (iii)
TKINDS = ("none", "one", "few", "every")


def rname(cfg, arg):
    return tile_name("s6t", cfg, arg)


def specs():
    return tile_specs("s6t", CASES, EXTRA)


def check_inputs(crng, cache: dict, name: str, kind: str, m: int, k: int, n: int, use_c: bool):
    """(a, b, c, want, widx) of one checked case, made once per key in ``cache`` from ``crng``:
    "mixed" / "late" operands, or random ones with the zero placed as ``kind`` says ("nozero": none);
    ``c`` one random column broadcast (with ``use_c``); the reference's values and argmax. Shared by
    the s6t, s6t2 and s8t checks (the same draws in the same order as each script's loop before)."""
    key = (name, kind, m, k, n, use_c)
    if key not in cache:
        if kind in ("mixed", "late"):
            a, b = float_operands(crng, name, m, k, n, kind)
        else:
            a, b = _operands(crng, name, "float32", (m, k), (k, n))
            if kind != "nozero":
                _place(crng, name, a, b, kind, "both")
        c = None
        if use_c:
            c = float_operands(crng, name, m, 1, n, "mixed")[0][:, :1] * np.ones((1, n), np.float32)
        cache[key] = (a, b, c, *ref_matmul(a, b, name, c))
    return cache[key]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s6t.json")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    p.add_argument("--no8k", action="store_true", help="4096³ only")
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg
    from pytropical_gpu.semirings import get_semiring

    be = tg.get_backend("cuda")
    timer, out, rows, failed, save = run_record(cp, be, args.json)
    log = print

    sp = specs()
    lib = [kernels.gemm_spec(get_semiring(n), np.dtype(d)) for n in ("max_times", "min_times")
           for d in ("float32", "float64")]
    compile_all(out, list(sp.values()) + lib, args.workers, log)

    def run_tile(spec, rl, a, b, c, arg, ks, k):
        return gemm_launch.run(be, spec, a, b, c, arg, split_plan(rl, k, ks))

    S = 1024 if args.quick else 4096
    rng = np.random.default_rng(1)
    baselines(cp, timer, rows, log, (S,), rng)

    # ------------------------------------------------------------------ checks: kernels
    crng = np.random.default_rng(2)
    shapes = [(67, 97, 83, 1), (130, 132, 260, 1), (70, 600, 36, 3), (256, 72, 256, 1), (9, 33, 130, 1),
              (64, 1024, 128, 2), (200, 1000, 130, 1)]
    pshapes = [shapes[0], shapes[1], shapes[2], shapes[5]]  # the placed zero: first, last partial, ...
    cache = {}

    def inputs(name, kind, m, k, n, use_c):
        return check_inputs(crng, cache, name, kind, m, k, n, use_c)

    t0 = time.perf_counter()
    olds = {}
    for (label, rl), spec in sp.items():
        name, _, with_zero, _ = CASES[label]
        kinds = (("nozero", "mixed", "late") + tuple(PLACES)) if with_zero else ("nozero",)
        if name == "min_plus":
            kinds = ("nozero", "mixed")
        arg = rl.endswith("_arg")
        for kind in kinds:
            for (m, k, n, ks) in (shapes if kind in ("nozero", "mixed", "late") else pshapes):
                for use_c in ((False, True) if arg else (False,)):
                    a, b, c, want, widx = inputs(name, kind, m, k, n, use_c)
                    d, idx = run_tile(spec, rl, cp.asarray(a)[None], cp.asarray(b)[None],
                                      None if c is None else cp.asarray(c)[None], arg, ks, k)
                    dh = d.get()[0]
                    ok = bool(np.array_equal(dh, want))
                    ok = ok and (not arg or bool(np.array_equal(idx.get()[0], widx)))
                    key = (name, rl, kind, m, k, n, ks, use_c)
                    if label.endswith(" old"):
                        olds[key] = dh
                    elif key in olds:  # the same bits as the kernel before (±0 included)
                        ok = ok and bool(np.array_equal(dh.view(np.int32), olds[key].view(np.int32)))
                    out["checks"].append({"case": label, "role": rl, "kind": kind, "shape": [m, k, n],
                                          "ks": ks, "c": use_c, "ok": ok})
                    if not ok:
                        log(f"CHECK FAILED {label} {rl} {kind} {m}x{k}x{n} ks={ks} c={use_c}")
                        failed.add((label, rl))
    log(f"kernel checks: {len(out['checks'])} runs in {time.perf_counter() - t0:.1f} s, "
        f"failed: {sorted(failed)}")

    # ------------------------------------------------------------------ checks: the library path
    t0 = time.perf_counter()
    nlib = 0
    lshapes = [((5000, 40), (40, 8)), ((12, 50), (50, 2048)), ((3, 60), (60, 4096)), ((67, 97), (97, 83)),
               ((17, 1300), (1300, 9)), ((3, 40, 90), (1, 90, 70)), ((300, 200), (200, 260))]
    for name in ("max_times", "min_times"):
        for dt in ("float32", "float64"):
            for sa, sb in lshapes:
                for kind in ("nozero", "first", "last", "every"):
                    a, b = _operands(crng, name, dt, sa, sb)
                    if kind != "nozero":
                        _place(crng, name, a, b, kind, "both")
                    cc = (crng.integers(-20, 20, (sa[-2], sb[-1])) / 4).astype(dt)
                    for arg in (False, True):
                        for c in (None, cc):
                            got = tg.matmul(a, b, name, c=c, return_argmax=arg, backend="cuda")
                            want, widx = ref_matmul(a, b, name, c)
                            d, idx = got if arg else (got, None)
                            ok = bool(np.array_equal(d, want))
                            ok = ok and (not arg or bool(np.array_equal(idx, widx)))
                            nlib += 1
                            out["checks"].append({"case": f"tg.matmul {name} {dt}", "kind": kind,
                                                  "shape": [list(sa), list(sb)], "arg": arg,
                                                  "c": c is not None, "ok": ok})
                            if not ok:
                                log(f"CHECK FAILED tg.matmul {name} {dt} {kind} {sa}x{sb} arg={arg}")
                                failed.add((f"{name} zn", "library"))
    log(f"library checks: {nlib} in {time.perf_counter() - t0:.1f} s, failed: {sorted(failed)}")
    save()

    # ------------------------------------------------------------------ timings
    tcache = {}

    def operands(name, kind, s):
        key = (name, kind, s)
        if key not in tcache:
            tcache.clear()
            g = cp.random.RandomState(7)
            a = g.standard_normal((1, s, s), dtype=cp.float32)
            b = g.standard_normal((1, s, s), dtype=cp.float32)
            z = np.float32(-np.inf if name == "max_times" else np.inf)
            if kind == "one":
                a[0, s // 3, s // 2 + 5] = z
            elif kind == "few":
                for col in (100, s // 2, s - 7):
                    a[0, :, col] = z
            elif kind == "every":
                a[0, ::64, ::8] = z
            tcache[key] = (a, b)
        return tcache[key]

    def record(op, cfg, size, kind, t, flops):
        r = {"op": op, "config": cfg, "size": size, "operands": kind, "s": t, "TOPS": flops / t / 1e12}
        rows.append(r)
        save()
        log(f"{op:26s} {str(cfg):22s} {size:12s} {kind:6s} {t * 1e3:9.3f} ms {r['TOPS']:6.2f} TOPS")
        return r

    def time_tile(label, cfg, arg, s, kind, fn=None, tag=""):
        rl = rname(cfg, arg)
        if (label, rl) in failed:
            return None
        a, b = operands(CASES[label][0], kind, s)
        big = s >= 8192
        call = fn or (lambda: run_tile(sp[(label, rl)], rl, a, b, None, arg, 1, s))
        t = timer(call, 5 if big else 7, inner=1 if big else 3)
        return record(label + tag + (" argmax" if arg else ""), cfg, f"{s}^3", kind, t, 2 * s**3)

    def prepass(label, s, kind):
        """The pre-pass design: the zero -> NaN by a CuPy pass over A and B, then the NZ argmax."""
        a, b = operands("max_times", kind, s)
        rl = rname(ARG_T, True)
        z = np.float32(-np.inf)
        nan = np.float32(np.nan)

        def call():
            am = cp.where(a == z, nan, a)
            bm = cp.where(b == z, nan, b)
            return run_tile(sp[(label, rl)], rl, am, bm, None, True, 1, s)
        return call

    def equal_outputs(s):
        """old == zn bit for bit on the timed operands (values and argmax), and zn == nz without the zero."""
        for kind in TKINDS:
            a, b = operands("max_times", kind, s)
            for cfg, arg, other in ((ARG_T, True, "max_times old"), (ARG_T, False, "max_times old"),
                                    (T3, False, "max_times nz")):
                if other.endswith("nz") and kind != "none":
                    continue
                rl = rname(cfg, arg)
                d1, i1 = run_tile(sp[("max_times zn", rl)], rl, a, b, None, arg, 1, s)
                d2, i2 = run_tile(sp[(other, rl)], rl, a, b, None, arg, 1, s)
                ok = bool(cp.array_equal(d1.view(cp.int32), d2.view(cp.int32)))
                ok = ok and (not arg or bool(cp.array_equal(i1, i2)))
                out["checks"].append({"case": f"zn == {other}", "role": rl, "kind": kind, "shape": [s] * 3,
                                      "ok": ok})
                if not ok:
                    log(f"CHECK FAILED zn != {other} {rl} {kind} {s}^3")
                    failed.add(("max_times zn", rl))

    equal_outputs(S)
    log(f"equal outputs at {S}^3: failed {sorted(failed)}")
    save()

    sizes = (S,) if args.no8k or args.quick else (S, 8192)
    for s in sizes:
        time_tile("min_plus", ARG_T, False, s, "none")
        time_tile("min_plus", ARG_T, True, s, "none")
        for kind in TKINDS:
            if kind == "none":
                for cfg, arg in ((ARG_T, True), (ARG_T, False), (T3, False)):
                    time_tile("max_times nz", cfg, arg, s, kind)
            for cfg, arg in ((ARG_T, True), (ARG_T, False), (T3, False)):
                time_tile("max_times zn", cfg, arg, s, kind)
            for cfg, arg in ((ARG_T, True), (ARG_T, False), (BIG, False)):
                time_tile("max_times old", cfg, arg, s, kind)
            if kind in ("none", "every"):
                time_tile("max_times nz", ARG_T, True, s, kind, fn=prepass("max_times nz", s, kind),
                          tag=" prepass")
            if kind in ("none", "every"):
                for label in ("min_times zn", "min_times old"):
                    time_tile(label, ARG_T, True, s, kind)
                    time_tile(label, ARG_T, False, s, kind)
                if kind == "none":
                    time_tile("min_times nz", ARG_T, True, s, kind)
                    time_tile("min_times nz", ARG_T, False, s, kind)
        for arg in (True, False):  # the library path (facts pass included): the zero in every slab
            a, b = operands("max_times", "every", s)
            t = timer(lambda a=a, b=b, arg=arg: tg.matmul(a[0], b[0], "max_times", return_argmax=arg,
                                                          backend="cuda"),
                      5 if s >= 8192 else 7, inner=1 if s >= 8192 else 3)
            record("max_times tg.matmul" + (" argmax" if arg else ""), "library", f"{s}^3", "every", t,
                   2 * s**3)
        time_tile("max_times zn", ARG_T, True, s, "none", tag=" drift")
    save()
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
