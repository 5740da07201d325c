"""Issue 14, CUDA GEMM (eighth session, s8targ): the argmax epilogue's second pass in one piece.

The argmax tile (64x64x16, 4x4 a thread, 2/SM) keeps one value per 16-term chunk and finds the
winning k afterwards: each output re-reads its winning chunk from global memory, one (A, B) pair a
step with an early exit, so a warp waits ~16 dependent load round trips an output (its slowest
lane) x 16 outputs. ``scan2`` (``SR::kScan = 2``, ``chunk_scan`` in cuda/semiring_gemm.cu) loads
the whole chunk at once (A's run as 16-byte loads where k % 4 == 0) and keeps the first equal
term with selects; ``scan1`` the same with scalar loads (the path of every k % 4 != 0 shape).
Compared in one run beside the library's kernels (``zn``: float times with the zero mapped to
NaN, the default whenever an operand holds the zero or the facts are unknown; ``nz``: no map,
neither operand holds the zero; ``min_plus``) and the same tile without argmax. Checks first, bit
for bit against tests/reference.py (odd shapes with k % 4 != 0 and == 0, split k 2 and 3, ``c``,
the zero in the first / last partial / a middle / every slab, ±0, the other infinity, subnormals,
0 x inf chunks, ties), then each scan variant's timed 4096³ output against its library kernel's,
values (as bits) and argmax; a failed variant is not timed. Then CUDA-event medians at 4096³ and
8192³ beside a device copy and cuBLAS SGEMM.

The scan rows need cuda/semiring_gemm.cu at commit a5924ea (``chunk_scan``; removed after the H200
measured it slower than the serial scan: gemm_cuda_notes.md, "Session 8 s8targ outcome"). On a
newer checkout the script says so in one line and runs the baseline rows only.

``python3 benchmarks/bench_gemm_cuda_s8t.py --json $OUT/gemm_cuda_s8t_h200_s8.json``
(``--quick``: 1024³ and 2048³ only, a smoke test)
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
from bench_gemm_cuda_s6t import check_inputs  # noqa: E402
from bench_gemm_sweep import baselines  # noqa: E402

sys.modules.pop("conftest", None)
from test_cuda_times_zn import PLACES  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch  # noqa: E402
from pytropical_gpu.shaders import load_source  # noqa: E402

T = (64, 64, 16, 4, 4, 2)  # the argmax tile
EXTRA = """
namespace ptg {
template <class F, int S> struct Scan : F { static constexpr int kScan = S; };
}  // namespace ptg
"""
ARG, PLAIN = [(T, True)], [(T, True), (T, False)]
#: label -> (semiring, functor, exact with the zero, [(cfg, arg)]); "... scanN" is timed against
#: its library kernel (the label without " scanN") and that kernel's tile without argmax; the
#: library kernels as ``Scan<F, 0>`` (the serial scan) whatever F's own kScan
CASES = {
    "max_times zn": ("max_times", "ptg::Scan<ptg::MaxTimes<float>, 0>", True, PLAIN),
    "max_times zn scan2": ("max_times", "ptg::Scan<ptg::MaxTimes<float>, 2>", True, ARG),
    "max_times zn scan1": ("max_times", "ptg::Scan<ptg::MaxTimes<float>, 1>", True, ARG),
    "min_times zn": ("min_times", "ptg::Scan<ptg::MinTimes<float>, 0>", True, PLAIN),
    "min_times zn scan2": ("min_times", "ptg::Scan<ptg::MinTimes<float>, 2>", True, ARG),
    "max_times nz": ("max_times", "ptg::Scan<ptg::MaxTimesNZ<float>, 0>", False, PLAIN),
    "max_times nz scan2": ("max_times", "ptg::Scan<ptg::MaxTimesNZ<float>, 2>", False, ARG),
    "min_plus": ("min_plus", "ptg::Scan<ptg::MinPlus<float>, 0>", True, PLAIN),
    "min_plus scan2": ("min_plus", "ptg::Scan<ptg::MinPlus<float>, 2>", True, ARG),
}
#: whether the kernel source still has the whole-chunk scan (SR::kScan); without it a Scan<F, 2>
#: compiles to the serial scan, so the scan rows are left out rather than mislabelled
HAS_SCAN = "chunk_scan" in load_source("cuda", "semiring_gemm.cu")
#: checked shapes (m, k, n, split parts): k % 4 != 0 (scalar scan), partial last chunks, split k
SHAPES = [(67, 97, 83, 1), (130, 132, 260, 1), (70, 600, 36, 3), (256, 72, 256, 1), (9, 33, 130, 1),
          (64, 1024, 128, 2), (200, 1000, 130, 1), (65, 252, 68, 2)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s8t.json")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--quick", action="store_true", help="1024³ and 2048³ only (a smoke test)")
    p.add_argument("--time-failed", action="store_true",
                   help="time a variant even where a check failed (the failure stays in the JSON and "
                        "the exit status); for a check that fails for the baseline kernel too")
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg

    be = tg.get_backend("cuda")
    timer, out, rows, failed, save = run_record(cp, be, args.json)
    log = print
    if not HAS_SCAN:
        log("scan rows left out: they need cuda/semiring_gemm.cu at a5924ea (chunk_scan, SR::kScan)")
    sp = tile_specs("s8t", {lb: c for lb, c in CASES.items() if HAS_SCAN or " scan" not in lb}, EXTRA)
    compile_all(out, list(sp.values()), args.workers, log)
    sizes = (1024, 2048) if args.quick else (4096, 8192)
    baselines(cp, timer, rows, log, sizes[:1], np.random.default_rng(1))

    def run_tile(spec, rl, a, b, c, arg, ks, k):
        return gemm_launch.run(be, spec, a, b, c, arg, split_plan(rl, k, ks))

    # ------------------------------------------------------------------ checks: every variant
    crng = np.random.default_rng(2)
    cache = {}
    t0 = time.perf_counter()
    for (label, rl), spec in sp.items():
        name, _, with_zero, _ = CASES[label]
        kinds = ("nozero", "mixed", "late", *PLACES) if with_zero and "times" in name else ("nozero",)
        arg = rl.endswith("_arg")
        for kind in kinds:
            for (m, k, n, ks) in SHAPES:
                for use_c in ((False, True) if arg else (False,)):
                    a, b, c, want, widx = check_inputs(crng, cache, name, kind, m, k, n, use_c)
                    d, idx = run_tile(spec, rl, cp.asarray(a)[None], cp.asarray(b)[None],
                                      None if c is None else cp.asarray(c)[None], arg, ks, k)
                    nf = len(failed)
                    check_run(out, failed, log, {"case": label, "role": rl, "kind": kind,
                                                 "shape": [m, k, n], "ks": ks, "c": use_c},
                              d, idx, want, widx if arg else None, bits=True)
                    if len(failed) > nf:  # the variant's first failure: its arrays, for a look
                        np.savez(f"{args.json}.{nf}.npz", a=a, b=b, want=want, widx=widx, got=d.get()[0],
                                 idx=idx.get()[0] if arg else widx, **({} if c is None else {"c": c}))
    log(f"checks: {len(out['checks'])} in {time.perf_counter() - t0:.1f} s, failed: {sorted(failed)}")
    save()

    # ------------------------------------------------------------------ timings
    tcache = {}

    def operands(name, kind, s):
        if (name, kind, s) not in tcache:
            tcache.clear()
            g = cp.random.RandomState(7)
            a = g.standard_normal((1, s, s), dtype=cp.float32)
            b = g.standard_normal((1, s, s), dtype=cp.float32)
            if kind == "every":  # the zero in every 8-wide slab of every 64-row block of A
                a[0, ::64, ::8] = np.float32(-np.inf if name.startswith("max") else np.inf)
            tcache[(name, kind, s)] = (a, b)
        return tcache[(name, kind, s)]

    outs = {}

    def timed(label, arg, s, kind):
        rl = tile_name("s8t", T, arg)
        if (label, rl) not in sp or ((label, rl) in failed and not args.time_failed):
            return
        name = CASES[label][0]
        a, b = operands(name, kind, s)
        spec = sp[(label, rl)]

        def call():
            return run_tile(spec, rl, a, b, None, arg, 1, s)

        if arg and s == sizes[0]:  # the scan variants' outputs against their library kernel's
            d, idx = call()
            base = label.rsplit(" scan", 1)[0]
            if base == label:
                outs[(label, kind)] = (d, idx)
            elif (base, kind) in outs:
                d0, i0 = outs[(base, kind)]
                ok = bool(cp.array_equal(d.view(cp.uint32), d0.view(cp.uint32))) and bool(
                    cp.array_equal(idx, i0))
                out["checks"].append({"case": label, "role": rl, "kind": kind, "shape": [s, s, s],
                                      "against": base, "ok": ok})
                log(f"timed output {label} == {base} ({kind}): {ok}")
                if not ok:
                    failed.add((label, rl))
                    save()
                    return
            del d, idx
        big = s >= 8192
        t = timer(call, 5 if big else 7, inner=1 if big else 3)
        r = {"op": label + (" argmax" if arg else ""), "config": T, "size": f"{s}^3", "operands": kind,
             "s": t, "TOPS": 2 * s**3 / t / 1e12}
        rows.append(r)
        save()
        log(f"{r['op']:28s} {r['size']:8s} {kind:6s} {t * 1e3:9.3f} ms {r['TOPS']:6.2f} TOPS")

    groups = [("min_plus", "none", ("", " scan2")), ("max_times nz", "none", ("", " scan2")),
              ("max_times zn", "every", ("", " scan2", " scan1")), ("max_times zn", "none", ("", " scan2")),
              ("min_times zn", "every", ("", " scan2"))]
    for s in sizes:
        for base, kind, variants in groups:
            if not (base == "max_times zn" and kind == "none"):
                timed(base, False, s, kind)
            for v in variants:
                timed(base + v, True, s, kind)
        # the library path (facts pass included)
        a, b = operands("max_times", "every", s)
        t = timer(lambda a=a, b=b: tg.matmul(a[0], b[0], "max_times", return_argmax=True, backend="cuda"),
                  5 if s >= 8192 else 7, inner=1 if s >= 8192 else 3)
        rows.append({"op": "max_times tg.matmul argmax", "config": "library", "size": f"{s}^3",
                     "operands": "every", "s": t, "TOPS": 2 * s**3 / t / 1e12})
        log(f"max_times tg.matmul argmax     {s}^3 every  {t * 1e3:9.3f} ms {2 * s**3 / t / 1e12:6.2f} TOPS")
        timed("max_times zn", True, s, "every")  # drift
        timed("max_times zn scan2", True, s, "every")
        outs.clear()
    save()
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
