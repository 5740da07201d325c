"""Device memory of the engine: pooled buffers recycled by size class, and the operation lock.

Every wgpu operation runs under ``Engine.lock`` (an :class:`OpLock`); pool buffers the outermost
holder took and did not give back are released when it lets go, so a call that raises (a failed
dispatch, an allocation the device refused) leaves nothing allocated. A refused allocation raises
:class:`~pytropical_gpu.errors.DeviceMemoryError` (a MemoryError) after idle buffers were freed and
the allocation retried once.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from collections import defaultdict, deque
from dataclasses import dataclass

from ...errors import DeviceMemoryError
from .runtime import Binding, Runtime

log = logging.getLogger("pytropical_gpu")


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
    shape allocate nothing. ``max_free_bytes`` bounds what idle buffers may hold.

    Each class hands out its oldest idle buffer first (a heap on creation order), whatever order
    they came back in: a repeated batch or loop then binds the very buffers it bound last time, so
    its bind groups are found again (:mod:`.bindgroups`)."""

    def __init__(self, rt: Runtime, max_free_bytes: int = 1 << 30):
        self.rt = rt
        self.max_free_bytes = max_free_bytes
        self._free: dict[int, list] = defaultdict(list)  # class -> heap of (serial, handle)
        self._serials: dict = {}  # handle -> creation serial (its place in the heaps)
        self._count = itertools.count()
        self.free_bytes = 0
        self.live_bytes = 0
        self.created = 0
        #: buffers handed out during the current operation (see :class:`OpLock`), else None
        self._scope: list[DeviceBuffer] | None = None
        #: while a batch records (see :mod:`.engine`): released buffers wait here until the
        #: recorded commands are submitted (a queue write into a recycled buffer would otherwise
        #: land before the recorded commands that still read it)
        self.hold: list[DeviceBuffer] | None = None
        #: (capacity, handle) of resident results given back by their finalizers (any thread;
        #: deque appends are atomic); taken back into the free lists under the lock
        self.returned: deque = deque()

    def _class(self, nbytes: int) -> int:
        """Size class: powers of two up to 64 MiB, then multiples of 16 MiB (bounded by the limit)."""
        n = max(256, _round4(nbytes))
        c = 1 << (n - 1).bit_length() if n <= (64 << 20) else -(-n // (16 << 20)) * (16 << 20)
        return max(n, min(c, self.rt.limits.max_buffer_size))

    def acquire(self, nbytes: int) -> DeviceBuffer:
        cap = self._class(nbytes)
        buf = DeviceBuffer(self.take(cap), int(nbytes), cap)
        if self._scope is not None:
            self._scope.append(buf)
        return buf

    def take(self, cap: int):
        """A handle of size class ``cap`` (see :meth:`_class`), counted live. :meth:`acquire` wraps it;
        a caller that hands it straight to an owner returning it through :attr:`returned` (the
        batch fast path's results) takes it bare."""
        if self.returned:
            self._reclaim()
        lst = self._free.get(cap)
        if lst:
            h = heapq.heappop(lst)[1]
            self.free_bytes -= cap
        else:
            h = self._create(cap)
            self._serials[h] = next(self._count)
            self.created += 1
        self.live_bytes += cap
        return h

    def _reclaim(self) -> None:
        """Move the handles resident results gave back (:attr:`returned`) into the free lists."""
        while self.returned:
            c, h = self.returned.popleft()
            self._push(c, h)
            self.free_bytes += c
            self.live_bytes -= c

    def _push(self, cap: int, h) -> None:
        serial = self._serials.get(h)
        if serial is None:  # (every pool handle has one; never compare two handles)
            serial = self._serials[h] = next(self._count)
        heapq.heappush(self._free[cap], (serial, h))

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

    def adopt(self, buf: DeviceBuffer) -> DeviceBuffer:
        """Hand ``buf`` over to a resident result: the operation's scope no longer releases it (its
        owner gives the handle back through :attr:`returned`). Returns the buffer to keep."""
        kept = DeviceBuffer(buf.handle, buf.nbytes, buf.capacity)
        buf.handle = None
        return kept

    def release(self, buf: DeviceBuffer) -> None:
        if buf is None or buf.handle is None:
            return
        if not buf.pooled:  # a resident array's own buffer: never recycled
            buf.handle = buf.owner = None
            return
        if self.hold is not None:  # recording: recycle only after the recorded commands are submitted
            self.hold.append(DeviceBuffer(buf.handle, buf.nbytes, buf.capacity))
            buf.handle = None
            return
        self.live_bytes -= buf.capacity
        self._push(buf.capacity, buf.handle)
        self.free_bytes += buf.capacity
        buf.handle = None
        if self.free_bytes > self.max_free_bytes:
            self.trim(self.max_free_bytes // 2)

    def trim(self, keep_bytes: int = 0) -> None:
        """Destroy idle buffers, largest first, until at most ``keep_bytes`` stay idle."""
        self._reclaim()
        for cap in sorted(self._free, reverse=True):
            lst = self._free[cap]
            while lst and self.free_bytes > keep_bytes:
                h = lst.pop()[1]  # a leaf: what is left stays a heap
                self._serials.pop(h, None)
                self.rt.destroy_buffer(h)
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


__all__ = ["BufferPool", "DeviceBuffer", "OpLock"]
