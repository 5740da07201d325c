"""Packed boolean products: pack (``_pack``) and the OR-of-ANDs product (``_andor``) on ``be``.

Bool operands of :func:`andor_matmul` are packed where the product runs and the words stay there
(native arrays): no handle is made and nothing goes back to the caller's array kind in between.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _arrays
from ..types import PackedCols, PackedRows


def pack_rows(be: Any, a: Any) -> PackedRows:
    """Pack a bool (m, k) matrix along k, 32 per uint32 word; see :class:`PackedRows`."""
    A = _bool2d(be, a, "pack_rows")
    return PackedRows._trusted(_arrays.to_kind(_pack(be, A), _arrays.kind_of(a)), A.shape[1])


def pack_cols(be: Any, b: Any) -> PackedCols:
    """Pack a bool (k, n) matrix along k (column-wise); see :class:`PackedCols`."""
    B = _bool2d(be, b, "pack_cols")
    return PackedCols._trusted(_arrays.to_kind(_pack_t(be, B), _arrays.kind_of(b)), B.shape[0])


def andor_matmul(be: Any, a: Any, b: Any) -> Any:
    """Boolean product (OR of ANDs) of bool arrays or packed handles; returns bool (m, n)."""
    if isinstance(a, PackedCols) or isinstance(b, PackedRows):
        raise TypeError(f"andor_matmul: a must be a bool array or PackedRows (pack_rows) and b a "
                        f"bool array or PackedCols (pack_cols); got {type(a).__name__} and "
                        f"{type(b).__name__} (swapped?)")
    kind = _arrays.kind_of(getattr(a, "words", a), getattr(b, "words", b))
    if isinstance(a, PackedRows):
        aw, (m, ka) = be.asnative(a.words), a.shape
    else:
        A = _bool2d(be, a, "pack_rows")
        (m, ka), aw = A.shape, None
    if isinstance(b, PackedCols):
        bw, (kb, n) = be.asnative(b.words), b.shape
    else:
        B = _bool2d(be, b, "pack_cols")
        (kb, n), bw = B.shape, None
    if ka != kb:
        raise ValueError(f"andor_matmul: shapes {(m, ka)} and {(kb, n)} are not aligned "
                         f"({ka} != {kb})")
    if m == 0 or n == 0 or ka == 0:
        return _arrays.to_kind(be.xp.zeros((m, n), np.bool_), kind)
    aw = _pack(be, A) if aw is None else aw
    bw = _pack_t(be, B) if bw is None else bw
    return _arrays.to_kind(be._andor(be._contig(aw), be._contig(bw)), kind)


def _pack(be: Any, bits: Any) -> Any:
    """Native words of native bool ``bits`` (r, k)."""
    r, k = bits.shape
    if r == 0 or k == 0:
        return be.xp.zeros((r, (k + 31) // 32), np.uint32)
    return be._pack(be._contig(bits))


def _pack_t(be: Any, bits: Any) -> Any:
    """Native words of the columns of native bool ``bits`` (k, n) (a transpose on the device)."""
    bits = be._host(bits, "pack_cols transposes")
    return _pack(be, be.xp.ascontiguousarray(bits.T))


def _bool2d(be: Any, x: Any, where: str) -> Any:
    X = be.asnative(x, where)
    if X.ndim != 2:
        raise ValueError(f"{where}: expected a 2-D bool array, got shape {tuple(X.shape)}")
    if X.dtype != np.bool_:
        raise TypeError(f"{where}: expected dtype bool, got {X.dtype.name}")
    return X


__all__ = ["andor_matmul", "pack_cols", "pack_rows"]
