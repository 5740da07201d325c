"""Issue 14, CUDA GEMM rows still open (second session): every variant in one device run, the new
``cuda/semiring_gemm.cu`` against the committed one (``--baseline`` source, same run, same device).

(a) min_plus f32 2048³ / 8192³: tile configurations (128x128 at 2 blocks/SM, 128x256 at 1: 256 and
    128 blocks on 132 SMs), split k, the interior-block load path (new source only).
(b) int32 max_plus / min_plus, any input: operands |x| < 2^30 without the zero (DPX slab body),
    the zero in every slab (masked slab body, new; guarded, old), and the DPX kernel itself.
(c) m = 4 (and 16), k = 4, n = 2,097,152: the wide kernel with 16 or 4 accumulator rows.
Each candidate is first checked bit for bit against tests/reference.py (odd and interior shapes,
split k, argmax with ``c``, the zero / extremes / wild operands); a failed candidate is not timed.
Timings: CUDA events, median of several, beside a device copy and cuBLAS SGEMM in the same run.

``git show REV:cuda/semiring_gemm.cu > OLD.cu`` (the run in benchmarks/results used 244729a), then
``python3 benchmarks/bench_gemm_cuda_s2.py --baseline OLD.cu --json $OUT/x.json``
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_gemm_sweep import Timer, baselines, operands, precompile  # noqa: E402
from reference import ref_matmul  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch, kernels  # noqa: E402
from pytropical_gpu.backends.cuda.kernels import ModuleSpec  # noqa: E402


@dataclasses.dataclass(frozen=True)
class TextSpec(ModuleSpec):
    """A module compiled from given source text (the baseline file) instead of cuda/."""

    text: str = ""

    def code(self) -> str:
        return self.text + self.extra


def _cdiv(a, b):
    return -(-a // b)


def texpr(functor, cfg, arg=False):
    bm, bn, bk, tm, tn, mb = cfg
    return f"ptg::sr_gemm<{functor}, {bm}, {bn}, {bk}, {tm}, {tn}, {mb}, {'true' if arg else 'false'}>"


def rname(cfg, arg=False):
    return "s2_" + "_".join(map(str, cfg)) + ("_arg" if arg else "")


BIG, WIDE, K16, SMALL, SMALL_ARG = ((128, 128, 8, 8, 8, 2), (128, 256, 16, 8, 16, 1), (128, 128, 16, 8, 4, 1),
                                    (64, 64, 16, 4, 4, 1), (64, 64, 16, 4, 4, 2))
#: label -> (reference name, dtype, functor, plain functor for combine, tile configs, argmax configs)
CASES = {
    "min_plus f32": ("min_plus", "float32", "ptg::MinPlus<float>", None, [BIG, WIDE, SMALL], [SMALL_ARG]),
    "max_times f32": ("max_times", "float32", "ptg::MaxTimes<float>", None, [BIG], []),
    "max_min f32 key": ("max_min", "float32", "ptg::KeyMinMax<true>", "ptg::MaxMin<float>", [BIG], []),
    "max_min i32": ("max_min", "int32", "ptg::MaxMin<int>", None, [SMALL], [SMALL_ARG]),
    "max_plus i32": ("max_plus", "int32", "ptg::MaxPlus<int>", None, [BIG, K16, SMALL], [SMALL_ARG]),
    "min_plus i32": ("min_plus", "int32", "ptg::MinPlus<int>", None, [BIG, K16], [SMALL_ARG]),
    "max_plus i32 DPX": ("max_plus", "int32", "ptg::MaxPlusDpx", "ptg::MaxPlus<int>", [BIG, WIDE], []),
}
I32 = np.iinfo(np.int32)


def specs_for(tag, text):
    """One module per case: roles s2_<cfg>[_arg], combine[_arg]; plus the real min_plus f32 module
    (wide kernels) for the new source."""
    out = {}
    for label, (_, _, functor, plain, cfgs, acfgs) in CASES.items():
        names = {rname(c): texpr(functor, c) for c in cfgs}
        names.update({rname(c, True): texpr(functor, c, True) for c in acfgs})
        names["combine"] = f"ptg::sr_combine<{plain or functor}, false>"
        if acfgs:
            names["combine_arg"] = f"ptg::sr_combine<{plain or functor}, true>"
        for c in cfgs + acfgs:
            kernels.TILES[rname(c)] = kernels.TILES[rname(c, True)] = c
        out[label] = TextSpec(f"s2:{tag}:{label}", "semiring_gemm.cu", names, "", text)
    wide = {"wide4": "ptg::sr_gemm_wide<ptg::MinPlus<float>, false, 4>",
            "wide4_arg": "ptg::sr_gemm_wide<ptg::MinPlus<float>, true, 4>"}
    if tag == "new":
        wide.update({"wide4m4": "ptg::sr_gemm_wide<ptg::MinPlus<float>, false, 4, 4>",
                     "wide4m4_arg": "ptg::sr_gemm_wide<ptg::MinPlus<float>, true, 4, 4>"})
    out["wide"] = TextSpec(f"s2:{tag}:wide", "semiring_gemm.cu", wide, "", text)
    return out


def int_operands(rng, kind, shape_a, shape_b, zero):
    """int32 operands: "fast" |x| < 2^30, no zero; "zeroed" the same with the zero in every 8-wide
    k slab (A) and sprinkled in B, values up to 2^30 - 1 and many ties; "wild" zeroed plus a few
    slabs holding INT_MIN + 1, INT_MAX - 1 and +-2^30 (guarded body); "dpx" |x| < 2^28 and zeros."""
    lim = 2**28 if kind == "dpx" else 2**30
    pool = np.array([lim - 1, -(lim - 1), lim // 2, -(lim // 2), 3, -3, 0, 2**27 + 1], np.int64)
    a = np.where(rng.random(shape_a) < 0.5, rng.choice(pool, shape_a), rng.integers(-lim + 1, lim, shape_a))
    b = np.where(rng.random(shape_b) < 0.5, rng.choice(pool, shape_b), rng.integers(-lim + 1, lim, shape_b))
    a, b = a.astype(np.int32), b.astype(np.int32)
    if kind in ("zeroed", "wild", "dpx"):
        a[..., ::7] = np.where(rng.random(a[..., ::7].shape) < 0.7, zero, a[..., ::7])
        a[rng.random(a.shape) < 0.05] = zero
        b[rng.random(b.shape) < 0.08] = zero
        a[..., 1, :] = zero  # a row with no term at all
    if kind == "wild":
        k = a.shape[-1]
        for k0 in range(0, k, max(8, k // 5)):
            a[..., 2, k0] = I32.min + 1
            a[..., 3, k0] = I32.max - 1
            b[..., k0, 0] = 2**30
            b[..., k0, 2] = -(2**30)
    return a, b


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s2.json")
    p.add_argument("--baseline", required=True, help="the committed cuda/semiring_gemm.cu")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg

    be = tg.get_backend("cuda")
    info = be.describe()
    sms = info["multiprocessors"]
    timer = Timer(cp)
    out = {"device": info, "rows": [], "checks": [], "failed": []}
    rows, failed = out["rows"], set()

    def log(*a):
        print(*a, flush=True)

    new_text = (ROOT / "cuda" / "semiring_gemm.cu").read_text()
    old_text = Path(args.baseline).read_text()
    specs = {"new": specs_for("new", new_text), "old": specs_for("old", old_text)}
    real = kernels.gemm_spec(tg.get_semiring("min_plus"), np.dtype("float32"))
    t0 = time.perf_counter()
    cpu_s = precompile([s for d in specs.values() for s in d.values()] + [real], args.workers)
    out["compile"] = {"wall_s": time.perf_counter() - t0, "cpu_s": cpu_s}
    log(f"compiled {out['compile']}")

    # ------------------------------------------------------------------ baselines
    S = 2048 if args.quick else 8192
    rng = np.random.default_rng(1)
    copy_bw = baselines(cp, timer, rows, log, (2048, S), rng)

    # ------------------------------------------------------------------ checks
    crng = np.random.default_rng(2)
    shapes = [(67, 45, 83, 1), (130, 132, 260, 1), (70, 600, 36, 2), (256, 72, 256, 1), (128, 264, 256, 2)]

    def run_tile(spec, rl, a, b, c, arg, ks, k):
        bk = kernels.TILES[rl][2]
        kc = _cdiv(_cdiv(k, ks), bk) * bk
        plan = gemm_launch.Plan("tile", rl, _cdiv(k, kc), kc)
        return gemm_launch.run(be, spec, a, b, c, arg, plan)

    cache = {}

    def inputs(name, dt, kind, m, k, n, use_c):
        """operands, c and the reference, generated once for every configuration of a case"""
        key = (name, dt.name, kind, m, k, n, use_c)
        if key not in cache:
            zero = I32.min if name.startswith("max") else I32.max
            if kind == "mixed":
                a, b = operands(crng, name, dt, m, k, n)
            else:
                a, b = int_operands(crng, kind, (m, k), (k, n), zero)
            c = operands(crng, name, dt, m, 1, n)[0][:, :1] * np.ones((1, n), dt) if use_c else None
            cache[key] = (a, b, c, *ref_matmul(a, b, name, c))
        return cache[key]

    def check(tag, label, rl, arg):
        name, dt = CASES[label][0], np.dtype(CASES[label][1])
        spec = specs[tag][label]
        kinds = ["mixed"]
        if dt == np.int32 and "plus" in name:
            kinds = ["dpx"] if "DPX" in label else ["fast", "zeroed", "wild", "mixed"]
        ok_all = True
        for kind in kinds:
            for (m, k, n, ks) in shapes:
                for use_c in ((False, True) if arg else (False,)):
                    a, b, c, want, widx = inputs(name, dt, kind, m, k, n, use_c)
                    d, idx = run_tile(spec, rl, cp.asarray(a)[None], cp.asarray(b)[None],
                                      None if c is None else cp.asarray(c)[None], arg, ks, k)
                    ok = bool(np.array_equal(d.get()[0], want)) and (
                        not arg or bool(np.array_equal(idx.get()[0], widx)))
                    out["checks"].append({"src": tag, "case": label, "role": rl, "kind": kind, "argmax": arg,
                                          "shape": [m, k, n], "ks": ks, "c": use_c, "ok": ok})
                    if not ok:
                        log(f"CHECK FAILED {tag} {label} {rl} {kind} arg={arg} {m}x{k}x{n} ks={ks} c={use_c}")
                        ok_all = False
        return ok_all

    t0 = time.perf_counter()
    for tag in ("new",):  # the old source is the committed one, checked by the previous session
        for label, (_, _, _, _, cfgs, acfgs) in CASES.items():
            for cfg, arg in [(c, False) for c in cfgs] + [(c, True) for c in acfgs]:
                if not check(tag, label, rname(cfg, arg), arg):
                    failed.add((tag, label, rname(cfg, arg)))
                    failed.add(("old", label, rname(cfg, arg)))  # no comparison without the new one
    log(f"tile checks {time.perf_counter() - t0:.1f} s")
    # wide kernels: m = 3, 4, 9, 16 with c, argmax, through the plan and the fixed roles
    for tag, role in (("new", "wide4m4"), ("new", "wide4")):
        for (m, k, n) in ((3, 5, 4096), (4, 64, 2048), (4, 4, 1 << 16), (9, 7, 1028), (16, 3, 1024)):
            if role == "wide4m4" and m > 4:
                continue
            for arg in (False, True):
                a, b, c, want, widx = inputs("min_plus", np.dtype("float32"), "mixed", m, k, n, True)
                rl = role + ("_arg" if arg else "")
                d, idx = gemm_launch.run(be, specs[tag]["wide"], cp.asarray(a)[None], cp.asarray(b)[None],
                                         cp.asarray(c)[None], arg, gemm_launch.Plan("wide", rl))
                ok = bool(np.array_equal(d.get()[0], want)) and (
                    not arg or bool(np.array_equal(idx.get()[0], widx)))
                out["checks"].append({"src": tag, "case": "wide", "role": rl, "shape": [m, k, n], "ok": ok})
                if not ok:
                    log(f"CHECK FAILED {tag} {rl} {m}x{k}x{n}")
                    failed.add((tag, "wide", rl))
    np_plan = gemm_launch.plan(4, 2097152, 4, 1, 4, False, True, sms, real.names)
    out["plan_4x4x2M"] = np_plan.role
    log(f"checks: {len(out['checks'])} runs, failed: {sorted(failed)}; plan 4x4x2M -> {np_plan.role}")

    # ------------------------------------------------------------------ timings
    tcache = {}
    def time_tile(tag, label, cfg, size, ks=1, kind=None, arg=False):
        rl = rname(cfg, arg)
        if (tag, label, rl) in failed:
            return None
        name, dt = CASES[label][0], np.dtype(CASES[label][1])
        m = k = n = size
        key = (name, dt.name, kind, size)
        if key not in tcache:
            if dt == np.int32:  # on the device (numpy would take seconds per 8192² operand)
                zero = I32.min if name.startswith("max") else I32.max
                lim = 2**28 if kind == "dpx" else 2**30
                a = cp.random.randint(-lim + 1, lim, (1, m, k), dtype=cp.int32)
                b = cp.random.randint(-lim + 1, lim, (1, k, n), dtype=cp.int32)
                if kind != "fast":  # the zero in every 8-wide k slab of A, sprinkled in B
                    a[..., ::7] = zero
                    a[cp.random.random(a.shape) < 0.05] = zero
                    b[cp.random.random(b.shape) < 0.08] = zero
                tcache[key] = a, b
            else:
                tcache[key] = (cp.asarray(rng.standard_normal((1, m, k), dtype=np.float32)),
                               cp.asarray(rng.standard_normal((1, k, n), dtype=np.float32)))
        a, b = tcache[key]
        spec = specs[tag][label]

        def call():
            return run_tile(spec, rl, a, b, None, arg, ks, k)

        big = size >= 8192
        t = timer(call, 3 if big else 7, inner=1 if big else 10)
        r = {"op": label + (" argmax" if arg else ""), "src": tag, "config": cfg, "size": f"{size}^3",
             "ks": ks, "input": kind, "s": t, "TOPS": 2 * m * n * k / t / 1e12}
        rows.append(r)
        log(f"{tag:3s} {r['op']:22s} {str(cfg):26s} {r['size']:7s} ks={ks} {kind or '':7s} "
            f"{t * 1e3:9.3f} ms {r['TOPS']:6.2f} TOPS")
        return r

    # (a) min_plus f32
    for size in sorted({2048, S}):
        for tag in ("new", "old"):
            for cfg in (BIG, WIDE, SMALL):
                if size >= 8192 and cfg == SMALL:
                    continue
                time_tile(tag, "min_plus f32", cfg, size)
            if size == 2048:
                time_tile(tag, "min_plus f32", BIG, size, ks=2)
                time_tile(tag, "min_plus f32", SMALL_ARG, size, arg=True)
        for tag in ("new", "old"):
            time_tile(tag, "max_times f32", BIG, size)
            time_tile(tag, "max_min f32 key", BIG, size)
    # (b) int32 plus
    for tag in ("new", "old"):
        for cfg in (BIG, K16):
            for kind in ("fast", "zeroed"):
                time_tile(tag, "max_plus i32", cfg, S, kind=kind)
            time_tile(tag, "min_plus i32", cfg, S, kind="zeroed")
        for cfg in (BIG, WIDE):
            time_tile(tag, "max_plus i32 DPX", cfg, S, kind="dpx")
        time_tile(tag, "max_plus i32", SMALL_ARG, 2048, kind="zeroed", arg=True)

    # (c) wide: m x 4 x 2,097,152
    for (m, k, n) in ((4, 4, 2097152), (16, 4, 2097152), (4, 16, 1048576)):
        a = cp.asarray(rng.integers(-50, 50, (1, m, k)).astype(np.float32))
        b = cp.asarray(rng.integers(-50, 50, (1, k, n)).astype(np.float32))
        nb = (m * k + k * n + m * n) * 4
        for tag, role in (("new", "wide4m4"), ("new", "wide4"), ("old", "wide4")):
            if role == "wide4m4" and m > 4:
                continue
            spec = specs[tag]["wide"]
            if (tag, "wide", role) in failed:
                continue

            def call(spec=spec, role=role, a=a, b=b):
                return gemm_launch.run(be, spec, a, b, None, False, gemm_launch.Plan("wide", role))

            t = timer(call, 7, inner=10)
            r = {"op": "min_plus f32 small-k", "src": tag, "kernel": role, "size": f"{m}x{k}x{n}", "s": t,
                 "GB_s": nb / t / 1e9, "frac_of_copy_bw": nb / t / copy_bw, "copy_floor_s": nb / copy_bw,
                 "s_single_call": timer(call, 7)}
            rows.append(r)
            log(f"{tag:3s} wide {role:8s} {r['size']:14s} {t * 1e3:8.4f} ms "
                f"({r['frac_of_copy_bw']:.2f} of copy)")

    out["failed"] = [list(f) for f in sorted(failed)]
    Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
