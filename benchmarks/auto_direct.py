"""auto's routing cost measured directly: the same small calls through a context routing by a saved
calibration, one routing by the defaults, and ``backend="cpu"``, each in a tight loop (best of 5).

    python benchmarks/auto_direct.py [CALIBRATION_JSON]

CALIBRATION_JSON: a bench_auto JSON (its ``calibration``); default the committed H200 run.
Cross-checks bench_auto's ``auto`` column, which measures through its case machinery.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

import pytropical_gpu as tg
from pytropical_gpu import HybridContext
from pytropical_gpu.thresholds import Thresholds


def best_us(f, n: int = 3000) -> float:
    for _ in range(300):
        f()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        best = min(best, (time.perf_counter() - t0) / n * 1e6)
    return best


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/auto_h200_run2.json"
    with open(path) as fh:
        cal = Thresholds.from_json(json.load(fh)["calibration"])
    c1, c2 = HybridContext(), HybridContext()
    c1.use_calibration(cal)
    c2.use_calibration(None)
    a, b = tg.TernaryVec.random(512, seed=1), tg.TernaryVec.random(512, seed=2)
    x = np.random.default_rng(0).random((8, 8)).astype(np.float32)
    calls = [("bind cpu", lambda: c1.bind(a, b, backend="cpu")), ("bind cal", lambda: c1.bind(a, b)),
             ("bind def", lambda: c2.bind(a, b)),
             ("mm cpu", lambda: c1.matmul(x, x, "min_plus", backend="cpu")),
             ("mm cal", lambda: c1.matmul(x, x, "min_plus")),
             ("mm def", lambda: c2.matmul(x, x, "min_plus")),
             ("bf cal", lambda: c1.backend_for("bind", a, b)),
             ("bf def", lambda: c2.backend_for("bind", a, b))]
    for name, f in calls:
        print(f"{name}: {best_us(f):.2f} us", flush=True)
    print("gpu", c1.gpu, c2.gpu, "routes", c1._routes()["bind"], c2._routes()["bind"])


if __name__ == "__main__":
    main()
