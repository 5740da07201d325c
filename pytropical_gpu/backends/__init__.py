"""Backend registry: ``cpu`` (numpy), ``wgpu`` (WGSL through wgpu-py), ``cuda`` (CuPy).

Each backend module offers ``probe() -> (ok, reason)`` and ``create() -> Backend``; GPU libraries are
imported lazily inside them, so importing pytropical_gpu never needs wgpu or cupy to work.

Probe answers are cached per process, except those a module marks :class:`._process.Transient` (a
fault of the moment must not make a backend unavailable for good) and those of a probe that raised.
In a child made by ``fork()`` a backend whose device the parent had opened is unavailable, with the
reason and the fix (see :mod:`._process`).
"""

from __future__ import annotations

import importlib
import os
import threading
from typing import Literal

from ..errors import BackendUnavailableError
from . import _process
from .base import Backend

BackendName = Literal["cpu", "wgpu", "cuda"]
BACKENDS: tuple[str, ...] = ("cpu", "wgpu", "cuda")
_MODULES = {"cpu": ".cpu", "wgpu": ".wgpu", "cuda": ".cuda"}
_instances: dict[str, Backend] = {}
_probes: dict[str, tuple[bool, str]] = {}
_lock = threading.Lock()


def _module(name: str):
    if name not in _MODULES:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(BACKENDS)}")
    return importlib.import_module(_MODULES[name], __name__)


def probe(name: str) -> tuple[bool, str]:
    """``(ok, reason)`` for a backend, cached: reason says why it is unavailable (or what it runs on)."""
    forked = _process.forked_reason(name)
    if forked is not None:
        return False, forked
    with _lock:
        if name in _probes:
            return _probes[name]
        try:
            res = _module(name).probe()
        except ValueError:
            raise
        except Exception as e:  # a broken driver must not break import; asked again next time
            return False, f"{type(e).__name__}: {e}"
        if isinstance(res, _process.Transient):
            return tuple(res)
        _probes[name] = res
        return res


def get_backend(name: str) -> Backend:
    """The backend object (one per process), with the module functions as methods.

    Parameters
    ----------
    name : "cpu" | "wgpu" | "cuda"
        Which backend.

    Returns
    -------
    Backend
        ``be.matmul(...)``, ``be.bind(...)``, ...: the module functions without ``backend=``.

    Raises
    ------
    BackendUnavailableError
        The backend cannot run here (the message says why).
    ValueError
        An unknown name.

    Shapes:
        not applicable.

    Examples
    --------
    >>> import numpy as np
    >>> be = get_backend("cpu")
    >>> be.matmul(np.array([[1.0, 2.0]]), np.array([[0.0], [5.0]]), "max_plus")
    array([[7.]])
    """
    if isinstance(name, Backend):
        return name
    _process.check(name)
    if name in _instances:
        return _instances[name]
    ok, reason = probe(name)
    if not ok:
        raise BackendUnavailableError(name, reason)
    with _lock:
        if name not in _instances:
            _instances[name] = _module(name).create()
        return _instances[name]


def available_backends() -> list[str]:
    """Names of the backends usable on this machine, ``cpu`` first.

    Each backend's probe runs once (cached); ``python -m pytropical_gpu info`` shows the reasons.

    Returns
    -------
    list of str
        A subset of ``["cpu", "wgpu", "cuda"]`` in that order.

    Shapes:
        not applicable.

    Examples
    --------
    >>> available_backends()[0]
    'cpu'
    """
    return [n for n in BACKENDS if probe(n)[0]]


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # another thread may have held it at fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


__all__ = ["Backend", "BackendName", "BACKENDS", "probe", "get_backend", "available_backends"]
