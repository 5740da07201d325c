"""The kernel protocol every backend implements, and its residency hooks.

Every backend subclasses :class:`Backend` and implements the kernels (the underscore methods
below). The operations that call them (validation, shapes, operand facts, the caller's array kind)
are :mod:`pytropical_gpu.ops`; a backend object gets them as methods (``be.matmul``) from
:class:`~pytropical_gpu.ops.Operations`. The kernels may assume everything the contract promises.

Kernel contract (``N``-prefixed shapes are native arrays, C-contiguous):

``_gemm(a, b, sr, c, argmax, facts) -> (d, idx)``
    a (Ba, m, k), b (Bb, k, n), Ba, Bb in {1, B}; c (Bc, m, n) or None with Bc in {1, B};
    m, n, k >= 1; dtype equal and accepted by ``sr`` and by this backend; no NaN. ``facts`` maps
    "a", "b", "c" to the operands' :class:`~pytropical_gpu.facts.Facts` (None for an absent c): a
    kernel asks them instead of scanning the operands again. Returns d (B, m, n) of the same dtype
    and idx (B, m, n) int32 (argmax semantics in :mod:`pytropical_gpu.semirings` and ``cpu.py``)
    or None. Boolean semirings (``lor_land``/``lxor_land``) arrive here as bool arrays.
``_pack(bits) -> words``: bits (r, k) bool -> (r, ceil(k/32)) uint32, LSB first, zero tail.
``_andor(aw, bw) / _xorand(aw, bw) -> bool (m, n)``: aw (m, W), bw (n, W) uint32 packed along k;
    OR over words of (a & b) != 0, resp. parity of popcount(a & b).
``_bind(ap, an, bp, bn) -> (p, n)``: all (N, W) uint32.
``_bundle(p, n, threshold) -> (p, n)``: (V, R) uint32 planes of V vectors -> (R,), exact per element.
``_dot(ap, an, bp, bn) -> int64 (Q, M)``: a (Q, W), b (M, W).
``_nnz(p, n) -> int64 (N,)``: number of non-zero trits per row (N, W >= 1).
``_permute(p, n, dim, shifts) -> (p, n)``: (N, W); trit i moves to (i + shifts) % dim; 0 < shifts < dim.
``_accumulate(sign, mag, hp, hn) -> (sign, mag)``: sign (N, W), mag (bits, N, W), h (N, W).
``_harden(sign, mag, threshold) -> (p, n)``: threshold >= 1.
``_topk(scores, k) -> (idx int64 (Q, k), vals int64 (Q, k))``: descending, ties to the smaller index.
``_check_semiring(sr, dt)`` / ``_check_operands(op, sr, dt, facts)``: raise when this backend
    cannot run ``sr`` on ``dt`` / these operands exactly (before any upload or launch).
``_search(qp, qn, mp, mn, k) -> (idx, vals)``: q (Q, W), m (M, W), 1 <= k <= M; the k best rows of
    ``_dot`` per query as ``_topk`` gives them (the default is exactly ``_topk(_dot(...), k)``; a
    backend may fuse the two so the (Q, M) scores never leave the device).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _arrays
from .._checks import dt_name
from ..ops import Operations
from ..ops._checks import recheck_handle
from ..semirings import Semiring
from ..types import PackedCols, PackedRows, SoftTernaryVec, TernaryVec

#: the cast named when a backend lacks a dtype that numpy gives by default
_CASTS = {"int64": "int32", "float64": "float32"}


class Backend(Operations):
    """Base class: the kernel protocol, residency hooks and default kernels."""

    name: str = "base"
    #: dtypes this backend can run GEMM on (subset of the semiring's).
    gemm_dtypes: frozenset[str] = frozenset(
        {"float32", "float64", "int32", "int64", "bool", "uint32", "uint64"})
    #: dtypes a user-defined Semiring runs on here (GPU kernels have no bool element type: the
    #: builtin lor_land/lxor_land run as packed bits, a user's bool ops cannot).
    user_dtypes: frozenset[str] = frozenset(
        {"float32", "float64", "int32", "int64", "uint32", "uint64"})

    # ---------------------------------------------------------------- array kinds
    @property
    def xp(self):
        return np

    def asnative(self, x: Any, name: str = "array") -> Any:
        """The caller's array as this backend's native kind (numpy here)."""
        return _arrays.to_numpy(x, name)

    def _flat2d(self, v: Any) -> tuple[Any, Any] | None:
        """``v``'s planes as they are where nothing needs converting (see ``ops._planes.flat``);
        None here: the general path."""
        return None

    def _contig(self, x: Any) -> Any:
        """C-contiguous native array; a resident WgpuArray (always contiguous) passes untouched."""
        if _arrays.is_wgpu(x):
            return x
        return self.xp.ascontiguousarray(x)

    def _host(self, x: Any, why: str = "") -> Any:
        """``x``, or a host copy of a resident WgpuArray for work that cannot run on it in place
        (logged at INFO: it is the slow path)."""
        if _arrays.is_wgpu(x):
            from .wgpu.array import host

            return host(x, why)
        return x

    def describe(self) -> dict:
        """A dict of facts about this backend (device name, ...) for ``info``."""
        return {"name": self.name}

    # ---------------------------------------------------------------- residency
    def _resident(self, x: Any) -> Any:
        """One array kept where this backend's kernels read it (numpy here)."""
        return self.asnative(x)

    def to_device(self, x: Any) -> Any:
        """Keep ``x`` (an array, a TernaryVec, a PackedRows/PackedCols handle) on this backend's
        device across calls: cupy arrays on cuda, :class:`WgpuArray` on wgpu, numpy on cpu. Values
        are validated here (TernaryVec planes and packed words again: they may have been changed in
        place since they were made); operations on the result return numpy/cupy results as usual."""
        recheck_handle(x)
        if isinstance(x, TernaryVec):
            return TernaryVec._trusted(self._resident(x.pos), self._resident(x.neg), x.dim)
        if isinstance(x, (PackedRows, PackedCols)):
            return type(x)._trusted(self._resident(x.words), x.k)
        if isinstance(x, SoftTernaryVec):
            return x  # counters are updated in place: they stay where they are
        return self._resident(x)

    def to_host(self, x: Any) -> Any:
        """Bring ``x`` back as numpy (TernaryVec/packed handles keep their type)."""
        if isinstance(x, TernaryVec):
            return TernaryVec._trusted(_arrays.to_numpy(x.pos), _arrays.to_numpy(x.neg), x.dim)
        if isinstance(x, (PackedRows, PackedCols)):
            return type(x)._trusted(_arrays.to_numpy(x.words), x.k)
        if isinstance(x, SoftTernaryVec):
            x.sign, x.mag = _arrays.to_numpy(x.sign), _arrays.to_numpy(x.mag)
            return x
        return _arrays.to_numpy(x)

    # ---------------------------------------------------------------- what runs here
    def _check_semiring(self, sr: Semiring, dt: np.dtype) -> None:
        """Raise if this backend cannot run ``sr`` on ``dt`` (TypeError for dtypes)."""
        if dt_name(dt) not in self.gemm_dtypes:
            if dt.name in _CASTS:
                raise TypeError(f"matmul: the {self.name} backend does not support dtype {dt.name};"
                                f" cast with .astype(np.{_CASTS[dt.name]}) (values must fit) or use "
                                "backend='cpu' or 'cuda'")
            raise TypeError(f"matmul: the {self.name} backend does not support dtype {dt.name} "
                            f"(supported: {', '.join(sorted(self.gemm_dtypes))}); use backend='cpu'"
                            " or another dtype")
        if not sr.builtin and dt_name(dt) not in self.user_dtypes:
            alt = "'cpu' or 'cuda'" if dt.name in Backend.user_dtypes else "'cpu'"
            raise TypeError(f"matmul: the {self.name} backend cannot run the user-defined semiring "
                            f"{sr.name!r} on {dt.name}: {self._user_dtype_reason(dt)}; use "
                            f"backend={alt}")

    def _user_dtype_reason(self, dt: np.dtype) -> str:
        if dt.name == "bool":
            return ("its kernels have no bool element type (the builtin lor_land/lxor_land run as "
                    "packed bits)")
        return f"user-defined semirings run on {', '.join(sorted(self.user_dtypes))} here"

    def _check_operands(self, op: str, sr: Semiring, dt: np.dtype, facts: dict) -> None:
        """Raise if this backend cannot run ``op`` exactly on operands with these facts."""

    # ---------------------------------------------------------------- default kernels (overridable)
    def _gemm_bool(self, a, b, sr, c):
        """lor_land / lxor_land through the packed kernels (one product per batch entry)."""
        xp = self.xp
        batch = max(a.shape[0], b.shape[0], 1 if c is None else c.shape[0])
        kern = self._andor if sr.add_op == "lor" else self._xorand
        pa = [self._pack(a[i]) for i in range(a.shape[0])]
        pb = [self._pack(xp.ascontiguousarray(b[i].T)) for i in range(b.shape[0])]
        d = xp.stack([kern(pa[i % len(pa)], pb[i % len(pb)]) for i in range(batch)])
        if c is not None:
            d = (d | c) if sr.add_op == "lor" else (d ^ c)
        return d

    def _nnz(self, p, n):
        p, n = self._host(p), self._host(n)
        return self.xp.bitwise_count(p | n).sum(axis=-1, dtype=np.int64)

    def _search(self, qp, qn, mp, mn, k):
        return self._topk(self._dot(qp, qn, mp, mn), k)

    def _topk(self, scores, k):
        xp = self.xp
        order = xp.argsort(-scores, axis=-1, kind="stable")[:, :k]
        return order.astype(np.int64), xp.take_along_axis(scores, order, axis=-1)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


__all__ = ["Backend", "ceil_div"]
