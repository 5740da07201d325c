"""CUDA-event timing for the benchmark scripts: the one loop they share, so that every script
times a call the same way (and a fix to the loop reaches them all).

``pytropical_gpu.bench.gputime.cupy_time`` is the library suites' variant: it synchronises after
its warm-up and reports the 20 / 80 % quantiles; the scripts here recorded their runs with the loop
below, so they keep it.
"""

from __future__ import annotations

import numpy as np


def event_times(cp, fn, reps: int, warmup: int = 1, inner: int = 1) -> list[float]:
    """Seconds per call of ``fn``, one value per repetition.

    ``warmup`` calls first (not waited for: the first event records behind them on the stream),
    then ``reps`` times: an event, ``inner`` calls back to back (host launch gaps hidden behind the
    device work), an event, a wait for it; the time between the events divided by ``inner``.
    ``cp`` is the CuPy module.
    """
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(reps):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        for _ in range(inner):
            fn()
        e1.record()
        e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1) / 1e3 / inner)
    return ts


def median_quartiles(ts) -> tuple[float, float, float]:
    """(median, 25th, 75th percentile) of ``ts``, as floats in the unit of ``ts``."""
    return float(np.median(ts)), float(np.percentile(ts, 25)), float(np.percentile(ts, 75))


__all__ = ["event_times", "median_quartiles"]
