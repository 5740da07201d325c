"""Issue 14, CUDA GEMM: why int32 max_plus argmax (DPX) stops at 0.80-0.84 of the tile without it,
and three epilogue candidates. Prepared in session 8 (branch s8i32, no device) for one H200 run.

Session 8's run: ``dpxw_small_arg`` 0.839 of the plain tile at 8192^3 but 0.805 at 4096^3 (R16 0.846
/ 0.827). A ratio that falls with k is a cost per block, not per slab: the epilogue's search of the
winning chunk, one dependent load pair a term until the first match (~8.5 an output, 16 outputs a
thread), while the SM holds only the other block. Registers do not differ in occupancy (89 and 126
a thread both give 2 blocks of 256 an SM: 3 need <= 80). The run measures it and times:

* diagnostic ``NS``: the argmax loop without any search (index = the winning chunk's start; its
  values are checked exactly, its index against the reference's chunk start): the loop's own ratio;
* ``E4`` / ``RE4``: ``PlusDpxE`` / ``PlusDpxRE`` (kArgGroup 4 in cuda/semiring_gemm.cu): values and
  ``c`` first, then the searches, 4 terms loaded at once (A as one 16-byte load), chunk or
  running-best loop; ``RE8`` / ``RE16``: the running best with 8 / all 16 terms of the chunk at
  once (fewer round trips, more scattered B sectors: which of the two binds is the question);
* beside them the plain tile (the row's 85 % baseline), R16, ``w`` (``dpxw_small_arg`` as of
  session 8's main: ``PlusDpxW``) and ``lib`` (the checkout's ``dpxw_small_arg``, whatever it is).

Order: static facts (registers, local memory, occupancy from the driver), checks bit for bit against
tests/ref_int_plus.py (the s8i bench's operand kinds and shapes; a failed variant is not timed),
CUDA-event medians of 7 at 8192^3 and 4096^3 in two rounds (forward, backward), a k sweep at
m = n = 4096 (k = 1024 and 8192: the slope is the loop, the intercept the per-block cost), then, if
``ncu`` is on the machine, one launch of each kernel at 4096 x 2048 x 4096 under Nsight Compute
(metrics: occupancy, pipes, stall reasons; then the sampled stalls by SASS line for ``w`` and
E4), written beside the JSON as ``*.ncu.txt`` / ``*.ncu_src.csv``.

``python3 benchmarks/bench_gemm_cuda_s8i2.py --json $OUT/gemm_cuda_s8i2_h200_s8.json``
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from _gemm_run import check_run, compile_all, run_record, split_plan, tile_specs  # noqa: E402
from _ncu import run_ncu  # noqa: E402
from bench_gemm_cuda_s8i import ARG_T, LIB_ROLE, NAMES, check_cases  # noqa: E402
from bench_gemm_sweep import baselines  # noqa: E402
from ref_int_plus import W  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch, kernels  # noqa: E402

#: the diagnostic functor: no search (kArgGroup -1), index = the winning chunk's start
NS_SRC = """
namespace ptg {
template <bool MAX> struct S8iNS : PlusDpx<MAX, true> { static constexpr int kArgGroup = -1; };
}  // namespace ptg
"""
#: tag -> (functor template for MAX, argmax, extra source); "{M}" is Max / Min, "{B}" true / false
FORMS = {"plain": ("ptg::{M}PlusDpxW", False, ""), "w": ("ptg::{M}PlusDpxW", True, ""),
         "r16": ("ptg::{M}PlusDpxR", True, ""),
         "ns": ("ptg::S8iNS<{B}>", True, NS_SRC), "e4": ("ptg::PlusDpxE<{B}, 4>", True, ""),
         "re4": ("ptg::PlusDpxRE<{B}, 4>", True, ""), "re8": ("ptg::PlusDpxRE<{B}, 8>", True, ""),
         "re16": ("ptg::PlusDpxRE<{B}, 16>", True, "")}
DIAG = {"ns"}


def specs():
    """{(name, tag): (ModuleSpec, role, argmax, prefix)} for the library's ``dpxw_small_arg`` ("lib",
    its own instantiation) and every form of ``FORMS`` on the 64x64x16 2/SM tile."""
    from pytropical_gpu.semirings import get_semiring

    out = {}
    for name in NAMES:
        lib = kernels.gemm_spec(get_semiring(name), np.dtype(np.int32)).names
        out[(name, "lib")] = (kernels.ModuleSpec(f"s8i2:lib:{name}", "semiring_gemm.cu", {
            LIB_ROLE: lib[LIB_ROLE], "combine": lib["combine"], "combine_arg": lib["combine_arg"]}),
            LIB_ROLE[len("dpxw_"):], True, "dpxw_")
        mx = name == "max_plus"
        for tag, (form, arg, extra) in FORMS.items():
            functor = form.format(M="Max" if mx else "Min", B="true" if mx else "false")
            for (_, role), spec in tile_specs(f"s8i2_{tag}", {name: (name, functor, [(ARG_T, arg)])},
                                              extra).items():
                out[(name, tag)] = (spec, role, arg, "")
    return out


def static_facts(variants, log):
    """Registers, local memory and blocks an SM (the driver's occupancy) of each max_plus kernel."""
    import cupy as cp

    facts = {}
    for (name, tag), (spec, role, _, pre) in variants.items():
        if name != "max_plus":
            continue
        fn = kernels.function(spec, pre + role)
        f = {}
        for key in ("num_regs", "local_size_bytes", "shared_size_bytes", "blocks_per_sm"):
            try:
                f[key] = (cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, 256, 0)
                          if key == "blocks_per_sm" else getattr(fn, key))
            except Exception as e:  # noqa: BLE001 - facts the run can do without
                f[key] = f"n/a ({type(e).__name__})"
        facts[tag] = f
        log(f"static {tag:6s} {f}")
    return facts


