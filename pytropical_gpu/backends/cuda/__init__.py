"""CUDA backend through CuPy: kernels in ``cuda/*.cu`` compiled at run time (NVRTC), cached per device.

``probe()`` says whether CuPy imports and sees a device; cupy is imported only here and in the backend.
"""

from __future__ import annotations


def probe() -> tuple[bool, str]:
    """``(ok, reason)``: reason names the device, or why the backend cannot run."""
    try:
        import cupy
    except Exception as e:  # ImportError, or a broken CUDA install
        return False, (f"cupy not installed ({type(e).__name__}: {e}); "
                       "pip install 'pytropical_gpu[cuda13]' (or '[cuda12]')")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return False, f"no CUDA device ({type(e).__name__}: {e})"
    if count < 1:
        return False, "no CUDA device"
    try:
        dev = cupy.cuda.Device()
        props = cupy.cuda.runtime.getDeviceProperties(dev.id)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as e:
        return False, f"CUDA device unusable ({type(e).__name__}: {e})"
    return True, f"{name} (sm_{dev.compute_capability}), cupy {cupy.__version__}"


def create():
    from .backend import CudaBackend

    return CudaBackend()


def module_specs():
    """Every module/instantiation the backend compiles (for the nvcc compile test)."""
    from .kernels import module_specs as specs

    return specs()


__all__ = ["probe", "create", "module_specs"]
