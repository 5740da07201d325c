"""The engine: one runtime per process, the pipeline cache, the buffer pool and dispatch grids.

Kernel modules (gemm, boolean, vsa) use only this module and :mod:`.runtime`'s interface.

Faults: every operation runs under ``Engine.lock`` (an :class:`OpLock`); pool buffers the outermost
holder took and did not give back are released when it lets go, so a call that raises (a failed
dispatch, an allocation the device refused) leaves nothing allocated. A refused allocation raises
:class:`~pytropical_gpu.errors.DeviceMemoryError` (a MemoryError) after idle buffers were freed and
the allocation retried once. A forked child cannot use the parent's device (see ``_process``).
"""

from __future__ import annotations

import logging
import os
import struct
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass

import numpy as np

from ...errors import DeviceMemoryError
from .. import _process
from . import templating
from .array import WgpuArray
from .runtime import Binding, Copy, Dispatch, Runtime, create_runtime

log = logging.getLogger("pytropical_gpu")

WG = 256  # threads per workgroup for the 1-D kernels


@dataclass(eq=False)
class DeviceBuffer:
    """A pooled device buffer: ``handle`` holds at least ``nbytes`` (its class size ``capacity``)."""

    handle: object
    nbytes: int
    capacity: int
    #: False for a resident array's buffer bound in place (release leaves it alone)
    pooled: bool = True
    #: byte offset of the data in ``handle`` (resident views only; aligned for binding)
    base: int = 0
    #: keeps a resident array's storage alive while this binding is in use
    owner: object = None

    def binding(self, offset: int = 0, size: int | None = None) -> Binding:
        size = (self.nbytes - offset) if size is None else size
        return Binding(self.handle, self.base + offset, max(_round4(size), 4))


def _round4(n: int) -> int:
    return (int(n) + 3) & ~3


