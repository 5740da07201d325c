"""Bind groups reused across submits, for both runtimes (issue 13: a queued small operation).

Making a bind group is most of what a dispatch costs the host (~14 µs of a ~40 µs queued op on the
H200: the entries built through cffi/ctypes, then created and released in the driver). A bind
group depends only on the pipeline (its layout) and on each entry's (slot, buffer, offset, size),
and those recur: pool buffers are recycled with their handles, resident operands stay, and the
uniform block of the n-th dispatch of a submit sits at the same offset of the one recycled uniform
buffer every time. So a batch replayed on recycled buffers, or an eager call in a loop, finds its
bind groups here instead of making them.

Correctness rests on two rules:

* the key holds the buffer objects themselves (never an address or ``id()``, which a new buffer
  could take over after the old one is freed), so a hit always names the very buffers bound;
* a buffer that is destroyed is reported with :meth:`BindGroupCache.forget` (the runtimes'
  ``destroy_buffer`` and the uniform buffer's regrowth do it; it may run in any thread, from a
  garbage collector's finalizer); every bind group naming it is dropped before the next command is
  recorded (:meth:`BindGroupCache.drain`, called at the start of every submit), so none outlives
  a buffer it references, and the buffer object is not kept alive by the cache.

Native releases are deferred to :meth:`BindGroupCache.done` (the end of the submit that evicted
them), after the command buffer that may still record them was submitted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from .runtime import storage_ranges, uniform_size

#: False: every dispatch makes its bind group and releases it after the submit (benchmarks compare)
ENABLED = True
#: bind groups kept per runtime (oldest made dropped first); a 1,000-op chain of two dispatches per
#: op needs 2,000 to be found again when the batch is replayed
CAPACITY = 4096


class BindGroupCache:
    """Native bind groups by a key that determines their entries, an entry being ``(slot, buffer,
    offset, size)``.

    ``make(pipeline, entries)`` creates one, ``release(handle)`` frees one. ``hits``/``misses``
    count lookups (for tests and benchmarks)."""

    def __init__(self, make: Callable, release: Callable, capacity: int | None = None):
        self._make, self._release = make, release
        self.capacity = CAPACITY if capacity is None else capacity
        self._groups: dict = {}  # key -> native bind group (insertion order)
        self._named: dict = {}  # key -> its entries (the buffers it names)
        self._users: dict = {}  # buffer -> keys of the groups naming it
        self._dead: deque = deque()  # buffers destroyed since the last drain (any thread)
        self._later: list = []  # groups to release once the current submit is done
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._groups)

    def get(self, key, pipeline, entries: Callable[[], tuple]):
        """The bind group for ``pipeline`` known by ``key``: found, or made from ``entries()`` (a
        tuple of ``(slot, buffer, offset, size)``) and kept unless the cache is off. ``key`` must
        determine the entries and hold every buffer they name (the runtimes use the pipeline, the
        uniform buffer with the block's offset and size, and the dispatch's bindings as given)."""
        if not ENABLED or self.capacity <= 0:  # made for this submit only
            bg = self._make(pipeline, entries())
            self._later.append(bg)
            return bg
        bg = self._groups.get(key)
        if bg is not None:
            self.hits += 1
            return bg
        self.misses += 1
        ents = entries()
        bg = self._make(pipeline, ents)
        while len(self._groups) >= self.capacity:
            self._drop(next(iter(self._groups)))
        self._groups[key] = bg
        self._named[key] = ents
        users = self._users
        for e in ents:
            got = users.get(e[1])
            if got is None:
                users[e[1]] = {key}
            else:
                got.add(key)
        return bg

    def holds(self, buffer) -> bool:
        """Whether a kept bind group names ``buffer`` (tests)."""
        return buffer in self._users

    def forget(self, buffer) -> None:
        """``buffer`` is destroyed: its bind groups go at the next :meth:`drain` (thread-safe)."""
        self._dead.append(buffer)

    def drain(self) -> None:
        """Drop every bind group naming a buffer reported by :meth:`forget`."""
        while self._dead:
            for key in list(self._users.pop(self._dead.popleft(), ())):
                self._drop(key)

    def _drop(self, key) -> None:
        bg = self._groups.pop(key, None)
        if bg is None:
            return
        self._later.append(bg)
        for e in self._named.pop(key):
            got = self._users.get(e[1])
            if got is not None:
                got.discard(key)
                if not got:
                    del self._users[e[1]]

    def done(self) -> None:
        """Release the bind groups dropped or made uncached during the submit that just ended."""
        later, self._later = self._later, []
        for bg in later:
            self._release(bg)

    def clear(self) -> None:
        """Drop and release everything (the runtime closes)."""
        self._dead.clear()
        self._later.extend(self._groups.values())
        self._groups.clear()
        self._named.clear()
        self._users.clear()
        self.done()


def uniform_keys(uniform, offs: list, blobs: list) -> list:
    """Each params block's ``(uniform buffer, offset, bound size)`` for :func:`lookup` (one tuple
    per distinct offset: blocks that :func:`.runtime.pack_uniforms` shares share it)."""
    memo: dict = {}
    out = []
    for o, b in zip(offs, blobs):
        u = memo.get(o)
        if u is None:
            u = memo[o] = (uniform, o, uniform_size(b))
        out.append(u)
    return out


def lookup(cache: BindGroupCache, cmd, u):
    """The bind group of dispatch ``cmd`` whose params block is ``u`` (:func:`uniform_keys`; None:
    no params). The key is the pipeline, the uniform range and the bindings as the caller gave them
    (a hit makes no entries and no closure)."""
    b = cmd.bindings
    if type(b) is not tuple:
        b = tuple(b)
    key = (cmd.pipeline, u, b)
    bg = cache._groups.get(key)  # (empty while the cache is off: then get() makes one)
    if bg is not None:
        cache.hits += 1
        return bg

    def entries():
        ranges = storage_ranges(cmd)
        if u is not None:
            ranges.insert(0, (0, *u))
        return tuple(ranges)

    return cache.get(key, cmd.pipeline, entries)


def wgpupy_cache(device, ffi, lib) -> BindGroupCache:
    """The cache of a wgpu-py runtime: bind groups made through wgpu-native's C API (wgpu-py's
    ``create_bind_group`` costs ~100 µs of Python each)."""
    dev = device._internal

    def make(pipeline, entries):
        arr = ffi.new("WGPUBindGroupEntry[]", len(entries))
        for i, (slot, buf, off, size) in enumerate(entries):
            e = arr[i]
            e.binding, e.buffer, e.offset, e.size = slot, buf._internal, off, size
        desc = ffi.new("WGPUBindGroupDescriptor *")
        desc.layout, desc.entryCount, desc.entries = pipeline._pt_bgl._internal, len(entries), arr
        return lib.wgpuDeviceCreateBindGroup(dev, desc)

    return BindGroupCache(make, lib.wgpuBindGroupRelease)


def dawn_cache(webgpu, device) -> BindGroupCache:
    """The cache of a Dawn runtime (buffers are :class:`.dawn_objects.Buffer` wrappers)."""

    def make(pipeline, entries):
        arr = (webgpu.WGPUBindGroupEntry * len(entries))()
        for e, (slot, buf, off, size) in zip(arr, entries):
            e.binding, e.buffer, e.offset, e.size = slot, buf.handle, off, size
        desc = webgpu.WGPUBindGroupDescriptor()
        desc.layout, desc.entryCount, desc.entries = pipeline.layout, len(entries), arr
        return webgpu.wgpuDeviceCreateBindGroup(device, desc)

    return BindGroupCache(make, webgpu.wgpuBindGroupRelease)


__all__ = ["CAPACITY", "ENABLED", "BindGroupCache", "dawn_cache", "lookup", "uniform_keys",
           "wgpupy_cache"]
