"""Ternary VSA on dask: an item memory sharded by rows (exact top-k merge) and bundling of a
dask-batched set of vectors (exact per-element counts summed across chunks, thresholded once)."""

from __future__ import annotations

import operator
from functools import partial
from typing import Any

import numpy as np

from ..backends import get_backend
from ..ops._checks import _nonneg_int
from ..types.ternary import TernaryVec, _pack_bits, _unpack_bits, words_for
from ._common import ArraySliceDep, block_backend, chunk_backend, da, meta_like, stable_argsort, xp_of

_UNPACK_ELEMS = 1 << 24  # trits unpacked at a time when counting a chunk (16 MiB of bools)


def from_ternary(vec: TernaryVec, chunks: Any = "auto") -> TernaryVec:
    """Shard an in-memory (batched) TernaryVec by its leading dimension into dask planes.

    ``chunks``: rows per shard (an int, a tuple of sizes or ``"auto"``); the word axis stays whole.
    The planes keep their kind (numpy or cupy). No validation is repeated: ``vec`` was checked when
    it was built.
    """
    if not isinstance(vec, TernaryVec):
        raise TypeError(f"from_ternary: expected a TernaryVec, got {type(vec).__name__}")
    if not vec.batch_shape:
        raise ValueError("from_ternary: the vector must be batched (leading dimension = rows)")
    if isinstance(vec.pos, da.Array):
        raise TypeError("from_ternary: the planes are already dask arrays; use from_planes")
    spec = (chunks,) + (-1,) * (vec.pos.ndim - 1)
    pos = da.from_array(vec.pos, chunks=spec, asarray=False)
    neg = da.from_array(vec.neg, chunks=pos.chunks, asarray=False)
    return TernaryVec._trusted(pos, neg, vec.dim)


def from_planes(pos: Any, neg: Any, dim: int, *, validate: bool = True) -> TernaryVec:
    """A TernaryVec over dask planes (uint32, ``(..., ceil(dim/32))``), e.g. built on the workers.

    Shapes and dtypes are checked now; with ``validate`` each shard's trits (no bit in both planes,
    zero tail) are checked where the shard lives, when it is first computed: a ``ValueError`` then.
    Persist the memory (``dask.persist``) to check once.
    """
    pos, neg = da.asanyarray(pos), da.asanyarray(neg)
    if pos.dtype != np.uint32 or neg.dtype != np.uint32:
        raise TypeError(f"from_planes: planes must be uint32, got {pos.dtype} and {neg.dtype}")
    dim = _nonneg_int(dim, "from_planes", "dim")
    if pos.shape != neg.shape or pos.ndim < 1 or pos.shape[-1] != words_for(dim):
        raise ValueError(f"from_planes: planes of shapes {pos.shape} and {neg.shape} do not hold "
                         f"dim {dim} ({words_for(dim)} words)")
    pos = pos.rechunk(pos.chunks[:-1] + ((pos.shape[-1],),))
    neg = neg.rechunk(pos.chunks)
    if validate:
        pos = da.map_blocks(_checked, pos, neg, dim=dim, dtype=np.uint32, meta=pos._meta)
    return TernaryVec._trusted(pos, neg, dim)


def _checked(p, n, *, dim):
    TernaryVec(p, n, dim)  # the core's own validation, on the worker's copy
    return p


def _dask_vec(v: Any, where: str, name: str) -> TernaryVec:
    if not isinstance(v, TernaryVec) or not isinstance(v.pos, da.Array):
        raise TypeError(f"{where}: {name} must be a TernaryVec with dask planes "
                        f"(pytropical_gpu.dask.from_ternary / from_planes), got {v!r}")
    return v


def search(query: TernaryVec, memory: TernaryVec, k: int = 1, *, backend: str | None = None,
           split_every: int | None = None) -> tuple[Any, Any]:
    """Item-memory cleanup over a row-sharded memory: lazy (indices, scores) dask arrays.

    Every shard runs :func:`pytropical_gpu.search` for its own top ``min(k, rows)`` on the shard's
    backend; the candidates are merged by a tree reduction keeping the k best by score (descending),
    ties to the smaller global row index, the library's rule, so the result equals one ``search``
    over the whole memory.

    Parameters
    ----------
    query : TernaryVec
        In-memory (numpy or cupy planes), one vector or a batch.
    memory : TernaryVec
        Dask planes (rows, words), sharded by rows.
    k : int
        1 <= k <= rows.
    backend : "cpu" | "wgpu" | "cuda" | None
        Backend of every shard; None: from each shard's own chunk type (numpy: cpu, cupy: cuda).

    Shapes:
        query (*Q, W) -> indices, scores (*Q, k) int64.
    """
    if not isinstance(query, TernaryVec) or isinstance(query.pos, da.Array):
        raise TypeError(f"search: query must be an in-memory TernaryVec, got {query!r}")
    _dask_vec(memory, "search", "memory")
    if query.dim != memory.dim:
        raise ValueError(f"search: dimension mismatch ({query.dim} != {memory.dim})")
    if memory.pos.ndim != 2:
        raise ValueError(f"search: memory must be a batch of vectors (rows, words), got batch shape "
                         f"{memory.batch_shape}")
    k = operator.index(k)
    rows = memory.batch_shape[0]
    if not 1 <= k <= rows:
        raise ValueError(f"search: k={k} must be between 1 and the {rows} rows of memory")
    name = block_backend(backend)
    whole = ((memory.words,),)
    mp = memory.pos.rechunk(memory.pos.chunks[:1] + whole)
    mn = memory.neg.rechunk(mp.chunks)
    # Each shard learns its global rows from the graph itself (a slice, no task: an arange over the
    # rows was a rows-long array per shard, made on one worker and shipped to the shard's); the word
    # axis is one block, handed over as a list of one (concatenating it would copy the shard).
    cand = da.blockwise(partial(_shard, query=query, k=k, backend=name), (0,), mp, (0, 1), mn, (0, 1),
                        ArraySliceDep(mp.chunks[:1]), (0,), concatenate=False, align_arrays=False,
                        dtype=np.int64, meta=meta_like(mp, 1, np.int64))
    best = da.reduction(cand, _identity, partial(_best, k=k), combine=partial(_best, k=k), axis=0,
                        keepdims=False, dtype=np.int64, concatenate=False, split_every=split_every,
                        meta=meta_like(mp, 0, np.int64))
    shape = query.batch_shape + (k,)
    chunks = tuple((s,) for s in shape)
    out = []
    for j in (0, 1):
        out.append(best.map_blocks(_take, j, shape, chunks=chunks, new_axis=list(range(len(shape))),
                                   dtype=np.int64, meta=meta_like(mp, len(shape), np.int64)))
    return out[0], out[1]


