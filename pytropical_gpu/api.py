"""Module-level verbs: thin functions that pick a backend (``backend=``, ``PYTROPICAL_BACKEND`` or the
default HybridContext) and call its method of the same name and signature."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

from numpy.typing import ArrayLike

from .backends import Backend, get_backend
from .hybrid import HybridContext
from .packed import PackedCols, PackedRows
from .semirings import Semiring, SemiringName
from .vsa import TernaryVec

BackendArg = Literal["cpu", "wgpu", "cuda"] | None
_default: HybridContext | None = None


def default_context() -> HybridContext:
    """The process-wide HybridContext the module functions use."""
    global _default
    if _default is None:
        _default = HybridContext()
    return _default


def _pick(backend: str | None, op: str, size: int, *arrays: Any) -> Backend:
    if backend is not None:
        return get_backend(backend)
    forced = os.environ.get("PYTROPICAL_BACKEND")
    if forced:
        return get_backend(forced)
    return default_context()._pick(op, size, *arrays)


def _ctx_backend(backend: str | None) -> str | None:
    return backend if backend is not None else (os.environ.get("PYTROPICAL_BACKEND") or None)


def matmul(a: ArrayLike, b: ArrayLike, semiring: SemiringName | Semiring = "max_plus", *,
           c: ArrayLike | None = None, out: Any = None, return_argmax: bool = False,
           backend: BackendArg = None) -> Any:
    """Semiring matrix product ``D = c ⊕ (a ⊗ b)``.

    Parameters
    ----------
    a, b : array_like
        (m, k) or (batch, m, k) and (k, n) or (batch, k, n); a batch of 1 broadcasts.
    semiring : str or Semiring
        python-graphblas name (``"min_plus"``, ``"max_plus"``, ``"lor_land"``, ...) or an object.
    c : array_like, optional
        Epilogue operand: the result is ``c ⊕ (a ⊗ b)``.
    out : array, optional
        Write the result here (numpy or cupy, right shape and dtype).
    return_argmax : bool
        Also return the int32 k* attaining the ⊕ (smallest k on ties; -1 where no term improves on
        the zero or on ``c``). Only for min/max-based semirings.
    backend : "cpu" | "wgpu" | "cuda" | None
        None: the default HybridContext decides by size.

    Returns
    -------
    D, or (D, argmax): same array kind as the inputs.

    Raises
    ------
    ValueError
        Shapes not aligned, NaN in an input, argmax on a non-selective semiring.
    TypeError
        Mixed or unsupported dtypes.

    Shapes:
        a: (m, k) or (B, m, k); b: (k, n) or (B, k, n); result (m, n) or (B, m, n).

    >>> import numpy as np
    >>> matmul(np.array([[0., 1.]]), np.array([[2.], [0.]]), "min_plus", backend="cpu")
    array([[1.]])
    """
    return default_context().matmul(a, b, semiring, c=c, out=out, return_argmax=return_argmax,
                                    backend=_ctx_backend(backend))


def pack_rows(a: ArrayLike, *, backend: BackendArg = None) -> PackedRows:
    """Pack a bool (m, k) matrix along k, 32 per uint32 (LSB first, zero tail)."""
    return default_context().pack_rows(a, backend=_ctx_backend(backend))


def pack_cols(b: ArrayLike, *, backend: BackendArg = None) -> PackedCols:
    """Pack a bool (k, n) matrix along k per column, 32 per uint32."""
    return default_context().pack_cols(b, backend=_ctx_backend(backend))


def andor_matmul(a: ArrayLike | PackedRows, b: ArrayLike | PackedCols, *,
                 backend: BackendArg = None) -> Any:
    """Boolean product: ``out[i, j] = any(a[i, :] & b[:, j])``; bool arrays or packed handles.

    >>> import numpy as np
    >>> andor_matmul(np.eye(2, dtype=bool), np.array([[0, 1], [0, 0]], bool), backend="cpu")
    array([[False,  True],
           [False, False]])
    """
    return default_context().andor_matmul(a, b, backend=_ctx_backend(backend))


def bind(a: TernaryVec, b: TernaryVec, *, backend: BackendArg = None) -> TernaryVec:
    """Elementwise product of trits (torchhd ``bind``); batch dimensions broadcast."""
    return default_context().bind(a, b, backend=_ctx_backend(backend))


def unbind(a: TernaryVec, b: TernaryVec, *, backend: BackendArg = None) -> TernaryVec:
    """Inverse of bind, which for trits is bind itself."""
    return default_context().unbind(a, b, backend=_ctx_backend(backend))


def bundle(vs: TernaryVec | Sequence[TernaryVec], threshold: int = 1, *,
           backend: BackendArg = None) -> TernaryVec:
    """Exact per-element majority: sign(Σ v) where |Σ v| >= threshold, else 0.

    ``vs`` is a sequence of TernaryVec or one batched TernaryVec whose leading dimension holds the
    vectors (torchhd ``multiset``).
    """
    return default_context().bundle(vs, threshold, backend=_ctx_backend(backend))


def dot(a: TernaryVec, b: TernaryVec, *, backend: BackendArg = None) -> Any:
    """Exact dot product (int); batched: int64 array of shape a.batch_shape + b.batch_shape.

    >>> import numpy as np
    >>> v = TernaryVec.from_array(np.array([1, -1, 0], np.int8))
    >>> dot(v, v, backend="cpu")
    2
    """
    return default_context().dot(a, b, backend=_ctx_backend(backend))


def cosine(a: TernaryVec, b: TernaryVec, *, backend: BackendArg = None) -> Any:
    """Cosine similarity: dot / sqrt(nnz(a) nnz(b)), 0.0 for an all-zero vector."""
    return default_context().cosine(a, b, backend=_ctx_backend(backend))


def permute(a: TernaryVec, shifts: int = 1, *, backend: BackendArg = None) -> TernaryVec:
    """Cyclic shift: trit i moves to (i + shifts) mod dim (torchhd ``permute``, torch.roll)."""
    return default_context().permute(a, shifts, backend=_ctx_backend(backend))


def search(query: TernaryVec, memory: TernaryVec, k: int = 1, *,
           backend: BackendArg = None) -> tuple[Any, Any]:
    """Item-memory cleanup: indices and dot scores of the k rows of ``memory`` nearest ``query``."""
    return default_context().search(query, memory, k, backend=_ctx_backend(backend))


dot_similarity = dot
cosine_similarity = cosine
