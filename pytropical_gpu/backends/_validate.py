"""Checks of the VSA operations' arguments (base.py's public methods call them before any kernel)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._checks import int_arg, show
from ..vsa import TernaryVec


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
