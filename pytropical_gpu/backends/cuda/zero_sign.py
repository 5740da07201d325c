"""The cuda backend's zero-sign pass (``cuda/zero_sign.cu``): every zero output of a float GEMM whose
⊕ is min or max takes the ordered sign of :mod:`pytropical_gpu.zero_order` (-0 < +0). The GEMM
kernels fold with the hardware's min / max, which need not order zeros, and the argmax epilogues
store a matching term's bits; the argmax index is left as it is.

One launch on the current stream (the GEMM's) right after the GEMM, its split-k fold and ``c``, in
place on the output, no host wait. Cost: every output is read once; a zero output also rescans its
k terms, 4 a step, stopping once a term (or ``c``) has the sign the rule wants (max: +0, min: -0).
Worst case: a min semiring whose zero outputs have no -0 term (min_times on nonnegative operands
full of zeros) reads all k terms of every zero output, a naive GEMM over those outputs.
"""

from __future__ import annotations

import numpy as np

from ... import zero_order
from ..base import ceil_div
from . import kernels

#: rows of outputs a block covers (a warp each, on 32 consecutive columns: B's lines are shared)
ROWS = 8
_MUL = {"plus": 0, "times": 1, "min": 2, "max": 3}
_NULL = np.uint64(0)


def role(add_op: str, mul_op: str, dtype) -> str:
    """The instantiation's role in :data:`SPEC`, e.g. "zero_sign_max_plus_float32"."""
    return f"zero_sign_{add_op}_{mul_op}_{np.dtype(dtype).name}"


#: every (⊕, ⊗, dtype) the rule covers (``zero_order.applies``), one module
SPEC = kernels.ModuleSpec("zero_sign", "zero_sign.cu", {
    role(add, mul, dt): f"ptg::zero_sign<{kernels.CTYPES[dt]}, {str(add == 'max').lower()}, {code}, {ROWS}>"
    for add in ("min", "max") for mul, code in _MUL.items() for dt in ("float32", "float64")})


def fix(d, a, b, sr, c) -> None:
    """Give every zero of ``d`` (batch, m, n), the result of ``c ⊕ a ⊗ b`` with ``a`` (batch or 1,
    m, k), ``b`` (batch or 1, k, n) and ``c`` (batch or 1, m, n) or None, all C-contiguous, its
    ordered sign, in place; nothing where ``zero_order.applies`` says the rule cannot matter."""
    dt = d.dtype
    if dt.kind != "f" or d.size == 0 or not zero_order.applies(sr, dt):
        return
    batch, m, n = d.shape
    k = a.shape[2]
    i64 = np.int64
    tiles = batch * ceil_div(m, ROWS) * ceil_div(n, 32)
    blocks = max(1, min(tiles, 8 * 65536))
    kernels.function(SPEC, role(sr.add_op, sr.mul_op, dt))((blocks,), (32 * ROWS,), (
        a, b, _NULL if c is None else c, d, i64(m), i64(n), i64(k),
        i64(0 if a.shape[0] == 1 else m * k), i64(0 if b.shape[0] == 1 else k * n),
        i64(0 if c is None or c.shape[0] == 1 else m * n), i64(batch)))


__all__ = ["ROWS", "SPEC", "fix", "role"]
