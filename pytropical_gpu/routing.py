"""Where work runs: the one place that answers "which backend runs this call".

The rules, in order: an explicit ``backend=`` wins; a module-level call then honours
``PYTROPICAL_BACKEND`` (:func:`requested`, the only place it is read); a context pinned to a backend
uses it; "auto" runs where resident operands live (cupy arrays on cuda, WgpuArrays on wgpu), else on
the CPU below the operation's size threshold and on the best GPU above it (cuda if usable, else a
*hardware* wgpu adapter, never a software one). A matmul "auto" sent to a GPU gets a last word
(:meth:`Router._exact`): a dtype that GPU lacks goes to cpu, a call it could get wrong (subnormals on
a flushing adapter) to cuda if usable, else cpu. The dask layer asks :func:`for_chunk` per block.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np

from . import _arrays
from ._checks import int_arg
from .backends import BACKENDS, Backend, get_backend, probe
from .ops import gemm_shapes
from .thresholds import DEFAULTS, INT_DTYPES, load_thresholds
from .types import TernaryVec

log = logging.getLogger("pytropical_gpu")

#: the environment variable that pins module-level calls to one backend
ENV = "PYTROPICAL_BACKEND"
#: Default crossovers (work items: m*n*k for GEMM, words for VSA): the one table, kept with the
#: calibration that replaces it (integer matmuls route by ``matmul_int``).
DEFAULT_THRESHOLDS: dict[str, int] = DEFAULTS
#: other names ``route`` accepts for an operation (the public verbs that share a threshold)
OP_ALIASES: dict[str, str] = {"unbind": "bind", "dot_similarity": "dot", "cosine_similarity": "cosine",
                              "multiset": "bundle", "pack_rows": "pack", "pack_cols": "pack"}


_is_cupy = _arrays.is_cupy


def requested(backend: str | None) -> str | None:
    """What a module-level call asked for: ``backend=``, else ``PYTROPICAL_BACKEND``, else None."""
    return backend if backend is not None else (os.environ.get(ENV) or None)


def hardware_gpu() -> str | None:
    """The GPU "auto" uses: cuda when CuPy sees a device, else a hardware wgpu adapter, else None."""
    gpus = usable_backends()[1:]
    return gpus[0] if gpus else None


def usable_backends(include_software: bool = False) -> list[str]:
    """cpu, cuda when CuPy sees a device, wgpu on a hardware adapter (a software adapter only with
    ``include_software``): what "auto" may route to, so what calibrate() measures by default."""
    names = ["cpu"]
    if probe("cuda")[0]:
        names.append("cuda")
    from .backends.wgpu import hardware_available

    if hardware_available()[0] or (include_software and probe("wgpu")[0]):
        names.append("wgpu")
    return names


def for_chunk(backend: str | None, chunk: Any) -> str:
    """The backend one dask block runs on: ``backend`` if given, else "cuda" for a cupy chunk and
    "cpu" otherwise. Decided from the chunk itself, not from the dask array's ``_meta``: a meta is
    only a guess (``map_blocks`` without ``meta=`` on cupy chunks records a numpy one)."""
    if backend is not None:
        return backend
    return "cuda" if _is_cupy(chunk) else "cpu"


def check_name(backend: str | None) -> str | None:
    """``backend`` checked now (a name or None), before any work is planned."""
    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"backend must be cpu, wgpu, cuda or None; got {backend!r}")
    return backend


class Router:
    """The routing state of a context: a pinned backend or "auto", thresholds, the GPU "auto" uses.

    :class:`~pytropical_gpu.hybrid.HybridContext` is a Router with the operations as methods.
    """

    def __init__(self, backend: str = "auto", cpu_threshold: int | None = None):
        if backend not in ("auto",) + BACKENDS:
            raise ValueError(f"HybridContext: backend must be auto, cpu, wgpu or cuda; got {backend!r}")
        if backend != "auto":
            get_backend(backend)  # raise now, with the reason, if it cannot run
        self.backend = backend
        self.thresholds = dict(DEFAULT_THRESHOLDS)
        if cpu_threshold is not None:
            t = int_arg(cpu_threshold, "HybridContext", "cpu_threshold (work items, or None)", lo=0,
                        integral_float=True)
            self.thresholds = {k: t for k in self.thresholds}
        self._gpu: str | None | bool = False  # False: not looked up yet
        self._saved = cpu_threshold is not None  # an explicit threshold wins over a calibration

    def _apply(self, t: Any) -> None:
        """Route by a :class:`~pytropical_gpu.thresholds.Thresholds` (calibrated crossovers)."""
        self.thresholds.update({k: int(v) for k, v in t.as_dict().items() if k in self.thresholds})
        self._saved = True

    def _load_saved(self) -> None:
        """Once, when "auto" first routes to a GPU: the thresholds ``calibrate()`` saved on this
        machine (same devices, same library version), else the defaults stay."""
        if self._saved:
            return
        self._saved = True
        t = load_thresholds(usable_backends())
        if t is not None:
            self._apply(t)

    @property
    def gpu(self) -> str | None:
        """The GPU backend "auto" would use, or None (no CUDA device, no hardware adapter)."""
        if self._gpu is False:
            self._gpu = hardware_gpu()
        return self._gpu  # type: ignore[return-value]

    def route(self, op: str, size: int) -> str:
        """Which backend ``op`` on ``size`` work items would run on (an unknown op raises ValueError)."""
        op = OP_ALIASES.get(op, op) if isinstance(op, str) else op
        if op not in DEFAULT_THRESHOLDS:
            raise ValueError(f"route: unknown op {op!r}; known: "
                             f"{', '.join(sorted(set(DEFAULT_THRESHOLDS) | set(OP_ALIASES)))}")
        size = int_arg(size, "route", "size", lo=0)
        if self.backend != "auto":
            return self.backend
        gpu = self.gpu
        if gpu is None:
            return "cpu"
        self._load_saved()
        return "cpu" if size < self.thresholds.get(op, DEFAULT_THRESHOLDS[op]) else gpu

    def backend_for(self, op: str, *operands: Any, backend: str | None = None,
                    semiring: Any = None) -> Backend:
        """The backend that runs ``op`` on ``operands`` (as the verb received them)."""
        if backend is not None:
            return get_backend(backend)
        size, arrays = _measure(op, operands)
        key = OP_ALIASES.get(op, op)
        if op == "matmul" and gemm_shapes.dtype_name(operands[0]) in INT_DTYPES:
            key = "matmul_int"  # calibrated on its own (int32 max_plus: DPX on Hopper)
        be = self._pick(key, size, *arrays)
        if op == "matmul" and self.backend == "auto":
            a, b, c = (tuple(operands) + (None,))[:3]
            be = self._exact(be, semiring, {"a": a, "b": b, "c": c})
        return be

    def _pick(self, op: str, size: int, *arrays: Any) -> Backend:
        """By residency ("auto": run where cupy / wgpu operands live), else by :meth:`route`."""
        lives = _lives(arrays) if self.backend == "auto" else None
        if lives == "cuda" and probe("cuda")[0]:
            return get_backend("cuda")  # data already on the device: no host round trip
        if lives == "wgpu":
            return get_backend("wgpu")  # resident wgpu operands: run where they live
        return get_backend(self.route(op, size))

    @staticmethod
    def _exact(be: Backend, semiring: Any, operands: dict[str, Any]) -> Backend:
        """"auto"'s last word on a matmul: dtypes a GPU lacks (wgpu: 64-bit) go to cpu, a call it could
        get wrong (``inexact_reason``: subnormals on a flushing adapter) to cuda if usable, else cpu."""
        if gemm_shapes.dtype_name(operands["a"]) not in be.gemm_dtypes:
            return get_backend("cpu")
        why = be.inexact_reason(semiring, None, operands) if hasattr(be, "inexact_reason") else None
        if not why:
            return be
        target = "cuda" if probe("cuda")[0] else "cpu"
        log.info("auto: not on %s (%s); running on %s", be.name, why, target)
        return get_backend(target)

    def device_target(self) -> str | None:
        """Where to_device puts data: the pinned backend (wgpu/cuda), else the GPU "auto" uses."""
        if self.backend in ("wgpu", "cuda"):
            return self.backend
        if self.backend == "cpu":
            return None
        return self.gpu


def _measure(op: str, operands: tuple) -> tuple[int, list]:
    """(work items, the arrays that say where data lives) of a call."""
    if op == "matmul":
        a, b = operands[0], operands[1]
        return gemm_shapes.work_size(a, b), [a, b]
    if op == "andor_matmul":
        a, b = operands
        sa, sb = _shape2(a), _shape2(b)
        return sa[0] * sb[1] * max(sa[1], 1) // 32, [getattr(a, "words", a), getattr(b, "words", b)]
    if op in ("pack_rows", "pack_cols"):
        return int(np.prod(getattr(operands[0], "shape", np.shape(operands[0])))), [operands[0]]
    if op in ("accumulate", "harden"):
        soft = operands[0]
        sign = getattr(soft, "sign", None)
        return (0 if sign is None else int(sign.size) * soft.bits), [sign]
    vs = [v for v in operands if isinstance(v, TernaryVec)]
    return sum(int(v.pos.size) for v in vs), [v.pos for v in vs]


def _lives(arrays: list) -> str | None:
    """"cuda" when an operand is a cupy array, else "wgpu" when one is a WgpuArray, else None."""
    kinds = {type(x).__module__.partition(".")[0] for x in arrays if x is not None}
    if kinds <= {"numpy", "builtins"}:
        return None  # the common case, decided without asking each operand
    if [x for x in arrays if _arrays.is_cupy(x)]:
        return "cuda"
    return "wgpu" if [x for x in arrays if _arrays.is_wgpu(x)] else None


def _shape2(x: Any) -> tuple[int, int]:
    s = tuple(getattr(x, "shape", np.shape(x)))
    return (s + (1, 1))[:2] if len(s) < 2 else s[-2:]  # type: ignore[return-value]


__all__ = ["DEFAULT_THRESHOLDS", "ENV", "OP_ALIASES", "Router", "check_name", "for_chunk",
           "hardware_gpu", "requested", "usable_backends"]
