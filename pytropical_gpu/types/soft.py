"""Soft ternary vectors: saturating signed counters, bit-sliced like :class:`TernaryVec`.

Data only. ``soft.accumulate`` / ``soft.harden`` are conveniences for the verbs
:func:`pytropical_gpu.accumulate` / :func:`pytropical_gpu.harden`: the package's ``__init__``
registers those verbs in :data:`VERBS`, so this module never imports anything above it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _arrays
from .._checks import batch_arg, int_arg
from .ternary import TernaryVec, _unpack_bits, words_for

#: the verbs the methods delegate to, set by ``pytropical_gpu/__init__.py``
VERBS: dict[str, Callable[..., Any]] = {}


class SoftTernaryVec:
    """Saturating signed counters s ∈ [−(2^bits−1), 2^bits−1], stored bit-sliced (bits 1 to 31).

    Parameters
    ----------
    dim : int
        Counters per vector.
    bits : int
        Magnitude bits: counters saturate at ±(2^bits − 1).
    batch : int or tuple of int, keyword-only
        Leading batch shape.

    Shapes:
        sign (*batch, W) marks negative counters (zero has sign 0); mag (bits, *batch, W) holds the
        magnitude, plane j = bit j; W = ceil(dim/32); ``to_array()``: (*batch, dim).

    Examples
    --------
    >>> s = SoftTernaryVec(5, bits=2)
    >>> h = TernaryVec.from_array(np.array([1, -1, 0, 1, 1], dtype=np.int8))
    >>> _ = s.accumulate(h, backend="cpu"); _ = s.accumulate(h, backend="cpu")
    >>> s.to_array().tolist()
    [2, -2, 0, 2, 2]
    >>> s.harden(2, backend="cpu").to_array().tolist()
    [1, -1, 0, 1, 1]
    """

    __slots__ = ("sign", "mag", "dim", "bits")

    def __init__(self, dim: int, bits: int = 3, *, batch: tuple[int, ...] | int = ()):
        # bits <= 31: the counters fit the int32 of to_array and the kernels' 32-bit arithmetic
        self.bits = int_arg(bits, "SoftTernaryVec", "bits", lo=1, hi=31)
        self.dim = int_arg(dim, "SoftTernaryVec", "dim", lo=0)
        batch = batch_arg(batch, "SoftTernaryVec")
        w = words_for(self.dim)
        self.sign = np.zeros(batch + (w,), np.uint32)
        self.mag = np.zeros((self.bits,) + batch + (w,), np.uint32)

    @property
    def words(self) -> int:
        return int(self.sign.shape[-1])

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return tuple(self.sign.shape[:-1])

    @property
    def limit(self) -> int:
        """The saturation bound 2^bits − 1."""
        return 2 ** self.bits - 1

    def __repr__(self) -> str:
        return f"SoftTernaryVec(dim={self.dim}, bits={self.bits}, batch={self.batch_shape})"

    def _store(self, sign: Any, mag: Any) -> None:
        """Write new planes in place (keeps the caller's array kind)."""
        self.sign[...] = _arrays.to_kind(sign, _arrays.kind_of(self.sign))
        self.mag[...] = _arrays.to_kind(mag, _arrays.kind_of(self.mag))

    def to_device(self) -> SoftTernaryVec:
        """Move the planes to the GPU as cupy arrays (accumulate then stays on the device)."""
        self.sign = _arrays.to_cupy(self.sign)
        self.mag = _arrays.to_cupy(self.mag)
        return self

    def to_array(self) -> Any:
        """The counters as an int32 array of shape ``batch_shape + (dim,)``."""
        xp = _arrays.xp_of(self.sign)
        s = xp.zeros(self.batch_shape + (self.dim,), np.int32)
        for j in range(self.bits):
            s += _unpack_bits(self.mag[j], self.dim, xp).astype(np.int32) << j
        neg = _unpack_bits(self.sign, self.dim, xp)
        return xp.where(neg, -s, s)

    def accumulate(self, hard: TernaryVec, *, backend: str | None = None) -> SoftTernaryVec:
        """s ← clamp(s + hard), in place; returns self. Same as ``pytropical_gpu.accumulate(self,
        hard, backend=backend)``, which does the work (a thin delegation)."""
        return VERBS["accumulate"](self, hard, backend=backend)

    def harden(self, threshold: int = 1, *, backend: str | None = None) -> TernaryVec:
        """``sign(s)`` where ``|s| >= threshold``, else 0. Same as ``pytropical_gpu.harden(self, threshold,
        backend=backend)`` (a thin delegation)."""
        return VERBS["harden"](self, threshold, backend=backend)
