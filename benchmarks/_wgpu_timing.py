"""Timing for bench_wgpu_sweep.py: GPU timestamps around one compute pass of R dispatches (wall
time of R and 2R submits, differenced, where the device has no ``timestamp-query``), CuPy events."""

from __future__ import annotations

import json
import time

import numpy as np


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------------------- timing
def _timestamps(eng, disps, reps: int, repeats: int):
    import wgpu

    from pytropical_gpu.backends.wgpu.runtime import storage_ranges

    dev = eng.rt.device
    qs = dev.create_query_set(type="timestamp", count=2)
    rb = dev.create_buffer(size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
    groups = []
    for disp in disps:
        params = bytes(disp.params) + bytes(-len(disp.params) % 16)
        ub = dev.create_buffer(size=max(16, len(params)),
                               usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
        dev.queue.write_buffer(ub, 0, params)
        entries = [{"binding": 0, "resource": {"buffer": ub, "offset": 0, "size": len(params)}}]
        entries += [{"binding": s, "resource": {"buffer": b, "offset": o, "size": z}}
                    for s, b, o, z in storage_ranges(disp)]
        groups.append((disp, dev.create_bind_group(layout=disp.pipeline._pt_bgl, entries=entries)))
    ts = []
    for _ in range(repeats + 1):
        enc = dev.create_command_encoder()
        p = enc.begin_compute_pass(timestamp_writes={
            "query_set": qs, "beginning_of_pass_write_index": 0, "end_of_pass_write_index": 1})
        for _ in range(reps):
            for disp, bg in groups:
                p.set_pipeline(disp.pipeline)
                p.set_bind_group(0, bg)
                p.dispatch_workgroups(*disp.groups)
        p.end()
        enc.resolve_query_set(qs, 0, 2, rb, 0)
        dev.queue.submit([enc.finish()])
        t0, t1 = np.frombuffer(bytes(dev.queue.read_buffer(rb)), np.uint64)[:2]
        ts.append(float(t1 - t0) * 1e-9 / reps)
    return float(np.median(ts[1:]))


def _wall(eng, cmds, reps: int, repeats: int):
    def once(r):
        eng.submit(cmds * r)
        eng.sync()
        best = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            eng.submit(cmds * r)
            eng.sync()
            best.append(time.perf_counter() - t0)
        return float(np.median(best))

    t1, t2 = once(reps), once(2 * reps)
    return max(t2 - t1, 1e-9) / reps


#: False once timestamps failed (the rest of the run uses wall time)
USE_TS = True


def kernel_time(eng, disp, reps: int, repeats: int = 5) -> float:
    """Seconds per dispatch (``disp``: one dispatch or a list run in order, timed together)."""
    global USE_TS
    # (a Dispatch is itself a NamedTuple: one dispatch, not a list of them)
    disps = [disp] if hasattr(disp, "_fields") or not isinstance(disp, (list, tuple)) else list(disp)
    if USE_TS and "timestamp-query" in getattr(eng.rt, "features", ()):
        try:
            return _timestamps(eng, disps, reps, repeats)
        except Exception as e:  # noqa: BLE001 - fall back to wall time
            log(f"timestamps failed ({type(e).__name__}: {e}); wall time from now on")
            USE_TS = False
    return _wall(eng, disps, reps, repeats)


def copy_seconds(eng, nbytes: int, reps: int) -> float:
    src, dst = eng.alloc(nbytes), eng.alloc(nbytes)
    t = _wall(eng, [eng.copy(src, dst, nbytes)], reps, 5)
    eng.release(src, dst)
    return t


def cupy_or_none():
    try:
        import cupy as cp

        cp.cuda.Device(0).compute_capability  # noqa: B018
        return cp
    except Exception:  # noqa: BLE001
        return None


def cupy_seconds(cp, fn, reps: int) -> float:
    """Median seconds of one call of ``fn`` (5 rounds of ``reps`` calls between CUDA events)."""
    from pytropical_gpu.bench.gputime import cupy_time

    return cupy_time(cp, fn, reps, repeats=5).median


def run_steps(steps, out: dict, path: str, t0: float, untimed: str = "none") -> None:
    """Run a bench's timing steps in turn: a failing step is logged and listed in
    ``out["errors"]``, and ``out`` is rewritten to ``path`` after every step (a run cut short keeps
    what it measured); ``untimed`` names the timer when GPU timestamps were not available."""
    for step in steps:
        try:
            step()
        except Exception as e:  # noqa: BLE001
            log(f"step failed: {type(e).__name__}: {e}")
            out["errors"].append(f"{type(e).__name__}: {e}")
        out["timer"] = "gpu timestamps" if USE_TS else untimed
        with open(path, "w") as f:
            json.dump(out, f, indent=1, default=str)
    log(f"wrote {path} ({time.time() - t0:.0f} s); errors: {out['errors']}")
