"""Page-locked (pinned) host memory for large device-to-host copies on cuda.

CuPy's ``x.get()`` copies into a fresh ``numpy.empty``: pageable memory, so the driver stages the
copy through a pinned buffer of its own, the CPU copies it a second time, and every page of the new
array is faulted in on first touch. :func:`get` copies into a numpy array whose memory comes from
CuPy's pinned memory pool instead: one DMA straight into pages that are already mapped, and the
pool takes them back when the array is dropped (the next download of that size faults nothing).
Host-to-device copies need no change: ``cupy.asarray`` already stages through the same pool.

Only C-contiguous arrays of at least :data:`MIN_BYTES` take this path (a small copy gains nothing
and would only add blocks to the pool); everything else is ``x.get()``. Sizes are rounded up to
one of eight classes per power of two (at most 12.5% more), so arrays of similar sizes reuse the
pool's blocks instead of each pinning new memory. The pool keeps freed blocks for reuse;
``cupy.get_default_pinned_memory_pool().free_all_blocks()`` releases them. ``PYTROPICAL_PINNED=0``
in the environment (or ``MIN_BYTES = None``) turns the path off. When no page-locked memory can
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


__all__ = ["MAX_LIVE_BYTES", "MIN_BYTES", "get", "live_bytes", "size_class", "wanted"]
