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
from bisect import bisect_right
from typing import Any

import numpy as np

from . import _arrays
from . import route_table as rt
from ._checks import int_arg
from ._route_lean import SIZE as _LEAN_SIZE
from ._route_lean import cpu_cuts
from ._route_measure import _dtype_name, _is_int, _lives, _measure, _plain
from .backends import BACKENDS, Backend, get_backend, probe
from .thresholds import DEFAULTS, load_thresholds

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


class Router:
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

    def backend_for(self, op: str, *operands: Any, backend: str | None = None,
                    semiring: Any = None) -> Backend:
        """The backend that runs ``op`` on ``operands`` (as the verb received them).

        "auto" with plain host operands is decided from their size (:mod:`._route_lean`): one
        comparison on the cpu side, else a bisection (a matmul only when the GPU has its dtype and
        no data-dependent check); every other call by :meth:`_backend_for`."""
        return self._be(op, operands, backend, semiring)

    def _be(self, op: str, operands: tuple, backend: str | None, semiring: Any = None) -> Backend:
        """:meth:`backend_for` with positional arguments (the verbs' hot path). The GPU side is
        lean too: on the H200 host the full path took 2.7-5.5 us (``backend="cuda"``: 0.55)."""
        if backend is None and self.backend == "auto":
            table, gpu, cuts, cpu = self._lean
            if table is self._table and gpu is self._gpu:
                f = _LEAN_SIZE.get(op)
                ks = None if f is None else f(operands)
                if ks is not None:
                    key, size = ks
                    if size < cuts[key]:
                        return cpu
                    if table is not None:
                        starts, names = table[key]
                        be = get_backend(names[bisect_right(starts, size) - 1])
                        if op != "matmul" or be is cpu or (
                                not hasattr(be, "inexact_reason") and
                                _dtype_name(operands[0]) in be.gemm_dtypes):
                            return be
        return self._backend_for(op, operands, backend, semiring)

    def _backend_for(self, op: str, operands: tuple, backend: str | None, semiring: Any) -> Backend:
        if backend is not None:
            return get_backend(backend)
        if self.backend != "auto":
            return get_backend(self.backend)
        key = OP_ALIASES.get(op, op)
        if op == "matmul" and _is_int(operands[0]):
            key = "matmul_int"  # calibrated on its own (int32 max_plus: DPX on Hopper)
        seg = None if self._table is None else self._table[key]
        if (self.gpu is None or (seg is not None and len(seg[1]) == 1)) and _plain(operands):
            # one backend for every size (no GPU, or a one-segment table) and nothing resident:
            # no size needed (a pack of 256 bools takes 10 us on cpu; routing must not add 10%)
            be = get_backend("cpu" if seg is None else seg[1][0])
        else:
            size, arrays = _measure(op, operands)
            be = self._pick(key, size, *arrays)
        if op == "matmul" and be.name != "cpu":
            a, b, c = (tuple(operands) + (None,))[:3]
            be = self._exact(be, semiring, {"a": a, "b": b, "c": c})
        self._relean()
        return be

    def _relean(self) -> None:
        """Rebuild the lean path's cuts when the table or the GPU changed since they were made."""
        table, gpu = self._lean[:2]
        if table is self._table and gpu is self._gpu:
            return
        if self.gpu is not None:
            self._routes()
        self._lean = (self._table, self._gpu, cpu_cuts(self._table, DEFAULT_THRESHOLDS),
                      get_backend("cpu"))

    def _pick(self, key: str, size: int, *arrays: Any) -> Backend:
        """"auto": where cupy / wgpu operands live, else by the route table (the hot path of every
        auto call: a type check per operand and one bisection, about a microsecond)."""
        for x in arrays:
            if type(x) is not np.ndarray:
                lives = _lives(list(arrays))
                if lives == "cuda" and probe("cuda")[0]:
                    return get_backend("cuda")  # data already on the device: no host round trip
                if lives == "wgpu":
                    return get_backend("wgpu")  # resident wgpu operands: run where they live
                break
        table = self._table
        if table is None:
            if self.gpu is None:
                return get_backend("cpu")
            table = self._routes()
        starts, names = table[key]
        return get_backend(names[bisect_right(starts, size) - 1])

    @staticmethod
    def _exact(be: Backend, semiring: Any, operands: dict[str, Any]) -> Backend:
        """"auto"'s last word on a matmul sent to a GPU: a dtype it lacks (wgpu: 64-bit) or a call it
        could get wrong (``inexact_reason``: subnormals on a flushing adapter) goes to cuda when
        usable and able, else cpu."""
        dtype = _dtype_name(operands["a"])
        why = None
        if dtype not in be.gemm_dtypes:
            why = f"no {dtype} matmul"
        elif hasattr(be, "inexact_reason"):
            why = be.inexact_reason(semiring, None, operands)
        if not why:
            return be
        target = "cpu"
        if be.name != "cuda" and probe("cuda")[0] and dtype in get_backend("cuda").gemm_dtypes:
            target = "cuda"
        log.info("auto: not on %s (%s); running on %s", be.name, why, target)
        return get_backend(target)

    def device_target(self) -> str | None:
        """Where to_device puts data: the pinned backend (wgpu/cuda), else the GPU "auto" uses."""
        if self.backend in ("wgpu", "cuda"):
            return self.backend
        if self.backend == "cpu":
            return None
        return self.gpu


__all__ = ["DEFAULT_THRESHOLDS", "ENV", "OP_ALIASES", "Router", "check_name", "for_chunk",
           "hardware_gpu", "requested", "usable_backends"]
