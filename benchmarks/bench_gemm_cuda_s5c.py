"""Issue 14, CUDA GEMM (fifth session, argmax helper): every variant in one device run.

(1) max_times / min_times f32 argmax (83 % of the same tile without argmax; min_plus's is 90 %):
    the ``NZ`` instantiation (``TropTimes<T, MAX, true>``: no per-slab zero test, no
    ``__syncthreads_and``; exact when neither operand holds the zero, which the host knows from the
    operands' facts) against the HOT default, beside the plain tiles; a control: min_plus argmax
    given the per-slab machinery of a guarded semiring (``PlusSplitF``: kSplit with a test that
    never fails), which says whether that machinery is what costs. Also max_times without argmax
    on ``big3`` (NZ) against its default ``big`` tile and min_plus ``big3``.
(2) min_plus f32 2048³: the default ``big3`` against a tail split (rows 0..1535 in one wave of 384
    tiles, rows 1536..2047 as 128 tiles x 3 k parts + ``sr_combine``), on one stream and on two
    streams joined per call; and 2048 x k x 2048 for k = 512 / 8192 (the fixed cost of a call).
(3) int32 max_plus (the zero in every slab, clean |x| < 2^30, and the DPX kernel) on the big tile
    against 64x128x8 at 3 blocks/SM (no spill).
Checks first, bit for bit against tests/reference.py (odd shapes, split k, ``c``, -0.0, +-0.0 x inf
NaN products, the other infinity, subnormals, ties; the guarded kernels also with the zero); a
failed variant is not timed. Timings: CUDA events, median, beside a device copy and cuBLAS SGEMM.
``--profile``: run each argmax kernel once at 2048³ (for ncu, if the machine has it).

``python3 benchmarks/bench_gemm_cuda_s5c.py --json $OUT/x.json``
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
from bench_gemm_cuda_s2 import int_operands  # noqa: E402
from bench_gemm_cuda_s4b import float_operands, int_late  # noqa: E402
from bench_gemm_sweep import baselines  # noqa: E402
from reference import ref_matmul  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch, kernels  # noqa: E402

ARG_T, BIG, T3 = (64, 64, 16, 4, 4, 2), (128, 128, 8, 8, 8, 2), (64, 128, 8, 8, 8, 3)
#: control functor: min_plus f32 with a guarded semiring's per-slab test (never fails on finite
#: and +-inf operands but the zero, which the timing operands do not hold)
EXTRA = """
namespace ptg {
template <bool MAX> struct PlusSplitF : TropPlus<float, MAX> {
  static constexpr bool kSplit = true;
  __device__ __forceinline__ static bool fast_ok(float x) { return x != TropPlus<float, MAX>::zero(); }
};
}  // namespace ptg
"""
F_ALL, F_NZ, I_ALL = ("nozero", "mixed", "late"), ("nozero",), ("fast", "zeroed", "wild", "late")
#: label -> (semiring for the reference, functor, check kinds, [(cfg, arg)])
CASES = {
    "max_times": ("max_times", "ptg::MaxTimes<float>", F_ALL, [(ARG_T, True), (ARG_T, False), (BIG, False)]),
    "max_times nz": ("max_times", "ptg::MaxTimesNZ<float>", F_NZ,
                     [(ARG_T, True), (ARG_T, False), (T3, False), (BIG, False)]),
    "min_times": ("min_times", "ptg::MinTimes<float>", F_ALL, [(ARG_T, True)]),
    "min_times nz": ("min_times", "ptg::MinTimesNZ<float>", F_NZ, [(ARG_T, True), (ARG_T, False)]),
    "min_plus": ("min_plus", "ptg::MinPlus<float>", F_ALL, [(ARG_T, True), (ARG_T, False), (T3, False)]),
    "min_plus split": ("min_plus", "ptg::PlusSplitF<false>", F_NZ, [(ARG_T, True)]),
    # (3) int32 max_plus, any input: the big tile (spills 164 / 124 bytes) against 64x128x8 3/SM
    # (168 registers, no spill, the masks fit); the DPX kernel on both for the rate it is held to
    "max_plus i32": ("max_plus", "ptg::MaxPlus<int>", I_ALL, [(BIG, False), (T3, False)]),
    "max_plus dpx": ("max_plus", "ptg::MaxPlusDpx", ("dpx",), [(BIG, False), (T3, False)]),
}
I32 = np.iinfo(np.int32)


def rname(cfg, arg):
    return tile_name("s5c", cfg, arg)


def specs():
    return tile_specs("s5c", CASES, EXTRA)


def nozero_operands(rng, name, m, k, n):
    """No zero of ⊕ anywhere: quarter integers (ties), -0.0 and +0.0, the other infinity, subnormals,
    rows x columns whose first 40 terms are 0 x the other infinity (NaN products, ⊕ ignores them)."""
    a = (rng.integers(-20, 20, (m, k)) / 4).astype(np.float32)
    b = (rng.integers(-20, 20, (k, n)) / 4).astype(np.float32)
    other = np.float32(np.inf if name.startswith("max") else -np.inf)
    for x in (a, b):
        x.flat[rng.integers(0, x.size, x.size // 20)] = -0.0
        x.flat[rng.integers(0, x.size, x.size // 20)] = 0.0
        x.flat[rng.integers(0, x.size, max(1, int(x.size * 0.2 / k)))] = other  # ~1 output in 5
        x.flat[rng.integers(0, x.size, x.size // 20)] = np.float32(1e-39) * rng.choice([-1, 1])
    if m > 3 and n > 3:
        kk = min(40, k)
        a[3, :kk], b[:kk, 2] = 0.0, other
        a[2, :kk], b[:kk, 3] = other, -0.0
    return a, b


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s5c.json")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    p.add_argument("--profile", action="store_true", help="one launch of each argmax kernel, 2048³")
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg
    from pytropical_gpu.semirings import get_semiring

    be = tg.get_backend("cuda")
    timer, out, rows, failed, save = run_record(cp, be, args.json)
    log = print

    sp = specs()
    mp_spec = kernels.gemm_spec(get_semiring("min_plus"), np.dtype(np.float32))
    compile_all(out, list(sp.values()) + [mp_spec], args.workers, log)

    def run_tile(spec, rl, a, b, c, arg, ks, k):
        return gemm_launch.run(be, spec, a, b, c, arg, split_plan(rl, k, ks))

    if args.profile:
        s = 2048
        a = cp.asarray(np.random.default_rng(0).standard_normal((1, s, s), dtype=np.float32))
        b = cp.asarray(np.random.default_rng(1).standard_normal((1, s, s), dtype=np.float32))
        for label in ("min_plus", "max_times", "max_times nz", "min_plus split"):
            rl = rname(ARG_T, True)
            run_tile(sp[(label, rl)], rl, a, b, None, True, 1, s)
        cp.cuda.Device().synchronize()
        return 0

    S = 2048 if args.quick else 8192
    rng = np.random.default_rng(1)
    baselines(cp, timer, rows, log, (2048, S), rng)

    # ------------------------------------------------------------------ checks
    crng = np.random.default_rng(2)
    shapes = [(67, 97, 83, 1), (130, 132, 260, 1), (70, 600, 36, 3), (256, 72, 256, 1), (9, 33, 130, 1),
              (64, 1024, 128, 2), (200, 1000, 130, 1)]
    cache = {}

    def inputs(name, kind, m, k, n, use_c, dt="f"):
        key = (name, kind, m, k, n, use_c, dt)
        if key not in cache:
            c = None
            if kind == "nozero":
                a, b = nozero_operands(crng, name, m, k, n)
            elif dt == "f":
                a, b = float_operands(crng, name, m, k, n, kind)
            elif kind == "late":
                a, b = int_late(crng, m, k, n)
            else:
                a, b = int_operands(crng, kind, (m, k), (k, n), I32.min)
            if use_c:
                c = (float_operands(crng, name, m, 1, n, "mixed")[0][:, :1] * np.ones((1, n), np.float32)
                     if a.dtype == np.float32 else int_operands(crng, "zeroed", (m, n), (1, 1), I32.min)[0])
            cache[key] = (a, b, c, *ref_matmul(a, b, name, c))
        return cache[key]

    t0 = time.perf_counter()
    for (label, rl), spec in sp.items():
        name, functor, kinds, _ = CASES[label]
        dt = "i" if "<int>" in functor or "Dpx" in functor else "f"
        arg = rl.endswith("_arg")
        for kind in kinds:
            for (m, k, n, ks) in shapes:
                for use_c in ((False, True) if arg else (False,)):
                    a, b, c, want, widx = inputs(name, kind, m, k, n, use_c, dt)
                    d, idx = run_tile(spec, rl, cp.asarray(a)[None], cp.asarray(b)[None],
                                      None if c is None else cp.asarray(c)[None], arg, ks, k)
                    ok = bool(np.array_equal(d.get()[0], want)) and (
                        not arg or bool(np.array_equal(idx.get()[0], widx)))
                    out["checks"].append({"case": label, "role": rl, "kind": kind, "shape": [m, k, n],
                                          "ks": ks, "c": use_c, "ok": ok})
                    if not ok:
                        log(f"CHECK FAILED {label} {rl} {kind} {m}x{k}x{n} ks={ks} c={use_c}")
                        failed.add((label, rl))
    # the tail split (2): min_plus f32, odd operands, against the reference
    for (m, k, n) in ((200, 300, 260), (256, 1000, 128)):
        a, b, _, want, _ = inputs("min_plus", "mixed", m, k, n, False)
        d = cp.empty((1, m, n), np.float32)
        tail_split(cp, mp_spec, cp.asarray(a)[None], cp.asarray(b)[None], d, m - 64 if m > 64 else 0, 3,
                   None)
        ok = bool(np.array_equal(d.get()[0], want))
        out["checks"].append({"case": "min_plus tail split", "shape": [m, k, n], "ok": ok})
        if not ok:
            log(f"CHECK FAILED tail split {m}x{k}x{n}")
            failed.add(("min_plus", "tail split"))
    log(f"checks: {len(out['checks'])} runs in {time.perf_counter() - t0:.1f} s, failed: {sorted(failed)}")
    save()

    # ------------------------------------------------------------------ timings
    tcache = {}

    def operands(m, k, n):
        key = (m, k, n)
        if key not in tcache:
            tcache.clear()
            tcache[key] = (cp.asarray(rng.standard_normal((1, m, k), dtype=np.float32)),
                           cp.asarray(rng.standard_normal((1, k, n), dtype=np.float32)))
        return tcache[key]

    def record(op, cfg, size, t, flops):
        r = {"op": op, "config": cfg, "size": size, "s": t, "TOPS": flops / t / 1e12}
        rows.append(r)
        save()
        log(f"{op:28s} {str(cfg):24s} {size:16s} {t * 1e3:9.3f} ms {r['TOPS']:6.2f} TOPS")
        return r

    def int_timing_operands(kind, m, k, n):
        """On the device (numpy takes seconds per 8192² operand): |x| < 2^30 ("fast"; 2^28 "dpx"),
        "zeroed" / "dpx": the zero in every 7th k column of A (every 8-wide slab) and sprinkled."""
        key = ("i", kind, m, k, n)
        if key not in tcache:
            tcache.clear()
            lim = 2**28 if kind == "dpx" else 2**30
            a = cp.random.randint(-lim + 1, lim, (1, m, k), dtype=cp.int32)
            b = cp.random.randint(-lim + 1, lim, (1, k, n), dtype=cp.int32)
            if kind != "fast":
                a[..., ::7] = I32.min
                a[cp.random.random(a.shape) < 0.05] = I32.min
                b[cp.random.random(b.shape) < 0.08] = I32.min
            tcache[key] = a, b
        return tcache[key]

    def time_tile(label, cfg, arg, m, k, n, kind=None):
        rl = rname(cfg, arg)
        if (label, rl) in failed:
            return None
        a, b = operands(m, k, n) if kind is None else int_timing_operands(kind, m, k, n)
        big = m * n * k >= 8192**3 // 4
        t = timer(lambda: run_tile(sp[(label, rl)], rl, a, b, None, arg, 1, k), 5 if big else 9,
                  inner=1 if big else 10)
        return record(label + (" argmax" if arg else "") + (f" {kind}" if kind else ""), cfg, f"{m}x{k}x{n}",
                      t, 2 * m * n * k)

    time_tile("min_plus", T3, False, S, S, S)  # the run's reference rate
    for label in ("min_plus", "max_times", "max_times nz", "min_times", "min_times nz", "min_plus split"):
        for cfg, arg in CASES[label][3]:
            if cfg == ARG_T:
                time_tile(label, cfg, arg, S, S, S)
    for label, cfg in (("max_times", BIG), ("max_times nz", BIG), ("max_times nz", T3)):
        time_tile(label, cfg, False, S, S, S)

    # (3) int32 max_plus: the zero in every slab, clean |x| < 2^30, the DPX kernel
    for cfg in (BIG, T3):
        time_tile("max_plus i32", cfg, False, S, S, S, "zeroed")
        time_tile("max_plus i32", cfg, False, S, S, S, "fast")
        time_tile("max_plus dpx", cfg, False, S, S, S, "dpx")

    # (2) min_plus 2048³
    s2 = 2048
    if ("min_plus", "tail split") not in failed:
        a, b = operands(s2, s2, s2)
        d = cp.empty((1, s2, s2), np.float32)
        time_tile("min_plus", T3, False, s2, s2, s2)
        fl = 2 * s2**3
        t = timer(lambda: tail_split(cp, mp_spec, a, b, d, 1536, 3, None), 9, inner=10)
        record("min_plus tail split 1 stream", "1536 full + 512 x ks3", f"{s2}^3", t, fl)
        streams = (cp.cuda.Stream(), cp.cuda.Stream())
        t = timer(lambda: tail_split(cp, mp_spec, a, b, d, 1536, 3, streams), 9, inner=10)
        record("min_plus tail split 2 streams", "1536 full + 512 x ks3", f"{s2}^3", t, fl)
        t = timer(lambda: tail_split(cp, mp_spec, a, b, d, 1280, 2, streams), 9, inner=10)
        record("min_plus tail split 2 streams", "1280 full + 768 x ks2", f"{s2}^3", t, fl)
        for kk in (512, 8192):
            time_tile("min_plus", T3, False, s2, kk, s2)
        time_tile("min_plus", T3, False, s2, s2, s2)  # drift check
    time_tile("min_plus", T3, False, S, S, S)  # drift check: the first row again
    save()
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if failed else 0


def tail_split(cp, spec, a, b, d, m1, ks, streams):
    """min_plus f32 big3: rows [0, m1) with the whole k (one launch), rows [m1, m) as ks k parts +
    sr_combine; ``streams``: (s1, s2) run the two halves concurrently, joined at the end."""
    from pytropical_gpu.backends.base import ceil_div
    from pytropical_gpu.backends.cuda.gemm_launch import _NULL, _i64

    _, m, k = a.shape
    n = b.shape[2]
    bm, bn, bk, tm, tn, _ = kernels.TILES["big3"]
    fn = kernels.function(spec, "big3")
    block = ((bm // tm) * (bn // tn),)
    vec = np.int32(int(k % 4 == 0 and n % 4 == 0 and a.data.ptr % 16 == 0 and b.data.ptr % 16 == 0
                            and (m1 * k * 4) % 16 == 0))
    kc = ceil_div(ceil_div(k, ks), bk) * bk
    kparts = ceil_div(k, kc)
    m2 = m - m1
    part = cp.empty((kparts, m2, n), np.float32) if m2 else None
    cur = cp.cuda.get_current_stream()
    s1, s2 = streams if streams else (cur, cur)
    if streams:
        ev = cur.record()
        s1.wait_event(ev)
        s2.wait_event(ev)
    if m1:
        with s1:
            fn((-(-m1 // bm), -(-n // bn), 1), block,
               (a[:, :m1], b, _NULL, d[:, :m1], _NULL, _i64(m1), _i64(n), _i64(k), _i64(0), _i64(0),
                _i64(0), vec, np.int32(1), _i64(k)))
    if m2:
        with s2:
            fn((-(-m2 // bm), -(-n // bn), kparts), block,
               (a[:, m1:], b, _NULL, part, _NULL, _i64(m2), _i64(n), _i64(k), _i64(0), _i64(0),
                _i64(0), vec, np.int32(kparts), _i64(kc)))
            total = m2 * n
            kernels.function(spec, "combine")((max(1, min(-(-total // 256), 8 * 65536)),), (256,), (
                part, _NULL, _NULL, d[:, m1:], _NULL, _i64(total), _i64(1), np.int32(kparts), _i64(0)))
    if streams:
        cur.wait_event(s1.record())
        cur.wait_event(s2.record())


if __name__ == "__main__":
    sys.exit(main())
