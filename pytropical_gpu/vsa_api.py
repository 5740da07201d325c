"""Module-level VSA verbs (torchhd's names): thin functions over the backend methods of the same
name and signature, routed by ``backend=``, ``PYTROPICAL_BACKEND`` or the default HybridContext.
Every verb raises TypeError for an operand that is not a TernaryVec."""

from __future__ import annotations

from collections.abc import Sequence

from .api import BackendArg, _ctx_backend, default_context
from .vsa import TernaryVec


def bind(a: TernaryVec, b: TernaryVec, *, backend: BackendArg = None) -> TernaryVec:
    """Elementwise product of trits (torchhd ``bind``); batch dimensions broadcast.

    Parameters
    ----------
    a, b : TernaryVec
        Same ``dim``; batch shapes that broadcast.
    backend : "cpu" | "wgpu" | "cuda" | None
        None: by size.

    Returns
    -------
    TernaryVec
        Planes of the inputs' array kind.

    Raises
    ------
    ValueError
        Dimension mismatch, batch shapes that do not broadcast.

    Shapes:
        a: (*A, dim), b: (*B, dim) -> (*broadcast(A, B), dim).

    Examples
    --------
    >>> import numpy as np
    >>> a = TernaryVec.from_array(np.array([1, -1, 0, 1], np.int8))
    >>> b = TernaryVec.from_array(np.array([-1, -1, 1, 1], np.int8))
    >>> bind(a, b, backend="cpu").to_array().tolist()
    [-1, 1, 0, 1]
    """
    return default_context().bind(a, b, backend=_ctx_backend(backend))


def unbind(a: TernaryVec, b: TernaryVec, *, backend: BackendArg = None) -> TernaryVec:
    """Inverse of :func:`bind`, which for trits is bind itself (exact on the support of ``b``).

    Parameters
    ----------
    a, b : TernaryVec
        Same ``dim``; batch shapes that broadcast.
    backend : "cpu" | "wgpu" | "cuda" | None
        None: by size.

    Returns
    -------
    TernaryVec

    Raises
    ------
    ValueError
        Dimension mismatch.

    Shapes:
        a: (*A, dim), b: (*B, dim) -> (*broadcast(A, B), dim).

    Examples
    --------
    >>> import numpy as np
    >>> a = TernaryVec.from_array(np.array([1, -1, 1], np.int8))
    >>> k = TernaryVec.from_array(np.array([-1, 1, 1], np.int8))
    >>> unbind(bind(a, k, backend="cpu"), k, backend="cpu").to_array().tolist()
    [1, -1, 1]
    """
    return default_context().unbind(a, b, backend=_ctx_backend(backend))


def bundle(*vectors: TernaryVec | Sequence[TernaryVec], threshold: int = 1,
           backend: BackendArg = None) -> TernaryVec:
    """Exact per-element majority: ``sign(Σ v)`` where ``|Σ v| >= threshold``, else 0.

    Three calling forms: several vectors ``bundle(a, b, c)`` (torchhd), one sequence
    ``bundle([a, b, c])``, or one batched TernaryVec ``bundle(batched)`` whose leading dimension
    holds the vectors (torchhd's ``multiset``). Counts are bit-sliced, exact for any number.

    Parameters
    ----------
    *vectors : TernaryVec or sequence of TernaryVec
        The vectors to bundle (same ``dim``; batch shapes broadcast).
    threshold : int, keyword-only
        Minimum ``|Σ v|`` for a non-zero trit (0 behaves as 1).
    backend : "cpu" | "wgpu" | "cuda" | None
        None: by size.

    Returns
    -------
    TernaryVec

    Raises
    ------
    ValueError
        No vectors, dimension mismatch, a single unbatched vector, a negative threshold.
    TypeError
        An argument that is not a TernaryVec (a positional threshold says it is keyword-only).

    Shapes:
        n vectors (*B, dim) -> (*B, dim); one batched (n, *B, dim) -> (*B, dim).

    Examples
    --------
    >>> import numpy as np
    >>> a = TernaryVec.from_array(np.array([1, 1, -1, 0], np.int8))
    >>> b = TernaryVec.from_array(np.array([1, -1, -1, 0], np.int8))
    >>> c = TernaryVec.from_array(np.array([1, 1, 0, 1], np.int8))
    >>> bundle(a, b, c, backend="cpu").to_array().tolist()
    [1, 1, -1, 1]
    >>> bundle([a, b, c], threshold=2, backend="cpu").to_array().tolist()
    [1, 0, -1, 0]
    """
    return default_context().bundle(*vectors, threshold=threshold, backend=_ctx_backend(backend))


def multiset(batched: TernaryVec, *, threshold: int = 1, backend: BackendArg = None) -> TernaryVec:
    """torchhd's ``multiset``: :func:`bundle` of one batched TernaryVec along its leading axis.

    Unlike torchhd's (which returns the integer sums) the result is thresholded back to trits;
    use :class:`SoftTernaryVec` to keep counts.

    Parameters
    ----------
    batched : TernaryVec
        At least one batch dimension; the leading one holds the vectors.
    threshold : int, keyword-only
        Minimum ``|Σ v|`` for a non-zero trit.
    backend : "cpu" | "wgpu" | "cuda" | None
        None: by size.

    Returns
    -------
    TernaryVec

    Raises
    ------
    ValueError
        ``batched`` has no batch dimension.
    TypeError
        ``batched`` is not a TernaryVec.

    Shapes:
        (n, *B, dim) -> (*B, dim).

    Examples
    --------
    >>> import numpy as np
    >>> x = TernaryVec.from_array(np.array([[1, -1, 0], [1, 1, 0], [-1, -1, 1]], np.int8))
    >>> multiset(x, backend="cpu").to_array().tolist()
    [1, -1, 1]
    """
    return default_context().multiset(batched, threshold=threshold, backend=_ctx_backend(backend))


def permute(a: TernaryVec, shifts: int = 1, *, backend: BackendArg = None) -> TernaryVec:
    """Cyclic shift: trit i moves to ``(i + shifts) mod dim`` (torchhd ``permute``, torch.roll).

    Parameters
    ----------
    a : TernaryVec
    shifts : int
        Any integer; negative shifts go left.
    backend : "cpu" | "wgpu" | "cuda" | None
        None: by size.

    Returns
    -------
    TernaryVec

    Raises
    ------
    TypeError
        ``a`` is not a TernaryVec or ``shifts`` not an integer.

    Shapes:
        (*B, dim) -> (*B, dim).

    Examples
    --------
    >>> import numpy as np
    >>> v = TernaryVec.from_array(np.array([1, 0, -1, 0], np.int8))
    >>> permute(v, 1, backend="cpu").to_array().tolist()
    [0, 1, 0, -1]
    """
    return default_context().permute(a, shifts, backend=_ctx_backend(backend))
