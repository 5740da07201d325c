"""A fixed command list submitted again and again with its bind groups and uniforms made once.

:meth:`.runtime.Runtime.submit` makes a bind group per dispatch and writes every uniform block on
each call (~14 µs a bind group on the H200's host, issue 13). A search plan submits the same
dispatches over the same buffers on every call, so here (wgpu-py's C API only) the uniform blocks
are written once into a buffer of their own, each dispatch's bind group is created once, and a call
records the encoder, one compute pass, the copies and the submit through wgpu-native directly. The
first dispatch's storage bindings may be replaced for one call (a resident query bound in place):
that bind group is made for the call and released after it.

A hook beside ``runtime_wgpupy`` (owned elsewhere), not part of the runtime interface:
:func:`record` returns None on any other runtime and the caller uses ``rt.submit``.
"""

from __future__ import annotations

from .runtime import Copy, Dispatch, pack_uniforms, storage_ranges, uniform_size
from .runtime_wgpupy import WgpuPyRuntime, _raw


class Recorded:
    """``cmds`` (dispatches, then copies) ready to submit on ``rt`` (:meth:`submit`)."""

    def __init__(self, rt: WgpuPyRuntime, cmds):
        import wgpu

        ffi, lib = self._raw = _raw()
        self._dev, self._queue = rt.device._internal, rt.queue._internal
        disps = [c for c in cmds if isinstance(c, Dispatch)]
        if any(isinstance(c, Copy) for c in cmds[:len(disps)]):
            raise ValueError("recorded: dispatches must come before copies")
        blobs = [bytes(d.params) for d in disps if d.params is not None]
        offs, stage = pack_uniforms(blobs, rt.limits.min_uniform_offset_alignment)
        self._uniform = None
        if blobs:
            self._uniform = rt.device.create_buffer(
                size=max(len(stage), 16), usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
            rt.queue.write_buffer(self._uniform, 0, stage)
        self._groups, self._steps, self._bgl = [], [], []
        ui = 0
        for d in disps:
            uni = None
            if d.params is not None:
                uni = (offs[ui], uniform_size(blobs[ui]))
                ui += 1
            bg = self._bind_group(d, storage_ranges(d), uni)
            self._groups.append(bg)
            self._bgl.append(uni)
            self._steps.append((d.pipeline._internal, bg, *map(int, d.groups)))
        self._first = disps[0] if disps else None
        self._copies = [(c.src._internal, c.src_offset, c.dst._internal, c.dst_offset, c.size)
                        for c in cmds[len(disps):]]
        self._keep = cmds  # the pipelines and buffers stay referenced while recorded
        self._enc = ffi.new("WGPUCommandEncoderDescriptor *")
        self._pass = ffi.new("WGPUComputePassDescriptor *")
        self._fin = ffi.new("WGPUCommandBufferDescriptor *")
        self._cbs = ffi.new("WGPUCommandBuffer[1]")

    def _bind_group(self, d: Dispatch, ranges, uni):
        ffi, lib = self._raw
        n = len(ranges) + (uni is not None)
        arr = ffi.new("WGPUBindGroupEntry[]", n)
        i = 0
        if uni is not None:
            e = arr[0]
            e.binding, e.buffer, e.offset, e.size = 0, self._uniform._internal, uni[0], uni[1]
            i = 1
        for slot, buf, off, size in ranges:
            e = arr[i]
            e.binding, e.buffer, e.offset, e.size = slot, buf._internal, off, size
            i += 1
        desc = ffi.new("WGPUBindGroupDescriptor *")
        desc.layout, desc.entryCount, desc.entries = d.pipeline._pt_bgl._internal, n, arr
        return lib.wgpuDeviceCreateBindGroup(self._dev, desc)

    def submit(self, first_bindings=None) -> None:
        """Record and submit the commands; ``first_bindings``: storage bindings of the first
        dispatch for this call only (its bind group is made now and released after)."""
        ffi, lib = self._raw
        steps, extra = self._steps, None
        if first_bindings is not None:
            d = self._first
            d = Dispatch(d.pipeline, tuple(first_bindings), d.groups, d.params)
            extra = self._bind_group(d, storage_ranges(d), self._bgl[0])
            steps = [(steps[0][0], extra, *steps[0][2:])] + steps[1:]
        try:
            enc = lib.wgpuDeviceCreateCommandEncoder(self._dev, self._enc)
            p = lib.wgpuCommandEncoderBeginComputePass(enc, self._pass)
            last = None
            for pipe, bg, gx, gy, gz in steps:
                if pipe != last:
                    lib.wgpuComputePassEncoderSetPipeline(p, pipe)
                    last = pipe
                lib.wgpuComputePassEncoderSetBindGroup(p, 0, bg, 0, ffi.NULL)
                lib.wgpuComputePassEncoderDispatchWorkgroups(p, gx, gy, gz)
            lib.wgpuComputePassEncoderEnd(p)
            lib.wgpuComputePassEncoderRelease(p)
            for src, so, dst, do, size in self._copies:
                lib.wgpuCommandEncoderCopyBufferToBuffer(enc, src, so, dst, do, size)
            cb = self._cbs[0] = lib.wgpuCommandEncoderFinish(enc, self._fin)
            lib.wgpuQueueSubmit(self._queue, 1, self._cbs)
            lib.wgpuCommandBufferRelease(cb)
            lib.wgpuCommandEncoderRelease(enc)
        finally:
            if extra is not None:
                lib.wgpuBindGroupRelease(extra)

    def write(self, buf, data) -> None:
        """``queue.write_buffer(buf, 0, data)`` straight through the C API (``data``: a C-contiguous
        numpy array; ordered before the next submit like any queue write)."""
        ffi, lib = self._raw
        lib.wgpuQueueWriteBuffer(self._queue, buf._internal, 0, ffi.from_buffer(data), data.nbytes)

    def close(self) -> None:
        """Release the bind groups and the uniform buffer."""
        _, lib = self._raw
        for bg in self._groups:
            lib.wgpuBindGroupRelease(bg)
        self._groups, self._steps = [], []
        if self._uniform is not None:
            self._uniform.destroy()
            self._uniform = None


def record(rt, cmds) -> Recorded | None:
    """A :class:`Recorded` of ``cmds`` on ``rt`` when it is wgpu-py with its C API, else None."""
    if not isinstance(rt, WgpuPyRuntime) or _raw() is None:
        return None
    return Recorded(rt, cmds)


__all__ = ["Recorded", "record"]
