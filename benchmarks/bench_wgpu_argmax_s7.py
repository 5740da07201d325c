"""WGSL GEMM issue 14, session 7: a measured floor for the argmax by k-tile (min_plus, max_plus f32).

The argmax first pass keeps, per output, a tile accumulator beside the running best and the index
(s4's H1: ≈ 210–240 registers a thread, one workgroup an SM where the plain kernel fits two).
``TACC`` in ``wgsl/gemm_tiled.wgsl`` is the plain GEMM carrying that tile accumulator without the
index: each k-tile's ⊕ folded into the result by ⊕ (TACC 1) or by the argmax's compare and select
without the index's select (TACC 2); for min/max ⊕ its result equals the plain GEMM's bit for bit.
If TACC is as slow as the argmax first pass, TACC + the second pass is a measured floor for every
argmax by k-tile on the 8×8 thread tile.

Checks first: every TACC form, and the library's argmax tile, exact against ``tests/reference.py``
(numpy, written apart from the kernels) through the backend with the form forced (s6's
``check_extremes``: ±inf, ±0, ties, odd shapes with k cut inside a k-tile, k = 0, ``c``, batches;
subnormals only where the adapter keeps them) and the argmax's ties across k-tiles (s4); then GPU
timestamps round-robin (median of 9, quartiles) at 4096³ for min_plus and max_plus: (a) the plain
default (``gemm.TILE``), (b) ``gemm.TILE_ARGMAX`` without argmax (scalar stores and DV), (c) TACC 1
on TILE_ARGMAX's parameters (PF 1, scalar stores and DV) and at PF 0 / PF 2 (DV), TACC 2 (PF 1, DV),
(d) the argmax first pass (DV, as the library runs it), (e) the whole argmax (first pass + transpose
+ second pass, the library's commands), the transpose alone; the second pass is (e) − (d). Each
timed result is checked on sampled rows first.

    python benchmarks/bench_wgpu_argmax_s7.py --out $OUT [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

os.environ.setdefault("PYTROPICAL_WEBGPU", "wgpu")
HERE = os.path.dirname(os.path.abspath(__file__))
# this checkout's package first, whatever PYTHONPATH says (TACC exists only in its gemm_tiled.wgsl)
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "tests"), os.path.dirname(HERE)]

import _wgpu_timing as timing  # noqa: E402
import bench_wgpu_gemm_s6 as s6  # noqa: E402
from _wgpu_timing import log  # noqa: E402
from bench_wgpu_argmax import Problem  # noqa: E402
from bench_wgpu_argmax_s4 import check_argmax_ties, round_robin  # noqa: E402

import pytropical_gpu as ptg  # noqa: E402
from pytropical_gpu.backends.wgpu import gemm  # noqa: E402
from pytropical_gpu.backends.wgpu import gemm_passes as passes  # noqa: E402
from pytropical_gpu.backends.wgpu.device import get_engine  # noqa: E402

OUT = s6.OUT  # s6's and s4's checks record into this run's JSON
OUT.update(argmax_s7=[], summary={}, notes=__doc__)
SEMIRINGS = ("min_plus", "max_plus")
TA = gemm.TILE_ARGMAX
#: the plain GEMMs timed (ARGMAX false), label -> tile
PLAIN = {"a plain TILE": gemm.TILE, "b plain TILE_ARGMAX": TA,
         "b plain TILE_ARGMAX DV": dict(TA, DV=True),
         "c TACC1 PF1": dict(TA, PF=1, TACC=1), "c TACC1 PF1 DV": dict(TA, PF=1, TACC=1, DV=True),
         "c TACC1 PF0 DV": dict(TA, PF=0, TACC=1, DV=True),
         "c TACC1 PF2 DV": dict(TA, PF=2, TACC=1, DV=True),
         "c TACC2 PF1 DV": dict(TA, PF=1, TACC=2, DV=True)}
#: the TACC forms checked with the extreme values: the timed ones without DV (a forced DV would
#: not fit the odd shapes; the timed DV forms are checked on sampled rows of their 4096³ result)
CHECKED = {x.removesuffix(" DV"): {k: v for k, v in kp.items() if k != "DV"}
           for x, kp in PLAIN.items() if "TACC" in x}


def has_tacc() -> bool:
    """The imported package's ``gemm_tiled`` knows TACC (an older one renders the plain kernel)."""
    from pytropical_gpu.backends.wgpu import templating
    from pytropical_gpu.semirings import get_semiring

    code = gemm.semiring_code(get_semiring("min_plus"), np.dtype(np.float32), False)
    return "tacc_0_0" in templating.render("gemm_tiled", **code.params(), **PLAIN["c TACC1 PF1"],
                                           ARGMAX=False, HAS_C=False)


def checks(quick) -> bool:
    """Every TACC form and the library's argmax tile against numpy's reference: the two folds
    (⊕, compare and select) on min_plus and max_plus, the other prefetch forms (the same fold)
    and the argmax's extremes on min_plus (its ties on both), to keep the H200's compiles short."""
    both = [("min_plus", "float32")] + ([] if quick else [("max_plus", "float32")])
    if not get_engine().flushes_subnormals:  # as s6: the H200 through Vulkan flushes them
        s6.SPECIALS.extend(s6.SUBNORMALS)
    log(f"f32 specials in the checks: {s6.SPECIALS}")
    ok = True
    storage = get_engine().limits.max_workgroup_storage
    for x, kp in CHECKED.items():
        if gemm.tile_storage(kp) > storage:
            log(f"{x}: needs {gemm.tile_storage(kp)} B of workgroup memory, device has {storage}")
            continue
        s6.CASES[:] = both if x.endswith("PF1") else both[:1]
        ok &= s6.check_extremes(x, kp, False)
    s6.CASES[:] = both[:1]
    ok &= s6.check_extremes("argmax TILE_ARGMAX", TA, True)
    ok &= check_argmax_ties("argmax TILE_ARGMAX", TA)
    log(f"checks {'passed' if ok else 'FAILED'}: {sum(c['ok'] for c in OUT['checks'])} of "
        f"{len(OUT['checks'])}")
    return ok


