"""The engine: one runtime per process, the pipeline cache, the buffer pool and dispatch grids.

Kernel modules (gemm, boolean, vsa) use only this module and :mod:`.runtime`'s interface.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

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
            h = self.rt.create_buffer(cap)
            self.created += 1
        self.live_bytes += cap
        return DeviceBuffer(h, int(nbytes), cap)

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


class Engine:
    """Device, pipeline cache (per template and parameters), pool, and the upload/run/read helpers."""

    def __init__(self, rt: Runtime):
        self.rt = rt
        self.limits = rt.limits
        self.pool = BufferPool(rt)
        self._pipelines: dict[tuple, object] = {}
        self.stats = {"compiles": 0, "hits": 0}
        self.lock = threading.RLock()

    # ------------------------------------------------------------------ pipelines
    def pipeline(self, template: str, **params):
        """The compiled pipeline of ``template`` with ``params`` (compiled once, then cached)."""
        key = (template, tuple(sorted(params.items())))
        p = self._pipelines.get(key)
        if p is not None:
            self.stats["hits"] += 1
            return p
        src = templating.render(template, **params)
        label = f"{template}:" + ",".join(f"{k}={v}" for k, v in sorted(params.items()))[:200]
        p = self.rt.compile(src, label=label)
        self.stats["compiles"] += 1
        self._pipelines[key] = p
        return p

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


def get_engine() -> Engine:
    """The process-wide engine (creates the device on first use)."""
    global _engine
    with _engine_lock:
        if _engine is None:
            _engine = Engine(create_runtime())
            rt = _engine.rt
            log.info("wgpu: %s (%s, %s), max binding %d MiB", rt.info.name, rt.info.backend,
                     rt.info.adapter_type, rt.limits.max_storage_binding >> 20)
        return _engine


__all__ = ["BufferPool", "DeviceBuffer", "Engine", "WG", "get_engine", "pack_params"]
