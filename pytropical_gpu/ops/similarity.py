"""Similarity of ternary vectors on ``be``: exact dot, cosine and item-memory search (top-k of the
dots). The public verbs are in :mod:`pytropical_gpu.similarity`."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _arrays
from .._checks import int_arg
from ..types import TernaryVec
from ._checks import _check_tv, _same_dim
from ._planes import flat


def _dots(be: Any, a: TernaryVec, b: TernaryVec, where: str):
    """Checked operands, their flat planes and the (Q, M) int64 dots (native)."""
    _check_tv(a, where, "a"), _check_tv(b, where, "b")
    _same_dim(where, a, b)
    ap, an = flat(be, a)
    bp, bn = flat(be, b)
    if ap.shape[0] == 0 or bp.shape[0] == 0 or a.words == 0:
        d = be.xp.zeros((ap.shape[0], bp.shape[0]), np.int64)
    else:
        d = be._dot(ap, an, bp, bn)
    return (ap, an), (bp, bn), d


def dot(be: Any, a: TernaryVec, b: TernaryVec) -> Any:
    """Exact integer dot product; batched: result shape a.batch_shape + b.batch_shape."""
    _, _, r = _dots(be, a, b, "dot")
    r = r.reshape(a.batch_shape + b.batch_shape)
    if r.ndim == 0:
        return int(r)
    return _arrays.to_kind(r, _arrays.kind_of(a.pos, b.pos))


def cosine(be: Any, a: TernaryVec, b: TernaryVec) -> Any:
    """dot / sqrt(nnz(a) nnz(b)); 0.0 where either vector is all zero. The planes are read once
    for the dots and the norms; the result goes back to the caller's kind once."""
    pa, pb, d = _dots(be, a, b, "cosine")
    xp = be.xp
    na = _nnz(be, *pa).reshape(a.batch_shape).astype(np.float64)
    nb = _nnz(be, *pb).reshape(b.batch_shape).astype(np.float64)
    den = xp.sqrt(xp.multiply.outer(na, nb))
    dd = be._host(d).reshape(a.batch_shape + b.batch_shape).astype(np.float64)
    res = xp.where(den > 0, dd / xp.where(den > 0, den, 1.0), 0.0)
    if res.ndim == 0:
        return float(res)
    return _arrays.to_kind(res, _arrays.kind_of(a.pos, b.pos))


def _nnz(be: Any, p: Any, n: Any) -> Any:
    if p.shape[0] == 0 or p.shape[1] == 0:
        return be.xp.zeros(p.shape[0], np.int64)
    return be._nnz(p, n)


def search(be: Any, query: TernaryVec, memory: TernaryVec, k: int = 1) -> tuple[Any, Any]:
    """The k best rows of ``memory`` with the largest dot with ``query``: (indices, scores).

    Every call checks the query, the memory's shape and k (a resident memory's values were checked
    when it went to the device); the rest is kept short: a program searching one memory again and
    again pays this per query (issue 15: ~0.3 ms calls)."""
    _check_tv(query, "search", "query"), _check_tv(memory, "search", "memory")
    if query.dim != memory.dim:
        _same_dim("search", query, memory)
    qpos, mpos = query.pos, memory.pos
    if mpos.ndim != 2:
        raise ValueError(f"search: memory must be a batch of vectors (rows, words), got batch "
                         f"shape {memory.batch_shape}")
    if type(k) is not int:
        k = int_arg(k, "search", "k")
    rows = mpos.shape[0]
    if not 1 <= k <= rows:
        raise ValueError(f"search: k={k} must be between 1 and the {rows} rows of memory")
    qp, qn = flat(be, query)
    mp, mn = flat(be, memory)
    if qp.shape[0] == 0:
        idx = be.xp.zeros((0, k), np.int64)
        vals = be.xp.zeros((0, k), np.int64)
    elif qp.shape[1] == 0:  # dim 0: every score is 0, ties go to the smaller index
        idx, vals = be._topk(be.xp.zeros((qp.shape[0], rows), np.int64), k)
    else:
        idx, vals = be._search(qp, qn, mp, mn, k)
    shape = tuple(qpos.shape[:-1]) + (k,)
    if idx.shape != shape:  # one query or a batch of more than one axis (no view made otherwise)
        idx, vals = idx.reshape(shape), vals.reshape(shape)
    kind = _arrays.kind_of(qpos, mpos)
    return _arrays.to_kind(idx, kind), _arrays.to_kind(vals, kind)


__all__ = ["cosine", "dot", "search"]
