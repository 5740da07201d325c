"""Page-locked (pinned) host memory for large copies between the host and cuda, both ways.

CuPy's ``x.get()`` copies into a fresh ``numpy.empty``: pageable memory, so the driver stages the
copy through a pinned buffer of its own, the CPU copies it a second time, and every page of the new
array is faulted in on first touch. :func:`get` copies into a numpy array whose memory comes from
CuPy's pinned memory pool instead: one DMA straight into pages that are already mapped, and the
pool takes them back when the array is dropped (the next download of that size faults nothing).
Uploads (:func:`put`): ``cupy.asarray`` of a numpy array already stages through that pool, but
its copy into the staging block is one thread's memcpy (11 ms of a 64 MiB upload on the H200 host,
against 1.2 ms for the DMA from pinned memory). :func:`put` does that copy in :data:`CHUNK` pieces
on up to :data:`THREADS` threads (numpy's copy drops the GIL) and queues each piece's DMA on the
current stream as soon as it is staged, so the DMA of one piece overlaps the copy of the next. It
returns when the host array has been read (the caller may change it then, as after ``asarray``);
the DMA runs on, in stream order, and the staging block goes back to the pool once an event
recorded after it has passed (checked on the next upload). Arrays under :data:`UP_MIN_BYTES`, over
:data:`MAX_LIVE_BYTES`, not C-contiguous, not native-endian or not numeric take ``cupy.asarray``.

Only C-contiguous arrays of at least :data:`MIN_BYTES` take this path (a small copy gains nothing
and would only add blocks to the pool); everything else is ``x.get()``. Sizes are rounded up to
one of eight classes per power of two (at most 12.5% more), so arrays of similar sizes reuse the
pool's blocks instead of each pinning new memory. The pool keeps freed blocks for reuse;
``cupy.get_default_pinned_memory_pool().free_all_blocks()`` releases them. ``PYTROPICAL_PINNED=0``
in the environment (or ``MIN_BYTES = None``) turns both paths off. When no page-locked memory can
be had, or the live results already hold :data:`MAX_LIVE_BYTES` of it (page-locked memory cannot be
swapped out: many large results kept alive, say a dask worker's, must not lock the host's RAM),
the copy is the plain one (logged at INFO when the allocation failed).

Cost: the first download of a size class pays for pinning its pages (``cudaHostAlloc``, about what
faulting in a fresh pageable array costs); later ones of that class reuse them. What this saves is
therefore largest for repeated downloads of similar sizes (a loop, a benchmark, a service), and
``benchmarks/bench_apsp_breakdown.py`` times both (pool cold and warm) beside the pageable copy.

The bits are those of ``x.get()``: the same copy, another destination.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

log = logging.getLogger("pytropical_gpu")
_lock = threading.Lock()
_live = [0]  # pinned bytes held by live results (a list: updated under _lock)
#: at most this many pinned bytes held by live results at once; beyond it downloads are plain
MAX_LIVE_BYTES = 1 << 30
#: the smallest copy (bytes) that goes through pinned memory; None: never
MIN_BYTES: int | None = None if os.environ.get("PYTROPICAL_PINNED", "1") == "0" else 4 << 20


def size_class(nbytes: int) -> int:
    """``nbytes`` rounded up to one of eight sizes per power of two."""
    step = 1 << max(0, nbytes.bit_length() - 4)  # an eighth of the power of two below nbytes
    return -(-nbytes // step) * step


def wanted(x: Any) -> bool:
    """Whether :func:`get` copies the cupy array ``x`` through pinned memory."""
    return MIN_BYTES is not None and x.nbytes >= MIN_BYTES and x.flags.c_contiguous and x.size > 0


def live_bytes() -> int:
    """Pinned bytes held by the arrays :func:`get` returned that are still alive."""
    return _live[0]


def _release(n: int) -> None:
    with _lock:
        _live[0] -= n


def get(x: Any) -> np.ndarray:
    """A host numpy copy of the cupy array ``x``, after the work queued on the current stream
    (blocking, like ``x.get()``); see the module docstring for when the memory is pinned."""
    if not wanted(x):
        return x.get()
    size = size_class(x.nbytes)
    with _lock:  # page-locked memory cannot be swapped out: bound what the results hold
        if _live[0] + size > MAX_LIVE_BYTES:
            return x.get()
        _live[0] += size
    cp = sys.modules["cupy"]
    try:
        mem = cp.cuda.alloc_pinned_memory(size)
    except cp.cuda.runtime.CUDARuntimeError as e:  # no page-locked memory left: the plain copy
        _release(size)
        log.info("pinned download of %d bytes not possible (%s): pageable copy", x.nbytes, e)
        return x.get()
    out = np.ndarray(x.shape, dtype=x.dtype, buffer=mem)
    weakref.finalize(out, _release, size)  # views keep ``out`` (their base) alive
    x.get(out=out)  # the current stream, then waits: the values are there when this returns
    return out


#: uploads: the smallest staged here (H200: at 4 MiB the thread hand-off cost more than it saved,
#: 0.56 against asarray's 0.48 ms; at 16 MiB 1.25 against 1.80), bytes per staged piece, and the
#: threads that copy the pieces into pinned memory
UP_MIN_BYTES = 8 << 20
CHUNK = 8 << 20
THREADS = max(1, min(8, os.cpu_count() or 1))
_threads: list = [None]  # the copy threads' executor, made on the first large upload
_staged: list = []  # (event, pinned block) of uploads whose DMA may still be running


def put_wanted(x: Any) -> bool:
    """Whether :func:`put` stages the numpy array ``x`` through pinned memory itself."""
    return (MIN_BYTES is not None and type(x) is np.ndarray
            and max(MIN_BYTES, UP_MIN_BYTES) <= x.nbytes <= MAX_LIVE_BYTES
            and x.flags.c_contiguous and x.dtype.isnative and x.dtype.kind in "biufc")


def _executor() -> ThreadPoolExecutor:
    with _lock:
        if _threads[0] is None:
            _threads[0] = ThreadPoolExecutor(THREADS, thread_name_prefix="pytropical-upload")
        return _threads[0]


def put(x: np.ndarray) -> Any:
    """A cupy copy of the numpy array ``x`` on the current device and stream (see the module
    docstring for when it is staged here rather than by ``cupy.asarray``)."""
    cp = sys.modules["cupy"]
    if not put_wanted(x):
        return cp.asarray(x)
    with _lock:  # blocks whose DMA has passed go back to the pool
        _staged[:] = [(ev, m) for ev, m in _staged if not ev.done]
    n = x.nbytes
    try:
        mem = cp.cuda.alloc_pinned_memory(size_class(n))
    except cp.cuda.runtime.CUDARuntimeError as e:
        log.info("pinned upload of %d bytes not possible (%s): cupy.asarray", n, e)
        return cp.asarray(x)
    stage = np.ndarray((n,), np.uint8, buffer=mem)
    src = x.reshape(-1).view(np.uint8)
    out = cp.empty(x.shape, x.dtype)
    dst = out.reshape(-1).view(np.uint8)
    stream = cp.cuda.get_current_stream()
    pieces = [(a, min(a + CHUNK, n)) for a in range(0, n, CHUNK)]
    pool = _executor()
    copies = [pool.submit(np.copyto, stage[a:b], src[a:b]) for a, b in pieces]
    for (a, b), done in zip(pieces, copies):
        done.result()  # staged: its DMA goes on the stream while later pieces are copied
        dst[a:b].set(stage[a:b], stream)
    with _lock:
        _staged.append((stream.record(), mem))
    return out


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()
    _threads[0] = None  # the parent's threads do not exist here
    _staged.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


__all__ = ["CHUNK", "MAX_LIVE_BYTES", "MIN_BYTES", "THREADS", "UP_MIN_BYTES", "get", "live_bytes",
           "put", "put_wanted", "size_class", "wanted"]
