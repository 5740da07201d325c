"""Exceptions of pytropical_gpu: each subclasses a builtin so ``except RuntimeError`` still works."""

from __future__ import annotations


class BackendUnavailableError(RuntimeError):
    """A backend was asked for but cannot run here; the message says why (no adapter, no cupy, ...)."""

    def __init__(self, name: str, reason: str):
        self.backend = name
        self.reason = reason
        super().__init__(f"backend {name!r} is unavailable: {reason}")


class DeviceMemoryError(MemoryError):
    """The GPU could not allocate memory for an operation (what it took is released again, and the
    next call works); a MemoryError, as CuPy's ``OutOfMemoryError`` is."""
