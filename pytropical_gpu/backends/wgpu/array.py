"""Device-resident arrays of the wgpu backend.

A :class:`WgpuArray` owns one device buffer (created directly by the runtime, never taken from the
engine's recycling pool, so nothing else can be handed that memory while the array lives; the
buffer is destroyed when the last array or view referring to it is garbage-collected). The wgpu
kernels bind that buffer directly instead of uploading the operand on every call.

It is immutable from the user's side: operations read it, never write it; operations on resident
operands leave their results on the device as new WgpuArrays (:meth:`WgpuArray.adopt`). Values
that validation needs (NaN / inf present, integer range) are computed once when the array is created
(``stats``) so later calls do not read the data again; a result's are read once, when first asked.

The engine binds it through :meth:`WgpuArray.device_buffer`; this module imports no engine and no
WebGPU library (``_arrays`` checks the type; unpickling is registered by :mod:`.device`).
"""

from __future__ import annotations

import functools
import logging
import math
import operator
import weakref
from typing import Any

import numpy as np

from ...facts import Facts
from .pool import DeviceBuffer, _round4
from .runtime import Copy

log = logging.getLogger("pytropical_gpu")


class _Storage:
    """The owned device buffer (shared by an array and its views); destroyed when collected, or,
    for an operation's result (a pool buffer handed over), given back to the engine's pool.
    ``error``: why the contents are not valid (a batch that was discarded or failed), else None."""

    __slots__ = ("engine", "handle", "nbytes", "capacity", "error", "pooled", "__weakref__")

    def __init__(self, engine, handle, nbytes: int, capacity: int, pooled: bool = False):
        self.engine, self.handle, self.nbytes, self.capacity = engine, handle, nbytes, capacity
        self.error, self.pooled = None, pooled
        if not pooled:
            weakref.finalize(self, _destroy, engine.rt, handle)

    def __del__(self):
        if self.pooled:  # back to the pool (a deque append: safe from any thread, under no lock)
            try:
                self.engine.pool.returned.append((self.capacity, self.handle))
            except Exception:  # pragma: no cover - interpreter shutdown
                pass

    def check(self) -> None:
        if self.error is not None:
            raise RuntimeError(f"WgpuArray: no valid contents: {self.error}")


def _destroy(rt, handle) -> None:
    try:
        rt.destroy_buffer(handle)
    except Exception:  # pragma: no cover - interpreter shutdown
        pass


