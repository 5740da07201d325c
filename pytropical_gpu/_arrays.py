"""Array kinds: what the caller passed and how a result goes back as the same kind.

Kinds: numpy; cupy; a resident :class:`~pytropical_gpu.backends.wgpu.array.WgpuArray`; torch (CPU
or CUDA tensors); any other object with ``__dlpack__`` (device objects come back through their
module's ``from_dlpack``, host ones as numpy). Conversions go through DLPack wherever it fits:
``np.from_dlpack`` / ``cupy.from_dlpack`` in, ``torch.from_dlpack`` out, all zero-copy.

Streams: ``cupy.from_dlpack(t)`` passes CuPy's current stream to ``t.__dlpack__(stream=...)`` and
torch makes that stream wait for the caller's ``torch.cuda.current_stream()``; on the way back
``torch.from_dlpack(result)`` passes torch's current stream to CuPy, which makes it wait for the
kernels. So a torch caller's stream order holds in both directions without a device-wide sync.

Import-light: cupy is imported only when a device array needs it, and torch never is (a torch
tensor can only reach us if the caller already imported torch: we look it up in ``sys.modules``).

Written by hand here, and why:

* ``tensor.detach()`` before export: DLPack refuses tensors that require grad, and none of our
  operations is differentiable, so the values are what the caller means.
* a torch CUDA tensor given to a host backend (``backend="cpu"``/``"wgpu"``) is copied with
  ``tensor.cpu()``: ``np.from_dlpack`` cannot read device memory.
* a torch result for a tensor on another device than the backend's result (a CUDA tensor run on
  cpu) is moved with ``tensor.to(device)`` after ``torch.from_dlpack``.
* a result that is not C-contiguous or not writeable is copied before ``torch.from_dlpack``
  (torch 2.13 aborts the process on negative strides, and refuses read-only exports).
* WgpuArray has no DLPack (its memory is a WebGPU buffer): ``.get()`` downloads it.
* objects with only ``__cuda_array_interface__`` go through ``cupy.asarray`` (that interface
  carries its own stream field, which CuPy honours).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from . import _pinned

NUMPY = "numpy"
CUPY = "cupy"
WGPU = "wgpu"
TORCH = "torch"
DLPACK = "dlpack"
_KDL_CPU = 1


def is_wgpu(x: Any) -> bool:
    """A wgpu device-resident array (:class:`~pytropical_gpu.backends.wgpu.array.WgpuArray`)."""
    mod = sys.modules.get("pytropical_gpu.backends.wgpu.array")
    return mod is not None and isinstance(x, mod.WgpuArray)


def _cupy():
    return sys.modules.get("cupy")


def is_cupy(x: Any) -> bool:
    # cupy may be half-imported by another thread (sys.modules holds it before ``ndarray`` exists);
    # an object cannot be a cupy array before cupy has finished importing, so that reads as False.
    nd = getattr(_cupy(), "ndarray", None)
    return nd is not None and isinstance(x, nd)


def is_torch(x: Any) -> bool:
    """A ``torch.Tensor`` (never imports torch: a tensor implies torch is loaded)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def is_torch_cuda(x: Any) -> bool:
    return is_torch(x) and x.device.type != "cpu"


def _is_device_dlpack(x: Any) -> bool:
    try:
        dev_type, _ = x.__dlpack_device__()
    except Exception:
        return False
    return int(dev_type) != _KDL_CPU


def is_device(x: Any) -> bool:
    """Array data in GPU memory (cupy, a torch CUDA tensor, a device DLPack/CAI object)."""
    if is_cupy(x) or is_torch_cuda(x):
        return True
    if is_torch(x) or isinstance(x, np.ndarray):
        return False
    return hasattr(x, "__cuda_array_interface__") or (hasattr(x, "__dlpack__") and _is_device_dlpack(x))


def kind_of(*xs: Any) -> tuple[str, Any]:
    """The array kind of the first array-like argument that is not numpy, else numpy.

    Returns ``(kind, info)``: ``("numpy", None)``, ``("cupy", None)``, ``("wgpu", None)`` (a
    resident WgpuArray: device results stay resident), ``("torch", device)`` (results are torch
    tensors on ``device``) or ``("dlpack", module)`` for a foreign device array whose result is
    converted back with ``module.from_dlpack``. A host object with only ``__dlpack__`` gives numpy.
    """
    for x in xs:
        if x is None or isinstance(x, (np.ndarray, np.generic, list, tuple, int, float, bool)):
            continue
        if is_wgpu(x):
            return WGPU, None
        if is_cupy(x):
            return CUPY, None
        if is_torch(x):
            return TORCH, x.device
        if is_device(x):
            return DLPACK, sys.modules.get(type(x).__module__.split(".")[0])
    return NUMPY, None


