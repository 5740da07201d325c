"""The zero-sign pass: a float GEMM whose ⊕ is min or max gives its zero results the ordered sign
(-0 < +0, :mod:`pytropical_gpu.zero_order`), as the cpu backend's :func:`~pytropical_gpu.zero_order.fix_host`.

The GEMM kernels fold with WGSL's ``min`` / ``max``, which may return either of two equal zeros;
``wgsl/gemm_zsign.wgsl`` runs after them in the same submit (after split-k's fold, the argmax's
second pass and c), in place on D, one thread per output, reading the GEMM's own bindings.
Cost: one read of D; a zero output then reads c and scans its k terms (A's row, B's column) up to
the first that decides its sign (max: a +0 term, min: a -0 term), so all of k where none does (a
min semiring whose zero outputs have no -0 term, a max one whose have no +0 term). Only where
:func:`~pytropical_gpu.zero_order.applies` (float32 here, ⊕ min/max, ⊗ a named op): int32,
plus_times, the boolean semirings and user-defined semirings record no pass. The argmax index is
unchanged (+0 == -0), as are a result's facts (they never look at a zero's sign).
"""

from __future__ import annotations

from ... import zero_order
from .engine import WG, Engine, pack_params
from .runtime import Dispatch


def params(sr, dt, has_c: bool) -> dict | None:
    """The template parameters of ``sr``'s pass on ``dt`` (None: the rule does not apply)."""
    if not zero_order.applies(sr, dt):
        return None
    return {"T": "f32", "ADD_OP": sr.add_op, "MUL_OP": sr.mul_op, "HAS_C": has_c, "WG": WG}


def record(eng: Engine, sr, dt, m: int, n: int, k: int, nbat: int = 1, a_bs: int = 0,
           b_bs: int = 0, c_bs: int = 0, has_c: bool = False):
    """(pipeline, groups, uniforms) of the pass over a (nbat, m, n) result, or None (no pass)."""
    p = params(sr, dt, has_c)
    if p is None or m * n * nbat == 0:
        return None
    pipe = eng.pipeline("gemm_zsign", _key=("gemm_zsign", sr.add_op, sr.mul_op, has_c), **p)
    gx, gy, _ = eng.grid(-(-(m * n) // WG))
    return pipe, (gx, gy, nbat), pack_params(m, n, k, a_bs, b_bs, c_bs, m * n, gx)


def commands(eng: Engine, sr, dt, binds, m: int, n: int, k: int, nbat: int = 1, a_bs: int = 0,
             b_bs: int = 0, c_bs: int = 0, argmax: bool = False) -> list:
    """The pass's dispatch (none where the rule does not apply) on a GEMM's bindings A, B, D[, I]
    [, C] (``argmax``: I is there and is skipped)."""
    binds = list(binds[:3]) + list(binds[3 + bool(argmax):])
    rec = record(eng, sr, dt, m, n, k, nbat, a_bs, b_bs, c_bs, len(binds) > 3)
    return [] if rec is None else [Dispatch(rec[0], tuple(binds), rec[1], rec[2])]


__all__ = ["commands", "params", "record"]
