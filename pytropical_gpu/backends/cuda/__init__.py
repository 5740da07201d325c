"""CUDA backend through CuPy: kernels in ``cuda/*.cu`` compiled at run time (NVRTC), cached per device.

``probe()`` says whether CuPy imports and sees a device; cupy is imported only here and in the backend.
A CUDA error while probing other than "no device" / "no driver" is a fault of the moment (an earlier
out-of-memory, for instance): the answer is marked transient so it is not cached for the process.
Once CUDA was initialised here, a child made by ``fork()`` cannot use it (see ``backends._process``).
"""

from __future__ import annotations

import os

from .._process import Transient, mark_forked

#: cudaErrorInsufficientDriver, cudaErrorStubLibrary, cudaErrorNoDevice: the machine has no usable
#: CUDA device; any other error while probing is not taken as the machine's answer
_NO_DEVICE = frozenset({35, 34, 100})
_INIT_ERROR = 3  # cudaErrorInitializationError: also what a forked child of a CUDA process gets
_opened = False  # this process initialised CUDA (a forked child cannot use it)


def probe() -> tuple[bool, str]:
    """``(ok, reason)``: reason names the device, or why the backend cannot run."""
    global _opened
    try:
        import cupy
    except Exception as e:  # ImportError, or a broken CUDA install
        return False, (f"cupy not installed ({type(e).__name__}: {e}); "
                       "pip install 'pytropical_gpu[cuda13]' (or '[cuda12]')")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        status = getattr(e, "status", None)
        if status in _NO_DEVICE:
            return False, f"no CUDA device ({type(e).__name__}: {e})"
        hint = ""
        if status == _INIT_ERROR:
            hint = ("; in a process forked from one that had used CUDA this is expected: start "
                    "workers with multiprocessing 'spawn' or 'forkserver'")
        return Transient(False, f"CUDA error while probing ({type(e).__name__}: {e}){hint}")
    if count < 1:
        return False, "no CUDA device"
    _opened = True
    try:
        dev = cupy.cuda.Device()
        props = cupy.cuda.runtime.getDeviceProperties(dev.id)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as e:
        return Transient(False, f"CUDA device unusable ({type(e).__name__}: {e})")
    return True, f"{name} (sm_{dev.compute_capability}), cupy {cupy.__version__}"


def create():
    from .backend import CudaBackend

    mark_opened()  # this process initialises CUDA now
    return CudaBackend()


def module_specs():
    """Every module/instantiation the backend compiles (for the nvcc compile test)."""
    from .gemm_units import SPECS as UNITS_SPECS
    from .kernels import module_specs as specs
    from .operand_range import SPEC as RANGE_SPEC
    from .search_group import SPEC as GROUP_SPEC
    from .search_specs import SPECS as SEARCH_SPECS  # search names its kernels there
    from .zero_sign import SPEC as ZERO_SIGN_SPEC

    return specs() + list(SEARCH_SPECS) + [GROUP_SPEC] + list(UNITS_SPECS) + [ZERO_SIGN_SPEC, RANGE_SPEC]


def mark_opened() -> None:
    """This process initialised CUDA (the backend calls it when created)."""
    global _opened
    _opened = True


def _after_fork_in_child() -> None:
    if _opened:
        mark_forked("cuda", "CUDA (a CUDA context cannot cross fork(); CuPy fails with an "
                    "initialisation error)")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


__all__ = ["probe", "create", "module_specs"]
