"""WGSL GEMM issue 14, session 7: a measured floor for the argmax by k-tile (min_plus, max_plus f32).

The argmax first pass keeps, per output, a tile accumulator beside the running best and the index
(s4's H1: ≈ 210–240 registers a thread, one workgroup an SM where the plain kernel fits two).
Session 7 measured (c) ``TACC``, the plain GEMM carrying that tile accumulator without the index,
and (g) the k-tile indices packed (``PIDX`` 8: four a ``u32``, 16: two). Since session 8 (s8tpl)
``wgsl/gemm_tiled.wgsl`` has neither TACC nor PIDX 8 (it refuses PIDX 8), and this script runs
only what still exists; **the TACC (c) rows, the floor summary (``floor_ms``, ``tacc_*``) and the
PIDX 8 rows and checks need the template at commit 41db6f3**: run this script from a checkout of
that commit (its ``wgpu_argmax_h200_s7`` / ``_s8`` results were made so). Keys of the remaining
rows are as they were.

Checks first: the library's argmax tile, unpacked and with PIDX 16 (the library's form for
builtin min/max ⊕ while k <= 2^20), exact against ``tests/reference.py`` (numpy, written apart
from the kernels) through the backend with the form forced (s6's ``check_extremes``: ±inf, ±0,
ties, odd shapes with k cut inside a k-tile, k = 0, ``c``, batches; subnormals only where the
adapter keeps them) and the argmax's ties across k-tiles (s4); PIDX 16's field (k-tile 255 and 256
winning every output; the library refusing k beyond 2^16 k-tiles) and its first pass against the
unpacked one's, bit for bit. Then GPU timestamps round-robin (median of 9, quartiles) at 4096³
for min_plus and max_plus: (a) the plain default (``gemm.TILE``), (b) ``gemm.TILE_ARGMAX`` without
argmax (scalar stores and DV), (d) the unpacked argmax first pass (DV), (e) the whole argmax
(first pass + transpose + second pass, the library's commands), the transpose alone; the second
pass is (e) − (d); (g) the same with PIDX 16, first pass and whole. Each timed result is checked
on sampled rows first.

    python benchmarks/bench_wgpu_argmax_s7.py --out $OUT [--quick] [--pidx16]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

os.environ.setdefault("PYTROPICAL_WEBGPU", "wgpu")
HERE = os.path.dirname(os.path.abspath(__file__))
# this checkout's package first, whatever PYTHONPATH says (its gemm_tiled.wgsl is the one meant)
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
from pytropical_gpu.semirings import get_semiring  # noqa: E402

OUT = s6.OUT  # s6's and s4's checks record into this run's JSON
OUT.update(argmax_s7=[], summary={}, notes=__doc__)
SEMIRINGS = ("min_plus", "max_plus")
TA = gemm.TILE_ARGMAX
#: the plain GEMMs timed (ARGMAX false), label -> tile (the TACC rows "c ...": at 41db6f3 only)
PLAIN = {"a plain TILE": gemm.TILE, "b plain TILE_ARGMAX": TA,
         "b plain TILE_ARGMAX DV": dict(TA, DV=True)}
#: the argmax first passes timed (as the library runs it: TILE_ARGMAX, DV), label suffix -> PIDX
#: (" PIDX8": at 41db6f3 only)
PACKED = {"": 0, " PIDX16": 16}
#: what this script no longer runs, logged at its start
GONE = ("TACC rows (c), the floor summary and the PIDX 8 rows and checks: not in this "
        "gemm_tiled.wgsl since session 8; run this script at commit 41db6f3 for them")


def has_pidx16() -> bool:
    """The imported package's ``gemm_tiled`` knows PIDX 16 (an older one renders the unpacked
    argmax: it would pass every check and time as (d))."""
    from pytropical_gpu.backends.wgpu import templating

    code = gemm.semiring_code(get_semiring("min_plus"), np.dtype(np.float32), False)
    pidx = templating.render("gemm_tiled", **code.params(), **dict(TA, PIDX=16), ARGMAX=True,
                             AT=True, HAS_C=False)
    return "pidx_0_0" in pidx


def checks(quick) -> bool:
    """The library's argmax tile, unpacked and with PIDX 16, against numpy's reference: the
    extremes and the ties across k-tiles on min_plus and max_plus (min_plus only with --quick),
    PIDX 16's field ends and first pass."""
    both = [("min_plus", "float32")] + ([] if quick else [("max_plus", "float32")])
    if not get_engine().flushes_subnormals:  # as s6: the H200 through Vulkan flushes them
        s6.SPECIALS.extend(s6.SUBNORMALS)
    log(f"f32 specials in the checks: {s6.SPECIALS}")
    ok = True
    for x, px in PACKED.items():
        s6.CASES[:] = both
        kp = dict(TA, PIDX=px) if px else TA
        ok &= s6.check_extremes("argmax TILE_ARGMAX" + x, kp, True)
        ok &= check_argmax_ties("argmax TILE_ARGMAX" + x, kp)
        if px:
            ok &= check_pidx_field(kp) & check_pidx_first_pass(kp)
    log(f"checks {'passed' if ok else 'FAILED'}: {sum(c['ok'] for c in OUT['checks'])} of "
        f"{len(OUT['checks'])}")
    return ok


