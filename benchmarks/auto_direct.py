"""auto's routing cost measured directly: the same small calls through a context routing by a saved
calibration, one routing by the defaults, the module verb, and ``backend="cpu"``, each in a tight
loop (best of 5); then whether a cpu call is slower right after a GPU call (bench_auto's excess).

    python benchmarks/auto_direct.py [CALIBRATION_JSON]

CALIBRATION_JSON: a bench_auto JSON (its ``calibration``); default the committed H200 run.
Cross-checks bench_auto's ``auto`` column, which measures through its case machinery.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu import HybridContext  # noqa: E402
from pytropical_gpu.routing import usable_backends  # noqa: E402
from pytropical_gpu.thresholds import Thresholds  # noqa: E402


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


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def after_us(prev, f, n: int = 400, same_first: bool = True, gap=None) -> float:
    """Median time of ``f`` right after ``prev`` (then ``gap()`` if given, and an untimed ``f``, as
    bench_auto times)."""
    out = []
    for _ in range(n):
        prev()
        if gap is not None:
            gap()
        if same_first:
            f()
        t0 = time.perf_counter()
        f()
        out.append(time.perf_counter() - t0)
    return statistics.median(out) * 1e6


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/auto_h200_run2.json"
    with open(path) as fh:
        cal = Thresholds.from_json(json.load(fh)["calibration"])
    c1, c2 = HybridContext(), HybridContext()
    c1.use_calibration(cal)
    c2.use_calibration(None)
    a, b = tg.TernaryVec.random(512, seed=1), tg.TernaryVec.random(512, seed=2)
    x = np.random.default_rng(0).random((8, 8)).astype(np.float32)
    m = np.random.default_rng(0).random((16, 16)) < 0.5
    calls = [("bind cpu", lambda: c1.bind(a, b, backend="cpu")), ("bind cal", lambda: c1.bind(a, b)),
             ("bind def", lambda: c2.bind(a, b)), ("bind module", lambda: tg.bind(a, b)),
             ("dot cpu", lambda: c1.dot(a, b, backend="cpu")), ("dot cal", lambda: c1.dot(a, b)),
             ("pack cpu", lambda: c1.pack_rows(m, backend="cpu")), ("pack cal", lambda: c1.pack_rows(m)),
             ("mm cpu", lambda: c1.matmul(x, x, "min_plus", backend="cpu")),
             ("mm cal", lambda: c1.matmul(x, x, "min_plus")),
             ("mm def", lambda: c2.matmul(x, x, "min_plus")),
             ("bf cal", lambda: c1.backend_for("bind", a, b)),
             ("bf def", lambda: c2.backend_for("bind", a, b))]
    for _, f in calls:  # every context probes its GPUs and builds its table before any timing
        f()
    time.sleep(1.0)  # what the probes started (driver threads) settles
    for name, f in calls:
        print(f"{name}: {best_us(f):.2f} us", flush=True)
    print("gpu", c1.gpu, c2.gpu, "routes", c1._routes()["bind"], c2._routes()["bind"])
    cpu = lambda: c1.bind(a, b, backend="cpu")  # noqa: E731
    prevs = {"cpu": cpu}
    for g in usable_backends(include_software=True)[1:]:
        prevs[g] = lambda g=g: c1.bind(a, b, backend=g)
    for name, prev in prevs.items():
        print(f"cpu bind after {name}: {after_us(prev, cpu):.2f} us (after an untimed cpu call), "
              f"{after_us(prev, cpu, same_first=False):.2f} us (right after), "
              f"{after_us(prev, cpu, gap=lambda: spin(2e-4)):.2f} us (0.2 ms busy first), "
              f"{after_us(prev, cpu, gap=lambda: spin(2e-3)):.2f} us (2 ms busy first), "
              f"{after_us(prev, cpu, gap=lambda: time.sleep(1e-3)):.2f} us (1 ms asleep first)",
              flush=True)


if __name__ == "__main__":
    main()
