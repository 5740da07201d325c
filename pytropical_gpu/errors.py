"""Exceptions of pytropical_gpu: each subclasses a builtin so ``except RuntimeError`` still works."""

from __future__ import annotations


class BackendUnavailableError(RuntimeError):
    """A backend was asked for but cannot run here; the message says why (no adapter, no cupy, ...).

    A ``RuntimeError``, so existing ``except RuntimeError`` handlers keep working.

    Parameters
    ----------
    name : str
        The backend asked for (``"wgpu"``, ``"cuda"``); kept as ``.backend``.
    reason : str
        Why it cannot run (what its probe found); kept as ``.reason``.

    Shapes:
        not applicable.

    Examples
    --------
    >>> e = BackendUnavailableError("cuda", "cupy is not installed")
    >>> str(e), isinstance(e, RuntimeError)
    ("backend 'cuda' is unavailable: cupy is not installed", True)
    """

    def __init__(self, name: str, reason: str):
        self.backend = name
        self.reason = reason
        super().__init__(f"backend {name!r} is unavailable: {reason}")


class DeviceMemoryError(MemoryError):
    """The GPU could not allocate memory for an operation (what it took is released again, and the
    next call works); a MemoryError, as CuPy's ``OutOfMemoryError`` is."""


class SubnormalFlushError(ValueError):
    """A float operation would meet subnormal values on a WebGPU adapter that flushes them to zero.

    WGSL allows an adapter to flush (an NVIDIA GPU through Vulkan does), so such a result could
    differ from numpy's. A ``ValueError``; the message names the operation, the operand, how many
    subnormals, the adapter, and the fix (``backend='cuda'`` or ``'cpu'``, or zero them first).
    ``"auto"`` routing never raises it: it sends such a call to an exact backend.

    Parameters
    ----------
    message : str
        What was refused and why (built by the wgpu backend).

    Shapes:
        not applicable.

    Examples
    --------
    >>> e = SubnormalFlushError("matmul: a holds 3 subnormal values ...")
    >>> isinstance(e, ValueError)
    True
    """
