"""Issue 14, CUDA GEMM: int32 max_plus argmax on the dpxw 64x64x16 2/SM tile, running best vs chunks.

Prepared in session 7 (branch next-i32arg, no device) for the next session's H200.

``dpxw_small_arg`` (``PlusDpx<MAX, true>``, the library's role) ends each 16-term chunk with three
half-rate ALU instructions an output (compare, select of the index, ⊕ of the chunk into the best);
``PlusDpxR`` (kRunArg in cuda/semiring_gemm.cu, bench-only) folds every term into the running best
with the DPX instruction and ends a chunk with two (compare with the chunk's start, select), the
start copied on the FMA pipe. Timed beside the same tile without argmax (the row's baseline, 85 %)
at AK 16 and AK 32 (one bookkeeping every two slabs). SASS counts and the prediction: session 7's
section of benchmarks/results/gemm_cuda_notes.md.

Checks first, bit for bit against the int64 reference of tests/ref_int_plus.py (written from the
contract: saturated sums, ties to the first k) for max_plus and min_plus: the s6i bench's operand
kinds within the dpxw domain (no zero, |x| < 2^30, ±(2^30 - 1) present; "ties" from five values;
|x| < 2^28) plus "flat" (every term the same, next to the int32 extreme: the first k must stay the
winner) and "ramp" (the best grows in nearly every chunk), on odd shapes, k not a multiple of 16,
split k 2 / 3, with and without ``c`` (holding the zero in a row). A failed variant is not timed.
Timings: CUDA events (``gputime.event_times`` through ``bench_gemm_sweep.Timer``), median of 7, at
8192^3 and 4096^3 on |x| < 2^30 without the zero, every variant twice (forward, then backward: the
drift), beside a device copy and cuBLAS SGEMM.

``python3 benchmarks/bench_gemm_cuda_s8i.py --json $OUT/gemm_cuda_s8i_h200_s8.json``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from _gemm_run import check_run, compile_all, run_record, split_plan, tile_name, tile_specs  # noqa: E402
from bench_gemm_cuda_s6i import check_operands, zero_of  # noqa: E402
from bench_gemm_sweep import baselines  # noqa: E402
from ref_int_plus import W, ref_plus  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch, kernels  # noqa: E402

ARG_T = (64, 64, 16, 4, 4, 2)  # the library's "small_arg" tile (and "dpxw_small_arg"'s)
NAMES = ("max_plus", "min_plus")
LIB_ROLE = "dpxw_small_arg"


def _functor(name, form):
    return f"ptg::{'Max' if name == 'max_plus' else 'Min'}PlusDpx{form}"


def specs():
    """{(name, role): (ModuleSpec, argmax, prefix)}: the library's ``dpxw_small_arg`` (its own
    instantiation, out of the library's module), the same tile without argmax, and PlusDpxR at
    AK 16 and AK 32."""
    from pytropical_gpu.semirings import get_semiring

    out = {}
    for name in NAMES:
        lib = kernels.gemm_spec(get_semiring(name), np.dtype(np.int32)).names
        out[(name, LIB_ROLE)] = (kernels.ModuleSpec(f"s8i:lib:{name}", "semiring_gemm.cu", {
            LIB_ROLE: lib[LIB_ROLE], "combine": lib["combine"], "combine_arg": lib["combine_arg"]}),
            True, "dpxw_")
        for tag, form, arg, ak in (("s8i_plain", "W", False, 0), ("s8i_run16", "R", True, 0),
                                   ("s8i_run32", "R", True, 32)):
            cases = {name: (name, _functor(name, form), [(ARG_T, arg)])}
            for (_, role), spec in tile_specs(tag, cases, ak=ak).items():
                out[(name, role)] = (spec, arg, "")
    return out


def extra_operands(rng, name, kind, m, k, n):
    """"flat": every term 2^31 - 2 (max_plus) / -2^31 + 2 (min_plus), so every k ties and the best
    never grows after the first chunk; "ramp": A's term grows (max_plus; falls for min_plus) with k
    by 2^31 / k a step from ∓(2^30 - 1), B small, so the best grows in nearly every chunk."""
    s = 1 if name == "max_plus" else -1
    if kind == "flat":
        return (np.full((m, k), s * (W - 1), np.int32), np.full((k, n), s * (W - 1), np.int32))
    step = max(1, (2 * W - 2) // max(k, 1))
    a = (-s * (W - 1) + s * step * np.arange(k, dtype=np.int64))[None, :].repeat(m, 0)
    a = np.clip(a + rng.integers(-2, 3, (m, k)), -(W - 1), W - 1)
    return a.astype(np.int32), rng.integers(-8, 9, (k, n)).astype(np.int32)


#: checked shapes (m, k, n, split parts) and operand kinds (bench_gemm_cuda_s8i2 checks the same)
CHECK_SHAPES = [(67, 97, 83, 1), (130, 132, 260, 1), (70, 600, 36, 3), (256, 72, 256, 1), (9, 33, 130, 1),
                (64, 1024, 128, 2), (200, 1000, 130, 1), (5, 70, 3, 1), (65, 17, 65, 1), (128, 48, 64, 2)]
CHECK_KINDS = ("wide", "ties", "dpx_nz", "flat", "ramp")


def check_cases(seed: int = 8):
    """Every checked case in one fixed order (one generator, so the operands are the same in
    every script that checks with them): (name, kind, (m, k, n, ks), with c, a, b, c, want, widx)."""
    crng = np.random.default_rng(seed)
    for name in NAMES:
        for kind in CHECK_KINDS:
            for (m, k, n, ks) in CHECK_SHAPES:
                if kind in ("flat", "ramp"):
                    a, b = extra_operands(crng, name, kind, m, k, n)
                else:
                    a, b = check_operands(crng, name, kind, m, k, n)
                for use_c in (False, True):
                    c = None
                    if use_c:
                        c = crng.integers(-(2**31) + 1, 2**31 - 1, (m, n), dtype=np.int64).astype(np.int32)
                        c[0, :] = zero_of(name)
                    yield (name, kind, (m, k, n, ks), use_c, a, b, c, *ref_plus(a, b, name, c))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_cuda_s8i.json")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--reps", type=int, default=7, help="CUDA-event repetitions a timing (median)")
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg

    be = tg.get_backend("cuda")
    timer, out, rows, failed, save = run_record(cp, be, args.json)
    log = print
    variants = specs()
    compile_all(out, list(dict.fromkeys(s for s, _, _ in variants.values())), args.workers, log)

    def run_tile(name, role, a, b, c, ks, k):
        spec, arg, pre = variants[(name, role)]
        return gemm_launch.run(be, spec, a, b, c, arg, split_plan(role[len(pre):], k, ks), prefix=pre)

    # ------------------------------------------------------------------ checks
    t0 = time.perf_counter()
    for name, kind, (m, k, n, ks), use_c, a, b, c, want, widx in check_cases():
        for (vn, role), (_, arg, _) in variants.items():
            if vn != name:
                continue
            d, idx = run_tile(name, role, cp.asarray(a)[None], cp.asarray(b)[None],
                              None if c is None else cp.asarray(c)[None], ks, k)
            check_run(out, failed, log, {"name": name, "role": role, "kind": kind,
                                         "shape": [m, k, n], "ks": ks, "c": use_c},
                      d, idx, want, widx if arg else None)
    log(f"checks: {len(out['checks'])} runs in {time.perf_counter() - t0:.1f} s, failed: {sorted(failed)}")
    save()

    # ------------------------------------------------------------------ timings (max_plus)
    sizes = (1024, 2048) if args.quick else (8192, 4096)
    baselines(cp, timer, rows, log, sizes[:1], np.random.default_rng(1))
    order = [r for (n_, r) in variants if n_ == "max_plus"]
    for s in sizes:
        a = cp.random.randint(-W + 1, W, (1, s, s), dtype=cp.int32)
        b = cp.random.randint(-W + 1, W, (1, s, s), dtype=cp.int32)
        for rnd, seq in enumerate((order, order[::-1])):
            for role in seq:
                if ("max_plus", role) in failed:
                    continue
                t = timer(lambda role=role, a=a, b=b, s=s: run_tile("max_plus", role, a, b, None, 1, s),
                          args.reps)
                r = {"op": f"max_plus {role}", "round": rnd, "size": f"{s}^3", "s": t,
                     "TOPS": 2 * s**3 / t / 1e12, "argmax": variants[("max_plus", role)][1]}
                rows.append(r)
                save()
                log(f"{s}^3 round {rnd} {role:34s} {t * 1e3:9.3f} ms {r['TOPS']:6.2f} TOPS")
        def tops(role, s=s):
            return [x["TOPS"] for x in rows if x.get("size") == f"{s}^3" and x["op"] == f"max_plus {role}"]

        plain = tops(tile_name("s8i_plain", ARG_T, False))
        for role in order:
            got = tops(role)
            if got and plain:
                log(f"{s}^3 {role:34s} mean {np.mean(got):6.2f} TOPS = {np.mean(got) / np.mean(plain):.3f} "
                    "of the plain tile")
    save()
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
