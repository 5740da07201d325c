"""Semiring GEMM on dask arrays, in dask's own idiom (``dask.array.matmul`` does the same with ``+``):
``blockwise`` multiplies every (m-block, k-block, n-block) triple with the library's ``matmul`` on
the chunk's backend, keeping the k-block axis, then ``dask.array.reduction`` folds that axis with the
semiring's ⊕ as a tree. Argmax travels as (value, global k) pairs through the same tree; ``c`` is
applied once after it."""

from __future__ import annotations

import operator
from functools import partial, reduce
from typing import Any

import numpy as np

from ..backends import get_backend
from ..semirings import Semiring, SemiringName, get_semiring
from ._common import adder, better, block_backend, chunk_backend, da, meta_like, xp_of

_SELECTIVE_ERR = "return_argmax needs a min/max-based (selective) semiring"


def matmul(a: Any, b: Any, semiring: SemiringName | Semiring = "max_plus", *, c: Any = None,
           return_argmax: bool = False, backend: str | None = None,
           split_every: int | None = None) -> Any:
    """Semiring product ``c ⊕ (a ⊗ b)`` of dask arrays, lazily (call ``.compute()``).

    Chunks may lie along m, n and k, of any sizes; ``a``'s and ``b``'s k chunks are aligned by
    dask. Each block product is :func:`pytropical_gpu.matmul` on the chunk's backend (numpy chunks:
    ``"cpu"``, cupy chunks: ``"cuda"``); the k blocks are combined by a tree reduction with ⊕. For
    every semiring except float ``plus_times`` (whose sums are re-associated) the result equals one
    ``pytropical_gpu.matmul`` call bit for bit, argmax included.

    Parameters
    ----------
    a, b : dask array or array_like
        (m, k) or (batch, m, k) and (k, n) or (batch, k, n); a batch of 1 broadcasts.
    semiring : str or Semiring
        As :func:`pytropical_gpu.matmul`.
    c : dask array or array_like, optional
        Epilogue operand, applied once after the reduction: ``c ⊕ (a ⊗ b)``.
    return_argmax : bool
        Also return the int32 global k* (smallest on ties; -1 where no term improves the zero or c).
    backend : "cpu" | "wgpu" | "cuda" | None
        Backend of every block; None: from each block's own chunk type (numpy: ``"cpu"``, cupy:
        ``"cuda"``), whatever the dask array's ``_meta`` says.
    split_every : int, optional
        Fan-in of the tree reduction (dask's default 4).

    Returns
    -------
    dask array D, or (D, argmax); chunks of the same type as the inputs'.

    Raises
    ------
    ValueError
        Shapes not aligned, non-selective semiring with argmax, bad ndim. NaN in a block raises
        ValueError when that block is computed.
    TypeError
        Mixed or unsupported dtypes.

    Shapes:
        a: (m, k) or (B, m, k); b: (k, n) or (B, k, n); result (m, n) or (B, m, n).

    >>> import numpy as np, dask.array as da
    >>> a = da.from_array(np.array([[0., 1., 5.]]), chunks=(1, 2))
    >>> b = da.from_array(np.array([[2.], [0.], [0.]]), chunks=(2, 1))
    >>> d, k = matmul(a, b, "min_plus", return_argmax=True)
    >>> d.compute(scheduler="threads"), k.compute(scheduler="threads")
    (array([[1.]]), array([[1]], dtype=int32))
    """
    sr = get_semiring(semiring)
    a, b = da.asanyarray(a), da.asanyarray(b)
    if a.ndim not in (2, 3) or b.ndim not in (2, 3):
        raise ValueError(f"matmul: a and b must be 2-D or 3-D (batch, rows, cols); got shapes "
                         f"{a.shape} and {b.shape}")
    if a.dtype != b.dtype:
        raise TypeError(f"matmul: mixed dtypes {a.dtype.name} and {b.dtype.name}; cast one operand first")
    dt = sr.check_dtype(a.dtype)
    if return_argmax and not sr.selective:
        raise ValueError(f"matmul: {_SELECTIVE_ERR}, got {sr.name!r}")
    (m, k), (k2, n) = a.shape[-2:], b.shape[-2:]
    if k != k2:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} are not aligned ({k} != {k2})")
    a3 = a if a.ndim == 3 else a[None]
    b3 = b if b.ndim == 3 else b[None]
    batch = _bcast(a3.shape[0], b3.shape[0], a.shape, b.shape)
    c3 = None
    if c is not None:
        c = da.asanyarray(c)
        if c.dtype != dt:
            raise TypeError(f"matmul: c has dtype {c.dtype.name}, a and b have {dt.name}")
        if c.ndim not in (2, 3) or c.shape[-2:] != (m, n):
            raise ValueError(f"matmul: c has shape {c.shape}, expected {(m, n)} or {(batch, m, n)}")
        c3 = c if c.ndim == 3 else c[None]
        full = _bcast(batch, c3.shape[0], (batch, m, n), c.shape)
        if full != batch:  # c alone carries the batch: the product is the same for every entry
            a3 = da.broadcast_to(a3, (full,) + a3.shape[1:], chunks=((1,) * full,) + a3.chunks[1:])
            batch = full
    name = block_backend(backend)
    kpos = da.arange(k, chunks=(a3.chunks[2],))  # global k of every column of a: gives the offsets
    pairs = da.blockwise(
        partial(_block, sr=sr, backend=name, argmax=return_argmax), (0, 1, 2, 3),
        a3, (0, 1, 2), b3, (0, 2, 3), kpos, (2,),
        adjust_chunks={2: 1}, concatenate=False, dtype=dt, meta=meta_like(a, 4, dt))
    pairs = da.reduction(
        pairs, _identity, partial(_fold, sr=sr), combine=partial(_fold, sr=sr), axis=2,
        keepdims=False, dtype=dt, concatenate=False, split_every=split_every, meta=meta_like(a, 3, dt))
    if c3 is not None:
        c3 = da.broadcast_to(c3, (batch, m, n)).rechunk(pairs.chunks)
        pairs = da.blockwise(partial(_epilogue, sr=sr), (0, 1, 2), pairs, (0, 1, 2), c3, (0, 1, 2),
                             dtype=dt, meta=meta_like(a, 3, dt))
    d = pairs.map_blocks(operator.itemgetter(0), dtype=dt, meta=meta_like(a, 3, dt))
    squeeze = a.ndim == 2 and b.ndim == 2 and (c is None or c.ndim == 2)
    if squeeze:
        d = d[0]
    if not return_argmax:
        return d
    idx = pairs.map_blocks(operator.itemgetter(1), dtype=np.int32, meta=meta_like(a, 3, np.int32))
    return d, (idx[0] if squeeze else idx)


