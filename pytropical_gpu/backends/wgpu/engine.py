"""The engine: one runtime, the pipeline cache, the buffer pool and dispatch grids.

Kernel modules (gemm, boolean, vsa) use only this module and :mod:`.runtime`'s interface. The
process's one engine is opened (and its adapter checked) by :func:`.device.get_engine`.

Buffers and the operation lock that releases what a failed call took live in :mod:`.pool`. A forked
child cannot use the parent's device (see ``backends._process``).
"""

from __future__ import annotations

import logging
import struct
from collections import OrderedDict, defaultdict

import numpy as np

from .. import _process
from . import templating
from .pool import BufferPool, DeviceBuffer, OpLock, _round4
from .runtime import Copy, Dispatch, Runtime

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
        self._keys: dict = {}  # cheap key -> pipeline-cache key (see pipeline)
        self.stats = {"compiles": 0, "hits": 0, "evictions": 0}
        self.lock = OpLock(self.pool)
        #: set by get_engine from the known-answer check (:mod:`.selfcheck`)
        self.selfcheck = None
        #: the adapter flushes subnormal floats to zero (WGSL allows it): see :mod:`.flush`
        self.flushes_subnormals = False
        #: commands recorded by a batch (:meth:`record`), else None: :meth:`submit` appends here
        self.recording: list | None = None
        #: what recorded commands bind (resident storages) and the results made while recording
        self._keep: list = []
        self.made: list = []

    # ------------------------------------------------------------------ pipelines
    def pipeline(self, template: str, _key: tuple | None = None, **params):
        """The compiled pipeline of ``template`` with ``params`` (compiled once, then cached).
        ``_key``: a hashable that identifies ``(template, params)`` and is cheaper to make."""
        if _key is None:
            key = (template, tuple(sorted(params.items())))
        else:  # the cache keys stay (template, sorted params): _key only skips making them
            key = self._keys.get(_key)
            if key is None:
                if len(self._keys) > 8 * self.max_pipelines:
                    self._keys.clear()
                key = self._keys[_key] = (template, tuple(sorted(params.items())))
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
        pooled buffer); an array already on the device (a :class:`~.array.WgpuArray`: it has
        ``device_buffer``) hands over its own buffer, bound in place where it can be."""
        resident = getattr(arr, "device_buffer", None)
        if resident is not None:
            buf = resident(self)
            if self.recording is not None:
                self._keep.append(buf.owner)  # alive until the recorded commands are submitted
            return buf
        a = np.ascontiguousarray(arr)
        buf = self.pool.acquire(a.nbytes)
        raw = a.reshape(-1).view(np.uint8)
        if raw.nbytes % 4:
            raw = np.concatenate([raw, np.zeros(4 - raw.nbytes % 4, np.uint8)])
        self.rt.write(buf.handle, raw)
        return buf

    def count(self, stat: str) -> None:
        self.stats[stat] = self.stats.get(stat, 0) + 1

    def download(self, buf: DeviceBuffer, dtype, shape, offset: int = 0) -> np.ndarray:
        self.flush()  # a host value is demanded: what a batch recorded goes first
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
        """Submit ``commands`` now, or, while a batch records, append them to its command list."""
        if self.recording is not None:
            self.recording.extend(commands)
            self.count("recorded")
            return
        self.rt.submit(commands)

    def record(self) -> None:
        """Start recording (under :attr:`lock`, held by the batch): commands wait for :meth:`flush`,
        released pool buffers are recycled only after it."""
        self.recording, self.pool.hold = [], []
        self._keep, self.made = [], []

    def flush(self) -> None:
        """Submit what was recorded as one command buffer (recording goes on); then recycle the
        buffers released meanwhile (queue writes after a submit are ordered after it)."""
        if self.recording:
            cmds, self.recording = self.recording, []
            self.rt.submit(cmds)
            self.count("batch_submits")
        self._keep = []
        held, self.pool.hold = self.pool.hold, None
        for b in held or ():
            self.pool.release(b)
        if self.recording is not None:
            self.pool.hold = []

    def stop(self, submit: bool = True) -> list:
        """End recording: submit what was recorded (``submit``) or drop it (the batch failed).
        Returns the weak references to the results made while recording."""
        if not submit and self.recording is not None:
            self.recording = []
        self.flush()
        made, self.recording, self.made = self.made, None, []
        self.flush()  # the buffers held while recording go back to the pool
        # the batch's facts arena (fastpath) lives on only in its results' readers: back to the
        # pool with the last of them, not kept live by the engine until the next batch
        self.__dict__.pop("_facts_arena", None)
        return made

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


#: a forked child's inherited device objects: never released there (a release could hang)
_abandoned: list = []


__all__ = ["BufferPool", "OpLock", "DeviceBuffer", "Engine", "WG", "pack_params"]
