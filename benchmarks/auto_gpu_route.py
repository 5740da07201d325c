"""What "auto" adds to a call it sends to cuda, measured directly (bench_auto s4: 5-8 us over
``backend="cuda"`` on 120-400 us calls, 15-29 us on matmuls).

    python benchmarks/auto_gpu_route.py [CALIBRATION_JSON] [--json PATH]

For a few calls on the cuda side of the route table (numpy in, numpy out), five variants in a
shuffled order each round, each timed call right after its own untimed one (every call runs on
cuda, so all share their predecessors): the verb with ``backend="cuda"``, the verb routed by a
context holding the calibration, the backend's method called directly (no routing at all), and
the routing decision alone (``_be``) for both. Prints medians and the 95 % interval of the
per-round ratio auto / cuda. CALIBRATION_JSON: a bench_auto JSON (default this session's run).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import pytropical_gpu as tg  # noqa: E402
from benchmarks._auto_timing import median_ci  # noqa: E402
from pytropical_gpu import HybridContext  # noqa: E402
from pytropical_gpu.backends import get_backend  # noqa: E402
from pytropical_gpu.thresholds import Thresholds  # noqa: E402


def cases(ctx: HybridContext, gpu: str) -> dict:
    rng = np.random.default_rng(0)
    vs = tg.TernaryVec.random(32 * 256, batch=(16,), seed=1)
    a = tg.TernaryVec.random(32 * 16384, seed=2)
    f = rng.random((128, 128), np.float32)
    i = rng.integers(-1000, 1000, (128, 128), dtype=np.int32)
    x = rng.random((512, 512)) < 0.1
    cu = get_backend(gpu)
    return {  # name: (verb call with backend=, the backend's own method, op and operands for _be)
        "bundle 16x256 words": (lambda be: ctx.bundle(vs, backend=be), lambda: cu.bundle(vs),
                                ("bundle", (vs,), None)),
        "permute 16384 words": (lambda be: ctx.permute(a, 5, backend=be), lambda: cu.permute(a, 5),
                                ("permute", (a,), None)),
        "matmul 128^3 f32": (lambda be: ctx.matmul(f, f, "min_plus", backend=be),
                             lambda: cu.matmul(f, f, "min_plus"), ("matmul", (f, f, None), "min_plus")),
        "matmul 128^3 i32": (lambda be: ctx.matmul(i, i, "max_plus", backend=be),
                             lambda: cu.matmul(i, i, "max_plus"), ("matmul", (i, i, None), "max_plus")),
        "andor 512^2": (lambda be: ctx.andor_matmul(x, x, backend=be), lambda: cu.andor_matmul(x, x),
                        ("andor_matmul", (x, x), None)),
    }


def _variants(ctx: HybridContext, gpu: str, verb, direct, op: str, operands: tuple, sr) -> dict:
    return {"cuda": lambda: verb(gpu), "auto": lambda: verb(None), "direct": direct,
            "route auto": lambda: ctx._be(op, operands, None, sr),
            "route cuda": lambda: ctx._be(op, operands, gpu, sr)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("calibration", nargs="?", default="benchmarks/results/auto_h200_s4.json")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--seconds", type=float, default=1.5, help="per case")
    p.add_argument("--gpu", default="cuda", help="the backend compared with (a check elsewhere: wgpu)")
    a = p.parse_args(argv)
    ctx = HybridContext()
    ctx.use_calibration(Thresholds.from_json(json.loads(Path(a.calibration).read_text())["calibration"]))
    out = {}
    for name, (verb, direct, (op, operands, sr)) in cases(ctx, a.gpu).items():
        calls = _variants(ctx, a.gpu, verb, direct, op, operands, sr)
        routed = ctx._be(op, operands, None, sr).name
        t = {k: [] for k in calls}
        for f in calls.values():
            f()
        order, shuffle, end = list(calls), random.Random(name).shuffle, time.perf_counter() + a.seconds
        while time.perf_counter() < end or len(t["auto"]) < 20:
            shuffle(order)
            for k in order:
                calls[k]()
                t0 = time.perf_counter()
                calls[k]()
                t[k].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) * 1e6 for k, v in t.items()}
        lo, hi, _ = median_ci([x / y for x, y in zip(t["auto"], t["cuda"])])
        out[name] = {"routed_to": routed, "median_us": med, "n": len(t["auto"]),
                     "auto_over_cuda": med["auto"] / med["cuda"], "ci": [lo, hi]}
        print(f"{name} (auto -> {routed}, n={len(t['auto'])}): " +
              ", ".join(f"{k} {v:.2f} us" for k, v in med.items()) +
              f"; auto/cuda {med['auto'] / med['cuda']:.3f} [{lo:.3f}, {hi:.3f}]", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
