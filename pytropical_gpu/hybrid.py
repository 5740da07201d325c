"""HybridContext: route each call by size to the CPU or the best GPU backend.

Small problems lose more to launch and transfer latency than they gain from a GPU, so below a
per-operation threshold work runs on numpy. "auto" picks cuda when CuPy sees a device, else a
*hardware* wgpu adapter (never a software one); a call it could get wrong goes elsewhere (``_exact``).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import _arrays
from ._checks import int_arg
from .backends import Backend, gemm_shapes, get_backend, probe
from .backends._validate import recheck_handle
from .backends.base import bundle_operands
from .packed import PackedCols, PackedRows
from .semirings import Semiring
from .vsa import TernaryVec

log = logging.getLogger("pytropical_gpu")

#: Default crossovers (work items: m*n*k for GEMM, words for VSA); calibrate() measures real ones.
DEFAULT_THRESHOLDS: dict[str, int] = {
    "matmul": 1 << 21, "andor_matmul": 1 << 24, "bind": 1 << 20, "bundle": 1 << 20,
    "dot": 1 << 20, "search": 1 << 20, "permute": 1 << 20, "accumulate": 1 << 20,
    "harden": 1 << 20, "pack": 1 << 22,
}
#: other names ``route`` accepts for an operation (the public verbs that share a threshold)
OP_ALIASES: dict[str, str] = {"unbind": "bind", "cosine": "dot", "dot_similarity": "dot",
                              "cosine_similarity": "dot", "multiset": "bundle", "pack_rows": "pack",
                              "pack_cols": "pack"}


def _hardware_gpu() -> str | None:
    if probe("cuda")[0]:
        return "cuda"
    try:
        from .backends.wgpu import hardware_available
    except ImportError:  # pragma: no cover
        return None
    return "wgpu" if hardware_available()[0] else None


class HybridContext:
    """Routes operations to cpu or a GPU backend by problem size.

    Methods are the module functions (``ctx.matmul``, ``ctx.bundle``, ...) with one signature.

    Parameters
    ----------
    backend : "auto" | "cpu" | "wgpu" | "cuda"
        "auto" routes by size; a name pins every call to that backend.
    cpu_threshold : int, optional
        One crossover (work items) for every operation; default: per-operation table.

    Raises
    ------
    ValueError
        An unknown backend name.
    BackendUnavailableError
        A pinned backend that cannot run here.

    Shapes:
        as the module functions (see :func:`pytropical_gpu.matmul`).

    Examples
    --------
    >>> ctx = HybridContext(backend="cpu")
    >>> ctx.route("matmul", 10**9)
    'cpu'
    """

    def __init__(self, backend: str = "auto", cpu_threshold: int | None = None):
        if backend not in ("auto", "cpu", "wgpu", "cuda"):
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

    @property
    def gpu(self) -> str | None:
        """The GPU backend "auto" would use, or None (no CUDA device, no hardware adapter)."""
        if self._gpu is False:
            self._gpu = _hardware_gpu()
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
        if gpu is None or size < self.thresholds.get(op, DEFAULT_THRESHOLDS[op]):
            return "cpu"
        return gpu

    def _pick(self, op: str, size: int, *arrays: Any) -> Backend:
        if self.backend == "auto" and any(_arrays.is_cupy(x) for x in arrays) and probe("cuda")[0]:
            return get_backend("cuda")  # data already on the device: no host round trip
        if self.backend == "auto" and any(_arrays.is_wgpu(x) for x in arrays):
            return get_backend("wgpu")  # resident wgpu operands: run where they live
        return get_backend(self.route(op, size))

    # ------------------------------------------------------------------ device residency
    def _device_target(self) -> str | None:
        """Where to_device puts data: the pinned backend (wgpu/cuda), else the GPU "auto" uses."""
        if self.backend in ("wgpu", "cuda"):
            return self.backend
        if self.backend == "cpu":
            return None
        return self.gpu

    def to_device(self, x: Any) -> Any:
        """Keep ``x`` on the GPU across calls.

        On cuda: cupy arrays (TernaryVec planes, packed words) that stay on the device. On wgpu: a
        :class:`~pytropical_gpu.backends.wgpu.array.WgpuArray` (an owned device buffer the kernels
        bind directly, no upload per call); numpy arrays, TernaryVec planes and PackedRows/PackedCols
        words become WgpuArrays, validated once here (NaN, trits). TernaryVec planes and packed
        words are checked again on every backend (they may have been changed in place since they
        were made); operations then trust them. Operations on resident operands return numpy
        results on wgpu (cupy on cuda). With no GPU (or backend="cpu") ``x`` is returned unchanged.
        """
        target = self._device_target()
        if target is None or target == "cpu":
            recheck_handle(x)  # the same checks as on a GPU; x itself stays where it is
            return x
        return get_backend(target).to_device(x)

    def to_host(self, x: Any) -> Any:
        """Bring ``x`` back as numpy (TernaryVec/packed handles keep their type)."""
        return get_backend("cpu").to_host(x)  # the same for every backend: Backend.to_host

    # ------------------------------------------------------------------ calibration
    def calibrate(self, repeats: int = 3, cache: bool = True) -> dict[str, int]:
        """Measure the cpu/GPU crossover for matmul and the VSA ops; sets and returns thresholds."""
        gpu = self.gpu
        if gpu is None:
            log.info("calibrate: no hardware GPU backend, everything stays on cpu")
            return dict(self.thresholds)
        cpu, dev = get_backend("cpu"), get_backend(gpu)
        rng = np.random.default_rng(0)

        def best(f):
            f()
            ts = []
            for _ in range(repeats):
                t = time.perf_counter()
                f()
                ts.append(time.perf_counter() - t)
            return min(ts)

        for s in (32, 64, 128, 256, 512, 1024):
            a = rng.random((s, s), dtype=np.float32)
            if best(lambda be=dev, a=a: be.matmul(a, a, "min_plus")) < best(
                    lambda be=cpu, a=a: be.matmul(a, a, "min_plus")):
                self.thresholds["matmul"] = s ** 3
                break
        for w in (1 << 10, 1 << 13, 1 << 16, 1 << 19):
            v = TernaryVec.random(32 * w, seed=1)
            if best(lambda be=dev, v=v: be.bind(v, v)) < best(lambda be=cpu, v=v: be.bind(v, v)):
                for op in ("bind", "bundle", "dot", "search", "permute", "accumulate", "harden"):
                    self.thresholds[op] = w
                break
        if cache:
            _save_cache(gpu, self.thresholds)
        return dict(self.thresholds)

    # ------------------------------------------------------------------ operations
    def matmul(self, a: Any, b: Any, semiring: str | Semiring = "max_plus", *, c: Any = None,
               out: Any = None, return_argmax: bool = False, backend: str | None = None) -> Any:
        """See :func:`pytropical_gpu.matmul`."""
        be = self._choose(backend, "matmul", gemm_shapes.work_size(a, b), a, b)
        if backend is None and self.backend == "auto":
            be = self._exact(be, semiring, {"a": a, "b": b, "c": c})
        return be.matmul(a, b, semiring, c=c, out=out, return_argmax=return_argmax)

    def pack_rows(self, a: Any, *, backend: str | None = None) -> PackedRows:
        return self._choose(backend, "pack", _size(a), a).pack_rows(a)

    def pack_cols(self, b: Any, *, backend: str | None = None) -> PackedCols:
        return self._choose(backend, "pack", _size(b), b).pack_cols(b)

    def andor_matmul(self, a: Any, b: Any, *, backend: str | None = None) -> Any:
        sa, sb = _shape2(a), _shape2(b)
        size = sa[0] * sb[1] * max(sa[1], 1) // 32
        return self._choose(backend, "andor_matmul", size, getattr(a, "words", a),
                            getattr(b, "words", b)).andor_matmul(a, b)

    def bind(self, a: TernaryVec, b: TernaryVec, *, backend: str | None = None) -> TernaryVec:
        return self._choose(backend, "bind", _tv_size(a, b), *_tv_arrays(a, b)).bind(a, b)

    def unbind(self, a: TernaryVec, b: TernaryVec, *, backend: str | None = None) -> TernaryVec:
        return self._choose(backend, "bind", _tv_size(a, b), *_tv_arrays(a, b)).unbind(a, b)

    def bundle(self, *vectors: TernaryVec | Sequence[TernaryVec], threshold: int = 1,
               backend: str | None = None) -> TernaryVec:
        vs = bundle_operands(vectors)
        items = [vs] if isinstance(vs, TernaryVec) else vs
        be = self._choose(backend, "bundle", _tv_size(*items), *_tv_arrays(*items))
        return be.bundle(vs, threshold=threshold)

    def multiset(self, batched: TernaryVec, *, threshold: int = 1,
                 backend: str | None = None) -> TernaryVec:
        be = self._choose(backend, "bundle", _tv_size(batched), *_tv_arrays(batched))
        return be.multiset(batched, threshold=threshold)

    def dot(self, a: TernaryVec, b: TernaryVec, *, backend: str | None = None) -> Any:
        return self._choose(backend, "dot", _tv_size(a, b), *_tv_arrays(a, b)).dot(a, b)

    def cosine(self, a: TernaryVec, b: TernaryVec, *, backend: str | None = None) -> Any:
        return self._choose(backend, "dot", _tv_size(a, b), *_tv_arrays(a, b)).cosine(a, b)

    def permute(self, a: TernaryVec, shifts: int = 1, *, backend: str | None = None) -> TernaryVec:
        return self._choose(backend, "permute", _tv_size(a), *_tv_arrays(a)).permute(a, shifts)

    def search(self, query: TernaryVec, memory: TernaryVec, k: int = 1, *,
               backend: str | None = None) -> tuple[Any, Any]:
        be = self._choose(backend, "search", _tv_size(query, memory), *_tv_arrays(query, memory))
        return be.search(query, memory, k)

    dot_similarity = dot
    cosine_similarity = cosine

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

    def _choose(self, backend: str | None, op: str, size: int, *arrays: Any) -> Backend:
        if backend is not None:
            return get_backend(backend)
        return self._pick(op, size, *arrays)

    def __repr__(self) -> str:
        return f"HybridContext(backend={self.backend!r}, gpu={self.gpu!r})"


def _size(x: Any) -> int:
    return int(np.prod(getattr(x, "shape", np.shape(x))))


def _shape2(x: Any) -> tuple[int, int]:
    s = tuple(getattr(x, "shape", np.shape(x)))
    return (s + (1, 1))[:2] if len(s) < 2 else s[-2:]  # type: ignore[return-value]


def _tv_arrays(*vs: Any) -> list:
    return [v.pos for v in vs if isinstance(v, TernaryVec)]


def _tv_size(*vs: Any) -> int:
    return sum(int(v.pos.size) for v in vs if isinstance(v, TernaryVec))


def _cache_path() -> Path:
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("pytropical_gpu")) / "calibration.json"
    except ImportError:
        return Path(os.path.expanduser("~/.cache/pytropical_gpu/calibration.json"))


def _save_cache(gpu: str, thresholds: dict[str, int]) -> None:
    p = _cache_path()
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        data = json.loads(p.read_text()) if p.exists() else {}
        data[gpu] = thresholds
        p.write_text(json.dumps(data, indent=1))
    except OSError as e:  # a read-only home must not break calibration
        log.warning("calibrate: cannot write %s (%s)", p, e)
