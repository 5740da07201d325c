"""CUDA faults as builtin exceptions: what CuPy raises from a module load or a kernel launch.

CuPy reports a CUDA out-of-memory outside its allocator (loading a module, launching a kernel) as
``CUDADriverError`` / ``CUDARuntimeError``; the backend's kernel entry points turn it into
:class:`~pytropical_gpu.errors.DeviceMemoryError` (a MemoryError, like CuPy's own
``OutOfMemoryError``), and a launch the device refuses for its size into ValueError. Other CUDA
errors pass through unchanged.
"""

from __future__ import annotations

import functools

from ...errors import DeviceMemoryError

#: cudaErrorMemoryAllocation / CUDA_ERROR_OUT_OF_MEMORY (the same number in both APIs)
_OOM_STATUS = 2
#: cudaErrorInvalidValue / CUDA_ERROR_INVALID_VALUE: what a launch beyond a grid limit gets
_INVALID_STATUS = 1


def _cuda_errors(fn):
    """Kernel entry points raise builtin types: a CUDA out-of-memory (also from a module load or a
    launch, which CuPy reports as CUDADriverError/CUDARuntimeError) becomes DeviceMemoryError, a
    launch refused for its size ValueError; CuPy's own OutOfMemoryError already is a MemoryError."""

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        try:
            return fn(self, *args, **kwargs)
        except (MemoryError, ValueError, TypeError):
            raise
        except Exception as e:
            if type(e).__name__ not in ("CUDARuntimeError", "CUDADriverError"):
                raise
            status = getattr(e, "status", None)
            what = fn.__name__.lstrip("_")
            if status == _OOM_STATUS:
                raise DeviceMemoryError(f"cuda: out of device memory in {what} ({e}); use smaller "
                                        "operands or free device arrays") from e
            if status == _INVALID_STATUS:
                raise ValueError(f"cuda: the device refused the launch of {what} for operands of "
                                 f"this size ({e}); split the work into smaller calls") from e
            raise

    return wrapper


def wrap_errors(cls, names) -> None:
    """Wrap the methods ``names`` of ``cls`` with :func:`_cuda_errors`."""
    for name in names:
        setattr(cls, name, _cuda_errors(getattr(cls, name)))


__all__ = ["wrap_errors"]
