"""Semiring GEMM: prepare (validate, normalise, learn the operand facts), run ``_gemm``, finish.

The public verb is :func:`pytropical_gpu.matmul`; this is what it does on the backend it was routed
to. ``be`` is a backend object (the kernel protocol of :mod:`pytropical_gpu.backends.base`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import _arrays, batch, facts
from .._checks import is_array, show
from ..semirings import Semiring, get_semiring
from . import gemm_shapes

_SELECTIVE_ERR = "return_argmax needs a min/max-based (selective) semiring"


def matmul(be: Any, a: Any, b: Any, semiring: str | Semiring = "max_plus", *, c: Any = None,
           out: Any = None, return_argmax: bool = False) -> Any:
    """Semiring product ``c ⊕ (a ⊗ b)`` on ``be``; see :func:`pytropical_gpu.matmul`."""
    sr = get_semiring(semiring)
    kind = _arrays.kind_of(a, b, c)
    xp = be.xp
    # one operand passed in several places (D ⊗ D ⊕ D) is converted and scanned once
    A = be.asnative(a, "a")
    B = A if b is a else be.asnative(b, "b")
    C = None if c is None else A if c is a else B if c is b else be.asnative(c, "c")
    if A.dtype != B.dtype:
        raise TypeError(f"matmul: mixed dtypes {A.dtype.name} and {B.dtype.name}; "
                        "cast one operand first")
    dt = sr.check_dtype(A.dtype)
    be._check_semiring(sr, dt)
    if return_argmax and not sr.selective:
        raise ValueError(f"matmul: {_SELECTIVE_ERR}, got {sr.name!r}")
    if C is not None and C.dtype != dt:
        raise TypeError(f"matmul: c has dtype {C.dtype.name}, a and b have {dt.name}")
    g = gemm_shapes.plan(A, B, C, xp)  # numpy's 1-D / N-D batch rules
    # the facts of each operand, learned once (a resident operand brings its own from to_device);
    # the same array in two places shares one Facts, so its values are reduced (and read) once
    fa = facts.of(A, xp)
    fb = fa if B is A else facts.of(B, xp)
    fc = None if C is None else fa if C is A else fb if C is B else facts.of(C, xp)
    known = {"a": fa, "b": fb, "c": fc}
    if dt.kind == "f":  # in a batch, a device fact not yet known is checked at the batch's end
        seen: list = []
        for name, f in known.items():
            if f is None or any(f is g for g in seen):
                continue  # an operand already checked under the first name it was passed as
            seen.append(f)
            if not batch.defer(functools.partial(_no_nan, name, f), f):
                _no_nan(name, f)
    be._check_operands("matmul", sr, dt, known)
    out_view = None if out is None else check_out(out, g.result, dt)
    d, idx = _run(be, g, sr, dt, return_argmax, known)
    d = d.reshape(g.result)
    res = write_out(out, out_view, d) if out is not None else _arrays.to_kind(d, kind)
    if return_argmax:
        return res, _arrays.to_kind(idx.reshape(g.result), kind)
    return res


def _no_nan(name: str, f: Any) -> None:
    if f.nan:
        raise ValueError(f"matmul: {name} contains NaN")


def _run(be: Any, g: Any, sr: Semiring, dt: np.dtype, argmax: bool, known: dict):
    xp = be.xp
    batch, m, k, n = g.batch, g.m, g.k, g.n
    if m == 0 or n == 0 or batch == 0 or k == 0:
        d = xp.empty((batch, m, n), dt)
        if k == 0 and d.size:
            d[...] = sr.zero_for(dt) if g.c3 is None else g.c3
        return d, (xp.full((batch, m, n), -1, np.int32) if argmax else None)
    c3 = None if g.c3 is None else be._contig(g.c3)
    return be._gemm(be._contig(g.a3), be._contig(g.b3), sr, c3, argmax, known)


def check_out(out: Any, shape: tuple, dt: np.dtype) -> Any:
    """Validate ``out`` before any work; returns a numpy/cupy view of its memory."""
    if not (is_array(out) and (isinstance(out, np.ndarray) or _arrays.is_cupy(out)
                               or _arrays.is_torch(out))):
        raise TypeError(f"matmul: out must be an array (numpy, cupy or torch) of shape {shape} "
                        f"and dtype {dt.name}, got {show(out)}")
    view = _arrays.writable_view(out, "matmul: out")
    if tuple(view.shape) != tuple(shape) or np.dtype(view.dtype) != dt:
        raise ValueError(f"matmul: out has shape {tuple(view.shape)} and dtype {view.dtype}, "
                         f"expected {shape} and {dt.name}")
    if isinstance(view, np.ndarray) and not view.flags.writeable:
        raise ValueError("matmul: out is read-only")
    return view


def write_out(out: Any, view: Any, d: Any) -> Any:
    """Copy the result once into ``out``'s memory (numpy, cupy or torch) and return ``out``.
    A torch ``out`` is filled by ``out.copy_`` on the caller's stream, after the result is
    handed over through DLPack (which orders torch's stream after our kernels)."""
    if _arrays.is_torch(out):
        out.copy_(_arrays.to_kind(d, (_arrays.TORCH, out.device)))
    else:
        view[...] = _arrays.to_cupy(d) if _arrays.is_cupy(view) else _arrays.to_numpy(d)
    return out


__all__ = ["check_out", "matmul", "write_out"]
