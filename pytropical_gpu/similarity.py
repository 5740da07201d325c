"""Similarity verbs (torchhd's ``dot_similarity`` / ``cosine_similarity`` are aliases) and item-
memory search: each asks :mod:`pytropical_gpu.routing` where to run and runs the operation of
:mod:`pytropical_gpu.ops.similarity` there. Every verb raises TypeError for an operand that is not
a TernaryVec."""

from __future__ import annotations

from typing import Any

from .api import BackendArg
from .hybrid import module_backend
from .types import TernaryVec


def dot(a: TernaryVec, b: TernaryVec, *, backend: BackendArg = None) -> Any:
    """Exact dot product of trit vectors (torchhd ``dot_similarity``; the alias exists).

    Parameters
    ----------
    a, b : TernaryVec
        Same ``dim``.
    backend : "cpu" | "wgpu" | "cuda" | None
        None: by size.

    Returns
    -------
    int or int64 array
        A Python int for two unbatched vectors, else every pair of batch entries.

    Raises
    ------
    ValueError
        Dimension mismatch.

    Shapes:
        a: (*A, dim), b: (*B, dim) -> (*A, *B) (an int when both are unbatched).

    Examples
    --------
    >>> import numpy as np
    >>> v = TernaryVec.from_array(np.array([1, -1, 0], np.int8))
    >>> dot(v, v, backend="cpu")
    2
    >>> dot_similarity(v, v, backend="cpu")
    2
    """
    return module_backend("dot", (a, b), backend).dot(a, b)


def cosine(a: TernaryVec, b: TernaryVec, *, backend: BackendArg = None) -> Any:
    """Cosine similarity ``dot / sqrt(nnz(a) nnz(b))``, 0.0 where either vector is all zero
    (torchhd ``cosine_similarity``; the alias exists).

    Parameters
    ----------
    a, b : TernaryVec
        Same ``dim``.
    backend : "cpu" | "wgpu" | "cuda" | None
        None: by size.

    Returns
    -------
    float or float64 array

    Raises
    ------
    ValueError
        Dimension mismatch.

    Shapes:
        a: (*A, dim), b: (*B, dim) -> (*A, *B) (a float when both are unbatched).

    Examples
    --------
    >>> import numpy as np
    >>> a = TernaryVec.from_array(np.array([1, 1, 0, 0], np.int8))
    >>> b = TernaryVec.from_array(np.array([1, 0, 1, 0], np.int8))
    >>> cosine(a, b, backend="cpu")
    0.5
    >>> cosine_similarity(a, b, backend="cpu")
    0.5
    """
    return module_backend("cosine", (a, b), backend).cosine(a, b)


def search(query: TernaryVec, memory: TernaryVec, k: int = 1, *,
           backend: BackendArg = None) -> tuple[Any, Any]:
    """Item-memory cleanup: the k rows of ``memory`` with the largest dot product with ``query``.

    Parameters
    ----------
    query : TernaryVec
        One vector or a batch of queries.
    memory : TernaryVec
        A batch of rows (one batch dimension).
    k : int
        How many rows, 1 <= k <= rows; best first, ties to the smaller index.
    backend : "cpu" | "wgpu" | "cuda" | None
        None: by size.

    Returns
    -------
    (indices, scores)
        int64 arrays.

    Raises
    ------
    ValueError
        Dimension mismatch, ``memory`` not one batch of rows, k out of range.

    Shapes:
        query: (*Q, dim), memory: (M, dim) -> indices, scores: (*Q, k).

    Examples
    --------
    >>> import numpy as np
    >>> mem = TernaryVec.from_array(np.array([[1, 1, 0], [-1, 0, 1], [1, 1, 1]], np.int8))
    >>> q = TernaryVec.from_array(np.array([1, 1, 1], np.int8))
    >>> idx, score = search(q, mem, k=2, backend="cpu")
    >>> idx.tolist(), score.tolist()
    ([2, 0], [3, 2])
    """
    return module_backend("search", (query, memory), backend).search(query,
                                 memory, k)


# torchhd's names (a plain comment: a '#:' one would replace the docstring in the API reference)
dot_similarity = dot
cosine_similarity = cosine
