"""WGSL backend through WebGPU (wgpu-py by default; ``PYTROPICAL_WEBGPU`` selects the runtime).

Every operation runs as compute shaders rendered from the templates in ``wgsl/``; raw WebGPU calls
live behind :class:`.runtime.Runtime` only. See :mod:`.gemm`, :mod:`.boolean` and :mod:`.vsa`.
An adapter is used only once it passed the refusal rule (:mod:`.adapters`) and the known-answer
check (:mod:`.selfcheck`); :func:`probe` reports both.
"""

from __future__ import annotations

import threading

from .runtime import probe_runtime

_hw_lock = threading.Lock()
_hw: tuple[bool, str] | None = None


def probe() -> tuple[bool, str]:
    """(ok, reason): an adapter that is not refused opens and passes the known-answer check.

    Opens the device on the first call (the backend registry caches the answer)."""
    ok, reason = probe_runtime()
    if not ok:
        return False, reason
    from ...errors import BackendUnavailableError
    from .engine import get_engine

    try:
        eng = get_engine()
    except BackendUnavailableError as e:
        return False, e.reason
    flush = "flushes subnormals" if eng.flushes_subnormals else "keeps subnormals"
    return True, f"{reason}, known-answer check passed, {flush}"


def hardware_available() -> tuple[bool, str]:
    """True only when the adapter the backend opens is hardware (never llvmpipe/lavapipe or a
    fallback adapter) and passed the check; a machine with only software adapters opens nothing."""
    global _hw
    with _hw_lock:
        if _hw is None:
            _hw = _hardware()
        return _hw


def _hardware() -> tuple[bool, str]:
    from .. import probe as registry_probe
    from .runtime import list_adapters, software_adapter

    ok, reason = probe_runtime()
    if not ok:
        return False, reason
    if all(software_adapter(a.adapter_type, a.is_fallback) for a in list_adapters()):
        return False, "only software WebGPU adapters (llvmpipe/lavapipe/fallback) are present"
    ok, reason = registry_probe("wgpu")
    if not ok:
        return False, reason
    from .engine import get_engine

    i = get_engine().rt.info
    if i.software:
        return False, f"the adapter in use, {i.name}, is a software adapter"
    return True, f"{i.name} ({i.backend}, {i.adapter_type})"


def create():
    from .backend import WgpuBackend

    return WgpuBackend()


__all__ = ["probe", "hardware_available", "create"]
