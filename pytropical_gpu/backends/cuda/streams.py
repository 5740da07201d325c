"""Which CUDA stream a launch is queued on, as a key for scratch kept per stream.

Kernels that keep scratch buffers or counters between calls (the units GEMM launch, the fused and
two-pass searches) keep one set per stream, so launches that may run at the same time never share
one. A stream's handle does not name it for CuPy's per-thread default stream
(``cupy.cuda.Stream.ptds``, or ``CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1``): every host thread's has
the handle ``cudaStreamPerThread``, so there the thread is part of the key.
"""

from __future__ import annotations

import threading

#: cudaStreamPerThread: the handle every host thread's own default stream shares
PER_THREAD = 2


def stream_key(cp, dev: int | None = None) -> tuple[int, int, int]:
    """(device id, stream handle, thread or 0) of the current stream: the handle is ``key[1]``;
    ``dev``: the current device's id where the caller has it already."""
    ptr = cp.cuda.get_current_stream().ptr
    return (cp.cuda.runtime.getDevice() if dev is None else dev, ptr,
            threading.get_ident() if ptr == PER_THREAD else 0)


__all__ = ["PER_THREAD", "stream_key"]
