"""WGSL backend through WebGPU (wgpu-py by default; ``PYTROPICAL_WEBGPU`` selects the runtime).

Every operation runs as compute shaders rendered from the templates in ``wgsl/``; raw WebGPU calls
live behind :class:`.runtime.Runtime` only. See :mod:`.gemm`, :mod:`.boolean` and :mod:`.vsa`.
"""

from __future__ import annotations

from .runtime import list_adapters, probe_runtime, software_adapter


def probe() -> tuple[bool, str]:
    """(ok, reason): the WebGPU library is importable and sees at least one adapter."""
    return probe_runtime()


def hardware_available() -> tuple[bool, str]:
    """True only for a hardware adapter (never llvmpipe/lavapipe or a fallback adapter)."""
    ok, reason = probe_runtime()
    if not ok:
        return False, reason
    hw = [a for a in list_adapters() if not software_adapter(a.adapter_type, a.is_fallback)]
    if not hw:
        return False, "only software WebGPU adapters (llvmpipe/fallback) are present"
    a = hw[0]
    return True, f"{a.name} ({a.backend}, {a.adapter_type})"


def create():
    from .backend import WgpuBackend

    return WgpuBackend()


__all__ = ["probe", "hardware_available", "create"]