def check_pidx_field(kp) -> bool:
    """The field's ends through the first pass alone (DV), k running downhill (the last k-tile
    wins every output): k = 4096 (k-tile 255) and 4112 (k-tile 256: past 8 bits), D and I exact;
    then the library refusing to queue more k-tiles than the field holds (``gemm_passes.check_pidx``,
    k = 2^20 + 16: nothing dispatched, so nothing of that size is allocated)."""
    eng = get_engine()
    ok = True
    for k, want_i in ((4096, 255), (4112, 256)):
        p = Problem(eng, 8, k, 36, True)
        p.a[:] = -16 * np.arange(k, dtype=np.float32)
        p.upload()
        fkp = dict(kp, ARGMAX=True, AT=True, DV=True)
        eng.submit([p.tiled(fkp)])
        got = eng.download(p.D, np.float32, (8, 36))
        gi = eng.download(p.I, np.int32, (8, 36))
        want = ptg.matmul(p.a, p.b, "min_plus", backend="cpu")
        same = bool(np.array_equal(got, want) and np.all(gi == want_i))
        if not same:
            log(f"CHECK FAILED PIDX{kp['PIDX']} field k={k}: I in {np.unique(gi)[:8]}")
        ok &= same
        if k == 4112:
            big = (1 << kp["PIDX"]) * kp["BK"] + kp["BK"]
            pipe = eng.pipeline("gemm_tiled", **p.code.params(), **fkp, HAS_C=False)
            try:
                gemm.make_dispatch(eng, pipe, "gemm_tiled", fkp, p.binds, 8, 36, big)
                log(f"CHECK FAILED PIDX{kp['PIDX']} k={big}: queued, not refused")
                ok = False
            except RuntimeError:
                pass
        p.release()
    OUT["checks"].append({"label": f"argmax PIDX{kp['PIDX']} field ends", "ok": ok})
    return ok


def check_pidx_first_pass(kp) -> bool:
    """The packed first pass's D and I against the library's unpacked one, bit for bit (DV, the
    timed pipelines, unguarded as no operand mixes the infs): partial tiles, ties, and rows and
    columns of the zero (no k-tile improves: I = -1, which the second pass hides from the checks
    through ``matmul``)."""
    eng = get_engine()
    rng = np.random.default_rng(7)
    ok = True
    for sname in SEMIRINGS:
        z = np.float32(np.inf if sname == "min_plus" else -np.inf)
        for m, k, n in [(70, 300, 36), (131, 77, 132), (9, 4096, 36)]:
            p = Problem(eng, m, k, n, True, sname)
            p.a[:] = rng.integers(0, 3, (m, k))
            p.b[:] = rng.integers(0, 3, (k, n))
            p.a[rng.random((m, k)) < 0.1] = z
            p.a[::4] = z
            p.b[:, 1::5] = z
            p.code = gemm.semiring_code(get_semiring(sname), np.dtype(np.float32), False)
            p.upload()
            got = []
            for kpx in (TA, kp):
                eng.submit([p.tiled(dict(kpx, ARGMAX=True, AT=True, DV=True))])
                got.append((eng.download(p.D, np.int32, (m, n)), eng.download(p.I, np.int32, (m, n))))
            want = ptg.matmul(p.a, p.b, sname, backend="cpu").view(np.int32)
            same = bool(np.array_equal(got[1][0], want) and np.array_equal(got[1][1], got[0][1])
                        and np.array_equal(got[0][0], want) and (got[0][1] == -1).any())
            if not same:
                log(f"CHECK FAILED PIDX{kp['PIDX']} first pass {sname} {m}x{k}x{n}")
            ok &= same
            p.release()
    OUT["checks"].append({"label": f"argmax PIDX{kp['PIDX']} first pass I", "ok": ok})
    return ok