class WgpuArray:
    """An n-d, C-contiguous array living in one wgpu device buffer.

    Attributes: ``shape``, ``dtype``, ``ndim``, ``size``, ``nbytes``, ``offset`` (bytes into the
    buffer: views made by ``reshape`` / leading-axis indexing share it) and ``stats`` (the operand
    facts of :mod:`pytropical_gpu.facts`, computed once at creation).
    ``.get()`` / ``np.asarray(x)`` copy it back to a new numpy array.
    """

    __slots__ = ("_storage", "shape", "dtype", "offset", "stats")

    def __init__(self, *args, **kwargs):
        raise TypeError("WgpuArray: create one with get_backend('wgpu').to_device(x) or "
                        "HybridContext(...).to_device(x)")

    # ------------------------------------------------------------------ creation
    @classmethod
    def from_numpy(cls, x: Any, engine) -> WgpuArray:
        """Copy ``x`` (anything numpy accepts) into a new buffer on ``engine``, computing its stats."""
        eng = engine
        a = np.asarray(x, order="C")  # not ascontiguousarray: it makes a 0-d array 1-D
        if a.dtype == np.float64:
            raise TypeError("WgpuArray: float64 is not supported on the wgpu backend (WGSL has no "
                            "f64 in core); use float32")
        if a.dtype.kind not in "biuf":
            raise TypeError(f"WgpuArray: unsupported dtype {a.dtype}")
        nbytes = int(a.nbytes)
        cap = max(4, (nbytes + 3) & ~3)
        if cap > eng.limits.max_buffer_size:
            raise ValueError(f"WgpuArray: {nbytes} bytes exceed this device's largest buffer "
                             f"({eng.limits.max_buffer_size} bytes); keep it on the host or split it")
        with eng.lock:
            rt = eng.rt
            handle = rt.create_buffer(cap, label="resident")
            raw = a.reshape(-1).view(np.uint8)
            if raw.nbytes % 4:
                raw = np.concatenate([raw, np.zeros(4 - raw.nbytes % 4, np.uint8)])
            if raw.nbytes:
                rt.write(handle, raw)
        self = object.__new__(cls)
        self._storage = _Storage(eng, handle, nbytes, cap)
        self.shape, self.dtype, self.offset = tuple(int(s) for s in a.shape), a.dtype, 0
        self.stats = _stats(a)
        return self

    @classmethod
    def adopt(cls, eng, buf: DeviceBuffer, dtype, shape: tuple) -> WgpuArray:
        """An operation's result left on the device: ``buf`` (a pool buffer the kernel wrote) now
        belongs to the array and goes back to the pool when the array is collected. Its facts are
        learned when first asked (:meth:`pytropical_gpu.facts.Facts.lazy`: one read then)."""
        kept = eng.pool.adopt(buf)
        self = object.__new__(cls)
        self._storage = _Storage(eng, kept.handle, buf.nbytes, kept.capacity, pooled=True)
        self.shape, self.dtype, self.offset = tuple(int(s) for s in shape), np.dtype(dtype), 0
        self.stats = Facts.lazy(self.dtype, self.size, functools.partial(_read, self._storage,
                                                                         self.dtype, self.shape))
        if eng.recording is not None:  # alive until submitted: a recorded command writes it, and
            eng.made.append(weakref.ref(self._storage))  # a queue write into a recycled buffer
            eng._keep.append(self._storage)  # would land before that command
        return self

    def _view(self, shape: tuple, offset: int, ints: bool = False) -> WgpuArray:
        v = object.__new__(WgpuArray)
        v._storage, v.dtype, v.stats = self._storage, self.dtype, self.stats
        v.shape, v.offset = (shape if ints else tuple(int(s) for s in shape)), int(offset)
        return v

    # ------------------------------------------------------------------ numpy-like facts
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def handle(self):
        """The runtime buffer handle (for the engine)."""
        return self._storage.handle

    def device_buffer(self, eng) -> DeviceBuffer:
        """This array as a kernel operand on ``eng``: its own buffer bound in place (no copy); for a
        view whose offset the device cannot bind, one device-side copy into a pooled buffer; made
        on another device, or a sub-word view, one host round trip."""
        self._storage.check()
        n = self.nbytes
        if self._storage.engine is not eng or self.offset % 4:
            return eng.upload(self.get())
        if self.offset % eng.limits.min_storage_offset_alignment == 0 or n == 0:
            return DeviceBuffer(self.handle, n, self._storage.capacity, pooled=False, base=self.offset,
                                owner=self._storage)
        # an unaligned view (a row chunk): one device-side copy, nothing crosses the bus
        buf = eng.pool.acquire(n)
        eng.submit([Copy(self.handle, self.offset, buf.handle, 0, _round4(n))])  # (a batch records it)
        eng.count("resident_copies")
        return buf

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d WgpuArray")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"WgpuArray(shape={self.shape}, dtype={self.dtype.name})"

    # ------------------------------------------------------------------ host copies
    def get(self) -> np.ndarray:
        """A new numpy array with the contents (one device read)."""
        eng = self._storage.engine
        self._storage.check()
        n = self.nbytes
        if n == 0:
            return np.empty(self.shape, self.dtype)
        with eng.lock:
            eng.flush()  # inside a batch: the recorded commands that write it go first
            raw = eng.rt.read(self.handle, self.offset, (n + 3) & ~3)
        return np.frombuffer(raw, np.uint8, count=n).view(self.dtype).reshape(self.shape).copy()

    def __array__(self, dtype=None, copy=None):
        log.debug("WgpuArray: downloading %s to the host", self)
        a = self.get()
        return a if dtype is None else a.astype(dtype, copy=False)

    # ------------------------------------------------------------------ views (no copy)
    def reshape(self, *shape) -> WgpuArray:
        """A view with another shape sharing the buffer (one ``-1`` allowed)."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if shape == self.shape:
            return self
        shape = tuple(map(operator.index, shape))
        if -1 not in shape:  # the common case, kept short: operations reshape on every call
            if math.prod(shape) != self.size:
                raise ValueError(f"WgpuArray.reshape: cannot reshape {self.shape} into {shape}")
            return self._view(shape, self.offset, True)
        if shape.count(-1) > 1:
            raise ValueError("WgpuArray.reshape: only one dimension may be -1")
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            if known == 0 or self.size % known:
                raise ValueError(f"WgpuArray.reshape: cannot reshape {self.shape} into {shape}")
            shape = tuple(self.size // known if s == -1 else s for s in shape)
        if math.prod(shape) != self.size:
            raise ValueError(f"WgpuArray.reshape: cannot reshape {self.shape} into {shape}")
        return self._view(shape, self.offset)

    def ravel(self) -> WgpuArray:
        return self.reshape(-1)

    def __getitem__(self, key) -> WgpuArray:
        """Views that stay contiguous: ``None`` (new axis), integers and step-1 slices on the
        leading axes (after an axis that keeps more than one entry, later axes must be whole)."""
        if not isinstance(key, tuple):
            key = (key,)
        shape, item = self.shape, self.dtype.itemsize
        new: list[int] = []
        off, ax, multi = self.offset, 0, False
        for kk in key:
            if kk is None:
                new.append(1)
                continue
            if kk is Ellipsis:
                raise TypeError("WgpuArray: Ellipsis indexing is not supported on device; .get() first")
            if ax >= len(shape):
                raise IndexError(f"WgpuArray: too many indices for shape {shape}")
            stride = math.prod(shape[ax + 1:]) * item
            if isinstance(kk, slice):
                start, stop, step = kk.indices(shape[ax])
                if step != 1:
                    raise TypeError("WgpuArray: strided slices are not contiguous; .get() first")
                length = max(0, stop - start)
                if multi and length != shape[ax]:
                    raise TypeError(f"WgpuArray: index {key!r} of shape {shape} is not contiguous on "
                                    "the device; call .get() (or to_host) first")
                off += start * stride if length else 0
                new.append(length)
                if length > 1:
                    multi = True
            else:
                try:
                    i = operator.index(kk)
                except TypeError:
                    raise TypeError(f"WgpuArray: unsupported index {kk!r} on device; .get() first") \
                        from None
                if multi:
                    raise TypeError(f"WgpuArray: index {key!r} of shape {shape} is not contiguous on "
                                    "the device; call .get() (or to_host) first")
                if not -shape[ax] <= i < shape[ax]:
                    raise IndexError(f"WgpuArray: index {i} out of range for axis {ax} of size "
                                     f"{shape[ax]}")
                off += (i % shape[ax]) * stride
            ax += 1
        new.extend(shape[ax:])
        return self._view(tuple(new), off)

    # ------------------------------------------------------------------ immutability
    def __setitem__(self, key, value):
        raise TypeError("WgpuArray is read-only; modify a host copy (.get()) and call to_device again")


def _read(storage: _Storage, dtype, shape: tuple) -> np.ndarray:
    """The contents of a whole storage as numpy (what a result's lazy facts read)."""
    a = object.__new__(WgpuArray)
    a._storage, a.dtype, a.shape, a.offset, a.stats = storage, dtype, shape, 0, None
    return a.get()


def _stats(a: np.ndarray) -> Facts:
    """The array's operand facts, computed once here (the array is immutable) and kept: see
    :mod:`pytropical_gpu.facts`; views share their parent's (conservative: a guard is never wrong)."""
    return Facts.of_host(a)


def host(x: Any, why: str = "") -> Any:
    """``x`` itself, or a host copy of a WgpuArray (logged: this is the slow path)."""
    if isinstance(x, WgpuArray):
        log.info("wgpu: downloading a resident %s to the host%s", x, f" ({why})" if why else "")
        return x.get()
    return x


__all__ = ["WgpuArray", "host"]
