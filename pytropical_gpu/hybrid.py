"""HybridContext: the operations as methods of a context that routes each call by size.

Small problems lose more to launch and transfer latency than they gain from a GPU, so below a
per-operation threshold work runs on numpy. Where each call runs is decided by
:mod:`pytropical_gpu.routing` (a HybridContext is a :class:`~pytropical_gpu.routing.Router`); what it
does there is :mod:`pytropical_gpu.ops`. :func:`default_context` is the one the module verbs use.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from .backends import get_backend
from .batch import Batch
from .facts import verb_call
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
        were made); operations then trust them. Operations on resident operands return resident
        results (WgpuArrays on wgpu, cupy on cuda); scores and indices of dot/cosine/search come
        back to the host. With no GPU (or backend="cpu") ``x`` is returned unchanged.
        """
        target = self.device_target()
        if target is None or target == "cpu":
            recheck_handle(x)  # the same checks as on a GPU; x itself stays where it is
            return x
        return get_backend(target).to_device(x)

    def to_host(self, x: Any) -> Any:
        """Bring ``x`` back as numpy (TernaryVec/packed handles keep their type)."""
        return get_backend("cpu").to_host(x)  # the same for every backend: Backend.to_host

    from_device = to_host

    def batch(self) -> Batch:
        """``with ctx.batch():`` queue the operations of the block on the device and synchronise
        once at its end (wgpu: one command buffer; cuda: the current stream, no host waits for
        validation inside). Checks that need device facts run at the end; see
        :mod:`pytropical_gpu.batch`. Results inside are resident and usable by later operations."""
        target = self.device_target()
        return Batch(target, get_backend("wgpu").engine if target == "wgpu" else None)

    # ------------------------------------------------------------------ calibration
    #: :func:`pytropical_gpu.calibration.calibrate`, set by the package ``__init__``: calibration sits
    #: above the context (it times the context's own verbs), so the context does not import it.
    _calibrate = None

    def calibrate(self, repeats: int = 3, cache: bool = True, *, progress: bool = True) -> dict[str, int]:
        """Measure every operation on every usable backend (transfers included) and route by it.

        Runs :func:`pytropical_gpu.calibration.calibrate`, sets this context's thresholds from the
        crossovers and (``cache=True``) saves them in the user cache dir, where the next context on
        this machine loads them. Returns the thresholds (work items per operation).
        """
        if HybridContext._calibrate is None:  # pragma: no cover - the package __init__ sets it
            raise RuntimeError("calibrate: import pytropical_gpu (its __init__ wires calibration in)")
        t = HybridContext._calibrate(repeats=repeats, progress=progress, save=cache)
        self._apply(t)
        return dict(self.thresholds)

    # ------------------------------------------------------------------ operations
    def matmul(self, a: Any, b: Any, semiring: str | Semiring = "max_plus", *, c: Any = None,
               out: Any = None, return_argmax: bool = False, backend: str | None = None) -> Any:
        """See :func:`pytropical_gpu.matmul`."""
        with verb_call():  # what routing learns of the operands serves the operation
            be = self._be("matmul", (a, b, c), backend, semiring)
            return be.matmul(a, b, semiring, c=c, out=out, return_argmax=return_argmax)

    def pack_rows(self, a: Any, *, backend: str | None = None) -> PackedRows:
        return self._be("pack_rows", (a,), backend).pack_rows(a)

    def pack_cols(self, b: Any, *, backend: str | None = None) -> PackedCols:
        return self._be("pack_cols", (b,), backend).pack_cols(b)

    def andor_matmul(self, a: Any, b: Any, *, backend: str | None = None) -> Any:
        return self._be("andor_matmul", (a, b), backend).andor_matmul(a, b)

    def bind(self, a: TernaryVec, b: TernaryVec, *, backend: str | None = None) -> TernaryVec:
        return self._be("bind", (a, b), backend).bind(a, b)

    def unbind(self, a: TernaryVec, b: TernaryVec, *, backend: str | None = None) -> TernaryVec:
        return self._be("bind", (a, b), backend).unbind(a, b)

    def bundle(self, *vectors: TernaryVec | Sequence[TernaryVec], threshold: int = 1,
               backend: str | None = None) -> TernaryVec:
        vs = bundle_operands(vectors)
        items = [vs] if isinstance(vs, TernaryVec) else vs
        return self._be("bundle", tuple(items), backend).bundle(vs, threshold=threshold)

    def multiset(self, batched: TernaryVec, *, threshold: int = 1,
                 backend: str | None = None) -> TernaryVec:
        be = self._be("bundle", (batched,), backend)
        return be.multiset(batched, threshold=threshold)

    def permute(self, a: TernaryVec, shifts: int = 1, *, backend: str | None = None) -> TernaryVec:
        return self._be("permute", (a,), backend).permute(a, shifts)

    def accumulate(self, soft: SoftTernaryVec, hard: TernaryVec, *,
                   backend: str | None = None) -> SoftTernaryVec:
        return self._be("accumulate", (soft,), backend).accumulate(soft, hard)

    def harden(self, soft: SoftTernaryVec, threshold: int = 1, *,
               backend: str | None = None) -> TernaryVec:
        return self._be("harden", (soft,), backend).harden(soft, threshold)

    def dot(self, a: TernaryVec, b: TernaryVec, *, backend: str | None = None) -> Any:
        return self._be("dot", (a, b), backend).dot(a, b)

    def cosine(self, a: TernaryVec, b: TernaryVec, *, backend: str | None = None) -> Any:
        return self._be("cosine", (a, b), backend).cosine(a, b)

    def search(self, query: TernaryVec, memory: TernaryVec, k: int = 1, *,
               backend: str | None = None) -> tuple[Any, Any]:
        be = self._be("search", (query, memory), backend)
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


def module_backend(op: str, operands: tuple, backend: str | None, semiring: Any = None) -> Any:
    """The backend a module-level verb runs ``op`` on: ``backend=``, ``PYTROPICAL_BACKEND``, else
    the default context's routing (arguments positional: this is every module verb's hot path)."""
    return default_context()._be(op, operands, requested(backend), semiring)


__all__ = ["DEFAULT_THRESHOLDS", "OP_ALIASES", "HybridContext", "default_context", "module_backend"]
