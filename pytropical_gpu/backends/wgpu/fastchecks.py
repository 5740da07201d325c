"""The data checks of a fast-path GEMM (:func:`.fastpath.matmul`, :mod:`.fastgemm`): the generic
path's, in its order, each run now when its facts are known, else queued to the batch's end; there
the items that cannot raise are found from the results' facts words at once (:func:`cleared`)."""

from __future__ import annotations

import functools

import numpy as np

from ... import batch
from ...facts import Facts
from ...ops.gemm import _no_nan
from .stats import Reader

#: both smallest magnitudes at least this (and no subnormals): no flushing rule can fire
#: (⊗ plus needs both below 2**-102; ⊗ times a product below 2**-126 = (2**-63)**2)
_QUIET = 2.0**-63


def _checks(be, sr, dt, fa, fb) -> None:
    """The generic path's data checks (ops.gemm.matmul's NaN refusal, then the backend's operand
    rule on a flushing adapter; neither applies to integers), in its order: each now when its facts
    are known, else at the batch's end — there as one deferred call per product (the generic path
    queues one per check: the same checks in the same order)."""
    if dt.kind != "f":
        return
    flushing = be.flushes_subnormals
    pend = [f for f in (fa, fb) if not f.computed and f.on_device]
    later = []
    for name, f in (("a", fa), ("b", fb)):
        if any(f is g for g in pend):
            later.append((name, f))
        else:
            _no_nan(name, f)
    if not pend:
        if flushing:
            be._check_operands("matmul", sr, dt, {"a": fa, "b": fb, "c": None})
        return
    batch.defer(functools.partial(_deferred, be, sr, dt, fa, fb, later, flushing), *pend)


def _deferred(be, sr, dt, fa, fb, later, flushing) -> None:
    for name, f in later:
        _no_nan(name, f)
    if flushing:  # the operand rule, as WgpuBackend._check_operands runs it
        got = be._flush_rule("matmul", sr, dt, {"a": fa, "b": fb})
        if got is not None:
            raise got[0](got[1])


def _quiet(f: Facts) -> bool:
    """No flushing rule can fire on this float operand (see ``_QUIET``); False when unsure."""
    v = f._v
    if "min_abs" not in v:  # (as f["subnormal"]: both groups learned, from the device words)
        v = f._group("min_abs")
    return _quiet_facts(v)


def _quiet_facts(v: dict) -> bool:
    """``_quiet`` of a facts dict whose small end is known (asks nothing)."""
    return v["subnormal"] == 0 and v["min_abs"] >= _QUIET


def _known(f: Facts, pending: bool, flushing: bool) -> int:
    """:func:`cleared`'s mark of an operand not read as words: -1 when its known facts show that
    its checks cannot fail (or it has none), -2 when the checks must ask them."""
    v = f._v
    if flushing:
        ok = "min_abs" in v and not v["nan"] and _quiet_facts(v)
    else:
        ok = not pending or ("nan" in v and not v["nan"])
    return -1 if ok else -2


def cleared(items: list, flushing: bool) -> list | None:
    """Per deferred product ``(fa, fb, a pending, b pending)`` of a fast GEMM group: True when its
    checks cannot raise (its pending operands hold no NaN and, on a flushing adapter and a builtin
    semiring, both operands are quiet: ``_quiet``), False when they must run as before. Read from
    the facts words of this batch's results as arrays (:class:`.stats.Words`, one row each, not
    decoded into dicts) and from facts already known; a fact neither gives is not asked here (the
    checks then ask it in their order, with their side effects). None: no operand's words."""
    words = None
    rows: list = []  # per operand: its row of ``words``, -1: cannot fail, -2: the checks must ask
    add = rows.append
    last = last_p = last_at = None  # the last operand marked by its known facts (a resident b)
    # a's block and b's are one rule written out twice on purpose: this runs once a product at
    # every batch's end, and a loop over the two operands doubled its cost (~0.1 µs a product,
    # 2-4 % of the batch's end; session 7's review). A change to one block goes to both.
    for fa, fb, la, lb in items:
        r = fa._reader
        if type(r) is Reader and r.words is not None and r.values is None \
                and (r.words is words or words is None):
            words = r.words
            add(r.row if la or flushing else -1)
        elif fa is last and la is last_p:
            add(last_at)
        else:
            last, last_p, last_at = fa, la, _known(fa, la, flushing)
            add(last_at)
        r = fb._reader
        if type(r) is Reader and r.words is not None and r.values is None \
                and (r.words is words or words is None):
            words = r.words
            add(r.row if lb or flushing else -1)
        elif fb is last and lb is last_p:
            add(last_at)
        else:
            last, last_p, last_at = fb, lb, _known(fb, lb, flushing)
            add(last_at)
    if words is None:
        return None
    at = np.array(rows)
    fine = ~words.nan() if not flushing else words.quiet(_QUIET)
    ok = np.where(at >= 0, fine[np.maximum(at, 0)], at == -1)
    return (ok[0::2] & ok[1::2]).tolist()


__all__ = ["cleared"]
