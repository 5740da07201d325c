"""Module-level VSA verbs (torchhd's names) and the soft counters' verbs: each asks
:mod:`pytropical_gpu.routing` where to run (``backend=``, ``PYTROPICAL_BACKEND`` or the default
HybridContext) and runs the operation of :mod:`pytropical_gpu.ops.vsa` there. Every verb raises
TypeError for an operand that is not a TernaryVec. The types themselves live in
:mod:`pytropical_gpu.types` (also importable from here)."""

from __future__ import annotations

from collections.abc import Sequence

from .api import BackendArg
from .hybrid import module_backend
from .ops._checks import bundle_operands
from .types import SoftTernaryVec, TernaryVec


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
    return module_backend("bind", (a, b), backend).bind(a, b)


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
    return module_backend("bind", (a, b), backend).unbind(a, b)


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
    vs = bundle_operands(vectors)
    be = module_backend("bundle", tuple([vs] if isinstance(vs, TernaryVec) else vs), backend)
    return be.bundle(vs, threshold=threshold)


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
    return module_backend("bundle", (batched,), backend).multiset(batched,
                            threshold=threshold)


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
    return module_backend("permute", (a,), backend).permute(a, shifts)


def accumulate(soft: SoftTernaryVec, hard: TernaryVec, *,
               backend: BackendArg = None) -> SoftTernaryVec:
    """Add trits to saturating counters in place, ``s ← clamp(s + hard)``; returns ``soft``.

    ``soft.accumulate(hard, backend=...)`` is the same call.

    Parameters
    ----------
    soft : SoftTernaryVec
        The counters, updated in place (they keep their array kind).
    hard : TernaryVec
        Same ``dim``; its batch shape broadcasts to the counters'.
    backend : "cpu" | "wgpu" | "cuda" | None
        None: by size.

    Returns
    -------
    SoftTernaryVec
        ``soft`` itself.

    Raises
    ------
    ValueError
        Dimension mismatch, a batch that does not broadcast to the counters'.
    TypeError
        ``soft`` is not a SoftTernaryVec or ``hard`` not a TernaryVec.

    Shapes:
        soft: (*B, dim), hard: broadcasts to (*B, dim).

    Examples
    --------
    >>> import numpy as np
    >>> s = SoftTernaryVec(3, bits=1)
    >>> h = TernaryVec.from_array(np.array([1, -1, 0], np.int8))
    >>> accumulate(accumulate(s, h, backend="cpu"), h, backend="cpu").to_array().tolist()
    [1, -1, 0]
    """
    return module_backend("accumulate", (soft,), backend).accumulate(soft, hard)


def harden(soft: SoftTernaryVec, threshold: int = 1, *, backend: BackendArg = None) -> TernaryVec:
    """Trits from counters: ``sign(s)`` where ``|s| >= threshold``, else 0.

    ``soft.harden(threshold, backend=...)`` is the same call.

    Parameters
    ----------
    soft : SoftTernaryVec
        The counters.
    threshold : int
        Minimum ``|s|`` for a non-zero trit (0 behaves as 1).
    backend : "cpu" | "wgpu" | "cuda" | None
        None: by size.

    Returns
    -------
    TernaryVec
        Planes of the counters' array kind.

    Raises
    ------
    ValueError
        A negative threshold.
    TypeError
        ``soft`` is not a SoftTernaryVec.

    Shapes:
        (*B, dim) -> (*B, dim).

    Examples
    --------
    >>> import numpy as np
    >>> s = SoftTernaryVec(3, bits=2)
    >>> _ = accumulate(s, TernaryVec.from_array(np.array([1, -1, 1], np.int8)), backend="cpu")
    >>> harden(s, 1, backend="cpu").to_array().tolist()
    [1, -1, 1]
    """
    return module_backend("harden", (soft,), backend).harden(soft, threshold)


__all__ = ["SoftTernaryVec", "TernaryVec", "accumulate", "bind", "bundle", "harden", "multiset",
           "permute", "unbind"]
