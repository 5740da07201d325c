"""What routing reads off a call's operands, fast (the hot path of every "auto" call): its size in
route units (:mod:`pytropical_gpu.thresholds`), the arrays that say where its data lives, whether
a matmul is an integer one. Nothing here copies, converts or validates: the operation does that."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _arrays
from .ops import gemm_shapes
from .thresholds import INT_DTYPES
from .types import TernaryVec


def _measure(op: str, operands: tuple) -> tuple[int, list]:
    """(work items, the arrays that say where data lives) of a call."""
    if op == "matmul":
        a, b = operands[0], operands[1]
        sa, sb = getattr(a, "shape", None), getattr(b, "shape", None)
        if sa is not None and sb is not None and len(sa) == 2 == len(sb):  # the common case, fast
            return sa[0] * sa[1] * sb[1], [a, b]
        return gemm_shapes.work_size(a, b), [a, b]
    if op == "andor_matmul":
        a, b = operands
        sa, sb = _shape2(a), _shape2(b)
        return sa[0] * sb[1] * max(sa[1], 1) // 32, [getattr(a, "words", a), getattr(b, "words", b)]
    if op in ("pack_rows", "pack_cols"):
        x = operands[0]
        shape = x.shape if hasattr(x, "shape") else np.shape(x)
        return math.prod(shape), [x]
    if op in ("accumulate", "harden"):
        soft = operands[0]
        sign = getattr(soft, "sign", None)
        return (0 if sign is None else int(sign.size) * soft.bits), [sign]
    size, planes = 0, []
    for v in operands:
        if isinstance(v, TernaryVec):
            planes.append(v.pos)
            size += v.pos.size
    return int(size), planes


#: numpy dtypes of the integer GEMM (routed by ``matmul_int``)
_INT_NP = frozenset(np.dtype(n) for n in INT_DTYPES)


def _is_int(x: Any) -> bool:
    """Whether matmul operand ``x`` has an integer dtype (numpy, cupy, torch, resident, lists)."""
    dt = getattr(x, "dtype", None)
    if isinstance(dt, np.dtype):
        return dt in _INT_NP
    return gemm_shapes.dtype_name(x) in INT_DTYPES


#: numpy dtype -> its name: ``str(dtype)`` costs 2-4 us a call (numpy's Python ``__str__``), paid
#: by every matmul "auto" sends to a GPU (``Router._exact``) and not by ``backend="cuda"``
_NP_NAMES: dict[np.dtype, str] = {}


def _dtype_name(x: Any) -> str:
    """:func:`gemm_shapes.dtype_name`, with a numpy dtype's name looked up once per dtype."""
    dt = getattr(x, "dtype", None)
    if type(dt) is not np.dtype and not isinstance(dt, np.dtype):
        return gemm_shapes.dtype_name(x)
    name = _NP_NAMES.get(dt)
    if name is None:
        name = _NP_NAMES[dt] = gemm_shapes.dtype_name(x)
    return name


def _plain(operands: tuple) -> bool:
    """Every operand a numpy array (or None): nothing lives on a device."""
    for x in operands:
        if type(x) is not np.ndarray and x is not None:
            return False
    return True


def _lives(arrays: list) -> str | None:
    """"cuda" when an operand is a cupy array, else "wgpu" when one is a WgpuArray, else None."""
    for x in arrays:
        if type(x) is not np.ndarray and x is not None:
            break
    else:
        return None  # the common case (numpy operands), decided without asking each operand
    if [x for x in arrays if _arrays.is_cupy(x)]:
        return "cuda"
    return "wgpu" if [x for x in arrays if _arrays.is_wgpu(x)] else None


def _shape2(x: Any) -> tuple[int, int]:
    s = tuple(x.shape if hasattr(x, "shape") else np.shape(x))
    return (s + (1, 1))[:2] if len(s) < 2 else s[-2:]  # type: ignore[return-value]
