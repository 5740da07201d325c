"""HybridContext: the operations as methods of a context that routes each call by size.

Small problems lose more to launch and transfer latency than they gain from a GPU, so below a
per-operation threshold work runs on numpy. Where each call runs is decided by
:mod:`pytropical_gpu.routing` (a HybridContext is a :class:`~pytropical_gpu.routing.Router`); what it
does there is :mod:`pytropical_gpu.ops`. :func:`default_context` is the one the module verbs use.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .backends import get_backend
from .ops._checks import bundle_operands, recheck_handle
from .routing import DEFAULT_THRESHOLDS, OP_ALIASES, Router, requested
from .semirings import Semiring
from .types import PackedCols, PackedRows, SoftTernaryVec, TernaryVec

log = logging.getLogger("pytropical_gpu")
_default: HybridContext | None = None
_default_lock = threading.Lock()


class HybridContext(Router):
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

    # ------------------------------------------------------------------ device residency
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
        target = self.device_target()
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
        be = self.backend_for("matmul", a, b, c, backend=backend, semiring=semiring)
        return be.matmul(a, b, semiring, c=c, out=out, return_argmax=return_argmax)

    def pack_rows(self, a: Any, *, backend: str | None = None) -> PackedRows:
        return self.backend_for("pack_rows", a, backend=backend).pack_rows(a)

    def pack_cols(self, b: Any, *, backend: str | None = None) -> PackedCols:
        return self.backend_for("pack_cols", b, backend=backend).pack_cols(b)

    def andor_matmul(self, a: Any, b: Any, *, backend: str | None = None) -> Any:
        return self.backend_for("andor_matmul", a, b, backend=backend).andor_matmul(a, b)

    def bind(self, a: TernaryVec, b: TernaryVec, *, backend: str | None = None) -> TernaryVec:
        return self.backend_for("bind", a, b, backend=backend).bind(a, b)

    def unbind(self, a: TernaryVec, b: TernaryVec, *, backend: str | None = None) -> TernaryVec:
        return self.backend_for("bind", a, b, backend=backend).unbind(a, b)

    def bundle(self, *vectors: TernaryVec | Sequence[TernaryVec], threshold: int = 1,
               backend: str | None = None) -> TernaryVec:
        vs = bundle_operands(vectors)
        items = [vs] if isinstance(vs, TernaryVec) else vs
        return self.backend_for("bundle", *items, backend=backend).bundle(vs,
                              threshold=threshold)

    def multiset(self, batched: TernaryVec, *, threshold: int = 1,
                 backend: str | None = None) -> TernaryVec:
        be = self.backend_for("bundle", batched, backend=backend)
        return be.multiset(batched, threshold=threshold)

    def permute(self, a: TernaryVec, shifts: int = 1, *, backend: str | None = None) -> TernaryVec:
        return self.backend_for("permute", a, backend=backend).permute(a, shifts)

    def accumulate(self, soft: SoftTernaryVec, hard: TernaryVec, *,
                   backend: str | None = None) -> SoftTernaryVec:
        return self.backend_for("accumulate", soft, backend=backend).accumulate(soft, hard)

    def harden(self, soft: SoftTernaryVec, threshold: int = 1, *,
               backend: str | None = None) -> TernaryVec:
        return self.backend_for("harden", soft, backend=backend).harden(soft, threshold)

    def dot(self, a: TernaryVec, b: TernaryVec, *, backend: str | None = None) -> Any:
        return self.backend_for("dot", a, b, backend=backend).dot(a, b)

    def cosine(self, a: TernaryVec, b: TernaryVec, *, backend: str | None = None) -> Any:
        return self.backend_for("dot", a, b, backend=backend).cosine(a, b)

    def search(self, query: TernaryVec, memory: TernaryVec, k: int = 1, *,
               backend: str | None = None) -> tuple[Any, Any]:
        be = self.backend_for("search", query, memory, backend=backend)
        return be.search(query, memory, k)

    dot_similarity = dot
    cosine_similarity = cosine

    def __repr__(self) -> str:
        return f"HybridContext(backend={self.backend!r}, gpu={self.gpu!r})"


def default_context() -> HybridContext:
    """The process-wide HybridContext the module functions use.

    Created on first use with ``backend="auto"``; module functions given ``backend=`` (or run
    with ``PYTROPICAL_BACKEND`` set) still go through it, pinned to that backend.

    Returns
    -------
    HybridContext
        The same object on every call.

    Shapes:
        not applicable (returns a context object).

    Examples
    --------
    >>> default_context() is default_context()
    True
    """
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = HybridContext()
    return _default


def module_backend(op: str, *operands: Any, backend: str | None = None, semiring: Any = None):
    """The backend a module-level verb runs ``op`` on: ``backend=``, ``PYTROPICAL_BACKEND``, else
    the default context's routing."""
    return default_context().backend_for(op, *operands, backend=requested(backend),
                                         semiring=semiring)


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


__all__ = ["DEFAULT_THRESHOLDS", "OP_ALIASES", "HybridContext", "default_context", "module_backend"]
