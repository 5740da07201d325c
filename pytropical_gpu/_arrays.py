"""Array kinds: what the caller passed (numpy, cupy, a DLPack/CUDA-array-interface object) and how to
hand a result back as the same kind. Everything here is import-light: cupy is imported lazily."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

NUMPY = "numpy"
CUPY = "cupy"
WGPU = "wgpu"


def is_wgpu(x: Any) -> bool:
    """A wgpu device-resident array (:class:`~pytropical_gpu.backends.wgpu.array.WgpuArray`)."""
    mod = sys.modules.get("pytropical_gpu.backends.wgpu.array")
    return mod is not None and isinstance(x, mod.WgpuArray)


def _cupy():
    return sys.modules.get("cupy")


def is_cupy(x: Any) -> bool:
    cp = _cupy()
    return cp is not None and isinstance(x, cp.ndarray)


def kind_of(*xs: Any) -> tuple[str, Any]:
    """The array kind of the first device-side argument, else numpy.

    Returns ``(kind, module)``: ``("numpy", None)``, ``("cupy", None)``, ``("wgpu", None)`` (a
    resident WgpuArray: results still come back as numpy) or ``("dlpack", module)`` for a foreign GPU
    tensor (torch) that the result is converted back to with ``module.from_dlpack``.
    """
    for x in xs:
        if x is None or isinstance(x, (np.ndarray, np.generic, list, tuple, int, float, bool)):
            continue
        if is_wgpu(x):
            return WGPU, None
        if is_cupy(x):
            return CUPY, None
        if hasattr(x, "__cuda_array_interface__") or (
            hasattr(x, "__dlpack__") and not hasattr(x, "__array_interface__")
            and _is_device_dlpack(x)
        ):
            mod = sys.modules.get(type(x).__module__.split(".")[0])
            return "dlpack", mod
    return NUMPY, None


def _is_device_dlpack(x: Any) -> bool:
    try:
        dev_type, _ = x.__dlpack_device__()
    except Exception:
        return False
    return int(dev_type) != 1  # 1 = kDLCPU


def to_numpy(x: Any, name: str = "array") -> np.ndarray:
    """Host numpy view/copy of any accepted input (cupy arrays are copied to the host)."""
    if isinstance(x, np.ndarray):
        return x
    if is_cupy(x) or is_wgpu(x):
        return x.get()
    if hasattr(x, "__cuda_array_interface__") or (hasattr(x, "__dlpack__") and _is_device_dlpack(x)):
        cp = _import_cupy()
        return cp.asnumpy(to_cupy(x, name))
    try:
        return np.asarray(x)
    except Exception as e:  # pragma: no cover - exotic inputs
        raise TypeError(f"{name}: cannot convert {type(x).__name__} to an array ({e})") from e


def _import_cupy():
    try:
        import cupy
    except Exception as e:
        from .errors import BackendUnavailableError

        raise BackendUnavailableError("cuda", f"cupy cannot be imported ({e}); "
                                      "pip install 'pytropical_gpu[cuda12]' or '[cuda13]'") from e
    return cupy


def to_cupy(x: Any, name: str = "array") -> Any:
    """Device cupy array of any accepted input, zero-copy for CUDA-resident objects."""
    cp = _import_cupy()
    if isinstance(x, cp.ndarray):
        return x
    if is_wgpu(x):
        return cp.asarray(x.get())
    if hasattr(x, "__cuda_array_interface__"):
        return cp.asarray(x)
    if hasattr(x, "__dlpack__") and _is_device_dlpack(x):
        return cp.from_dlpack(x)
    return cp.asarray(np.asarray(x))


def to_kind(result: Any, kind: tuple[str, Any]) -> Any:
    """Convert a backend's result (numpy or cupy) to the caller's array kind."""
    k, mod = kind
    if result is None:
        return None
    if k in (NUMPY, WGPU):  # resident wgpu operands give numpy results
        return result.get() if (is_cupy(result) or is_wgpu(result)) else result
    if k == CUPY:
        return result if is_cupy(result) else _import_cupy().asarray(result)
    # foreign device tensor: go through DLPack (zero-copy from cupy)
    if not is_cupy(result):
        result = _import_cupy().asarray(result)
    return mod.from_dlpack(result) if mod is not None and hasattr(mod, "from_dlpack") else result


def xp_of(x: Any):
    """numpy or cupy, whichever module ``x`` belongs to (numpy for a WgpuArray)."""
    return _cupy() if is_cupy(x) else np
