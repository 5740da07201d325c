"""The sign of a zero result: every backend orders the zeros, -0 < +0 (IEEE 754-2019's maximum and
minimum), for a float semiring whose ⊕ is min or max.

Where the terms that attain an output's ⊕ are zeros of both signs, a max is +0 and a min is -0; a
⊗ that is min or max (``max_min``, ``min_max``) orders its two operands' zeros the same way. The
rule does not depend on the order the terms are folded in, so tiles, split k, batches and dask
chunks all give the same bits. numpy's own ``maximum`` returns one of two equal operands of its
choosing (the second on x86 builds, the ordered one on ARM builds), so no fold order can promise
"numpy's answer" there; this rule is the one that does not depend on the platform. The argmax
index is unchanged: the smallest k whose term equals the result, where +0 == -0.

A GPU kernel folds with its hardware's min and max, which may not order zeros; each backend's
zero-sign pass then recomputes the sign of every zero output from its terms (:func:`fix_host` is
the numpy form, the cpu backend's).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .semirings import Semiring

_BLOCK = 1 << 20  # elements of term scratch per block


def applies(sr: Semiring, dtype: Any) -> bool:
    """True where the rule can change a result: a float dtype, ⊕ min or max, ⊗ a named op."""
    return (np.dtype(dtype).kind == "f" and sr.add_op in ("min", "max")
            and sr.mul_op in ("plus", "times", "min", "max"))


def no_negative_zero(sr: Semiring, known: dict | None) -> bool:
    """True when the facts already learned (:meth:`~pytropical_gpu.facts.Facts.peek`: nothing is
    computed here) show that no zero-valued term of a ⊗ b, nor c, can be -0 for a builtin
    semiring: every zero output is then +0 under the rule, which is what any fold of the hardware's
    min / max gives (it returns one of its operands, and none is -0), so no zero-sign pass is
    needed. With IEEE rounding to nearest, x + y is -0 only for -0 + -0; a zero x * y is -0 only
    where exactly one sign bit is set; a min or max of zeros is -0 only with a -0 operand. False
    where a fact is not known (a batch's facts are read at its end)."""
    if not sr.builtin or not known or known.get("a") is None or known.get("b") is None:
        return False
    key = "signbit" if sr.mul_op == "times" else "negzero"
    a, b = known["a"].peek(key), known["b"].peek(key)
    c = known.get("c")
    if a is None or b is None or (c is not None and c.peek("negzero") is not False):
        return False
    return not (a and b) if sr.mul_op == "plus" else not (a or b)


def combine(xp: Any, kind: str):
    """The ordered ⊕ of two float arrays of module ``xp`` (numpy or cupy): where they are equal,
    the AND (max) or OR (min) of their bits, which is the other value's bits unless both are zeros
    of opposite signs; elsewhere the native maximum / minimum (NaN is refused before any ⊕)."""
    native = xp.maximum if kind == "max" else xp.minimum
    merge = xp.bitwise_and if kind == "max" else xp.bitwise_or

    def add(x, y):
        r = native(x, y)
        if r.dtype.kind != "f":
            return r
        x, y = xp.broadcast_arrays(xp.asarray(x), xp.asarray(y))
        it = np.dtype(f"i{r.dtype.itemsize}")
        both = merge(x.astype(r.dtype, copy=False).view(it), y.astype(r.dtype, copy=False).view(it))
        return xp.where(x == y, both.view(r.dtype), r)
    return add


def _zero_terms(x, y, mul_op: str, dt) -> tuple[np.ndarray, np.ndarray]:
    """(zero, negative) of every term x ⊗ y: the term is a zero, and that zero is -0 (ordered)."""
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        if mul_op == "plus":
            t = np.add(x, y, dtype=dt)
        elif mul_op == "times":
            t = np.multiply(x, y, dtype=dt)
        elif mul_op == "min":
            t = np.minimum(x, y)
        else:
            t = np.maximum(x, y)
    zero = t == 0
    if mul_op in ("plus", "times"):  # IEEE: the sign of a zero sum or product is determined
        return zero, zero & np.signbit(t)
    nx = (x == 0) & np.signbit(x)
    ny = (y == 0) & np.signbit(y)
    if mul_op == "min":
        return zero, zero & (nx | ny)
    px = (x == 0) & ~np.signbit(x)
    py = (y == 0) & ~np.signbit(y)
    return zero, zero & ~(px | py)


def fix_host(d: np.ndarray, a: np.ndarray, b: np.ndarray, sr: Semiring, c: Any = None) -> None:
    """Give every zero of ``d`` (batch, m, n), the result of ``c ⊕ a ⊗ b`` with ``a`` (batch or 1,
    m, k) and ``b`` (batch or 1, k, n), its ordered sign, in place. Only rows holding a zero are
    recomputed, in blocks of bounded size."""
    kind, k = sr.add_op, a.shape[-1]
    cb = None if c is None else np.broadcast_to(c, d.shape)
    for bi in range(d.shape[0]):
        A, B, D = a[bi % a.shape[0]], b[bi % b.shape[0]], d[bi]
        rows = np.flatnonzero((D == 0).any(axis=1))
        if rows.size == 0:
            continue
        cols = np.flatnonzero((D[rows] == 0).any(axis=0))
        cstep = max(1, min(cols.size, _BLOCK // max(k, 1)))
        rstep = max(1, _BLOCK // max(k * cstep, 1))
        for r0 in range(0, rows.size, rstep):
            rr = rows[r0:r0 + rstep]
            for c0 in range(0, cols.size, cstep):
                cc = cols[c0:c0 + cstep]
                zero, neg = _zero_terms(A[rr][:, :, None], B[:, cc][None], sr.mul_op, d.dtype)
                if kind == "max":
                    signed = ~(zero & ~neg).any(axis=1)  # -0 unless some term is +0
                else:
                    signed = neg.any(axis=1)  # -0 if some term is -0
                if cb is not None:
                    cv = cb[bi][np.ix_(rr, cc)]
                    cz = cv == 0
                    if kind == "max":
                        signed &= ~(cz & ~np.signbit(cv))
                    else:
                        signed |= cz & np.signbit(cv)
                block = D[np.ix_(rr, cc)]
                fixed = np.where(block == 0, np.where(signed, -0.0, 0.0).astype(d.dtype), block)
                D[np.ix_(rr, cc)] = fixed
