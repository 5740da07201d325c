"""A small read-back through one recycled MAP_READ buffer, waited for in the calling thread.

wgpu-py's ``queue.read_buffer`` creates a mappable buffer, a command buffer and a submit for every
read, then waits through its poll thread (a thread hand-off and a promise each way). A caller that
reads the same few bytes after every call (search's (Q, k) pairs) instead copies them into one
:class:`Staging` buffer inside its own submit and maps it here: ``wgpuBufferMapAsync``, then
``wgpuDevicePoll`` in this thread (non-blocking for up to ``SPIN_S``, then waiting: it returns
once the submitted work is done and runs the map callback), one memcpy, unmap. Only on wgpu-py's
tested C API line (:func:`staging` returns None elsewhere: Dawn's runtime already reads through a
recycled staging buffer).

A hook beside ``runtime_wgpupy`` (owned elsewhere), not part of the runtime interface.
"""

from __future__ import annotations

import time

import numpy as np

from .runtime_wgpupy import WgpuPyRuntime, _raw

#: polls a read may take before it gives up (each one waits for all submitted work)
_MAX_POLLS = 1000
#: seconds a read polls without blocking before it waits in the driver: a short search is done
#: within ~0.2 ms, and a blocking wait adds the thread's wake-up to every call
SPIN_S = 0.0005


class Staging:
    """``nbytes`` of mappable memory, written by a :class:`~.runtime.Copy` in the caller's submit
    (``handle`` is its destination) and read with :meth:`read` after that submit."""

    def __init__(self, rt: WgpuPyRuntime, nbytes: int):
        import wgpu

        ffi, lib = _raw()
        self.nbytes = max(4, (int(nbytes) + 3) & ~3)
        self.handle = rt.device.create_buffer(
            size=self.nbytes, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST,
            label="search staging")
        self._dev = rt.device._internal
        state = self._state = [0]
        ok = lib.WGPUMapAsyncStatus_Success

        @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
        def done(status, _msg, _u1, _u2):
            state[0] = 1 if status == ok else 2

        self._cb = done  # kept alive with the buffer
        self._info = ffi.new("WGPUBufferMapCallbackInfo *")
        self._info.mode = lib.WGPUCallbackMode_AllowProcessEvents
        self._info.callback = done

    def read(self, nbytes: int) -> np.ndarray:
        """The first ``nbytes`` (a multiple of 4) as a new uint8 array, after all submitted work."""
        ffi, lib = _raw()
        buf = self.handle._internal
        self._state[0] = 0
        lib.wgpuBufferMapAsync(buf, lib.WGPUMapMode_Read, 0, nbytes, self._info[0])
        if SPIN_S > 0:
            end = time.perf_counter() + SPIN_S
            while not self._state[0] and time.perf_counter() < end:
                lib.wgpuDevicePoll(self._dev, False, ffi.NULL)
        for _ in range(_MAX_POLLS):
            if self._state[0]:
                break
            lib.wgpuDevicePoll(self._dev, True, ffi.NULL)
        if self._state[0] != 1:
            raise RuntimeError(f"wgpu: mapping the search staging buffer failed "
                               f"(state {self._state[0]} after {_MAX_POLLS} polls)")
        try:
            ptr = lib.wgpuBufferGetConstMappedRange(buf, 0, nbytes)
            out = np.frombuffer(ffi.buffer(ptr, nbytes), np.uint8).copy()
        finally:
            lib.wgpuBufferUnmap(buf)
        return out

    def destroy(self) -> None:
        self.handle.destroy()


def staging(rt, nbytes: int) -> Staging | None:
    """A :class:`Staging` on ``rt`` when it is wgpu-py with its C API, else None."""
    if not isinstance(rt, WgpuPyRuntime) or _raw() is None:
        return None
    return Staging(rt, nbytes)


__all__ = ["Staging", "staging"]
