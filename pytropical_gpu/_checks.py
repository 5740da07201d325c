"""Argument checks shared by the public API: each raises a builtin exception whose message names the
function, the argument and what was received (TypeError for a wrong type, ValueError for a wrong
value), before any upload or launch."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

_DT_NAMES: dict = {}


def dt_name(dt: np.dtype) -> str:
    """``dt.name``, remembered per dtype (numpy computes the name in Python on every access, and
    each operation asks it several times)."""
    n = _DT_NAMES.get(dt)
    if n is None:
        n = _DT_NAMES[dt] = dt.name
    return n


def int_arg(x: Any, where: str, name: str, lo: int | None = None, hi: int | None = None,
            integral_float: bool = False) -> int:
    """``x`` as a Python int (anything with ``__index__``; bool refused), within [lo, hi].

    ``integral_float``: also accept a float with an integer value (``2.0``), never ``2.5``."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{where}: {name} must be an integer, got {x!r}")
    try:
        v = operator.index(x)
    except TypeError:
        if integral_float and isinstance(x, (float, np.floating)) and float(x).is_integer():
            v = int(x)
        else:
            raise TypeError(f"{where}: {name} must be an integer, got {show(x)}") from None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        if hi is None:
            raise ValueError(f"{where}: {name} must be >= {lo}, got {v}")
        if lo is None:
            raise ValueError(f"{where}: {name} must be <= {hi}, got {v}")
        raise ValueError(f"{where}: {name} must be between {lo} and {hi}, got {v}")
    return v


def batch_arg(batch: Any, where: str) -> tuple[int, ...]:
    """A batch shape: an int or a sequence of non-negative ints."""
    if isinstance(batch, (list, tuple)):
        return tuple(int_arg(b, where, "batch", lo=0) for b in batch)
    return (int_arg(batch, where, "batch", lo=0),)


def is_array(x: Any) -> bool:
    """An array object (numpy, cupy, a resident WgpuArray, ...): has ``shape``, ``dtype``, ``ndim``."""
    return all(hasattr(x, a) for a in ("shape", "dtype", "ndim")) and not isinstance(x, np.generic)


def uint32_array(x: Any, where: str, name: str, what: str) -> None:
    """Raise TypeError unless ``x`` is an array of dtype uint32 (``what`` says what it should hold)."""
    if not is_array(x):
        raise TypeError(f"{where}: {name} must be a uint32 array ({what}), got {show(x)}")
    try:
        dt = np.dtype(x.dtype)
    except TypeError:
        dt = None
    if dt != np.uint32:
        raise TypeError(f"{where}: {name} must have dtype uint32 ({what}), got {x.dtype}")


def show(x: Any) -> str:
    """A short description of a received value: a scalar's repr, else its type ("a list")."""
    if isinstance(x, (str, bytes, int, float, complex, np.generic)) or x is None:
        r = repr(x)
        return r if len(r) <= 60 else r[:57] + "..."
    return f"a {type(x).__name__}"


__all__ = ["show", "batch_arg", "int_arg", "is_array", "uint32_array"]