def _bcast(x: int, y: int, sx: tuple, sy: tuple) -> int:
    if x == y or y == 1:
        return x
    if x == 1:
        return y
    raise ValueError(f"matmul: batch dimensions of shapes {tuple(sx)} and {tuple(sy)} do not "
                     f"broadcast ({x} vs {y})")


def _block(a, b, kpos, *, sr: Semiring, backend: str | None, argmax: bool):
    """One block product by the library on the block's backend: (d, global argmax or None)."""
    be = get_backend(chunk_backend(backend, a))
    if not argmax:
        return be.matmul(a, b, sr), None
    d, i = be.matmul(a, b, sr, return_argmax=True)
    off = int(kpos[0]) if kpos.shape[0] else 0
    if off:
        i = xp_of(i).where(i >= 0, i + np.int32(off), i)
    return d, i


def _identity(x, axis=None, keepdims=None):
    return x


def _fold(parts, axis=None, keepdims=None, *, sr: Semiring):
    """⊕ over a list of (d, idx) pairs (one pair: itself), the order of the list not mattering."""
    if isinstance(parts, tuple):
        return parts
    return reduce(partial(_merge, sr=sr), parts)


def _merge(x, y, *, sr: Semiring):
    (dx, ix), (dy, iy) = x, y
    xp = xp_of(dx)
    if ix is None:
        return adder(sr, xp)(dx, dy), None
    gt = better(sr, xp)
    y_wins, x_wins = gt(dy, dx), gt(dx, dy)
    tie = ~(y_wins | x_wins)  # equal values: the smaller k (both -1 where neither improved)
    take_y = y_wins | (tie & (iy < ix) & (iy >= 0))
    return xp.where(take_y, dy, dx), xp.where(take_y, iy, ix)


def _epilogue(pair, c, *, sr: Semiring):
    """``c ⊕ d`` once; argmax -1 where the product does not strictly improve on c."""
    d, idx = pair
    xp = xp_of(d)
    if idx is not None:
        idx = xp.where(better(sr, xp)(d, c), idx, np.int32(-1))
    return xp.asarray(adder(sr, xp)(c, d)).astype(d.dtype, copy=False), idx
