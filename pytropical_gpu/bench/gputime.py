"""Device timing for the GPU suites: wgpu dispatches queued and waited for once, CuPy events."""

from __future__ import annotations

import numpy as np

from . import harness as h


def cupy_or_none():
    """CuPy when it sees a CUDA device (the cuBLAS baselines), else None."""
    try:
        import cupy as cp

        cp.cuda.Device(0).compute_capability  # noqa: B018 - raises without a device
        return cp
    except Exception:  # noqa: BLE001
        return None


def queue_time(eng, disp, reps, repeats=7, max_time=20.0) -> h.Timing:
    """Per-dispatch time of ``reps`` identical wgpu dispatches submitted at once, then a wait
    (``disp`` may be a list of dispatches that make up one call: they repeat together)."""
    cmds = list(disp) if isinstance(disp, (list, tuple)) else [disp]
    t = h.median_time(lambda: eng.submit(cmds * reps), eng.sync, repeats=repeats, warmup=1,
                      max_time=max_time)
    return h.Timing(t.median / reps, t.q20 / reps, t.q80 / reps, t.n)


def event_times(cp, fn, reps: int, warmup: int = 1, inner: int = 1, before=None) -> list[float]:
    """Seconds per call of ``fn``, one value per repetition (the CUDA-event loop of the GPU suites
    and the GEMM benchmark scripts).

    ``warmup`` calls first (not waited for: the first event records behind them on the stream),
    then ``reps`` times: ``before()`` where given (outside the events: e.g. a spinning kernel, so
    that a short ``fn``'s host launches queue while the GPU is busy and the events time the GPU's
    work alone), an event, ``inner`` calls back to back (host launch gaps hidden behind the device
    work), an event, a wait for it; the time between the events divided by ``inner``. ``cp`` is the
    CuPy module.
    """
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(reps):
        if before is not None:
            before()
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


def cupy_time(cp, fn, reps, repeats=7) -> h.Timing:
    """Per-call time of ``reps`` calls of ``fn`` between two CUDA events, after one call that is
    waited for."""
    fn()
    cp.cuda.Device().synchronize()
    ts = event_times(cp, fn, repeats, warmup=0, inner=reps)
    q20, med, q80 = np.quantile(ts, [0.2, 0.5, 0.8])
    return h.Timing(float(med), float(q20), float(q80), len(ts))


def copy_time(eng, nbytes, reps) -> h.Timing:
    """Per-copy time of a wgpu device-to-device copy of ``nbytes`` (the memory-bound baseline)."""
    src, dst = eng.alloc(nbytes), eng.alloc(nbytes)
    t = h.median_time(lambda: eng.submit([eng.copy(src, dst, nbytes)] * reps), eng.sync,
                      repeats=7, warmup=1, max_time=10.0)
    eng.release(src, dst)
    return h.Timing(t.median / reps, t.q20 / reps, t.q80 / reps, t.n)


__all__ = ["copy_time", "cupy_or_none", "cupy_time", "event_times", "median_quartiles", "queue_time"]