def _shard(p, n, where, *, query: TernaryVec, k: int, backend: str | None):
    """One shard's top-k as one int64 (2, Q, k') array: global indices, scores."""
    (p,), (n,), (rows_at,) = p, n, where
    xp = xp_of(p)
    q = int(np.prod(query.batch_shape, dtype=np.int64))  # 1 for one vector
    rows = p.shape[0]
    if rows == 0:
        return xp.zeros((2, q, 0), np.int64)
    kk = min(k, rows)
    be = get_backend(chunk_backend(backend, p))
    idx, sc = be.search(query, TernaryVec._trusted(p, n, query.dim), kk)
    idx = xp.asarray(idx).reshape(q, kk) + rows_at.start
    return xp.stack([idx, xp.asarray(sc).reshape(q, kk)])


def _identity(x, axis=None, keepdims=None):
    return x


def _best(parts, axis=None, keepdims=None, *, k: int):
    """The k best of the candidate lists: score descending, then global index ascending."""
    parts = parts if isinstance(parts, list) else [parts]
    xp = xp_of(parts[0])
    cand = xp.concatenate(parts, axis=2)
    idx, sc = cand[0], cand[1]
    o = stable_argsort(xp, idx)  # indices are distinct: sort by index, then stably by score
    idx, sc = xp.take_along_axis(idx, o, axis=-1), xp.take_along_axis(sc, o, axis=-1)
    o = stable_argsort(xp, -sc)[:, :k]
    return xp.stack([xp.take_along_axis(idx, o, axis=-1), xp.take_along_axis(sc, o, axis=-1)])


def _take(best, j, shape):
    return best[j].reshape(shape)


def bundle(vs: TernaryVec, threshold: int = 1, *, split_every: int | None = None) -> TernaryVec:
    """Exact majority of a dask-batched set of vectors (leading dimension = the vectors).

    A per-chunk ``bundle`` then a bundle of the results would threshold twice; instead each chunk
    gives its exact per-element sums Σ v (int32 counts), dask sums them across chunks (a tree
    reduction), and the threshold is applied once: ``sign(s)`` where ``|s| >= threshold``, else 0 — equal to
    one :func:`pytropical_gpu.bundle` call. Other axes (batch, words) keep their chunks.

    Returns a TernaryVec with dask planes of shape ``batch_shape[1:] + (words,)``.
    """
    _dask_vec(vs, "bundle", "vs")
    if vs.pos.ndim < 2:
        raise ValueError("bundle: the vectors must be batched (leading dim = vectors)")
    t = max(_nonneg_int(threshold, "bundle", "threshold"), 1)
    nvec = vs.batch_shape[0]
    cdt = np.int32 if nvec < 2**31 else np.int64
    p = vs.pos
    n = vs.neg.rechunk(p.chunks)
    count_chunks = ((1,) * p.numblocks[0],) + p.chunks[1:-1] + (tuple(32 * w for w in p.chunks[-1]),)
    counts = da.map_blocks(_counts, p, n, dtype=cdt, chunks=count_chunks, cdt=cdt,
                           meta=meta_like(p, p.ndim, cdt))
    s = counts.sum(axis=0, dtype=cdt, split_every=split_every)
    planes = [s.map_blocks(_threshold, t, sign, dtype=np.uint32, chunks=p.chunks[1:],
                           meta=meta_like(p, p.ndim - 1, np.uint32)) for sign in (1, -1)]
    return TernaryVec._trusted(planes[0], planes[1], vs.dim)


def _counts(p, n, *, cdt):
    """Σ over this chunk's vectors of +1/-1 per trit position (32 per word, tail positions 0)."""
    xp = xp_of(p)
    rest, w = p.shape[1:-1], p.shape[-1]
    out = xp.zeros(rest + (32 * w,), cdt)
    step = max(1, _UNPACK_ELEMS // max(1, int(np.prod(rest + (32 * w,), dtype=np.int64))))
    for r0 in range(0, p.shape[0], step):
        out += _unpack_bits(p[r0:r0 + step], 32 * w, xp).sum(axis=0, dtype=cdt)
        out -= _unpack_bits(n[r0:r0 + step], 32 * w, xp).sum(axis=0, dtype=cdt)
    return out[None]


def _threshold(s, t, sign):
    xp = xp_of(s)
    return _pack_bits(s >= t if sign > 0 else s <= -t, xp)
