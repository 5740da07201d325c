"""Where work runs: the one place that answers "which backend runs this call".

The rules, in order: an explicit ``backend=`` wins; a module-level call then honours
``PYTROPICAL_BACKEND`` (:func:`requested`, the only place it is read); a context pinned to a backend
uses it; "auto" runs where resident operands live (cupy arrays on cuda, WgpuArrays on wgpu), else on
the CPU below the operation's size threshold and on the best GPU above it (cuda if usable, else a
*hardware* wgpu adapter, never a software one). A matmul "auto" sent to a GPU gets a last word
(:func:`._route_exact.exact`): a dtype that GPU lacks goes to cpu, a call it could get wrong
(subnormals on a flushing adapter) to cuda if usable, else cpu. The dask layer asks
:func:`for_chunk` per block. This module holds the rules and a Router's state; how one call is
decided is :mod:`._route_decide` (its lean and full paths).
"""

from __future__ import annotations

import os
from typing import Any

from . import _arrays
from . import route_table as rt
from ._checks import int_arg
from ._route_decide import OP_ALIASES, Decide
from .backends import BACKENDS, get_backend, probe
from .thresholds import DEFAULTS, load_thresholds

#: the environment variable that pins module-level calls to one backend
ENV = "PYTROPICAL_BACKEND"
#: Default crossovers (work items: m*n*k for GEMM, words for VSA): the one table, kept with the
#: calibration that replaces it (integer matmuls route by ``matmul_int``).
DEFAULT_THRESHOLDS: dict[str, int] = DEFAULTS


_is_cupy = _arrays.is_cupy


#: os.environ's own store and the variable's key in it: read per call without the ~1 us that
#: ``os.environ.get`` spends raising and catching KeyError when the variable is unset (CPython's
#: ``os._Environ``; any other mapping falls back to ``get``)
_ENV_DATA = getattr(os.environ, "_data", None)
_ENV_KEY = os.environ.encodekey(ENV) if hasattr(os.environ, "encodekey") else None


def requested(backend: str | None) -> str | None:
    """What a module-level call asked for: ``backend=``, else ``PYTROPICAL_BACKEND``, else None."""
    if backend is not None:
        return backend
    if _ENV_KEY is not None and isinstance(_ENV_DATA, dict):
        v = _ENV_DATA.get(_ENV_KEY)
        return None if v is None else (os.environ.decodevalue(v) or None)
    return os.environ.get(ENV) or None


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


class Router(Decide):
    """The routing state of a context: a pinned backend or "auto", a route table, the GPU "auto" uses.

    :class:`~pytropical_gpu.hybrid.HybridContext` is a Router with the operations as methods. The
    route table (:mod:`pytropical_gpu.route_table`) says per operation which backend runs each range
    of sizes; ``thresholds`` (op -> where the table first leaves cpu) is its summary.
    """

    def __init__(self, backend: str = "auto", cpu_threshold: int | None = None):
        if backend not in ("auto",) + BACKENDS:
            raise ValueError(f"HybridContext: backend must be auto, cpu, wgpu or cuda; got {backend!r}")
        if backend != "auto":
            get_backend(backend)  # raise now, with the reason, if it cannot run
        self.backend = backend
        self._fixed: int | None = None
        if cpu_threshold is not None:
            self._fixed = int_arg(cpu_threshold, "HybridContext", "cpu_threshold (work items, or None)",
                                  lo=0, integral_float=True)
        self._gpu: str | None | bool = False  # False: not looked up yet
        self._table: dict[str, rt.Segments] | None = None  # None: built on first use
        self._calibration: Any = None
        self._saved = cpu_threshold is not None  # an explicit threshold wins over a calibration
        #: the lean path's state (:mod:`._route_lean`): (table, gpu, cpu cuts, cpu backend), valid
        #: while ``_table`` and ``_gpu`` are the objects it was built from
        self._lean: tuple = (False, False, None, None)

    def _apply(self, t: Any) -> None:
        """Route by a :class:`~pytropical_gpu.thresholds.Thresholds` (a calibration)."""
        self._calibration, self._saved, self._table = t, True, None

    def use_calibration(self, t: Any = None) -> None:
        """Route by ``t`` (a :class:`~pytropical_gpu.thresholds.Thresholds`, e.g. what
        ``calibrate(save=False)`` returned), or by the built-in defaults when None, never looking
        in the cache. Benchmarks compare the two; an explicit ``cpu_threshold`` still wins."""
        self._apply(t)

    def _load_saved(self) -> None:
        """Once, when "auto" first routes with a GPU: the calibration ``calibrate()`` saved on this
        machine (same devices, same library version), else the defaults stay."""
        if self._saved:
            return
        self._saved = True
        t = load_thresholds(usable_backends())
        if t is not None:
            self._apply(t)

    def _routes(self) -> dict[str, rt.Segments]:
        """The route table, built once per calibration (the caller has checked there is a GPU)."""
        table = self._table
        if table is None:
            self._load_saved()
            gpu = self.gpu
            if self._fixed is not None:
                table = {op: rt.from_crossover(self._fixed, gpu) for op in DEFAULT_THRESHOLDS}
            else:
                table = rt.tables(self._calibration, gpu, usable_backends())
            self._table = table
        return table

    @property
    def thresholds(self) -> dict[str, int]:
        """op -> the size from which "auto" first leaves cpu (:data:`~.thresholds.NEVER`: it never
        does); with no GPU, the crossovers it would use."""
        if self._fixed is not None:
            return {op: self._fixed for op in DEFAULT_THRESHOLDS}
        if self.gpu is None:
            t = self._calibration
            return rt.defaults(None) if t is None else t.as_dict()
        return {op: rt.first_gpu(seg)[0] for op, seg in self._routes().items()}

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
        return self._route(op, size)

    def _route(self, key: str, size: int) -> str:
        if self.gpu is None:
            return "cpu"
        return rt.lookup(self._routes()[key], size)

    def device_target(self) -> str | None:
        """Where to_device puts data: the pinned backend (wgpu/cuda), else the GPU "auto" uses."""
        if self.backend in ("wgpu", "cuda"):
            return self.backend
        if self.backend == "cpu":
            return None
        return self.gpu


__all__ = ["DEFAULT_THRESHOLDS", "ENV", "OP_ALIASES", "Router", "check_name", "for_chunk",
           "hardware_gpu", "requested", "usable_backends"]
