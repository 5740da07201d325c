"""Semiring GEMM on dask arrays, in dask's own idiom (``dask.array.matmul`` does the same with ``+``):
``blockwise`` multiplies every (m-block, k-block, n-block) triple with the library's ``matmul`` on
the chunk's backend, keeping the k-block axis, then ``dask.array.reduction`` folds that axis with the
semiring's ⊕ as a tree (one k block: the block products are the result, no reduction). Argmax
travels as (value, global k) pairs through the same tree; ``c`` is applied once after it. No task
renames an operand (a derived key lives on one worker and is shipped to every other that needs it)."""

from __future__ import annotations

import operator
from functools import partial, reduce
from typing import Any

import numpy as np

from ..backends import get_backend
from ..semirings import Semiring, SemiringName, get_semiring
from ._common import ArraySliceDep, adder, better, block_backend, chunk_backend, da, meta_like, xp_of

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
    batch = _bcast(a.shape[0] if a.ndim == 3 else 1, b.shape[0] if b.ndim == 3 else 1, a.shape, b.shape)
    if c is not None:
        c = da.asanyarray(c)
        if c.dtype != dt:
            raise TypeError(f"matmul: c has dtype {c.dtype.name}, a and b have {dt.name}")
        if c.ndim not in (2, 3) or c.shape[-2:] != (m, n):
            raise ValueError(f"matmul: c has shape {c.shape}, expected {(m, n)} or {(batch, m, n)}")
        _bcast(batch, c.shape[0] if c.ndim == 3 else 1, (batch, m, n), c.shape)
    name = block_backend(backend)
    fn = partial(_block, sr=sr, backend=name, argmax=return_argmax)
    # The operands enter the graph under their own keys (no a[None], no rechunk when the k chunks
    # agree): a derived key is computed on one worker and shipped to every other that needs it, so a
    # replicated b would cross the network again. Unequal k chunks are split to the common boundaries.
    lead = ("z",) if a.ndim == 3 or b.ndim == 3 else ()
    ia, ib = ("z",) * (a.ndim - 2) + ("i", "k"), ("z",) * (b.ndim - 2) + ("k", "j")
    chunkss, (a, b) = da.core.unify_chunks(a, ia, b, ib, warn=False)
    ndim = len(lead) + 2
    if a.numblocks[-1] == 1:  # one k block: each output block is one block product, no reduction
        prod = da.blockwise(fn, lead + ("i", "j"), a, ia, b, ib, concatenate=False, dtype=dt,
                            meta=meta_like(a, ndim, dt))
    else:  # every (m, k, n) block triple, then a tree reduction over k with ⊕
        args = [a, ia, b, ib]
        if return_argmax:  # each k block's global columns, from the graph itself (no task)
            args += [ArraySliceDep(a.chunks[-1:]), ("k",)]
        adjust = {"k": 1, **{x: chunkss[x] for x in lead}}  # a batch of 1 broadcasts
        pairs = da.blockwise(fn, lead + ("i", "k", "j"), *args, adjust_chunks=adjust, concatenate=False,
                             align_arrays=False, dtype=dt, meta=meta_like(a, ndim + 1, dt))
        prod = da.reduction(pairs, _identity, partial(_fold, sr=sr), combine=partial(_fold, sr=sr),
                            axis=len(lead) + 1, keepdims=False, dtype=dt, concatenate=False,
                            split_every=split_every, meta=meta_like(a, ndim, dt))
    if c is not None:
        if c.ndim == 3 and lead and c.shape[0] == prod.shape[0]:
            target = prod.chunks
        else:  # c's own batch chunks (the product's batch, if any, is 1 and broadcasts)
            target = c.chunks[:-2] + prod.chunks[-2:]
        c = c.rechunk(target)
        ndim = max(ndim, c.ndim)
        prod = da.blockwise(partial(_epilogue, sr=sr), ("z",) * (ndim - 2) + ("i", "j"), prod,
                            lead + ("i", "j"), c, ("z",) * (c.ndim - 2) + ("i", "j"), dtype=dt,
                            meta=meta_like(a, ndim, dt))
    if not return_argmax:
        return prod
    d = prod.map_blocks(operator.itemgetter(0), dtype=dt, meta=meta_like(a, ndim, dt))
    idx = prod.map_blocks(operator.itemgetter(1), dtype=np.int32, meta=meta_like(a, ndim, np.int32))
    return d, idx


def _bcast(x: int, y: int, sx: tuple, sy: tuple) -> int:
    if x == y or y == 1:
        return x
    if x == 1:
        return y
    raise ValueError(f"matmul: batch dimensions of shapes {tuple(sx)} and {tuple(sy)} do not "
                     f"broadcast ({x} vs {y})")


def _block(a, b, koff=None, *, sr: Semiring, backend: str | None, argmax: bool):
    """One block product by the library on the block's backend: d, or (d, global argmax)."""
    a, b = _one(a), _one(b)
    be = get_backend(chunk_backend(backend, a))
    if not argmax:
        return be.matmul(a, b, sr)
    d, i = be.matmul(a, b, sr, return_argmax=True)
    off = 0 if koff is None else koff[0].start
    if off:
        i = xp_of(i).where(i >= 0, i + np.int32(off), i)
    return d, i


def _one(x):
    """The block itself: blockwise hands a contracted index's single block as a list of one (asking
    it to concatenate instead would copy the block)."""
    return x[0] if isinstance(x, list) else x


def _identity(x, axis=None, keepdims=None):
    return x


def _fold(parts, axis=None, keepdims=None, *, sr: Semiring):
    """⊕ over a list of products or (d, idx) pairs (one alone: itself), in any order."""
    if not isinstance(parts, list):
        return parts
    return reduce(partial(_merge, sr=sr), parts)


def _merge(x, y, *, sr: Semiring):
    if not isinstance(x, tuple):
        return adder(sr, xp_of(x))(x, y)
    (dx, ix), (dy, iy) = x, y
    xp = xp_of(dx)
    gt = better(sr, xp)
    y_wins, x_wins = gt(dy, dx), gt(dx, dy)
    tie = ~(y_wins | x_wins)  # equal values: the smaller k (both -1 where neither improved)
    take_y = y_wins | (tie & (iy < ix) & (iy >= 0))
    # the value by ⊕ itself, not the winner's: equal values may be zeros of opposite signs
    return adder(sr, xp)(dx, dy), xp.where(take_y, iy, ix)


def _epilogue(prod, c, *, sr: Semiring):
    """``c ⊕ d`` once (broadcast over c's batch); argmax -1 where the product does not strictly
    improve on c."""
    d, idx = prod if isinstance(prod, tuple) else (prod, None)
    xp = xp_of(d)
    out = xp.asarray(adder(sr, xp)(c, d)).astype(d.dtype, copy=False)
    if idx is None:
        return out
    return out, xp.where(better(sr, xp)(d, c), idx, np.int32(-1))
