"""Bit planes in the shapes the kernels take, and results back as the caller's array kind."""

from __future__ import annotations

import math
from typing import Any

from .. import _arrays
from ..types import TernaryVec


def rows(shape: tuple) -> int:
    return math.prod(shape)


def flat(be: Any, v: TernaryVec) -> tuple[Any, Any]:
    """``v``'s planes as (rows, words) native arrays (not -1: dim 0 has 0 words). A 2-d plane is
    that shape already (its last axis is the words) and is not reshaped: a search's memory is 2-d
    on every call, and a reshape is a new view object each time (a few µs on CuPy). A backend's
    ``_flat2d`` returns planes needing no conversion as they are (cuda: C-contiguous 2-d cupy)."""
    fast = be._flat2d(v)
    if fast is not None:
        return fast
    p, n = be.asnative(v.pos), be.asnative(v.neg)
    if p.ndim != 2 or n.ndim != 2:
        shape = (rows(v.batch_shape), v.words)
        p, n = p.reshape(shape), n.reshape(shape)
    return be._contig(p), be._contig(n)


def planes2d(be: Any, v: TernaryVec, shape: tuple) -> tuple[Any, Any]:
    """``v``'s planes broadcast to batch ``shape``, as (rows, words) native arrays."""
    w = v.words
    out = []
    for plane in (v.pos, v.neg):
        x = be.asnative(plane)
        if tuple(x.shape[:-1]) != tuple(shape):
            x = be.xp.broadcast_to(be._host(x, "broadcasting a resident operand"),
                                   tuple(shape) + (w,))
        out.append(be._contig(x).reshape(rows(shape), w))
    return out[0], out[1]


def tv_out(p: Any, n: Any, shape: tuple, dim: int, *srcs: Any) -> TernaryVec:
    """A TernaryVec of the kernels' planes, in the array kind of the sources (finish)."""
    kind = _arrays.kind_of(*[s.pos if isinstance(s, TernaryVec) else s.sign for s in srcs])
    shape = tuple(shape) + ((dim + 31) // 32,)
    return TernaryVec._trusted(_arrays.to_kind(p.reshape(shape), kind),
                               _arrays.to_kind(n.reshape(shape), kind), dim)


__all__ = ["flat", "planes2d", "rows", "tv_out"]
