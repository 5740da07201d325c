"""Which adapter the wgpu backend may open: the refusal rule and the choice among the rest.

No adapter is trusted unseen. Some are refused from what they say about themselves, before any
device is requested: Dawn's "Null" placeholder (it computes nothing: every result is uninitialised
memory) and OpenGL adapters (wgpu-py falls back to OpenGL/llvmpipe on a machine with no Vulkan
driver; there its GL backend aborted the process from its device poll thread, and llvmpipe's GL
compiles of the large GEMM tiles drove one process past 5 GB). The rest still run the known-answer
check of :mod:`.selfcheck` when the engine first opens them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # an annotation only: runtime.py imports this module
    from .runtime import AdapterInfo

_TYPE_RANK = {"DISCRETEGPU": 0, "INTEGRATEDGPU": 1, "VIRTUALGPU": 2, "UNKNOWN": 3, "CPU": 4}
_NULL_BACKENDS = ("null", "undefined")
_GL_BACKENDS = ("opengl", "opengles", "gl", "gles")
VULKAN_FIX = ("install a Vulkan driver (Debian/Ubuntu: apt install mesa-vulkan-drivers, software "
              "Vulkan for machines with no GPU), or use backend='cpu'")


def refusal(inf: AdapterInfo) -> str | None:
    """Why this adapter is never used (a null/placeholder device, or OpenGL), or None.

    Decided from what the adapter says about itself, before any device is requested."""
    what = f"{inf.name or 'unnamed adapter'} ({inf.backend})"
    bt = inf.backend.strip().lower()
    if bt in _NULL_BACKENDS or "null backend" in inf.name.lower():
        return (f"{what} is a null/placeholder adapter: it computes nothing (results are "
                f"uninitialised memory); {VULKAN_FIX}")
    if bt in _GL_BACKENDS:
        return (f"{what} is an OpenGL adapter, which pytropical_gpu refuses: wgpu-py's GL backend "
                "aborts the process from its poll thread and llvmpipe's GL shader compiles of the "
                f"large GEMM tiles run out of memory; {VULKAN_FIX}")
    return None


def pick_adapter(adapters: Sequence[Any], info: Any) -> Any:
    """The adapter to open (:func:`choose_adapter`), or BackendUnavailableError with the reason:
    never another adapter than the one asked for."""
    from ...errors import BackendUnavailableError

    adapter, why = choose_adapter(adapters, info)
    if adapter is None:
        raise BackendUnavailableError("wgpu", why)
    return adapter


def choose_adapter(adapters: Sequence[Any], info: Any) -> tuple[Any, str]:
    """``(adapter, "")``, or ``(None, reason)`` when every adapter is refused (:func:`refusal`).

    ``PYTROPICAL_WGPU_ADAPTER`` (a substring of name or vendor) picks one explicitly (a refused one
    gives its refusal, one matching nothing says so: never another adapter); otherwise hardware
    before software, discrete before integrated, native APIs before GL."""
    if not adapters:
        return None, f"no WebGPU adapter (no Vulkan/Metal/D3D12 driver); {VULKAN_FIX}"
    want = os.environ.get("PYTROPICAL_WGPU_ADAPTER", "").strip().lower()
    if want:
        for a in adapters:
            inf = info(a)
            if want in inf.name.lower() or want in inf.vendor.lower():
                why = refusal(inf)
                return (None, f"PYTROPICAL_WGPU_ADAPTER={want!r}: {why}") if why else (a, "")
        present = "; ".join(f"{info(a).name} ({info(a).vendor}, {info(a).backend})" for a in adapters)
        return None, (f"PYTROPICAL_WGPU_ADAPTER={want!r} matches no adapter's name or vendor; "
                      f"adapters present: {present}")
    usable = [a for a in adapters if refusal(info(a)) is None]
    if not usable:
        return None, "; ".join(refusal(info(a)) or "" for a in adapters)

    def key(a):
        inf = info(a)
        return (int(inf.software), _TYPE_RANK.get(inf.adapter_type.upper(), 3),
                0 if inf.backend.lower() in ("vulkan", "metal", "d3d12") else 1)

    return sorted(usable, key=key)[0], ""


__all__ = ["VULKAN_FIX", "choose_adapter", "pick_adapter", "refusal"]
