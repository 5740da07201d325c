"""GPU timestamps around a wgpu-py submit (a benchmark helper: where a queued batch's GPU wait goes).

:func:`submit` records a command list exactly as ``WgpuPyRuntime.submit`` does (one compute pass for
consecutive dispatches, cached bind groups, one command buffer) and adds timestamp queries:

* ``"pass"``: the pass's beginning and end (``timestampWrites``: the feature ``timestamp-query``);
* ``"each"``: one timestamp at the pass's start and one after every dispatch
  (``wgpuComputePassEncoderWriteTimestamp``: the native feature ``timestamp-query-inside-passes``,
  which :func:`enable_inside_passes` asks for before the runtime makes its device).

After the batch's sync, :meth:`Stamps.read` gives the ticks in ns. A Vulkan timestamp is written
when every earlier command of the queue has finished, so the gap between two is what the second
dispatch cost the queue (its barrier, launch and run).
"""

from __future__ import annotations

import numpy as np

#: queries per set (wgpu's cap on a query set)
COUNT = 4096


def enable_inside_passes() -> tuple:
    """Ask for timestamps inside passes when the wgpu-py runtime makes its device (call first);
    returns the features asked before, for :func:`restore`."""
    from pytropical_gpu.backends.wgpu import runtime_wgpupy as rw

    was = rw._OPTIONAL_FEATURES
    extra = ("timestamp-query-inside-passes",)
    if extra[0] not in was:
        rw._OPTIONAL_FEATURES = tuple(was) + extra
    return was


def restore(was: tuple) -> None:
    """Ask for the features asked before :func:`enable_inside_passes` (a device made meanwhile
    keeps what it got)."""
    from pytropical_gpu.backends.wgpu import runtime_wgpupy as rw

    rw._OPTIONAL_FEATURES = was


class Stamps:
    """One query set and its resolve buffer on runtime ``rt``; ``used`` queries so far."""

    def __init__(self, rt):
        import wgpu

        self.rt = rt
        self.qs = rt.device.create_query_set(type=wgpu.QueryType.timestamp, count=COUNT)
        self.dst = rt.device.create_buffer(
            size=COUNT * 8, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        from wgpu.backends.wgpu_native._ffi import lib

        self.period = float(lib.wgpuQueueGetTimestampPeriod(rt.queue._internal))
        self.used = 0
        self.marks: list[tuple[int, int]] = []  # (first, end) query of each submit

    def reset(self) -> None:
        self.used, self.marks = 0, []

    def read(self) -> list[np.ndarray]:
        """Each submit's timestamps (ns), after the GPU finished them."""
        if not self.used:
            return []
        raw = np.frombuffer(self.rt.queue.read_buffer(self.dst, 0, self.used * 8), np.uint64)
        ns = raw.astype(np.float64) * self.period
        return [ns[a:b] for a, b in self.marks]


def features(rt) -> set:
    return set(getattr(rt, "features", ()) or ()) | set(rt.device.features)


def submit(rt, commands, stamps: Stamps, mode: str) -> None:
    """``rt.submit(commands)`` with timestamps (``mode`` "pass" or "each"; see the module)."""
    from pytropical_gpu.backends.wgpu import runtime_wgpupy as rw
    from pytropical_gpu.backends.wgpu.bindgroups import wgpupy_cache
    from pytropical_gpu.backends.wgpu.runtime import Copy, Dispatch

    blobs = [bytes(c.params) for c in commands if type(c) is Dispatch and c.params is not None]
    offs = rt._write_uniforms(blobs) if blobs else []
    ffi, lib = rw._raw()
    lookup = rw.lookup  # (as the runtime's submit finds them: a baseline may swap them)
    groups = rt._groups
    if groups is None:
        groups = rt._groups = wgpupy_cache(rt.device, ffi, lib)
    groups.drain()
    us = rw.uniform_keys(rt._uniform, offs, blobs)
    need = 2 if mode == "pass" else len(commands) + 1
    first = q = -(-stamps.used // 32) * 32  # a resolve's offset: a multiple of 256 bytes
    if first + need > COUNT:
        raise RuntimeError(f"timestamps: {need} more queries do not fit ({stamps.used} used)")
    qraw = stamps.qs._internal
    enc = rt.device.create_command_encoder()
    ui = 0
    p = pipe = None
    timed = False
    try:
        for cmd in commands:
            if type(cmd) is Copy:
                if p is not None:
                    p.end()
                    p = pipe = None
                lib.wgpuCommandEncoderCopyBufferToBuffer(
                    enc._internal, cmd.src._internal, int(cmd.src_offset), cmd.dst._internal,
                    int(cmd.dst_offset), int(cmd.size))
                continue
            if cmd.params is None:
                bg = lookup(groups, cmd, None)
            else:
                bg = lookup(groups, cmd, us[ui])
                ui += 1
            if p is None:
                if not timed and mode == "pass":  # the first pass only
                    p = enc.begin_compute_pass(timestamp_writes={
                        "query_set": stamps.qs, "beginning_of_pass_write_index": q,
                        "end_of_pass_write_index": q + 1})
                    q += 2
                else:
                    p = enc.begin_compute_pass()
                praw = p._internal
                if not timed and mode == "each":
                    lib.wgpuComputePassEncoderWriteTimestamp(praw, qraw, q)
                    q += 1
                timed = True
            if cmd.pipeline is not pipe:
                pipe = cmd.pipeline
                lib.wgpuComputePassEncoderSetPipeline(praw, pipe._internal)
            lib.wgpuComputePassEncoderSetBindGroup(praw, 0, bg, 0, ffi.NULL)
            gx, gy, gz = cmd.groups
            lib.wgpuComputePassEncoderDispatchWorkgroups(praw, int(gx), int(gy), int(gz))
            if mode == "each":
                lib.wgpuComputePassEncoderWriteTimestamp(praw, qraw, q)
                q += 1
        if p is not None:
            p.end()
        if q > first:
            enc.resolve_query_set(stamps.qs, first, q - first, stamps.dst, first * 8)
        rt.queue.submit([enc.finish()])
    finally:
        groups.done()
    stamps.used = q
    stamps.marks.append((first, q))


def summary(ns: np.ndarray, mode: str) -> dict:
    """A submit's timestamps as numbers: the span, and per dispatch ("each") the gaps' spread."""
    if len(ns) < 2:
        return {}
    out = {"gpu_span_us": float(ns[-1] - ns[0]) / 1e3}
    if mode == "each":
        d = np.diff(ns) / 1e3
        k = max(1, len(d) // 10)
        out.update(n=int(len(d)), gap_med_us=float(np.median(d)), gap_p10_us=float(np.percentile(d, 10)),
                   gap_p90_us=float(np.percentile(d, 90)), gap_min_us=float(d.min()),
                   gap_max_us=float(d.max()), first10pct_us=float(d[:k].mean()),
                   last10pct_us=float(d[-k:].mean()),
                   deciles_us=[round(float(x.mean()), 2) for x in np.array_split(d, 10)])
    return out
