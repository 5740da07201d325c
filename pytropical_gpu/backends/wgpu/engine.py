"""The engine: one runtime per process, the pipeline cache, the buffer pool and dispatch grids.

Kernel modules (gemm, boolean, vsa) use only this module and :mod:`.runtime`'s interface.

Buffers and the operation lock that releases what a failed call took live in :mod:`.pool`. A forked
child cannot use the parent's device (see ``backends._process``).
"""

from __future__ import annotations

import logging
import os
import struct
import threading
from collections import OrderedDict, defaultdict

import numpy as np

from ...errors import BackendUnavailableError
from .. import _process
from . import templating
from .array import WgpuArray
from .pool import BufferPool, DeviceBuffer, OpLock, _round4
from .runtime import Copy, Dispatch, Runtime, create_runtime

log = logging.getLogger("pytropical_gpu")

WG = 256  # threads per workgroup for the 1-D kernels


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
        #: set by get_engine from the known-answer check (:mod:`.selfcheck`)
        self.selfcheck = None
        #: the adapter flushes subnormal floats to zero (WGSL allows it): see :mod:`.flush`
        self.flushes_subnormals = False

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
#: why the adapter may not be used (refused, device request failed, or known-answer check failed):
#: decided once per process, never retried
_engine_error: str | None = None
_engine_lock = threading.Lock()
#: a forked child's inherited device objects: never released there (a release could hang)
_abandoned: list = []


def get_engine() -> Engine:
    """The process-wide engine. The first call (under a lock: threads making their first call at
    once get the same engine) opens the adapter and runs the known-answer check of
    :mod:`.selfcheck`; an adapter that fails it is never used (BackendUnavailableError, also on
    every later call)."""
    global _engine, _engine_error
    _process.check("wgpu")
    with _engine_lock:
        if _engine is not None:
            return _engine
        if _engine_error is not None:
            raise BackendUnavailableError("wgpu", _engine_error)
        try:
            rt = create_runtime()
        except Exception as e:  # noqa: BLE001 - refused adapter, device request failed
            _engine_error = str(e) or type(e).__name__
            raise BackendUnavailableError("wgpu", _engine_error) from e
        from . import selfcheck

        eng = Engine(rt)
        res = selfcheck.run(eng)
        if not res.ok:
            i = rt.info
            _engine_error = (f"{rt.name}: adapter {i.name} ({i.backend}, {i.adapter_type}) failed "
                             f"the known-answer check, so it is never used: {res.reason}")
            rt.close()
            raise BackendUnavailableError("wgpu", _engine_error)
        eng.selfcheck = res
        eng.flushes_subnormals = res.flushes_subnormals
        log.info("wgpu: %s (%s, %s), max binding %d MiB%s", rt.info.name, rt.info.backend,
                 rt.info.adapter_type, rt.limits.max_storage_binding >> 20,
                 ", flushes subnormals" if res.flushes_subnormals else "")
        _engine = eng
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
