"""Issue 14, CUDA GEMM (fifth session, stream-k helper): min_plus f32 2048³ in one launch.

The single-launch stream-k kernel (``sr_gemm_sk`` on the big3 tile, gemm_streamk.py) against the
default ``big3`` grid (1.29 waves at 2048³), beside a device copy and cuBLAS SGEMM in the same run.
Checks first, bit for bit: odd shapes against tests/reference.py (±inf, -0.0, ties, NaN products,
``c``), on the default 396 blocks and on few blocks (so whole tiles, tiles split over 2-6 blocks
and blocks spanning 2 tiles all occur); 2048³ against the default kernel's output in full and 8
sampled rows against numpy; the library path (``tg.matmul``) equal and refusing NaN. A failed
variant is not timed. Timings: CUDA events, median of 9, 10 calls between the events.

``python3 benchmarks/bench_gemm_cuda_s5k.py --json $OUT/x.json``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_gemm_cuda_s4b import float_operands  # noqa: E402
from bench_gemm_cuda_s5c import nozero_operands  # noqa: E402
from bench_gemm_sweep import Timer, baselines, precompile  # noqa: E402
from reference import ref_matmul  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch, gemm_streamk, kernels  # noqa: E402

SHAPES = [(67, 97, 83), (130, 132, 260), (200, 1000, 130), (256, 2048, 384), (9, 33, 130),
          (64, 1024, 128), (333, 517, 700)]
TIMED = [(2048, 2048, 2048), (1024, 1024, 1024), (3072, 3072, 3072), (4096, 4096, 4096),
         (2048, 512, 2048), (2048, 8192, 2048), (1536, 2048, 2048)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s5k.json")
    p.add_argument("--workers", type=int, default=16)
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg
    from pytropical_gpu.semirings import get_semiring

    be = tg.get_backend("cuda")
    timer = Timer(cp)
    out = {"device": be.describe(), "rows": [], "checks": [], "failed": []}
    rows, failed = out["rows"], set()
    log = print

    def save():
        out["failed"] = sorted(failed)
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))

    sp = {name: kernels.gemm_spec(get_semiring(name), np.dtype(np.float32))
          for name in ("min_plus", "max_plus")}
    t0 = time.perf_counter()
    sks = {name: gemm_streamk.spec(name) for name in sp}  # the stream-k modules
    cpu_s = precompile(list(sp.values()) + list(sks.values()), args.workers)
    out["compile"] = {"cpu_s": cpu_s, "wall_s": time.perf_counter() - t0}
    log(f"compiled {out['compile']}")
    sms = be._sm_count()
    slots = 3 * sms

    def default(name, a, b, c=None):
        _, m, k = a.shape
        pl = gemm_launch.plan(m, b.shape[2], k, 1, 4, False, True, sms, sp[name].names, "big3")
        return gemm_launch.run(be, sp[name], a, b, c, False, pl, False)[0], pl

    rng = np.random.default_rng(1)
    baselines(cp, timer, rows, log, (1024, 2048, 4096), rng)

    # ------------------------------------------------------------------ checks
    crng = np.random.default_rng(2)
    t0 = time.perf_counter()
    for name in sp:
        for kind in ("mixed", "nozero"):
            for (m, k, n) in SHAPES:
                for use_c in (False, True):
                    a, b = (float_operands(crng, name, m, k, n, "mixed") if kind == "mixed"
                            else nozero_operands(crng, name, m, k, n))
                    c = float_operands(crng, name, m, 1, n, "mixed")[0][:, :1] * np.ones((1, n), np.float32) \
                        if use_c else None
                    want = ref_matmul(a, b, name, c)[0]
                    ga, gb = cp.asarray(a)[None], cp.asarray(b)[None]
                    gc = None if c is None else cp.asarray(c)[None]
                    base = default(name, ga, gb, gc)[0].get()[0].view(np.uint32)
                    for g, wf in ((slots, False), (slots, True), (5, False), (7, True), (16, False)):
                        d = gemm_streamk.run(be, sks[name], ga, gb, gc, slots=g, whole_first=wf).get()[0]
                        ok = bool(np.array_equal(d, want))
                        # array_equal says -0.0 == 0.0: the bits against the default kernel too
                        bits = bool(np.array_equal(d.view(np.uint32), base))
                        out["checks"].append({"case": name, "kind": kind, "shape": [m, k, n], "c": use_c,
                                              "slots": g, "whole_first": wf,
                                              "split": gemm_streamk.split(m, n, k, g), "ok": ok,
                                              "bits_eq_default": bits})
                        if not ok:
                            log(f"CHECK FAILED {name} {kind} {m}x{k}x{n} c={use_c} slots={g}")
                            failed.add(f"{name} sk")
    # 2048³ and the timed shapes: equal to the default kernel (in full), 8 rows against numpy
    for (m, k, n) in TIMED[:2] + TIMED[4:]:
        a = cp.asarray(rng.standard_normal((1, m, k), dtype=np.float32))
        b = cp.asarray(rng.standard_normal((1, k, n), dtype=np.float32))
        for name in sp:
            want, _ = default(name, a, b)
            d = gemm_streamk.run(be, sks[name], a, b, None)
            ok = bool(cp.array_equal(d.view(cp.uint32), want.view(cp.uint32)))
            d2 = gemm_streamk.run(be, sks[name], a, b, None, whole_first=True)
            ok = ok and bool(cp.array_equal(d2.view(cp.uint32), want.view(cp.uint32)))
            ah, bh, dh = a.get()[0], b.get()[0], d.get()[0]
            red = np.min if name == "min_plus" else np.max
            for r in np.random.default_rng(3).choice(m, 8, replace=False):
                ok = ok and bool(np.array_equal(dh[r], red(ah[r][:, None] + bh, axis=0)))
            out["checks"].append({"case": name, "kind": "normal vs default + numpy rows",
                                  "shape": [m, k, n], "ok": ok})
            if not ok:
                log(f"CHECK FAILED {name} {m}x{k}x{n} against the default / numpy rows")
                failed.add(f"{name} sk")
    log(f"checks: {len(out['checks'])} in {time.perf_counter() - t0:.1f} s, failed: {sorted(failed)}")
    save()

    # ------------------------------------------------------------------ timings
    def record(op, size, t, flops, **kw):
        r = {"op": op, "size": size, "s": t, "TOPS": flops / t / 1e12, **kw}
        rows.append(r)
        save()
        log(f"{op:34s} {size:16s} {t * 1e3:9.4f} ms {r['TOPS']:6.2f} TOPS {kw or ''}")

    for (m, k, n) in TIMED:
        a = cp.asarray(rng.standard_normal((1, m, k), dtype=np.float32))
        b = cp.asarray(rng.standard_normal((1, k, n), dtype=np.float32))
        size, fl = f"{m}x{k}x{n}", 2 * m * n * k
        for name in ("min_plus",) if (m, k, n) != TIMED[0] else ("min_plus", "max_plus"):
            _, pl = default(name, a, b)
            t = timer(lambda name=name, a=a, b=b: default(name, a, b), 9, inner=10)
            record(f"{name} default", size, t, fl, plan=[pl.role, pl.ks])
            if f"{name} sk" not in failed:
                t = timer(lambda name=name, a=a, b=b: gemm_streamk.run(be, sks[name], a, b, None), 9,
                          inner=10)
                record(f"{name} stream-k", size, t, fl, split=gemm_streamk.split(m, n, k, slots))
                t = timer(lambda name=name, a=a, b=b: gemm_streamk.run(be, sks[name], a, b, None,
                                                                         whole_first=True), 9, inner=10)
                record(f"{name} stream-k whole first", size, t, fl)
    # the library path at 2048³ with the stream-k rule on for it: equal bits, NaN refused
    gemm_streamk.DEFAULT_SHAPES = frozenset({(2048, 2048, 2048)})
    a = cp.asarray(rng.standard_normal((2048, 2048), dtype=np.float32))
    b = cp.asarray(rng.standard_normal((2048, 2048), dtype=np.float32))
    lib = tg.matmul(a, b, "min_plus", backend="cuda")
    ref = default("min_plus", a[None], b[None])[0][0]
    ok = bool(cp.array_equal(lib.view(cp.uint32), ref.view(cp.uint32)))
    bad = a.copy()
    bad[5, 7] = cp.nan
    try:
        tg.matmul(bad, b, "min_plus", backend="cuda")
        refused = False
    except ValueError:
        refused = True
    out["checks"].append({"case": "tg.matmul 2048³", "ok": ok, "nan_refused": refused})
    if not (ok and refused):
        failed.add("library")
    t = timer(lambda: tg.matmul(a, b, "min_plus", backend="cuda"), 9, inner=10)
    record("min_plus tg.matmul (stream-k rule on)", "2048x2048x2048", t, 2 * 2048**3)
    t = timer(lambda: default("min_plus", a[None], b[None]), 9, inner=10)
    record("min_plus default (drift)", "2048x2048x2048", t, 2 * 2048**3)
    save()
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
