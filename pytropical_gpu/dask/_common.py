"""Shared pieces of the dask layer: importing dask with a clear message, picking the block backend
from a dask array's meta, and the semiring's ⊕ / strict-improvement test on the chunk's array module
(numpy or cupy), so the tree reduction runs wherever the chunks live."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _arrays, routing, zero_order
from ..semirings import Semiring
from ..semirings import strictly_better as better  # the argmax rule, on the chunk's module

try:
    import dask.array as da
    from dask.layers import ArraySliceDep  # a block's slice of the whole array: a graph input, no task
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError("pytropical_gpu.dask needs dask: pip install 'pytropical_gpu[dask]' "
                      "(and dask-cuda for GPU clusters)") from e

_ADD = {"min": "minimum", "max": "maximum", "plus": "add", "lor": "logical_or",
        "lxor": "logical_xor", "bor": "bitwise_or", "bxor": "bitwise_xor"}


#: the block backend: ``backend`` checked now (None: each block runs where its chunk lives)
block_backend = routing.check_name
#: the backend one block runs on (see :func:`pytropical_gpu.routing.for_chunk`)
chunk_backend = routing.for_chunk


def meta_like(x: Any, ndim: int, dtype: Any) -> Any:
    """An empty array of ``x``'s chunk type (numpy or cupy) with ``ndim`` and ``dtype``."""
    return da.utils.meta_from_array(getattr(x, "_meta", x), ndim=ndim, dtype=dtype)


def xp_of(x: Any):
    return _arrays.xp_of(x)


def adder(sr: Semiring, xp: Any):
    """⊕ as a function of two arrays of module ``xp`` (a user semiring's numpy ufunc dispatches to
    cupy through ``__array_ufunc__``); a built-in min / max orders a float's zeros, -0 < +0."""
    if sr.builtin and sr.add_op in ("min", "max"):  # zeros ordered, as every backend's result
        return zero_order.combine(xp, sr.add_op)
    if sr.builtin and sr.add_op in _ADD:
        return getattr(xp, _ADD[sr.add_op])
    return sr.add


def stable_argsort(xp: Any, x: Any) -> Any:
    """Stable argsort along the last axis (CuPy's sort is always stable and takes no ``kind``)."""
    if xp is np:
        return np.argsort(x, axis=-1, kind="stable")
    return xp.argsort(x, axis=-1)


__all__ = ["da", "ArraySliceDep",
           "block_backend", "chunk_backend", "meta_like", "xp_of", "adder", "better", "stable_argsort"]
