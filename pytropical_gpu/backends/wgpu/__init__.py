"""WGSL backend through WebGPU (wgpu-py by default; ``PYTROPICAL_WEBGPU`` selects the runtime).

Every operation runs as compute shaders rendered from the templates in ``wgsl/``; raw WebGPU calls
live behind :class:`.runtime.Runtime` only. See :mod:`.gemm`, :mod:`.boolean` and :mod:`.vsa`.
An adapter is used only once it passed the refusal rule (:mod:`.adapters`) and the known-answer
check (:mod:`.selfcheck`); :func:`probe` reports both.
"""

from __future__ import annotations

from .adapters import refusal
from .runtime import list_adapters, probe_runtime, software_adapter


def probe() -> tuple[bool, str]:
    """(ok, reason): an adapter that is not refused opens and passes the known-answer check.

    Opens the device on the first call (the backend registry caches the answer)."""
    ok, reason = probe_runtime()
    if not ok:
        return False, reason
    ok, why = _opens()
    return (True, f"{reason}, {why}") if ok else (False, why)


def hardware_available() -> tuple[bool, str]:
    """True only for a hardware adapter (never llvmpipe/lavapipe, a fallback or a refused adapter)
    that opened and passed the known-answer check; a machine with only software adapters opens
    nothing here. (HybridContext caches the answer.)"""
    ok, reason = probe_runtime()
    if not ok:
        return False, reason
    hw = [a for a in list_adapters()
          if not software_adapter(a.adapter_type, a.is_fallback) and refusal(a) is None]
    if not hw:
        return False, "only software WebGPU adapters (llvmpipe/lavapipe/fallback) are present"
    ok, reason = _opens()
    if not ok:
        return False, reason
    a = hw[0]
    return True, f"{a.name} ({a.backend}, {a.adapter_type})"


def _opens() -> tuple[bool, str]:
    """Whether the adapter opened and passed the known-answer check (decided once per process by
    :func:`.device.get_engine`, which keeps the engine or the reason)."""
    from ...errors import BackendUnavailableError
    from .device import get_engine

    try:
        eng = get_engine()
    except BackendUnavailableError as e:
        return False, e.reason
    flush = "flushes subnormals" if eng.flushes_subnormals else "keeps subnormals"
    return True, f"known-answer check passed, {flush}"


def create():
    from .backend import WgpuBackend

    return WgpuBackend()


__all__ = ["probe", "hardware_available", "create"]
