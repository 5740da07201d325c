"""Per-process GPU state across ``fork()``, and probe answers that must not be cached.

A WebGPU device or a CUDA context made in one process cannot be used in a child made by
``os.fork()`` (multiprocessing's default "fork" start method on Linux): the child's first WebGPU
call hangs and CUDA fails with an initialisation error. Each backend that opened such state calls
:func:`opened` and registers an ``os.register_at_fork(after_in_child=...)`` hook that calls
:func:`mark_forked`; from then on, in the child, the backend's probe says why and every use raises
:class:`ForkedProcessError` at once. The cpu backend is unaffected.
"""

from __future__ import annotations

import os

from ..errors import BackendUnavailableError

#: backend name -> why it cannot run in this (forked) process
_forked: dict[str, str] = {}


class ForkedProcessError(BackendUnavailableError):
    """A GPU backend whose device was opened in the parent process was used after ``fork()``
    (a :class:`~pytropical_gpu.errors.BackendUnavailableError`, hence a RuntimeError)."""


class Transient(tuple):
    """A probe answer ``(ok, reason)`` that describes a fault of the moment (a CUDA error while
    probing, for instance), not the machine: :func:`pytropical_gpu.backends.probe` does not cache it."""

    def __new__(cls, ok: bool, reason: str):
        return super().__new__(cls, (bool(ok), str(reason)))


def fork_message(what: str) -> str:
    return (f"this process was forked (os.fork / multiprocessing 'fork') from process "
            f"{os.getppid()}, which had already opened {what}; that device state cannot be used in "
            "a forked child. Start worker processes with multiprocessing's 'spawn' or 'forkserver' "
            "start method (multiprocessing.get_context('spawn')), or use backend='cpu' in the child")


def mark_forked(name: str, what: str) -> None:
    """Called in a forked child: ``name`` is unusable here, with the reason."""
    _forked[name] = fork_message(what)


def forked_reason(name: str) -> str | None:
    """Why ``name`` cannot run in this forked process, or None."""
    return _forked.get(name)


def check(name: str) -> None:
    """Raise :class:`ForkedProcessError` if ``name``'s device state came from a parent process."""
    reason = _forked.get(name)
    if reason is not None:
        raise ForkedProcessError(name, reason)


__all__ = ["ForkedProcessError", "Transient", "check", "forked_reason", "mark_forked"]
