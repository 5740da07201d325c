"""The process's one WebGPU device: opened on first use, checked, and put aside in a forked child.

:func:`get_engine` opens the adapter the runtime picks (:mod:`.adapters`) and runs the
known-answer check of :mod:`.selfcheck` before anything else may use it; an adapter that fails is
never used, and the answer is kept for the process. Pickled :class:`~.array.WgpuArray` objects come
back resident on this engine (registered here with :mod:`copyreg`: the array type does not know how
devices are opened).
"""

from __future__ import annotations

import copyreg
import logging
import os
import threading

from ...errors import BackendUnavailableError
from .. import _process
from . import selfcheck
from .array import WgpuArray
from .engine import Engine
from .runtime import create_runtime

log = logging.getLogger("pytropical_gpu")

_engine: Engine | None = None
#: why the adapter may not be used (refused, device request failed, or known-answer check failed):
#: decided once per process, never retried
_engine_error: str | None = None
_engine_lock = threading.Lock()


def get_engine() -> Engine:
    """The process-wide engine. The first call (under a lock: threads making their first call at
    once get the same engine) opens the adapter and runs the known-answer check of
    :mod:`.selfcheck`; an adapter that fails it is never used (BackendUnavailableError, also on
    every later call)."""
    global _engine, _engine_error
    _process.check("wgpu")
    with _engine_lock:
        if _engine is not None:
            return _engine
        if _engine_error is not None:
            raise BackendUnavailableError("wgpu", _engine_error)
        try:
            rt = create_runtime()
        except Exception as e:  # noqa: BLE001 - refused adapter, device request failed
            _engine_error = str(e) or type(e).__name__
            raise BackendUnavailableError("wgpu", _engine_error) from e
        eng = Engine(rt)
        res = selfcheck.run(eng)
        if not res.ok:
            i = rt.info
            _engine_error = (f"{rt.name}: adapter {i.name} ({i.backend}, {i.adapter_type}) failed "
                             f"the known-answer check, so it is never used: {res.reason}")
            rt.close()
            raise BackendUnavailableError("wgpu", _engine_error)
        eng.selfcheck = res
        eng.flushes_subnormals = res.flushes_subnormals
        log.info("wgpu: %s (%s, %s), max binding %d MiB%s", rt.info.name, rt.info.backend,
                 rt.info.adapter_type, rt.limits.max_storage_binding >> 20,
                 ", flushes subnormals" if res.flushes_subnormals else "")
        _engine = eng
        return _engine


def _after_fork_in_child() -> None:
    global _engine_lock
    _engine_lock = threading.Lock()
    if _engine is not None:  # the parent opened a device: a fresh one here hangs as well
        rt = _engine.rt
        what = f"a WebGPU device ({rt.name}: {rt.info.name})" if hasattr(rt, "info") else "a WebGPU device"
        _process.mark_forked("wgpu", what)
        _engine._forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _rebuild(a) -> WgpuArray:
    return WgpuArray.from_numpy(a, get_engine())


def _reduce(x: WgpuArray):
    return _rebuild, (x.get(),)


copyreg.pickle(WgpuArray, _reduce)

__all__ = ["get_engine"]
