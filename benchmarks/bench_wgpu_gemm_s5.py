"""WGSL GEMM issue 14, session 5: min_plus / max_plus f32 8192³ tiles against the cuda ``big3`` kernel.

The row asks wgpu ≥ 90 % of cuda (s4: cuda ``big3`` 25.85 TOPS, wgpu 128×128×16 22.51). Variants of
``gemm_tiled``: cuda's big3 shape (64×128, 8×8 a thread, 128 threads: more, smaller workgroups an
SM), 128×64, k-tile depth 8 / 16, the second workgroup buffer (PF=2), B read as vec4 (BV) and D
written as vec4 (DV). Every variant is first checked bit for bit against ``tests/reference.py``
(numpy) on odd shapes with ±inf (guarded ⊗), ``c`` and a batch; a failed variant is not timed.
Then 8192³ with GPU timestamps, the variants sampled round-robin (median, quartiles), each timed
result checked on sampled rows, and the cuda ``big3`` kernel (CuPy, CUDA events) timed in the same
run before and after the wgpu rows.

    python benchmarks/bench_wgpu_gemm_s5.py --json $OUT/wgpu_gemm_h200_s5a.json [--quick] [--run b]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

os.environ.setdefault("PYTROPICAL_WEBGPU", "wgpu")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "tests")]

import _wgpu_timing as timing  # noqa: E402
import bench_wgpu_sweep as sweep  # noqa: E402
from _wgpu_timing import log  # noqa: E402
from bench_wgpu_argmax import Problem  # noqa: E402
from bench_wgpu_argmax_s4 import round_robin  # noqa: E402
from reference import ref_matmul  # noqa: E402

import pytropical_gpu as ptg  # noqa: E402
from pytropical_gpu.backends.wgpu.device import get_engine  # noqa: E402
from pytropical_gpu.bench.gputime import event_times, median_quartiles  # noqa: E402

T128 = {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "PF": 0}
T64x128 = dict(T128, BM=64)  # cuda big3's shape at BK 16: 128 threads, 8x8 each
VARIANTS = {
    "128 PF0 (default)": T128,
    "128 PF2": dict(T128, PF=2),
    "128 BK8 PF0": dict(T128, BK=8),
    "128 BK8 PF2": dict(T128, BK=8, PF=2),
    "64x128 BK8 PF0 (cuda big3 tile)": dict(T64x128, BK=8),
    "64x128 BK8 PF2": dict(T64x128, BK=8, PF=2),
    "64x128 BK16 PF0": T64x128,
    "64x128 BK16 PF2": dict(T64x128, PF=2),
    "128x64 BK16 PF0": dict(T128, BN=64),
    "128 PF0 BV": dict(T128, BV=True),
    "128 PF0 BV DV": dict(T128, BV=True, DV=True),
    "64x128 BK16 PF0 BV": dict(T64x128, BV=True),
    "64x128 BK8 PF0 BV": dict(T64x128, BK=8, BV=True),
    "128 PF2 BV": dict(T128, PF=2, BV=True),
    "64x128 BK8 PF2 BV": dict(T64x128, BK=8, PF=2, BV=True),
}
#: run b (after run a, ``wgpu_gemm_h200_s5a``): WA, the workgroup tiles as k rows of vec4, so the
#: bounds clamp on a read's dynamic index is one per column, not one per read
VARIANTS_B = {
    "128 PF0 (default)": T128,
    "128 PF0 DV": dict(T128, DV=True),
    "128 PF0 WA": dict(T128, WA=True),
    "128 PF0 WA DV": dict(T128, WA=True, DV=True),
    "128 PF0 WA BV DV": dict(T128, WA=True, BV=True, DV=True),
    "128 PF2 WA": dict(T128, PF=2, WA=True),
    "128 BK8 PF2 WA": dict(T128, BK=8, PF=2, WA=True),
    "64x128 BK16 PF0 WA": dict(T64x128, WA=True),
    "64x128 BK16 PF0 WA BV": dict(T64x128, WA=True, BV=True),
    "64x128 BK16 PF0 WA BV DV": dict(T64x128, WA=True, BV=True, DV=True),
    "64x128 BK8 PF0 WA": dict(T64x128, BK=8, WA=True),
    "64x128 BK8 PF0 WA BV": dict(T64x128, BK=8, WA=True, BV=True),
}
OUT = {"checks": [], "errors": [], "wgpu": [], "cuda": [], "notes": __doc__}


def _ops(rng, shape, other):
    """Quarter integers (ties) with ±inf sprinkled in (the guarded ⊗ path)."""
    x = (rng.integers(-40, 40, shape) / 4).astype(np.float32)
    x[rng.random(shape) < 0.04] = np.inf
    x[rng.random(shape) < 0.04] = -np.inf
    if other is not None:
        x[rng.random(shape) < 0.02] = other
    return x


def check_variant(label, kp) -> bool:
    """Odd m and k (k cut inside a k-tile), several tiles each way, ±inf, ``c``, a batch; BV / DV
    need n a multiple of 4 (the backend's condition), DV no ``c``."""
    rng = np.random.default_rng(5)
    four = kp.get("BV") or kp.get("DV")
    ok = True
    try:
        with sweep.forced("gemm_tiled", kp):
            for (bt, m, k, n), name, use_c in [((1, 131, 77, 263), "min_plus", False),
                                               ((1, 67, 141, 389), "max_plus", True),
                                               ((2, 70, 45, 130), "min_plus", True),
                                               ((1, 259, 33, 131), "max_plus", False)]:
                if four:
                    n -= n % 4
                use_c = use_c and not kp.get("DV")
                a = _ops(rng, (bt, m, k), None)
                b = _ops(rng, (bt, k, n), None)
                c = _ops(rng, (bt, m, n), None) if use_c else None
                got = ptg.matmul(a, b, name, c=c, backend="wgpu")
                want = ref_matmul(a, b, name, c)[0]
                same = bool(np.array_equal(got, want))
                if not same:
                    log(f"CHECK FAILED {label} {name} {bt}x{m}x{k}x{n} c={use_c}")
                ok &= same
    except Exception as e:  # noqa: BLE001
        ok = False
        OUT["errors"].append(f"{label}: {type(e).__name__}: {e}")
    OUT["checks"].append({"label": label, "kp": kp, "ok": ok})
    return ok


def cuda_rows(size, tag):
    """The cuda big3 kernel (the backend's default for f32 min_plus / max_plus) on the same
    operands as the wgpu rows (Problem's seed), CUDA events, median of 7 calls."""
    cp = timing.cupy_or_none()
    if cp is None:
        OUT["errors"].append("no CuPy: no cuda baseline")
        return
    import pytropical_gpu as tg
    from pytropical_gpu.backends.cuda import gemm_launch, kernels
    from pytropical_gpu.semirings import get_semiring

    be = tg.get_backend("cuda")
    a, b, dev, rows = cuda_operands(cp, size)
    for name in ("min_plus", "max_plus"):
        spec = kernels.gemm_spec(get_semiring(name), np.dtype(np.float32))
        bk = kernels.TILES["big3"][2]
        plan = gemm_launch.Plan("tile", "big", 1, -(-size // bk) * bk)  # runs as big3 (line 87)

        def call(spec=spec, plan=plan):
            return gemm_launch.run(be, spec, dev[0], dev[1], None, False, plan)

        d = call()[0]
        ok = bool(np.array_equal(d.get()[0][rows], ptg.matmul(a[rows], b, name, backend="cpu")))
        del d
        cuda_row(cp, call, size, f"cuda big3 {name} ({tag})", ok)
    dev.clear()
    cp.get_default_memory_pool().free_all_blocks()


def cuda_operands(cp, size):
    """(a, b) on the host (eighths in [-125, 125), Problem's seed), [a, b] on the device as
    batches of one, and the two sampled rows a cuda row is checked on."""
    rng = np.random.default_rng(0)
    a = (rng.integers(-1000, 1000, (size, size)) / 8).astype(np.float32)
    b = (rng.integers(-1000, 1000, (size, size)) / 8).astype(np.float32)
    dev = [cp.asarray(a)[None], cp.asarray(b)[None]]
    return a, b, dev, np.random.default_rng(1).choice(size, min(size, 2), replace=False)


def cuda_row(cp, call, size, label, ok):
    """Time ``call`` (CUDA events, one warm-up, median and quartiles of 7 calls), log the row and
    add it to ``OUT["cuda"]``; ``ok``: the caller's check of the same kernel."""
    med, q1, q3 = median_quartiles([t * 1e3 for t in event_times(cp, call, 7)])
    r = {"label": label, "median_ms": med, "q1_ms": q1, "q3_ms": q3,
         "tops": 2 * size ** 3 / med / 1e9, "ok": ok, "m": size}
    log(f"{size}^3 {r['label']}: {med:.3f} ms {r['tops']:.2f} TOPS ok={ok}")
    OUT["cuda"].append(r)


def ref_rows(a, b, rows, name):
    """The reference (tests/reference.py, numpy) for sampled rows, in slices of k (memory)."""
    out = None
    for k0 in range(0, a.shape[1], 512):
        part = ref_matmul(a[rows, k0:k0 + 512], b[k0:k0 + 512], name)[0]
        out = part if out is None else (np.minimum if name == "min_plus" else np.maximum)(out, part)
    return out


def time_wgpu(eng, size, rounds, names, sname, passed):
    q = Problem(eng, size, size, size, False, sname)
    sample = np.random.default_rng(1).choice(size, min(size, 3), replace=False)
    want = ref_rows(q.a, q.b, sample, sname)
    rows, oks = {}, {}
    for x in names:
        if not passed.get(x):
            continue
        kp = dict(VARIANTS[x], ARGMAX=False)
        try:
            rows[x] = [q.tiled(kp)]
            eng.submit(rows[x])
            got = eng.download(q.D, np.float32, (size, size))[sample]
            oks[x] = bool(np.array_equal(got, want))
        except Exception as e:  # noqa: BLE001
            OUT["errors"].append(f"{sname} {x}: {type(e).__name__}: {e}")
            rows.pop(x, None)
    log(f"{size}^3 {sname} sampled checks: {oks}")
    res = round_robin(eng, {x: c for x, c in rows.items() if oks.get(x)}, 2 if size >= 4096 else 20,
                      rounds)
    cuda = [r for r in OUT["cuda"] if sname in r["label"]]
    cuda_ms = float(np.median([r["median_ms"] for r in cuda])) if cuda else None
    for x, r in res.items():
        r.update(label=f"{sname} {x}", kp=VARIANTS[x], m=size, ok=oks[x],
                 tops=2 * size ** 3 / r["median_ms"] / 1e9)
        if cuda_ms:
            r["of_cuda_big3"] = cuda_ms / r["median_ms"]
        log(f"{size}^3 {sname} {x}: {r['median_ms']:.3f} ms [q1 {r['q1_ms']:.3f}, q3 "
            f"{r['q3_ms']:.3f}] {r['tops']:.2f} TOPS"
            + (f" = {r['of_cuda_big3']:.3f} of cuda" if cuda_ms else "") + f" ok={oks[x]}")
        OUT["wgpu"].append(r)
    q.release()
    return res


def summary():
    """Each wgpu row against the median of its semiring's cuda rows (before and after)."""
    for r in OUT["wgpu"]:
        sname = r["label"].split()[0]
        cuda = [c["median_ms"] for c in OUT["cuda"] if sname in c["label"]]
        if cuda:
            r["of_cuda_big3"] = float(np.median(cuda)) / r["median_ms"]
            r["target_90_met"] = r["of_cuda_big3"] >= 0.90
            log(f"{r['label']}: {r['tops']:.2f} TOPS, {r['of_cuda_big3']:.3f} of cuda big3")


def start_cuda_compile():
    """The cuda modules (min_plus, max_plus f32) compiled into the on-disk NVRTC cache by a
    background process while the wgpu checks run; returns (pool, futures) or None."""
    if timing.cupy_or_none() is None:
        return None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from bench_gemm_sweep import _compile

    from pytropical_gpu.backends.cuda import kernels
    from pytropical_gpu.semirings import get_semiring

    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
    futs = []
    for name in ("min_plus", "max_plus"):
        s = kernels.gemm_spec(get_semiring(name), np.dtype(np.float32))
        futs.append(pool.submit(_compile, (s.code(), list(s.names.values()))))
    return pool, futs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small size, no cuda (lavapipe smoke)")
    ap.add_argument("--only", default="", help="comma-separated variant labels (default: all)")
    ap.add_argument("--json", default="wgpu_gemm_s5.json")
    ap.add_argument("--run", default="a", choices=("a", "b"), help="a: run a's variants, b: WA")
    args = ap.parse_args(argv)
    if args.run == "b":
        VARIANTS.clear()
        VARIANTS.update(VARIANTS_B)
    names = [x for x in VARIANTS if not args.only or x in args.only.split(",")]
    eng = get_engine()
    OUT["device"] = f"{eng.rt.info.name} ({eng.rt.info.backend}, {eng.rt.name})"
    log(f"device {OUT['device']}; package {ptg.__file__}")
    t0 = time.time()
    size, rounds = (256, 3) if args.quick else (8192, 7)
    passed = {}
    bg = None if args.quick else start_cuda_compile()

    def cuda_before():
        if bg:
            OUT["cuda_compile_s"] = [f.result() for f in bg[1]]
            bg[0].shutdown()
        cuda_rows(size, "before")

    def checks():
        for x in names:
            passed[x] = check_variant(x, VARIANTS[x])
        log(f"checks: {sum(passed.values())} of {len(passed)} passed ({time.time() - t0:.0f} s)")

    def max_plus():  # the default and the three fastest min_plus variants
        got = sorted((r["median_ms"], r["label"][len("min_plus "):]) for r in OUT["wgpu"])
        pick = ["128 PF0 (default)"] + [x for _, x in got if x != "128 PF0 (default)"][:3]
        time_wgpu(eng, size, max(3, rounds - 2), pick, "max_plus", passed)

    steps = [checks, lambda: time_wgpu(eng, size, rounds, names, "min_plus", passed)]
    if not args.quick:
        steps.append(cuda_before)
    steps.append(max_plus)
    if not args.quick:
        steps += [lambda: cuda_rows(size, "after"), summary]
    timing.run_steps(steps, OUT, args.json, t0)
    return 0 if all(passed.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
