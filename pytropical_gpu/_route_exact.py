""""auto"'s last word on a matmul it sends to a GPU: run it there only if that GPU has the dtype
and cannot get this call wrong (:func:`exact`); otherwise cuda when usable and able, else cpu.

A GPU's ``inexact_reason`` (wgpu: subnormals on an adapter that flushes them) reads the operands'
data, so :func:`exact` is on the full routing path (:mod:`._route_decide`). The lean path sends a
matmul to a GPU only when :func:`surely_exact` says :func:`exact` would keep it there whatever the
data: the GPU has the dtype and either no ``inexact_reason`` or that dtype in its ``exact_dtypes``
(wgpu: every dtype on an adapter that keeps subnormals, the non-float ones on one that flushes).
"""

from __future__ import annotations

import logging
from typing import Any

from ._route_measure import _dtype_name
from .backends import Backend, get_backend, probe

log = logging.getLogger("pytropical_gpu")


def exact(be: Backend, semiring: Any, operands: dict[str, Any]) -> Backend:
    """The backend that runs a matmul "auto" routed to GPU ``be``: ``be`` itself, unless it lacks
    the dtype (wgpu: 64-bit) or could get the call wrong (``inexact_reason``: subnormals on a
    flushing adapter); then cuda when usable and able, else cpu."""
    dtype = _dtype_name(operands["a"])
    why = None
    if dtype not in be.gemm_dtypes:
        why = f"no {dtype} matmul"
    elif hasattr(be, "inexact_reason"):
        why = be.inexact_reason(semiring, None, operands)
    if not why:
        return be
    target = "cpu"
    if be.name != "cuda" and probe("cuda")[0] and dtype in get_backend("cuda").gemm_dtypes:
        target = "cuda"
    log.info("auto: not on %s (%s); running on %s", be.name, why, target)
    return get_backend(target)


def surely_exact(be: Backend, dtype: str) -> bool:
    """Whether :func:`exact` keeps every ``dtype`` matmul on GPU ``be``, whatever the operands' data
    and semiring: ``be`` has the dtype, and has no ``inexact_reason`` or lists the dtype in its
    ``exact_dtypes`` (the dtypes its ``inexact_reason`` answers None for without reading data,
    asked on every call: a wgpu adapter's flag can be set after the route table was built)."""
    if not hasattr(be, "inexact_reason"):
        return dtype in be.gemm_dtypes
    return dtype in getattr(be, "exact_dtypes", ())


__all__ = ["exact", "surely_exact"]
