"""The ``wgpu`` Backend: the kernel contract of base.py on WGSL compute shaders."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _arrays, batch, facts
from ..._checks import dt_name
from ...semirings import Semiring, get_semiring
from ..base import Backend
from . import boolean, fastgemm, fastpath, flush, gemm, vsa
from .array import WgpuArray, host
from .device import get_engine
from .engine import Engine


class WgpuBackend(Backend):
    """Semiring GEMM, packed boolean products and bitsliced VSA as WGSL compute shaders."""

    name = "wgpu"
    gemm_dtypes = frozenset({"float32", "int32", "bool", "uint32", "uint64"})
    #: the GEMM dtypes a flushing adapter still runs exactly whatever the data (not float)
    _not_float = frozenset(d for d in gemm_dtypes if np.dtype(d).kind != "f")
    user_dtypes = gemm.USER_DTYPES

    def __init__(self, engine: Engine | None = None):
        self.engine = engine or get_engine()

    def asnative(self, x, name: str = "array"):
        """numpy, or a resident :class:`WgpuArray` unchanged (the kernels bind its buffer)."""
        if type(x) is np.ndarray or isinstance(x, WgpuArray):
            return x
        return _arrays.to_numpy(x, name)

    def _contig(self, x):
        """As :meth:`Backend._contig` (a WgpuArray is always C-contiguous), without the generic
        array-kind look-up: the planes of every VSA call pass here."""
        if isinstance(x, WgpuArray):
            return x
        return np.ascontiguousarray(x)

    def _resident(self, x):
        """A :class:`WgpuArray` copy of ``x`` (validated once: NaN/inf and integer range recorded).
        Results of operations on it still come back as numpy arrays."""
        if isinstance(x, WgpuArray):
            return x
        return WgpuArray.from_numpy(_arrays.to_numpy(x), self.engine)

    @property
    def flushes_subnormals(self) -> bool:
        """True when the adapter flushes subnormal floats to zero (found by the known-answer check
        when it was opened); float calls that could meet subnormals then raise, see :mod:`.flush`."""
        return bool(self.engine.flushes_subnormals)

    def describe(self) -> dict:
        rt = self.engine.rt
        i = rt.info
        chk = self.engine.selfcheck
        return {"name": self.name, "runtime": rt.name, "device": i.name, "vendor": i.vendor,
                "backend": i.backend, "adapter_type": i.adapter_type, "software": i.software,
                "flushes_subnormals": self.flushes_subnormals,
                "self_check": dict(chk.cases) if chk is not None else None,
                "max_storage_binding": rt.limits.max_storage_binding,
                "features": sorted(rt.features)}

    def _flush_rule(self, op: str, sr: Semiring, dt, known: dict):
        """``flush.reason`` for operands with these facts ({name: Facts}), on this adapter."""
        if not self.flushes_subnormals:
            return None
        i = self.engine.rt.info
        return flush.reason(op, sr, np.dtype(dt), known, f"{i.name} ({i.backend})")

    def inexact_reason(self, sr: str | Semiring, dtype=None, operands: dict | None = None,
                       op: str = "matmul") -> str | None:
        """Why ``op`` with these operands ({"a": ..., "b": ..., "c": ...}; arrays, WgpuArrays or
        None) may not be exact here (an adapter that flushes subnormals), or None. ``dtype``
        defaults to a's. "auto" routing asks this before sending a call here."""
        if not self.flushes_subnormals:
            return None
        ops = {k: self.asnative(v, k) for k, v in (operands or {}).items() if v is not None}
        if not ops:
            return None
        dtype = next(iter(ops.values())).dtype if dtype is None else dtype
        got = self._flush_rule(op, get_semiring(sr), dtype, {k: facts.of(v) for k, v in ops.items()})
        return None if got is None else got[1]

    @property
    def exact_dtypes(self) -> frozenset[str]:
        """The GEMM dtypes whose every matmul :meth:`inexact_reason` passes without reading data:
        all of them on an adapter that keeps subnormals, the non-float ones on one that flushes
        (:func:`.flush.reason` judges float dtypes only). "auto" routes these by size alone."""
        return self._not_float if self.engine.flushes_subnormals else self.gemm_dtypes

    def _check_operands(self, op: str, sr: Semiring, dt, known: dict[str, Any]) -> None:
        if not self.flushes_subnormals:
            return
        def check():
            got = self._flush_rule(op, sr, dt, {k: v for k, v in known.items() if v is not None})
            if got is not None:
                raise got[0](got[1])
        if not batch.defer(check, *known.values()):  # in a batch: at its end if facts are pending
            check()

    def _check_semiring(self, sr: Semiring, dt: np.dtype) -> None:
        if dt_name(dt) == "float64":
            raise TypeError("matmul: the wgpu backend does not support float64 (WGSL has no f64 in "
                            "core); use float32, or backend='cpu'/'cuda' for float64")
        super()._check_semiring(sr, dt)
        if not gemm.supports(sr):
            raise TypeError(f"matmul: semiring {sr.name!r} has no WGSL expressions (wgsl_add, "
                            "wgsl_mul); give them to run it on the wgpu backend")

    def _user_dtype_reason(self, dt: np.dtype) -> str:
        return gemm.user_dtype_reason(dt)

    # ------------------------------------------------------------------ recorded fast path
    def matmul(self, a, b, semiring="max_plus", *, c=None, out=None, return_argmax=False):
        """See :func:`pytropical_gpu.matmul` (inside a batch, resident operands take
        :mod:`.fastgemm`'s plans over :mod:`.fastpath`'s records)."""
        r = fastgemm.matmul(self, a, b, semiring, c, out, return_argmax)
        return super().matmul(a, b, semiring, c=c, out=out, return_argmax=return_argmax) \
            if r is None else r

    def bind(self, a, b):
        r = fastpath.bind(self, a, b)
        return super().bind(a, b) if r is None else r

    unbind = bind

    # ------------------------------------------------------------------ GEMM
    def _gemm(self, a, b, sr: Semiring, c, argmax, facts):
        if sr.builtin and sr.add_op in ("lor", "lxor"):
            why = "boolean semirings pack on the host"
            return self._gemm_bool(host(a, why), host(b, why), sr, host(c, why)), None
        with self.engine.lock:
            if a.dtype == np.uint64:
                a, b, c = host(a, "uint64"), host(b, "uint64"), host(c, "uint64")
                return gemm.gemm_u64(self.engine, a, b, sr, c), None
            return gemm.gemm(self.engine, a, b, sr, c, argmax, facts)

    # ------------------------------------------------------------------ packed boolean
    def _pack(self, bits):
        with self.engine.lock:
            return boolean.pack(self.engine, bits)

    def _andor(self, aw, bw):
        with self.engine.lock:
            return boolean.andor(self.engine, aw, bw, xor=False)

    def _xorand(self, aw, bw):
        with self.engine.lock:
            return boolean.andor(self.engine, aw, bw, xor=True)

    # ------------------------------------------------------------------ ternary VSA
    def _bind(self, ap, an, bp, bn):
        with self.engine.lock:
            return vsa.bind(self.engine, ap, an, bp, bn)

    def _bundle(self, p, n, threshold):
        with self.engine.lock:
            return vsa.bundle(self.engine, p, n, threshold)

    def _dot(self, ap, an, bp, bn):
        with self.engine.lock:
            return vsa.dot(self.engine, ap, an, bp, bn)

    def _nnz(self, p, n):
        # popcount(pos | neg) per row on the GPU; rows of 2^26 words or more (a count that might
        # not fit the kernel's u32/i32 bound) stay on the host
        if p.shape[1] == 0 or not vsa.exact_words(p.shape[1]):
            return super()._nnz(p, n)
        with self.engine.lock:
            return vsa.nnz(self.engine, p, n)

    def _search(self, qp, qn, mp, mn, k):
        """Fused dot + top-k on the GPU (only (Q, k) pairs come back) for k <= ``vsa.TOPK_MAX``;
        a larger k, or rows too long for an exact i32 per-row dot, take the host path: every
        (Q, M) score is read back and numpy's stable argsort picks the k best."""
        w, m = qp.shape[1], mp.shape[0]
        if k > vsa.TOPK_MAX or w == 0 or not vsa.exact_words(w) or m >= 0xFFFFFFFF:
            return super()._search(qp, qn, mp, mn, k)
        with self.engine.lock:
            return vsa.search(self.engine, qp, qn, mp, mn, k)

    def _permute(self, p, n, dim, shifts):
        with self.engine.lock:
            return vsa.permute(self.engine, p, n, dim, shifts)

    def _accumulate(self, sign, mag, hp, hn):
        with self.engine.lock:
            return vsa.accumulate(self.engine, sign, mag, hp, hn)

    def _harden(self, sign, mag, threshold):
        with self.engine.lock:
            return vsa.harden(self.engine, sign, mag, threshold)
