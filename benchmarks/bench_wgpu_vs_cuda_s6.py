"""WGSL GEMM issue 14, session 6: wgpu min_plus / max_plus f32 8192³ (the default WA tile) against
cuda's kernels of this session in the same run.

Session 6 moved cuda's default for f32 min_plus / max_plus at 8192³ from the ``big3`` tile to the
``big3`` tile over work units (``gemm_units``, +2.2 %), so the row "wgpu >= 90 % of cuda" needs
wgpu's default beside the new cuda kernel. This reuses session 5's machinery
(``bench_wgpu_gemm_s5``: the checks of the wgpu variant bit for bit against ``tests/reference.py``
with ±inf, ``c`` and a batch; GPU timestamps round-robin for wgpu; CUDA events, median of 7, for
cuda, before and after the wgpu rows) and adds the units kernel, checked on sampled rows against
the cpu backend before it is timed.

    python benchmarks/bench_wgpu_vs_cuda_s6.py --json $OUT/wgpu_vs_cuda_h200_s6.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE]

import _wgpu_timing as timing  # noqa: E402
import bench_wgpu_gemm_s5 as s5  # noqa: E402
from _wgpu_timing import log  # noqa: E402

import pytropical_gpu as ptg  # noqa: E402
from pytropical_gpu.backends.wgpu import gemm  # noqa: E402
from pytropical_gpu.backends.wgpu.device import get_engine  # noqa: E402

LABEL = "default (gemm.TILE)"


def cuda_units_rows(size, tag):
    """The units kernel (the backend's 8192³ default since session 6) on s5's operands."""
    cp = timing.cupy_or_none()
    if cp is None:
        s5.OUT["errors"].append("no CuPy: no cuda units row")
        return
    import pytropical_gpu as tg
    from pytropical_gpu.backends.cuda import gemm_units

    be = tg.get_backend("cuda")
    a, b, dev, rows = s5.cuda_operands(cp, size)
    for name in ("min_plus", "max_plus"):
        spec = gemm_units.spec(name)

        def call(spec=spec):
            return gemm_units.run(be, spec, dev[0], dev[1], None)

        d = call()
        ok = bool(np.array_equal(d.get()[0][rows], ptg.matmul(a[rows], b, name, backend="cpu")))
        del d
        s5.cuda_row(cp, call, size, f"cuda units {name} ({tag})", ok)
    dev.clear()
    cp.get_default_memory_pool().free_all_blocks()


def summary():
    """Each wgpu row against the median of the cuda big3 and units rows of its semiring."""
    for r in s5.OUT["wgpu"]:
        sname = r["label"].split()[0]
        for kind in ("big3", "units"):
            ms = [c["median_ms"] for c in s5.OUT["cuda"]
                  if f"cuda {kind} {sname}" in c["label"] and c["ok"]]
            if ms:
                r[f"of_cuda_{kind}"] = float(np.median(ms)) / r["median_ms"]
                log(f"{r['label']}: {r['tops']:.2f} TOPS, {r[f'of_cuda_{kind}']:.3f} of cuda {kind}")
        r["target_90_met"] = r.get("of_cuda_units", 0) >= 0.90


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small size, no cuda (lavapipe smoke)")
    ap.add_argument("--json", default="wgpu_vs_cuda_s6.json")
    args = ap.parse_args(argv)
    s5.VARIANTS.clear()
    s5.VARIANTS[LABEL] = dict(gemm.TILE)
    s5.OUT["notes"] = __doc__
    eng = get_engine()
    s5.OUT["device"] = f"{eng.rt.info.name} ({eng.rt.info.backend}, {eng.rt.name})"
    log(f"device {s5.OUT['device']}; package {ptg.__file__}")
    t0 = time.time()
    size, rounds = (256, 3) if args.quick else (8192, 7)
    passed = {}

    def checks():
        passed[LABEL] = s5.check_variant(LABEL, s5.VARIANTS[LABEL])
        log(f"checks: {sum(passed.values())} of {len(passed)} passed ({time.time() - t0:.0f} s)")

    def cuda(tag):
        if not args.quick:
            s5.cuda_rows(size, tag)
            cuda_units_rows(size, tag)

    steps = [checks, lambda: cuda("before"),
             lambda: s5.time_wgpu(eng, size, rounds, [LABEL], "min_plus", passed),
             lambda: s5.time_wgpu(eng, size, rounds, [LABEL], "max_plus", passed),
             lambda: cuda("after"), summary]
    timing.run_steps(steps, s5.OUT, args.json, t0)
    return 0 if all(passed.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
