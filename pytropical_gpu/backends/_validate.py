"""Checks of the VSA operations' arguments (base.py's public methods call them before any kernel)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _arrays
from .._checks import int_arg, show
from ..packed import PackedCols, PackedRows, check_words
from ..vsa import TernaryVec


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
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"{where}: batch shapes {', '.join(map(str, shapes))} do not broadcast") from None


def _nonneg_int(x: Any, where: str, name: str) -> int:
    """A count such as a threshold: an integer (or an integral float, ``2.0``) >= 0."""
    return int_arg(x, where, name, lo=0, integral_float=True)