class BufferPool:
    """Buffers recycled by size class (powers of two from 256 bytes), so repeated calls of one
    shape allocate nothing. ``max_free_bytes`` bounds what idle buffers may hold."""

    def __init__(self, rt: Runtime, max_free_bytes: int = 1 << 30):
        self.rt = rt
        self.max_free_bytes = max_free_bytes
        self._free: dict[int, list] = defaultdict(list)
        self.free_bytes = 0
        self.live_bytes = 0
        self.created = 0
        #: buffers handed out during the current operation (see :class:`OpLock`), else None
        self._scope: list[DeviceBuffer] | None = None

    def _class(self, nbytes: int) -> int:
        """Size class: powers of two up to 64 MiB, then multiples of 16 MiB (bounded by the limit)."""
        n = max(256, _round4(nbytes))
        c = 1 << (n - 1).bit_length() if n <= (64 << 20) else -(-n // (16 << 20)) * (16 << 20)
        return max(n, min(c, self.rt.limits.max_buffer_size))

    def acquire(self, nbytes: int) -> DeviceBuffer:
        cap = self._class(nbytes)
        lst = self._free.get(cap)
        if lst:
            h = lst.pop()
            self.free_bytes -= cap
        else:
            h = self._create(cap)
            self.created += 1
        self.live_bytes += cap
        buf = DeviceBuffer(h, int(nbytes), cap)
        if self._scope is not None:
            self._scope.append(buf)
        return buf

    def _create(self, cap: int):
        """A new device buffer; on a memory failure idle buffers are freed and it is tried once more,
        then :class:`DeviceMemoryError` names the size and what the pool holds."""
        for attempt in (0, 1):
            try:
                return self.rt.create_buffer(cap)
            except Exception as e:
                if not (isinstance(e, MemoryError) or "memory" in str(e).lower()):
                    raise
                if attempt == 0 and self.free_bytes:
                    self.trim(0)
                    continue
                raise DeviceMemoryError(
                    f"wgpu: the device could not allocate a buffer of {cap} bytes ({self.live_bytes} "
                    f"bytes in use by this call; {type(e).__name__}: {e}); use smaller operands or "
                    "free device-resident arrays") from e
        raise AssertionError("unreachable")  # pragma: no cover

    def begin(self) -> None:
        """Start recording the buffers one operation takes."""
        self._scope = []

    def end(self) -> int:
        """Release every buffer of the operation that is still held; returns how many were."""
        scope, self._scope = self._scope, None
        held = [b for b in scope or () if b.handle is not None]
        for b in held:
            self.release(b)
        return len(held)

    def release(self, buf: DeviceBuffer) -> None:
        if buf is None or buf.handle is None:
            return
        if not buf.pooled:  # a resident array's own buffer: never recycled
            buf.handle = buf.owner = None
            return
        self.live_bytes -= buf.capacity
        self._free[buf.capacity].append(buf.handle)
        self.free_bytes += buf.capacity
        buf.handle = None
        if self.free_bytes > self.max_free_bytes:
            self.trim(self.max_free_bytes // 2)

    def trim(self, keep_bytes: int = 0) -> None:
        """Destroy idle buffers, largest first, until at most ``keep_bytes`` stay idle."""
        for cap in sorted(self._free, reverse=True):
            lst = self._free[cap]
            while lst and self.free_bytes > keep_bytes:
                self.rt.destroy_buffer(lst.pop())
                self.free_bytes -= cap

    @property
    def total_bytes(self) -> int:
        return self.free_bytes + self.live_bytes


class OpLock:
    """The engine's re-entrant lock; the outermost ``with`` is one operation. When it ends, pool
    buffers taken inside it and not given back are released (after an exception that is everything
    the failed call held; after a normal return nothing should be left, and what is gets logged)."""

    def __init__(self, pool: BufferPool):
        self._lock = threading.RLock()
        self._depth = 0
        self.pool = pool

    def __enter__(self):
        self._lock.acquire()
        self._depth += 1
        if self._depth == 1:
            self.pool.begin()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if self._depth == 1:
                n = self.pool.end()
                if n and exc_type is None:
                    log.debug("wgpu: an operation returned with %d pool buffers held; released", n)
        finally:
            self._depth -= 1
            self._lock.release()
        return False


class _ForkedRuntime:
    """Stands in for the runtime in a forked child: every use raises, destroying is a no-op."""

    def __init__(self, limits, info):
        self.limits, self.info = limits, info

    def destroy_buffer(self, handle) -> None:
        pass

    def __getattr__(self, name):
        _process.check("wgpu")
        raise AttributeError(name)


class Engine:
    """Device, pipeline cache (per template and parameters, least recently used dropped beyond
    ``max_pipelines``), pool, and the upload/run/read helpers."""

    #: compiled pipelines kept: skinny GEMMs specialise on (k, n), so a program that sweeps shapes
    #: would otherwise keep every variant (256 shapes compiled 601 pipelines, ~90 MiB)
    max_pipelines = 128

    def __init__(self, rt: Runtime):
        self.rt = rt
        self.limits = rt.limits
        self.pool = BufferPool(rt)
        self._pipelines: OrderedDict[tuple, object] = OrderedDict()
        self.stats = {"compiles": 0, "hits": 0, "evictions": 0}
        self.lock = OpLock(self.pool)

    # ------------------------------------------------------------------ pipelines
    def pipeline(self, template: str, **params):
        """The compiled pipeline of ``template`` with ``params`` (compiled once, then cached)."""
        key = (template, tuple(sorted(params.items())))
        p = self._pipelines.get(key)
        if p is not None:
            self.stats["hits"] += 1
            self._pipelines.move_to_end(key)
            return p
        src = templating.render(template, **params)
        label = f"{template}:" + ",".join(f"{k}={v}" for k, v in sorted(params.items()))[:200]
        p = self.rt.compile(src, label=label)
        self.stats["compiles"] += 1
        self._pipelines[key] = p
        while len(self._pipelines) > max(1, self.max_pipelines):
            self._pipelines.popitem(last=False)  # the runtime releases it once unreferenced
            self.stats["evictions"] += 1
        return p

    def _forked(self) -> None:
        """In a forked child: put the parent's device aside (kept referenced, so no release call
        reaches the runtime here) behind a runtime that raises, and make fresh locks."""
        _abandoned.append((self.rt, dict(self.pool._free), self._pipelines))
        self.rt = self.pool.rt = _ForkedRuntime(self.limits, getattr(self.rt, "info", None))
        self.pool._free = defaultdict(list)
        self.pool.free_bytes = 0
        self.pool._scope = None
        self._pipelines = OrderedDict()
        self.lock = OpLock(self.pool)

    # ------------------------------------------------------------------ memory
    @property
    def max_binding(self) -> int:
        return self.limits.max_storage_binding

    def alloc(self, nbytes: int) -> DeviceBuffer:
        return self.pool.acquire(nbytes)

    def upload(self, arr) -> DeviceBuffer:
        """A device buffer holding ``arr``: a numpy array is written through the runtime (into a
        pooled buffer); a resident :class:`~.array.WgpuArray` is bound in place (no copy), or, for a
        view whose offset the device cannot bind, copied on the device into a pooled buffer."""
        if isinstance(arr, WgpuArray):
            return self._bind_resident(arr)
        a = np.ascontiguousarray(arr)
        buf = self.pool.acquire(a.nbytes)
        raw = a.reshape(-1).view(np.uint8)
        if raw.nbytes % 4:
            raw = np.concatenate([raw, np.zeros(4 - raw.nbytes % 4, np.uint8)])
        self.rt.write(buf.handle, raw)
        return buf

    def _bind_resident(self, arr: WgpuArray) -> DeviceBuffer:
        self.stats["resident_binds"] = self.stats.get("resident_binds", 0) + 1
        n = arr.nbytes
        if arr._storage.engine is not self:  # made on another device: one host round trip
            return self.upload(arr.get())
        if arr.offset % 4:  # a sub-word view of a bool/uint8 array: host round trip
            return self.upload(arr.get())
        if arr.offset % self.limits.min_storage_offset_alignment == 0 or n == 0:
            return DeviceBuffer(arr.handle, n, arr._storage.capacity, pooled=False, base=arr.offset,
                                owner=arr._storage)
        # an unaligned view (a row chunk): one device-side copy, nothing crosses the bus
        buf = self.pool.acquire(n)
        self.rt.submit([Copy(arr.handle, arr.offset, buf.handle, 0, _round4(n))])
        self.stats["resident_copies"] = self.stats.get("resident_copies", 0) + 1
        return buf

    def download(self, buf: DeviceBuffer, dtype, shape, offset: int = 0) -> np.ndarray:
        dt = np.dtype(dtype)
        n = int(np.prod(shape)) * dt.itemsize
        raw = self.rt.read(buf.handle, offset, _round4(n))
        return np.frombuffer(raw, np.uint8, count=n).view(dt).reshape(shape).copy()

    def release(self, *bufs) -> None:
        for b in bufs:
            if b is not None:
                self.pool.release(b)

    # ------------------------------------------------------------------ commands
    def submit(self, commands) -> None:
        self.rt.submit(commands)

    def sync(self) -> None:
        self.rt.sync()

    def grid(self, nwg: int) -> tuple[int, int, int]:
        """A 2-D grid of at least ``nwg`` workgroups within the per-dimension limit."""
        lim = self.limits.max_workgroups_per_dim
        nwg = max(int(nwg), 1)
        if nwg <= lim:
            return (nwg, 1, 1)
        y = -(-nwg // lim)
        if y > lim:
            raise ValueError(f"wgpu: {nwg} workgroups exceed one dispatch (tile the work)")
        return (lim, y, 1)

    @staticmethod
    def dispatch(pipeline, bindings, groups, params: bytes | None = None) -> Dispatch:
        return Dispatch(pipeline, tuple(bindings), tuple(groups), params)

    @staticmethod
    def copy(src: DeviceBuffer, dst: DeviceBuffer, size: int, src_offset: int = 0,
             dst_offset: int = 0) -> Copy:
        return Copy(src.handle, src.base + src_offset, dst.handle, dst.base + dst_offset, _round4(size))


def pack_params(*values: int, fmt: str = "I") -> bytes:
    """Uniform bytes: u32 values (``fmt`` per value or one letter for all), padded to 16 bytes."""
    f = fmt if len(fmt) == len(values) else fmt * len(values)
    b = struct.pack("<" + f, *[int(v) for v in values])
    return b + bytes(-len(b) % 16)


_engine: Engine | None = None
_engine_lock = threading.Lock()
#: a forked child's inherited device objects: never released there (a release could hang)
_abandoned: list = []


def get_engine() -> Engine:
    """The process-wide engine (creates the device on first use)."""
    global _engine
    _process.check("wgpu")
    with _engine_lock:
        if _engine is None:
            _engine = Engine(create_runtime())
            rt = _engine.rt
            log.info("wgpu: %s (%s, %s), max binding %d MiB", rt.info.name, rt.info.backend,
                     rt.info.adapter_type, rt.limits.max_storage_binding >> 20)
        return _engine


def _after_fork_in_child() -> None:
    global _engine_lock
    _engine_lock = threading.Lock()
    if _engine is not None:  # the parent opened a device: a fresh one here hangs as well
        rt = _engine.rt
        what = f"a WebGPU device ({rt.name}: {rt.info.name})" if hasattr(rt, "info") else "a WebGPU device"
        _process.mark_forked("wgpu", what)
        _engine._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


__all__ = ["BufferPool", "OpLock", "DeviceBuffer", "Engine", "WG", "get_engine", "pack_params"]
