"""The data checks of a fast-path GEMM (:func:`.fastpath.matmul`): the generic path's, in its
order, each run now when its facts are known, else queued to the batch's end."""

from __future__ import annotations

import functools

from ... import batch
from ...ops.gemm import _no_nan


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


__all__: list[str] = []