def _import_cupy():
    try:
        import cupy
    except Exception as e:
        from .errors import BackendUnavailableError

        raise BackendUnavailableError("cuda", f"cupy cannot be imported ({e}); "
                                      "pip install 'pytropical_gpu[cuda12]' or '[cuda13]'") from e
    return cupy


def _bad(name: str, x: Any, e: Exception) -> TypeError:
    return TypeError(f"{name}: cannot read {type(x).__name__} as an array ({e}); pass a numpy, cupy "
                     "or torch array, or an object with __dlpack__ or __array__")


def to_numpy(x: Any, name: str = "array") -> np.ndarray:
    """Host numpy array of any accepted input: zero-copy for numpy, torch CPU tensors and host
    DLPack objects; device arrays are copied to the host."""
    if isinstance(x, np.ndarray):
        return x
    if is_cupy(x):
        return _pinned.get(x)  # large arrays: one DMA into pinned memory (see _pinned)
    if is_wgpu(x):
        return x.get()
    if is_torch(x):
        t = x.detach()
        return np.from_dlpack(t if t.device.type == "cpu" else t.cpu())
    if is_device(x):
        return _import_cupy().asnumpy(to_cupy(x, name))
    if hasattr(x, "__dlpack__") and not hasattr(x, "__array_interface__"):
        try:
            return np.from_dlpack(x)
        except Exception as e:
            raise _bad(name, x, e) from e
    try:
        arr = np.asarray(x)
    except Exception as e:
        raise _bad(name, x, e) from e
    if arr.dtype == object:
        raise TypeError(f"{name}: expected a numeric array, got {type(x).__name__} (numpy reads it "
                        "as an object array)")
    return arr


def to_cupy(x: Any, name: str = "array") -> Any:
    """Device cupy array of any accepted input, zero-copy for device objects (DLPack first)."""
    cp = _import_cupy()
    if isinstance(x, cp.ndarray):
        return x
    if is_wgpu(x):
        return cp.asarray(x.get())
    if is_torch_cuda(x):
        return cp.from_dlpack(x.detach())
    if is_torch(x) or not is_device(x):
        return _pinned.put(to_numpy(x, name))  # large arrays: staged by several threads
    if hasattr(x, "__dlpack__") and _is_device_dlpack(x):
        return cp.from_dlpack(x)
    return cp.asarray(x)  # __cuda_array_interface__ only


def _to_torch(result: Any, device: Any) -> Any:
    torch = sys.modules["torch"]
    if is_wgpu(result):
        result = result.get()
    if isinstance(result, np.ndarray) and not (result.flags.c_contiguous and result.flags.writeable):
        result = np.ascontiguousarray(result) if result.flags.writeable else result.copy()
    t = torch.from_dlpack(result)
    return t if t.device == device else t.to(device)


def to_kind(result: Any, kind: tuple[str, Any]) -> Any:
    """Convert a backend's result (numpy, cupy or a WgpuArray) to the caller's array kind."""
    k, info = kind
    if type(result) is np.ndarray and (k == NUMPY or k == WGPU):
        return result  # a host result for a host or wgpu caller: as it is (every call's result)
    if result is None:
        return None
    if k == WGPU:  # resident wgpu operands: a device result stays resident (host ones as they are)
        return result.get() if is_cupy(result) else result
    if k == NUMPY:
        return to_numpy(result) if (is_cupy(result) or is_wgpu(result)) else result
    if k == CUPY:
        return result if is_cupy(result) else _pinned.put(to_numpy(result))
    if k == TORCH:
        return _to_torch(result, info)
    # foreign device array: through DLPack (zero-copy from cupy)
    if not is_cupy(result):
        result = _import_cupy().asarray(to_numpy(result))
    return info.from_dlpack(result) if info is not None and hasattr(info, "from_dlpack") else result


def writable_view(out: Any, name: str = "out") -> Any:
    """A numpy or cupy array sharing ``out``'s memory, to write a result into it in place."""
    if isinstance(out, np.ndarray) or is_cupy(out):
        return out
    if is_torch(out):
        if out.requires_grad:
            raise ValueError(f"{name}: a tensor that requires grad cannot be written in place")
        return to_cupy(out) if is_torch_cuda(out) else np.from_dlpack(out)
    raise TypeError(f"{name} must be a numpy array, a cupy array or a torch tensor, got "
                    f"{type(out).__name__}")


def xp_of(x: Any):
    """numpy or cupy, whichever module ``x`` belongs to (numpy for a WgpuArray)."""
    return _cupy() if is_cupy(x) else np