def profile(variants, tags, s=4096, k=2048):
    """One launch of each max_plus kernel in ``tags`` at s x k x s (the ncu child's whole work)."""
    import cupy as cp

    import pytropical_gpu as tg

    be = tg.get_backend("cuda")
    a = cp.random.randint(-W + 1, W, (1, s, k), dtype=cp.int32)
    b = cp.random.randint(-W + 1, W, (1, k, s), dtype=cp.int32)
    for tag in tags:
        spec, role, arg, pre = variants[("max_plus", tag)]
        gemm_launch.run(be, spec, a, b, None, arg, split_plan(role, k, 1), prefix=pre)
        cp.cuda.Device().synchronize()
        print(f"profiled {tag} ({role})", flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_cuda_s8i2.json")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--reps", type=int, default=7, help="CUDA-event repetitions a timing (median)")
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    p.add_argument("--no-ncu", action="store_true", help="skip the Nsight Compute part")
    p.add_argument("--profile-only", metavar="TAGS", help="(the ncu child) launch these once, exit")
    args = p.parse_args(argv)
    variants = specs()
    if args.profile_only:
        profile(variants, args.profile_only.split(","))
        return 0
    import cupy as cp

    import pytropical_gpu as tg

    be = tg.get_backend("cuda")
    timer, out, rows, failed, save = run_record(cp, be, args.json)
    log = print
    compile_all(out, list(dict.fromkeys(v[0] for v in variants.values())), args.workers, log)
    out["static"] = static_facts(variants, log)
    save()

    def run_tile(name, tag, a, b, c, ks, k):
        spec, role, arg, pre = variants[(name, tag)]
        return gemm_launch.run(be, spec, a, b, c, arg, split_plan(role, k, ks), prefix=pre)

    # ------------------------------------------------------------------ checks
    t0 = time.perf_counter()
    for name, kind, (m, k, n, ks), use_c, a, b, c, want, widx in check_cases():
        wchunk = np.where(widx >= 0, widx - widx % 16, -1)  # NS: the chunk's start
        for (vn, tag), (_, _, arg, _) in variants.items():
            if vn != name:
                continue
            d, idx = run_tile(name, tag, cp.asarray(a)[None], cp.asarray(b)[None],
                              None if c is None else cp.asarray(c)[None], ks, k)
            wi = wchunk if tag in DIAG else widx
            check_run(out, failed, log, {"name": name, "tag": tag, "kind": kind,
                                         "shape": [m, k, n], "ks": ks, "c": use_c},
                      d, idx, want, wi if arg else None)
    log(f"checks: {len(out['checks'])} runs in {time.perf_counter() - t0:.1f} s, failed: {sorted(failed)}")
    save()

    # ------------------------------------------------------------------ timings (max_plus)
    order = [t for (n_, t) in variants if n_ == "max_plus"]

    def timed(shape, label):
        m, k, n = shape
        a = cp.random.randint(-W + 1, W, (1, m, k), dtype=cp.int32)
        b = cp.random.randint(-W + 1, W, (1, k, n), dtype=cp.int32)
        for rnd, seq in enumerate((order, order[::-1])):
            for tag in seq:
                if ("max_plus", tag) in failed:
                    continue
                t = timer(lambda tag=tag: run_tile("max_plus", tag, a, b, None, 1, k), args.reps)
                r = {"op": f"max_plus {tag}", "round": rnd, "size": label, "shape": [m, k, n], "s": t,
                     "TOPS": 2 * m * n * k / t / 1e12, "argmax": variants[("max_plus", tag)][2]}
                rows.append(r)
                save()
                log(f"{label} round {rnd} {tag:6s} {t * 1e3:9.3f} ms {r['TOPS']:6.2f} TOPS")

    def mean_s(tag, label):
        got = [x["s"] for x in rows if x.get("size") == label and x.get("op") == f"max_plus {tag}"]
        return float(np.mean(got)) if got else None

    sizes = (1024, 2048) if args.quick else (8192, 4096)
    baselines(cp, timer, rows, log, sizes[:1], np.random.default_rng(1))
    out["ratios"] = {}
    for s in sizes:
        label = f"{s}^3"
        timed((s, s, s), label)
        base = mean_s("plain", label)
        for tag in order:
            t = mean_s(tag, label)
            if t and base:
                out["ratios"][f"{tag} {label}"] = base / t
                log(f"{label} {tag:6s} mean {2 * s**3 / t / 1e12:6.2f} TOPS = {base / t:.3f} of the plain "
                    "tile" + ("  (diagnostic: no search)" if tag in DIAG else ""))
        save()
    # the k sweep: t(k) = intercept + slope * k at m = n = S (slope ratio: the loop's; intercept: per block)
    S = 1024 if args.quick else 4096
    ks_ = (512, 2048) if args.quick else (1024, 8192)
    for kk in ks_:
        timed((S, kk, S), f"{S}x{kk}x{S}")
    out["sweep"] = {}
    sl = {}
    for tag in order:
        t1, t2 = mean_s(tag, f"{S}x{ks_[0]}x{S}"), mean_s(tag, f"{S}x{ks_[1]}x{S}")
        if t1 and t2:
            sl[tag] = slope = (t2 - t1) / (ks_[1] - ks_[0])
            out["sweep"][tag] = {"slope_ms_per_1k_k": slope * 1e6,
                                 "intercept_ms": (t1 - slope * ks_[0]) * 1e3}
    for tag, f in out["sweep"].items():
        if "plain" in sl:
            f["loop_ratio"] = sl["plain"] / sl[tag]
            f["extra_intercept_ms"] = f["intercept_ms"] - out["sweep"]["plain"]["intercept_ms"]
        log(f"sweep {tag:6s} {f}")
    save()
    if not args.no_ncu:
        run_ncu(args.json, __file__, ["plain", "w", "lib", "ns", "r16", "e4", "re4", "re8", "re16"],
                ["w", "e4"], log)
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
