"""What "auto" spends deciding a matmul it sends to wgpu: the lean path (session 5) against the
full path it took before (``inexact_reason`` read the operands on every call), same run.

    python benchmarks/route_wgpu_lean.py [--seconds S] [--verbs] [--json PATH]

A context routes every matmul to wgpu (``cpu_threshold=0``, its GPU set to wgpu: as on a machine
whose only GPU is a hardware adapter). Per call, in shuffled rounds of ``timeit`` loops: ``_be``
as now ("lean"), ``_be`` with the lean rule of session 4 ("full": a backend with
``inexact_reason`` never lean), and ``backend="wgpu"``'s decision. ``--verbs`` also times whole
calls, auto against ``backend="wgpu"`` (on lavapipe these are milliseconds: only on a GPU does the
ratio mean anything); ``--flushing`` sets the adapter's flag, so a float32 matmul still takes the
full path (its rule reads the data) and int32 shows the lean one. Prints medians per call in
microseconds.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu import HybridContext, _route_decide  # noqa: E402
from pytropical_gpu.backends import get_backend  # noqa: E402


def _old_rule(be, dtype: str) -> bool:
    """Session 4's lean condition for a matmul on a GPU."""
    return not hasattr(be, "inexact_reason") and dtype in be.gemm_dtypes


def _cases(ctx: HybridContext, x: np.ndarray, sr: str, verbs: bool) -> dict:
    """Variant name -> a function timing it (seconds per call)."""
    ops, new_rule = (x, x, None), _route_decide.surely_exact

    def decide(rule, backend=None):
        def run():
            _route_decide.surely_exact = rule
            try:
                return timeit.timeit(lambda: ctx._be("matmul", ops, backend, sr), number=2000) / 2000
            finally:
                _route_decide.surely_exact = new_rule
        return run

    cases = {"lean": decide(new_rule), "full (s4 rule)": decide(_old_rule),
             "backend=wgpu": decide(new_rule, "wgpu")}
    if verbs:
        cases["verb auto"] = lambda: timeit.timeit(lambda: ctx.matmul(x, x, sr), number=5) / 5
        cases["verb backend=wgpu"] = lambda: timeit.timeit(
            lambda: tg.matmul(x, x, sr, backend="wgpu"), number=5) / 5
    return cases


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=2.0, help="per case")
    p.add_argument("--verbs", action="store_true", help="also time whole calls (GPU machines)")
    p.add_argument("--flushing", action="store_true",
                   help="set the adapter's flushes_subnormals flag (the H200's Vulkan adapter flushes)")
    p.add_argument("--json", metavar="PATH")
    a = p.parse_args(argv)
    wgpu = get_backend("wgpu")
    if a.flushing:
        wgpu.engine.flushes_subnormals = True
    ctx = HybridContext(cpu_threshold=0)
    ctx._gpu = "wgpu"
    rng = np.random.default_rng(0)
    f = rng.random((128, 128), np.float32)
    i = rng.integers(-1000, 1000, (128, 128), dtype=np.int32)
    out = {"adapter": wgpu.describe()["device"], "flushes_subnormals": wgpu.flushes_subnormals}
    for name, (x, sr) in {"matmul 128^3 f32 min_plus": (f, "min_plus"),
                          "matmul 128^3 i32 max_plus": (i, "max_plus")}.items():
        assert ctx._be("matmul", (x, x, None), None, sr).name == "wgpu"
        cases = _cases(ctx, x, sr, a.verbs)
        t = {k: [] for k in cases}
        order, end = list(cases), time.perf_counter() + a.seconds
        while time.perf_counter() < end or len(t["lean"]) < 15:
            random.shuffle(order)
            for k in order:
                t[k].append(cases[k]())
        med = {k: statistics.median(v) * 1e6 for k, v in t.items()}
        out[name] = {"median_us": med, "rounds": len(t["lean"])}
        print(f"{name} ({len(t['lean'])} rounds): " + ", ".join(f"{k} {v:.2f} us" for k, v in med.items()),
              flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
