"""Checks of the operations' arguments, made before any upload or launch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _arrays
from .._checks import int_arg, show
from ..types import PackedCols, PackedRows, TernaryVec, check_words


def recheck_handle(x: Any) -> None:
    """What ``to_device`` checks again: a TernaryVec's planes (no bit in both, zero tail) and a
    packed handle's words (shape, zero tail), which may have been changed in place since they were
    made. Resident (wgpu) data was checked when it went to the device."""
    if isinstance(x, TernaryVec) and not _arrays.is_wgpu(x.pos):
        TernaryVec(x.pos, x.neg, x.dim)
    elif isinstance(x, (PackedRows, PackedCols)) and not _arrays.is_wgpu(x.words):
        check_words(x.words, x.k, f"to_device: {type(x).__name__}")


def _check_tv(v: Any, where: str, name: str) -> None:
    if not isinstance(v, TernaryVec):
        raise TypeError(f"{where}: {name} must be a TernaryVec (TernaryVec.from_array), "
                        f"got {show(v)}")


def _same_dim(where: str, a: Any, b: Any) -> None:
    if a.dim != b.dim:
        raise ValueError(f"{where}: dimension mismatch ({a.dim} != {b.dim})")


def _bshape(where: str, *shapes: tuple) -> tuple:
    if len(shapes) == 2 and shapes[0] == shapes[1]:
        return tuple(shapes[0])
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"{where}: batch shapes {', '.join(map(str, shapes))} do not broadcast") from None


def _nonneg_int(x: Any, where: str, name: str) -> int:
    """A count such as a threshold: an integer (or an integral float, ``2.0``) >= 0."""
    return int_arg(x, where, name, lo=0, integral_float=True)


def bundle_operands(vectors: tuple) -> TernaryVec | list:
    """The vectors of ``bundle(*vectors)``: one batched TernaryVec, or a list (from one sequence
    argument or several TernaryVec arguments)."""
    if len(vectors) == 1 and not isinstance(vectors[0], TernaryVec):
        if not isinstance(vectors[0], Sequence) or isinstance(vectors[0], (str, bytes)):
            raise TypeError("bundle: expected TernaryVecs, a list of them or one batched TernaryVec; "
                            f"got {show(vectors[0])}")
        vectors = tuple(vectors[0])
    elif len(vectors) == 1:
        return vectors[0]
    for i, v in enumerate(vectors):
        if not isinstance(v, TernaryVec):
            hint = (" (threshold is keyword-only: bundle(..., threshold=t))"
                    if isinstance(v, (int, float)) else "")
            raise TypeError(f"bundle: vectors[{i}] must be a TernaryVec, got {show(v)}{hint}")
    return list(vectors)