def time_semiring(eng, sname, size, rounds, reps):
    """The rows of one semiring, sampled round-robin; ratios to (a) and (b) of the same run."""
    p = Problem(eng, size, size, size, True, sname)
    q = Problem(eng, size, size, size, False, sname)
    storage = eng.limits.max_workgroup_storage
    rows = {x: [q.tiled(dict(kp, ARGMAX=False))] for x, kp in PLAIN.items()
            if gemm.tile_storage(kp) <= storage}
    kpa = dict(TA, ARGMAX=True, AT=True, DV=True)  # as gemm.gemm: n % 4 == 0, no c
    first = p.tiled(kpa)
    fix, tmps = passes.argfix_commands(eng, p.code, kpa, p.binds, size, size, size)
    rows["d argmax first"], rows["e argmax whole"] = [first], [first] + fix
    if len(fix) == 2:
        rows["f transpose"] = fix[:1]
    oks = {x: q.check(c) for x, c in rows.items() if x[0] in "abc"}
    oks["e argmax whole"] = oks["d argmax first"] = p.check(rows["e argmax whole"])
    oks["f transpose"] = True  # its output is read by the whole argmax's check
    bad = [x for x, v in oks.items() if not v]
    if bad:
        log(f"{sname}: sampled checks FAILED for {bad}: not timed")
    res = round_robin(eng, {x: c for x, c in rows.items() if oks.get(x)}, reps, rounds)
    a = res["a plain TILE"]["median_ms"]
    b = res["b plain TILE_ARGMAX"]["median_ms"]
    for x, r in res.items():
        r.update(ok=oks[x], label=f"{sname} {x}", semiring=sname, m=size, k=size, n=size,
                 a_over_this=a / r["median_ms"], b_over_this=b / r["median_ms"],
                 tops=2 * size ** 3 / r["median_ms"] / 1e9)
        log(f"{size}^3 {sname} {x}: {r['median_ms']:.4f} ms [q1 {r['q1_ms']:.4f}, q3 "
            f"{r['q3_ms']:.4f}] a/this {r['a_over_this']:.3f} b/this {r['b_over_this']:.3f} "
            f"ok={r['ok']}")
        OUT["argmax_s7"].append(r)
    s = summarize(res)
    OUT["summary"][sname] = s
    log(f"{sname} summary: {s}")
    eng.release(*tmps)
    p.release()
    q.release()


def summarize(res) -> dict:
    """The floor: TACC (as the argmax first pass: PF 1, DV) + the measured second pass."""
    med = {x: r["median_ms"] for x, r in res.items()}
    a = med["a plain TILE"]
    s = {"a_plain_ms": a, "target_total_ms": a / 0.85,
         "second_pass_ms": med["e argmax whole"] - med["d argmax first"],
         "issue_ratio_a_over_whole": a / med["e argmax whole"]}
    if "c TACC1 PF1 DV" in med:
        floor = med["c TACC1 PF1 DV"] + s["second_pass_ms"]
        s.update(floor_ms=floor, floor_ratio=a / floor,
                 tacc_over_first=med["c TACC1 PF1 DV"] / med["d argmax first"],
                 tacc_share_of_first_excess=(med["c TACC1 PF1 DV"] - med["b plain TILE_ARGMAX DV"])
                 / max(1e-9, med["d argmax first"] - med["b plain TILE_ARGMAX DV"]))
    return s


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (lavapipe smoke)")
    ap.add_argument("--out", default=".", help="folder for the JSON and the log")
    args = ap.parse_args(argv)
    name = "wgpu_argmax_quick_s7" if args.quick else "wgpu_argmax_h200_s7"
    os.makedirs(args.out, exist_ok=True)
    logf = open(os.path.join(args.out, name + ".log"), "w")  # noqa: SIM115 - for the whole run
    sys.stdout = _Tee(sys.stdout, logf)
    if not has_tacc():
        log(f"{ptg.__file__}: its gemm_tiled.wgsl has no TACC (run from branch s7argmax)")
        return 2
    eng = get_engine()
    OUT["device"] = f"{eng.rt.info.name} ({eng.rt.info.backend}, {eng.rt.name})"
    log(f"device {OUT['device']}; package {ptg.__file__}; workgroup storage "
        f"{eng.limits.max_workgroup_storage} B")
    t0 = time.time()
    ok = checks(args.quick)
    log(f"checks took {time.time() - t0:.0f} s ({eng.stats['compiles']} pipelines compiled)")
    size, rounds, reps = (256, 3, 2) if args.quick else (4096, 9, 3)
    OUT["sizes"] = {"m": size, "k": size, "n": size, "rounds": rounds, "dispatches_a_sample": reps}
    steps = [lambda s=s: time_semiring(eng, s, size, rounds, reps) for s in SEMIRINGS]
    timing.run_steps(steps, OUT, os.path.join(args.out, name + ".json"), t0)
    log(f"{eng.stats['compiles']} pipelines compiled in all")
    logf.flush()
    return 0 if ok and not OUT["errors"] else 1


class _Tee:
    """stdout into the terminal and the run's log."""

    def __init__(self, *files):
        self.files = files

    def write(self, s):
        for f in self.files:
            f.write(s)

    def flush(self):
        for f in self.files:
            f.flush()


if __name__ == "__main__":
    sys.exit(main())