def time_semiring(eng, sname, size, rounds, reps):
    """The rows of one semiring, sampled round-robin; ratios to (a) and (b) of the same run."""
    p = Problem(eng, size, size, size, True, sname)
    q = Problem(eng, size, size, size, False, sname)
    storage = eng.limits.max_workgroup_storage
    rows = {x: [q.tiled(dict(kp, ARGMAX=False))] for x, kp in PLAIN.items()
            if gemm.tile_storage(kp) <= storage}
    kpa = dict(TA, ARGMAX=True, AT=True, DV=True)  # as gemm.gemm: n % 4 == 0, no c
    fix, tmps = passes.argfix_commands(eng, p.code, kpa, p.binds, size, size, size)
    if len(fix) == 2:
        rows["f transpose"] = fix[:1]
    oks = {x: q.check(c) for x, c in rows.items() if x[0] in "abc"}
    oks["f transpose"] = True  # its output is read by the whole argmax's check
    for x, px in PACKED.items():  # (d), (e); (g): the same with packed indices (PIDX)
        if px and (size + 15) // 16 > 2 ** px:
            log(f"{sname}: PIDX{px} holds {2 ** px} k-tiles, k = {size} has more: not timed")
            continue
        first = p.tiled(dict(kpa, PIDX=px) if px else kpa)
        rows["d argmax first" + x], rows["e argmax whole" + x] = [first], [first] + fix
        oks["e argmax whole" + x] = oks["d argmax first" + x] = p.check([first] + fix)
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
    for x in PACKED:
        if x and "d argmax first" + x in res:
            med = {y: res[y + x]["median_ms"] for y in ("d argmax first", "e argmax whole")}
            log(f"{sname}{x}: first pass {med['d argmax first'] / res['d argmax first']['median_ms']:.3f}"
                f" of the unpacked one's; a/whole {a / med['e argmax whole']:.3f}")
    eng.release(*tmps)
    p.release()
    q.release()


def summarize(res) -> dict:
    """The ratios to the plain default (a); the floor (TACC + the second pass): at 41db6f3 only."""
    med = {x: r["median_ms"] for x, r in res.items()}
    a = med["a plain TILE"]
    s = {"a_plain_ms": a, "target_total_ms": a / 0.85,
         "second_pass_ms": med["e argmax whole"] - med["d argmax first"],
         "issue_ratio_a_over_whole": a / med["e argmax whole"]}
    for x in PACKED:
        if x and "e argmax whole" + x in med:
            s[f"pidx{x[5:]}_first_ms"] = med["d argmax first" + x]
            s[f"pidx{x[5:]}_whole_ms"] = med["e argmax whole" + x]
            s[f"pidx{x[5:]}_ratio_a_over_whole"] = a / med["e argmax whole" + x]
    return s


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (lavapipe smoke)")
    ap.add_argument("--out", default=".", help="folder for the JSON and the log")
    ap.add_argument("--pidx16", action="store_true",
                    help="kept for s7/s8 command lines: PIDX 16 now always goes through the checks")
    args = ap.parse_args(argv)
    name = "wgpu_argmax_quick_s7" if args.quick else "wgpu_argmax_h200_s7"
    os.makedirs(args.out, exist_ok=True)
    logf = open(os.path.join(args.out, name + ".log"), "w")  # noqa: SIM115 - for the whole run
    sys.stdout = _Tee(sys.stdout, logf)
    if not has_pidx16():
        log(f"{ptg.__file__}: its gemm_tiled.wgsl has no PIDX (run from main at or after 36fd555)")
        return 2
    log(f"not run here: {GONE}")
    OUT["not_run"] = GONE
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
