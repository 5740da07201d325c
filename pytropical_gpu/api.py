"""Module-level verbs for semiring GEMM and packed boolean products: each asks
:mod:`pytropical_gpu.routing` where to run (``backend=``, ``PYTROPICAL_BACKEND`` or the default
HybridContext) and runs the operation of :mod:`pytropical_gpu.ops` there. The VSA verbs are in
:mod:`pytropical_gpu.vsa`, the similarity verbs in :mod:`pytropical_gpu.similarity`."""

from __future__ import annotations

from typing import Any, Literal

from numpy.typing import ArrayLike

from .facts import verb_call
from .hybrid import default_context, module_backend
from .semirings import Semiring, SemiringName
from .types import PackedCols, PackedRows

BackendArg = Literal["cpu", "wgpu", "cuda"] | None


def matmul(a: ArrayLike, b: ArrayLike, semiring: SemiringName | Semiring = "max_plus", *,
           c: ArrayLike | None = None, out: Any = None, return_argmax: bool = False,
           backend: BackendArg = None) -> Any:
    """Semiring matrix product ``D = c ⊕ (a ⊗ b)``, with numpy's ``matmul`` shape rules.

    ``D[..., i, j] = ⊕_k a[..., i, k] ⊗ b[..., k, j]``: ``max_plus`` gives longest paths,
    ``min_plus`` shortest paths, ``lor_land`` reachability. Results equal numpy's bit for bit.

    Parameters
    ----------
    a, b : array_like
        numpy, cupy or torch arrays, or anything with ``__dlpack__`` or ``__array__`` (views
        such as ``a.T`` are fine). Same dtype: float32, int32 everywhere; float64, int64 on cpu
        and cuda; bool for ``lor_land``/``lxor_land``; uint32/uint64 for the bitwise semirings.
    semiring : str or Semiring
        python-graphblas name (``"min_plus"``, ``"max_plus"``, ``"lor_land"``, ...) or an object.
    c : array_like, optional
        Epilogue operand, broadcast against the result: ``D = c ⊕ (a ⊗ b)``.
    out : array, optional
        numpy array, cupy array or torch tensor of the result's shape and dtype, written in place
        and returned (the very same object).
    return_argmax : bool
        Also return the int32 k* attaining the ⊕ (smallest k on ties; -1 where no term improves
        on the zero or on ``c``). Only for min/max-based semirings.
    backend : "cpu" | "wgpu" | "cuda" | None
        None: the default HybridContext decides by size (and dtype).

    Returns
    -------
    D or (D, argmax)
        The same array kind as the inputs (numpy, cupy, torch on the inputs' device).

    Raises
    ------
    ValueError
        Shapes not aligned or batch dimensions not broadcastable, NaN in an input, ``out`` of the
        wrong shape/dtype, argmax on a non-selective semiring.
    TypeError
        Mixed or unsupported dtypes (wgpu and 64-bit types: the message names the cast), ``out``
        not an array.

    Shapes:
        a: (..., m, k) or (k,); b: (..., k, n) or (k,); c broadcasts to the result;
        result: broadcast(a[..., :-2], b[..., :-2]) + (m, n), minus the axis of a 1-D operand.

    Examples
    --------
    >>> import numpy as np
    >>> matmul(np.array([[0., 1.]]), np.array([[2.], [0.]]), "min_plus", backend="cpu")
    array([[1.]])
    >>> matmul(np.array([0, 1]), np.array([[2, 5], [0, 0]]), "max_plus", backend="cpu")
    array([2, 5])
    """
    with verb_call():  # what routing learns of the operands serves the operation
        be = module_backend("matmul", (a, b, c), backend, semiring)
        return be.matmul(a, b, semiring, c=c, out=out, return_argmax=return_argmax)


def pack_rows(a: ArrayLike, *, backend: BackendArg = None) -> PackedRows:
    """Pack a bool (m, k) matrix along k, 32 per uint32 (LSB first, zero tail).

    Pack once and pass the handle to :func:`andor_matmul` many times.

    Parameters
    ----------
    a : array_like of bool
        The left operand of a boolean product.
    backend : "cpu" | "wgpu" | "cuda" | None
        Where to pack (None: by size).

    Returns
    -------
    PackedRows
        ``words`` of the input's array kind.

    Raises
    ------
    ValueError
        ``a`` is not 2-D.
    TypeError
        ``a`` is not bool.

    Shapes:
        a: (m, k) bool -> words: (m, ceil(k / 32)) uint32.

    Examples
    --------
    >>> import numpy as np
    >>> pack_rows(np.array([[True, False, True]]), backend="cpu").words
    array([[5]], dtype=uint32)
    """
    return module_backend("pack_rows", (a,), backend).pack_rows(a)


def pack_cols(b: ArrayLike, *, backend: BackendArg = None) -> PackedCols:
    """Pack a bool (k, n) matrix along k per column, 32 per uint32 (LSB first, zero tail).

    Parameters
    ----------
    b : array_like of bool
        The right operand of a boolean product.
    backend : "cpu" | "wgpu" | "cuda" | None
        Where to pack (None: by size).

    Returns
    -------
    PackedCols
        ``words`` of the input's array kind.

    Raises
    ------
    ValueError
        ``b`` is not 2-D.
    TypeError
        ``b`` is not bool.

    Shapes:
        b: (k, n) bool -> words: (n, ceil(k / 32)) uint32.

    Examples
    --------
    >>> import numpy as np
    >>> pack_cols(np.array([[True], [True]]), backend="cpu").words
    array([[3]], dtype=uint32)
    """
    return module_backend("pack_cols", (b,), backend).pack_cols(b)


def andor_matmul(a: ArrayLike | PackedRows, b: ArrayLike | PackedCols, *,
                 backend: BackendArg = None) -> Any:
    """Boolean product ``out[i, j] = any(a[i, :] & b[:, j])`` on bit-packed words.

    Parameters
    ----------
    a : array_like of bool or PackedRows
        Left operand, packed by :func:`pack_rows` if given as bools.
    b : array_like of bool or PackedCols
        Right operand, packed by :func:`pack_cols` if given as bools.
    backend : "cpu" | "wgpu" | "cuda" | None
        None: by size.

    Returns
    -------
    array of bool
        The input's array kind; all False when k == 0.

    Raises
    ------
    ValueError
        k of ``a`` and ``b`` differ.
    TypeError
        Handles swapped (a PackedCols as ``a``), or non-bool arrays.

    Shapes:
        a: (m, k), b: (k, n) -> (m, n).

    Examples
    --------
    >>> import numpy as np
    >>> andor_matmul(np.eye(2, dtype=bool), np.array([[0, 1], [0, 0]], bool), backend="cpu")
    array([[False,  True],
           [False, False]])
    """
    return module_backend("andor_matmul", (a, b), backend).andor_matmul(a, b)


__all__ = ["BackendArg", "andor_matmul", "default_context", "matmul", "pack_cols", "pack_rows"]
