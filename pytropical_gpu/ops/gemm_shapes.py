"""numpy's ``matmul`` shape rules, mapped onto the kernels' single batch axis.

A 1-D ``a`` is promoted to (1, k) and a 1-D ``b`` to (k, 1), and the added axis is removed from the
result; any number of leading batch dimensions broadcast as in numpy; ``c`` broadcasts against the
result. The kernels see ``a (Ba, m, k)``, ``b (Bb, k, n)``, ``c (Bc, m, n)`` with each leading size
1 or B: an operand whose batch shape is the full broadcast shape is reshaped (a view when its memory
allows), one with no batch (or all ones) keeps a size-1 axis, and only a partly broadcast operand
(say (3, 1, m, k) against (1, 4, k, n)) is materialised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class GemmShapes:
    """What :func:`plan` learned: the kernel operands and how to shape the result back."""

    a3: Any
    b3: Any
    c3: Any
    batch: int  # B = prod(batch_shape)
    m: int
    k: int
    n: int
    full: tuple[int, ...]  # batch_shape + (m, n)
    result: tuple[int, ...]  # numpy's result shape (promoted axes removed)


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(map(int, x.shape))


def _to3(x: Any, bshape: tuple[int, ...], full_batch: tuple[int, ...], rows: int, cols: int,
         xp: Any) -> Any:
    """``x`` (with batch shape ``bshape``) as (1 or B, rows, cols) for the kernels."""
    if x.ndim == 3 and (x.shape[0] == 1 or tuple(bshape) == tuple(full_batch)):
        return x  # the common case: untouched (a resident WgpuArray stays resident)
    if math.prod(bshape) == 1:
        y = x.reshape((1, rows, cols))
    elif tuple(bshape) == tuple(full_batch):
        y = x.reshape((math.prod(bshape), rows, cols))
    else:
        y = xp.broadcast_to(x, tuple(full_batch) + (rows, cols)).reshape(
            (math.prod(full_batch), rows, cols))
    return y


def plan(A: Any, B: Any, C: Any, xp: Any) -> GemmShapes:
    """Check and normalise matmul operands (native arrays) under numpy's rules.

    Raises ValueError naming both shapes when k differs or batch dimensions do not broadcast, and
    naming ``c`` when it does not broadcast to the result.
    """
    sa, sb = _shape(A), _shape(B)
    if A.ndim == 0 or B.ndim == 0:
        raise ValueError(f"matmul: a and b must be at least 1-D (numpy's matmul has no scalar "
                         f"operands); got shapes {sa} and {sb}")
    a_vec, b_vec = A.ndim == 1, B.ndim == 1
    if a_vec:
        A = A.reshape((1, sa[0]))
    if b_vec:
        B = B.reshape((sb[0], 1))
    m, k = _shape(A)[-2:]
    k2, n = _shape(B)[-2:]
    if k != k2:
        raise ValueError(f"matmul: shapes {sa} and {sb} are not aligned ({k} != {k2})")
    ba, bb = _shape(A)[:-2], _shape(B)[:-2]
    try:
        batch_shape = _bcast(ba, bb)
    except ValueError:
        raise ValueError(f"matmul: batch dimensions of shapes {sa} and {sb} do not broadcast "
                         f"({ba} vs {bb})") from None
    full = batch_shape + (m, n)
    if C is not None:
        sc = _shape(C)
        cfull = _c_full_shape(sc, a_vec, b_vec)
        try:
            full2 = _bcast(full, cfull)
        except ValueError:
            full2 = None
        if full2 is None or full2[-2:] != (m, n):
            raise ValueError(f"matmul: c has shape {sc}, which does not broadcast to the result "
                             f"shape {_drop(full, a_vec, b_vec)}")
        full = full2
        batch_shape = full[:-2]
        C = C.reshape(cfull)
    batch = math.prod(batch_shape)
    a3 = _to3(A, ba, batch_shape, m, k, xp)
    b3 = _to3(B, bb, batch_shape, k, n, xp)
    c3 = None
    if C is not None:
        cb, cmn = _shape(C)[:-2], _shape(C)[-2:]
        if cmn != (m, n):
            C = xp.broadcast_to(C, tuple(cb) + (m, n))
        c3 = _to3(C, cb, batch_shape, m, n, xp)
    return GemmShapes(a3, b3, c3, batch, m, k, n, full, _drop(full, a_vec, b_vec))


def _bcast(x: tuple, y: tuple) -> tuple:
    """``np.broadcast_shapes(x, y)`` as a tuple, without numpy for the common equal shapes."""
    if x == y:
        return tuple(x)
    return tuple(np.broadcast_shapes(x, y))


def _c_full_shape(sc: tuple[int, ...], a_vec: bool, b_vec: bool) -> tuple[int, ...]:
    """``c``'s shape with the axes a 1-D ``a``/``b`` removed from the result put back (size 1)."""
    s = list(sc)
    if b_vec:
        s.append(1)
    if a_vec:  # the m axis goes just before the n axis (the last one by now)
        s.insert(max(len(s) - 1, 0), 1)
    while len(s) < 2:
        s.insert(0, 1)
    return tuple(s)


def _drop(full: tuple[int, ...], a_vec: bool, b_vec: bool) -> tuple[int, ...]:
    s = list(full)
    if b_vec:
        s.pop(-1)
    if a_vec:
        s.pop(-2 if not b_vec else -1)
    return tuple(s)


def work_size(a: Any, b: Any) -> int:
    """batch * m * k * n under numpy's matmul rules (0 where the shapes are invalid: the backend
    then raises with the real message)."""
    sa = tuple(getattr(a, "shape", np.shape(a)))
    sb = tuple(getattr(b, "shape", np.shape(b)))
    if not sa or not sb:
        return 0
    m, k = (1, sa[0]) if len(sa) == 1 else sa[-2:]
    n = 1 if len(sb) == 1 else sb[-1]
    try:
        batch = math.prod(_bcast(tuple(sa[:-2]), tuple(sb[:-2])))
    except ValueError:
        return 0
    return batch * int(m) * int(k) * int(n)


def dtype_name(x: Any) -> str:
    """numpy's name of an operand's dtype (numpy, cupy, torch, resident, or a list)."""
    dt = getattr(x, "dtype", None)
    if dt is None:
        return np.asarray(x).dtype.name
    return str(dt).removeprefix("torch.")
