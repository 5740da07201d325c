"""Sweep of WGSL kernel variants (GEMM tiles, skinny GEMM, VSA bind/dot/accumulate/harden).

Every variant is first checked exactly against the cpu backend (GEMM: odd and vec4-aligned shapes,
batches, ``c``, argmax, infinities and int32 extremes) or numpy (VSA); then timed device-resident.
Timing: GPU timestamps around one compute pass of R identical dispatches when the device has
``timestamp-query`` (wgpu-py runtime), else R dispatches in one submit and a small read (the
difference of two R values, so the wait's cost cancels). A WebGPU buffer copy of the same bytes is
timed the same way beside the VSA kernels, and cuBLAS SGEMM / a CUDA copy when CuPy sees a device.

    python benchmarks/bench_wgpu_sweep.py [--quick] [--json PATH] [--only vsa,skinny,argmax,gemm]
    python benchmarks/bench_wgpu_sweep.py --only defaults   # the backend's choices only
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time

import numpy as np

os.environ.setdefault("PYTROPICAL_WEBGPU", "wgpu")

import pytropical_gpu as ptg  # noqa: E402
from pytropical_gpu import facts  # noqa: E402
from pytropical_gpu.backends.wgpu import gemm  # noqa: E402
from pytropical_gpu.backends.wgpu.device import get_engine  # noqa: E402
from pytropical_gpu.semirings import get_semiring  # noqa: E402

try:  # imported as benchmarks.bench_wgpu_sweep or run as a script
    from . import _wgpu_timing as timing
    from ._wgpu_sweep_vsa import _planes, sweep_vsa
    from ._wgpu_timing import copy_seconds, cupy_or_none, cupy_seconds, kernel_time, log
except ImportError:  # pragma: no cover
    import _wgpu_timing as timing
    from _wgpu_sweep_vsa import _planes, sweep_vsa
    from _wgpu_timing import copy_seconds, cupy_or_none, cupy_seconds, kernel_time, log

FULL_CHECKS = False
START = time.time()
BUDGET = [1e9]


def over_budget() -> bool:
    return time.time() - START > BUDGET[0]


OUT: dict = {"gemm": [], "skinny": [], "argmax": [], "vsa": [], "checks": [], "errors": []}


# ---------------------------------------------------------------------------- GEMM checks
@contextlib.contextmanager
def forced(kname: str, kp: dict):
    """Make the backend use (kname, kp) for every GEMM it routes to that kernel family."""
    orig = gemm.choose_kernel

    def choose(m, n, k, argmax, *args, **kwargs):  # the library's signature, whatever it grows
        kn, base = orig(m, n, k, argmax, *args, **kwargs)
        if kn != kname:
            return kn, base
        p = dict(kp)
        if kname == "gemm_tiled":
            p["ARGMAX"] = argmax
        else:
            p.update(K=k, N=n, AV=bool(kp.get("AV", True)) and k % 4 == 0,
                     DV=bool(kp.get("DV", True)) and n % 4 == 0)
        return kname, p

    gemm.choose_kernel = choose
    try:
        yield
    finally:
        gemm.choose_kernel = orig


def _operands(rng, shape, dt, special):
    if int(np.prod(shape)) == 0:
        return np.zeros(shape, dt)
    if dt.kind == "f":
        x = (rng.integers(-1000, 1000, shape) / 8).astype(dt)
        if special:
            x.flat[rng.choice(x.size, max(1, x.size // 50), replace=False)] = np.inf
            x.flat[rng.choice(x.size, max(1, x.size // 50), replace=False)] = -np.inf
        return x
    info = np.iinfo(np.int32)
    x = rng.integers(-(1 << 20), 1 << 20, shape).astype(np.int32)
    if special:
        x.flat[rng.choice(x.size, max(1, x.size // 30), replace=False)] = info.max
        x.flat[rng.choice(x.size, max(1, x.size // 30), replace=False)] = info.min
        x.flat[rng.choice(x.size, max(1, x.size // 30), replace=False)] = info.max - 3
    return x


def check_gemm(kname: str, kp: dict, argmax: bool, label: str) -> bool:
    rng = np.random.default_rng(7)
    if kname == "gemm_tiled":
        shapes = [(None, 37, 70, 129), (2, 132, 260, 68), (None, 5, 0, 9)]
    else:
        k, n = kp["K"], kp["N"]
        shapes = [(None, 1037, k, n), (3, 517, k, n)]
    # few compiles per variant (a device run is short): the guarded f32 kernel here; every
    # semiring of the defaults runs in the test suite
    cases = [("min_plus", "float32", True)] + ([("max_plus", "int32", True)] if FULL_CHECKS else [])
    ok = True
    with forced(kname, kp):
        for sname, dts, special in cases:
            dt = np.dtype(dts)
            for batch, m, k, n in shapes:
                lead = () if batch is None else (batch,)
                a = _operands(rng, lead + (m, k), dt, special)
                b = _operands(rng, (k, n), dt, special)
                for with_c in ((False, True) if m == 132 else (False,)):
                    c = _operands(rng, lead + (m, n), dt, special) if with_c else None
                    try:
                        got = ptg.matmul(a, b, sname, c=c, backend="wgpu", return_argmax=argmax)
                        want = ptg.matmul(a, b, sname, c=c, backend="cpu", return_argmax=argmax)
                        if argmax:
                            same = (np.array_equal(got[0], want[0], equal_nan=True)
                                    and np.array_equal(got[1], want[1]))
                        else:
                            same = np.array_equal(got, want, equal_nan=True)
                    except Exception as e:  # noqa: BLE001
                        same = False
                        OUT["errors"].append(f"{label} {sname} {dts}: {type(e).__name__}: {e}")
                    if not same:
                        ok = False
                        log(f"CHECK FAILED {label}: {sname} {dts} special={special} "
                            f"{batch}x{m}x{k}x{n} c={with_c}")
    OUT["checks"].append({"label": label, "ok": ok})
    return ok


# ---------------------------------------------------------------------------- GEMM timing
def time_gemm(eng, kname, kp, m, k, n, sname="min_plus", dts="float32", reps=3):
    rng = np.random.default_rng(0)
    dt = np.dtype(dts)
    if dt.kind == "f":
        a = (rng.integers(-1000, 1000, (m, k)) / 8).astype(dt)
        b = (rng.integers(-1000, 1000, (k, n)) / 8).astype(dt)
    else:
        a = rng.integers(-(1 << 20), 1 << 20, (m, k), dtype=np.int32)
        b = rng.integers(-(1 << 20), 1 << 20, (k, n), dtype=np.int32)
    sr = get_semiring(sname)
    code = gemm.semiring_code(sr, dt, facts.guard_needed(sr, dt, facts.of(a), facts.of(b)))
    argmax = bool(kp.get("ARGMAX", False))
    A, B = eng.upload(a), eng.upload(b)
    D = eng.alloc(m * n * 4)
    binds = [A.binding(), B.binding(), D.binding()]
    extra = []
    if argmax:
        extra = [eng.alloc(m * n * 4)]
        binds.append(extra[0].binding())
    try:
        t0 = time.perf_counter()
        pipe = eng.pipeline(kname, **code.params(), **kp, HAS_C=False)
        tc = time.perf_counter() - t0
        disp = [gemm.make_dispatch(eng, pipe, kname, kp, binds, m, n, k)]
        if kp.get("AT"):
            disp.append(gemm.argfix_dispatch(eng, code, kp, binds, m, n, k))
        eng.submit(disp)
        got = eng.download(D, dt, (m, n))
        rows = rng.choice(m, min(m, 8), replace=False)
        want = ptg.matmul(a[rows], b, sname, backend="cpu")
        if not np.array_equal(got[rows], want):
            raise AssertionError("sampled rows differ")
        if argmax:
            gi = eng.download(extra[0], np.int32, (m, n))
            _, wi = ptg.matmul(a[rows], b, sname, backend="cpu", return_argmax=True)
            if not np.array_equal(gi[rows], wi):
                raise AssertionError("argmax indices differ")
        t = kernel_time(eng, disp, reps)
        return t, tc
    finally:
        eng.release(A, B, D, *extra)


def sweep_gemm(eng, cp, quick):
    size = 1024 if quick else 8192
    base = {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "ARGMAX": False}
    variants = [
        dict(base, PF=0), dict(base, PF=1), dict(base, PF=2), dict(base, BN=64, PF=0),
        dict(base, BK=8, PF=0), dict(base, BK=32, PF=0), dict(base, TM=16, BM=256, PF=0),
        dict(base, TN=16, BN=256, PF=0), dict(base, TM=16, BM=256, BK=8, PF=2),
        dict(base, BM=64, TN=4, PF=0), dict(base, BM=64, BN=64, TM=4, TN=4, PF=0),
    ]
    if quick:  # small tiles: a software adapter compiles them in seconds
        variants = [variants[-1], dict(variants[-1], PF=1), dict(variants[-1], PF=2)]
    reps = 3 if size >= 4096 else 20
    ws = eng.limits.max_workgroup_storage
    for kp in variants:
        if over_budget():
            log('time budget spent: skipping the rest')
            break
        if gemm.tile_storage(kp) > ws:
            log(f"skip {kp}: {gemm.tile_storage(kp)} B of workgroup memory > {ws}")
            continue
        label = f"tiled {kp}"
        try:
            if not check_gemm("gemm_tiled", kp, False, label):
                continue
            t, tc = time_gemm(eng, "gemm_tiled", kp, size, size, size, reps=reps)
        except Exception as e:  # noqa: BLE001
            log(f"{label}: {type(e).__name__}: {e}")
            OUT["errors"].append(f"{label}: {type(e).__name__}: {e}")
            continue
        tops = 2 * size ** 3 / t / 1e12
        log(f"{label}: {t * 1e3:.3f} ms {tops:.2f} TOPS (compile {tc:.1f} s)")
        OUT["gemm"].append({"params": kp, "m": size, "ms": t * 1e3, "tops": tops, "compile_s": tc})
    best = max(OUT["gemm"], key=lambda r: r["tops"], default=None)
    if best is not None:
        kp = best["params"]
        for sname, dts in (("max_plus", "int32"), ("max_min", "float32"), ("max_times", "float32")):
            try:
                t, _ = time_gemm(eng, "gemm_tiled", kp, size, size, size, sname, dts, reps)
                tops = 2 * size ** 3 / t / 1e12
                log(f"best tile {sname} {dts}: {t * 1e3:.3f} ms {tops:.2f} TOPS")
                OUT["gemm"].append({"params": kp, "m": size, "op": f"{sname} {dts}",
                                    "ms": t * 1e3, "tops": tops})
            except Exception as e:  # noqa: BLE001
                OUT["errors"].append(f"best {sname}: {type(e).__name__}: {e}")
        for s in (1024, 2048, 4096):
            for kp2 in (kp, dict(kp, BM=64, BN=64, BK=8, TM=4, TN=4),
                        dict(kp, BM=64, BN=64, BK=16, TM=4, TN=4), dict(kp, BN=64),
                        dict(kp, BM=64, BN=64, BK=16, TM=4, TN=4, PF=2)):
                if gemm.tile_storage(kp2) > ws:
                    continue
                try:
                    t, _ = time_gemm(eng, "gemm_tiled", kp2, s, s, s, reps=20)
                    log(f"{s}^3 {kp2}: {t * 1e3:.3f} ms {2 * s ** 3 / t / 1e12:.2f} TOPS")
                    OUT["gemm"].append({"params": kp2, "m": s, "ms": t * 1e3,
                                        "tops": 2 * s ** 3 / t / 1e12})
                except Exception as e:  # noqa: BLE001
                    OUT["errors"].append(f"{s}^3 {kp2}: {type(e).__name__}: {e}")
    if cp is not None and not quick:
        fa = cp.ones((size, size), cp.float32)
        t = cupy_seconds(cp, lambda: cp.matmul(fa, fa), 3)
        OUT["cublas_sgemm_ms"] = t * 1e3
        log(f"cuBLAS SGEMM {size}^3: {t * 1e3:.3f} ms")
        del fa


def sweep_argmax(eng, quick):
    size = 512 if quick else 4096
    base = {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "ARGMAX": True, "PF": 0}
    variants = [base, dict(base, AT=True), dict(base, BM=128, TM=8, AT=True),
                dict(base, BM=128, BN=128, TM=8, TN=8, AT=True), dict(base, BK=32, AT=True),
                dict(base, PF=2), dict(base, BK=8),
                dict(base, BM=128, TM=8), dict(base, BN=128, TN=8),
                dict(base, BM=128, BN=128, BK=8, TM=8, TN=8), dict(base, BM=128, BN=64, TM=8, TN=4, BK=16)]
    if quick:
        variants = variants[:3]
    for kp in variants:
        if over_budget():
            log('time budget spent: skipping the rest')
            break
        label = f"argmax {kp}"
        try:
            if not check_gemm("gemm_tiled", kp, True, label):
                continue
            t, tc = time_gemm(eng, "gemm_tiled", kp, size, size, size, reps=5)
            plain = {x: y for x, y in kp.items() if x != "AT"}
            t0, _ = time_gemm(eng, "gemm_tiled", dict(plain, ARGMAX=False), size, size, size, reps=5)
        except Exception as e:  # noqa: BLE001
            log(f"{label}: {type(e).__name__}: {e}")
            OUT["errors"].append(f"{label}: {type(e).__name__}: {e}")
            continue
        r = {"params": kp, "m": size, "ms": t * 1e3, "tops": 2 * size ** 3 / t / 1e12,
             "no_argmax_ms": t0 * 1e3, "compile_s": tc}
        log(f"{label}: {t * 1e3:.3f} ms {r['tops']:.2f} TOPS (same tile, no argmax {t0 * 1e3:.3f} ms)")
        OUT["argmax"].append(r)


def sweep_skinny(eng, quick):
    m = 1 << (14 if quick else 21)
    variants = []
    for wg in (64, 128, 256):
        for rpt in (1, 2, 4):
            variants.append({"WG": wg, "RPT": rpt, "AV": True, "DV": True})
    variants += [{"WG": 256, "RPT": 1, "AV": False, "DV": False},
                 {"WG": 256, "RPT": 1, "AV": True, "DV": False}]
    if quick:
        variants = variants[:3] + variants[-1:]
    nbytes = m * 4 * 4 * 2
    tcopy = copy_seconds(eng, nbytes // 2, 50)
    OUT["skinny_copy_ms"] = tcopy * 1e3
    log(f"WebGPU copy of {nbytes // 2 >> 20} MiB: {tcopy * 1e3:.4f} ms")
    for kpv in variants:
        if over_budget():
            log('time budget spent: skipping the rest')
            break
        kp = dict(kpv, K=4, N=4)
        label = f"skinny {kp}"
        try:
            if not check_gemm("gemm_skinny", kp, False, label):
                continue
            t, _ = time_gemm(eng, "gemm_skinny", kp, m, 4, 4, reps=100)
        except Exception as e:  # noqa: BLE001
            log(f"{label}: {type(e).__name__}: {e}")
            OUT["errors"].append(f"{label}: {type(e).__name__}: {e}")
            continue
        log(f"{label}: {t * 1e3:.4f} ms ({nbytes / t / 1e9:.0f} GB/s)")
        OUT["skinny"].append({"params": kp, "m": m, "ms": t * 1e3, "gbs": nbytes / t / 1e9})
    # the other skinny rows of the issue, through the backend's choice
    for (mm, kk, nn) in ((65536, 64, 64), (4, 4, 1 << 21)):
        if quick:
            mm, nn = min(mm, 4096), min(nn, 4096)
        kname, kp = gemm.choose_kernel(mm, nn, kk, False, eng.limits.max_workgroup_storage)
        try:
            t, _ = time_gemm(eng, kname, kp, mm, kk, nn, reps=50)
            log(f"{mm}x{kk}x{nn} {kname} {kp}: {t * 1e3:.4f} ms")
            OUT["skinny"].append({"params": kp, "shape": [mm, kk, nn], "ms": t * 1e3})
        except Exception as e:  # noqa: BLE001
            OUT["errors"].append(f"{mm}x{kk}x{nn}: {type(e).__name__}: {e}")


def time_defaults(eng, cp, quick):
    """The backend's own choices (gemm.choose_kernel, vsa's dispatch helpers), timed as above."""
    from pytropical_gpu.backends.wgpu import vsa

    ws = eng.limits.max_workgroup_storage
    big, mid, long = (256, 128, 1 << 12) if quick else (8192, 1024, 1 << 21)
    for m, k, n, sname, dts, argmax in ((big, big, big, "min_plus", "float32", False),
                                         (big, big, big, "max_plus", "int32", False),
                                         (big // 2, big // 2, big // 2, "min_plus", "float32", True),
                                         (big // 2, big // 2, big // 2, "min_plus", "float32", "AT"),
                                         (2 * mid, 2 * mid, 2 * mid, "min_plus", "float32", False),
                                         (mid, mid, mid, "min_plus", "float32", False),
                                         (long, 4, 4, "min_plus", "float32", False),
                                         (long // 32, 64, 64, "min_plus", "float32", False),
                                         (4, 4, long, "min_plus", "float32", False)):
        code = gemm.semiring_code(get_semiring(sname), np.dtype(dts), False)  # as the library:
        kname, kp = gemm.choose_kernel(m, n, k, bool(argmax), ws,  # the argmax's packed indices
                                       True if argmax == "AT" else None, code)
        try:
            reps = 3 if m * n * k >= 1 << 36 else (5 if quick else 50)
            t, _ = time_gemm(eng, kname, kp, m, k, n, sname, dts, reps=reps)
        except Exception as e:  # noqa: BLE001
            OUT["errors"].append(f"default {m}x{k}x{n}: {type(e).__name__}: {e}")
            continue
        r = {"op": f"{sname} {dts}" + (f" argmax {'by k-tile' if argmax == 'AT' else ''}" if argmax else ""),
             "shape": [m, k, n],
             "kernel": kname, "params": kp, "ms": t * 1e3, "tops": 2 * m * n * k / t / 1e12}
        OUT.setdefault("defaults", []).append(r)
        log(f"default {r['op']} {m}x{k}x{n} {kname} {kp}: {t * 1e3:.4f} ms {r['tops']:.2f} TOPS")
    rng = np.random.default_rng(3)
    words = 1 << (15 if quick else 25)
    ap, an = _planes(rng, words)
    bp, bn = _planes(rng, words)
    planes = [eng.upload(x) for x in (ap, an, bp, bn)]
    outs = [eng.alloc(words * 4) for _ in range(2)]
    d = vsa.elementwise_dispatch(eng, "bind", 0, words, [b.binding() for b in planes + outs])
    eng.submit([d])
    ok = np.array_equal(eng.download(outs[0], np.uint32, (words,)), (ap & bp) | (an & bn))
    t = kernel_time(eng, d, 40)
    OUT.setdefault("defaults", []).append({"op": "bind", "words": words, "ms": t * 1e3, "ok": ok})
    log(f"default bind: {t * 1e3:.4f} ms ok={ok}")
    res = eng.alloc(vsa.dot_plan(words)[3] * 4)
    d = vsa.dot_dispatch(eng, [b.binding() for b in planes] + [res.binding()], 1, 1, words)
    eng.submit([d])
    want = int(np.bitwise_count((ap & bp) | (an & bn)).sum(dtype=np.int64)
               - np.bitwise_count((ap & bn) | (an & bp)).sum(dtype=np.int64))
    ok = int(eng.download(res, np.int32, (vsa.dot_plan(words)[3],)).sum(dtype=np.int64)) == want
    t = kernel_time(eng, d, 40)
    OUT["defaults"].append({"op": "dot", "words": words, "ms": t * 1e3, "ok": ok})
    log(f"default dot: {t * 1e3:.4f} ms ok={ok}")
    mag = eng.alloc(4 * words * 4)
    for op, binds, thr in (("accumulate", [planes[0], mag, planes[2], planes[3]], 0),
                           ("harden", [planes[0], mag] + outs, 5)):
        d = vsa.elementwise_dispatch(eng, op, 4, words, [b.binding() for b in binds], thr)
        t = kernel_time(eng, d, 40)
        OUT["defaults"].append({"op": op, "bits": 4, "words": words, "ms": t * 1e3})
        log(f"default {op} (4-bit counters): {t * 1e3:.4f} ms")
    eng.release(*planes, *outs, res, mag)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--only", default="vsa,skinny,gemm,argmax")
    p.add_argument("--budget", type=float, default=1e9, help="seconds; later variants are skipped")
    p.add_argument("--full-checks", action="store_true")
    args = p.parse_args(argv)
    BUDGET[0] = args.budget
    global FULL_CHECKS
    FULL_CHECKS = args.full_checks
    eng = get_engine()
    rt = eng.rt
    OUT["device"] = f"{rt.info.name} ({rt.info.backend}, {rt.name})"
    OUT["features"] = sorted(getattr(rt, "features", ()))
    OUT["limits"] = {"max_workgroup_storage": eng.limits.max_workgroup_storage,
                     "max_storage_binding": eng.limits.max_storage_binding}
    log(f"device {OUT['device']} features {OUT['features']}; package {ptg.__file__}")
    cp = cupy_or_none()
    groups = {"gemm": lambda: sweep_gemm(eng, cp, args.quick),
              "skinny": lambda: sweep_skinny(eng, args.quick),
              "argmax": lambda: sweep_argmax(eng, args.quick),
              "vsa": lambda: sweep_vsa(eng, cp, args.quick, OUT),
              "defaults": lambda: time_defaults(eng, cp, args.quick)}
    path = args.json or "wgpu_sweep.json"
    for g in args.only.split(","):
        try:
            groups[g]()
        except Exception as e:  # noqa: BLE001
            log(f"{g} failed: {type(e).__name__}: {e}")
            OUT["errors"].append(f"{g}: {type(e).__name__}: {e}")
        OUT["timer"] = ("gpu timestamps" if timing.USE_TS and "timestamp-query" in OUT["features"]
                        else "wall")
        with open(path, "w") as f:
            json.dump(OUT, f, indent=1, default=str)
    failed = [c["label"] for c in OUT["checks"] if not c["ok"]]
    log(f"wrote {path}; {len(OUT['checks'])} checks, failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
