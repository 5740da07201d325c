"""The reductions behind :class:`pytropical_gpu.facts.Facts`: an operand's range, signs and small
end, on the host (numpy) or the device (cupy: one small vector read back a group). A C-contiguous
float cupy array's range and signs come from one kernel (``backends/cuda/operand_range.py``)
instead of two CuPy reductions, ``x.min()`` and ``x.max()``."""

from __future__ import annotations

from typing import Any

import numpy as np

_INF = float("inf")


def _host(stats: Any) -> np.ndarray:
    """A small stats vector on the host (one read-back for a device array)."""
    return stats if isinstance(stats, np.ndarray) else stats.get()


def range_facts(x: Any, xp: Any, dt: np.dtype, pre: Any = None, size: int | None = None) -> dict:
    """The range facts of ``x`` (and, from the one kernel, its signs); ``pre``: its [min, max] (or
    ``operand_range.keys``) already reduced on the device (``x`` may
    then be None: :meth:`Facts.start` let go of it), ``size`` its element count."""
    out = {"nan": False, "posinf": False, "neginf": False, "absmax": 0, "min": None, "max": None}
    if dt.kind != "f":
        out.update(min_abs=_INF, subnormal=0, negzero=False)  # no small end, no -0: not a float
    if not (x.size if size is None else size) or dt.kind not in "fiu":
        return dict(out, negzero=False, signbit=False)
    if dt.kind == "f":
        if pre is None and fused(x, xp):
            from .backends.cuda import operand_range

            pre = operand_range.keys(x)
        if pre is not None and pre.dtype == np.uint64:  # operand_range's keys: range and signs
            from .backends.cuda import operand_range

            got = operand_range.decode(_host(pre), dt)
            signs = {"negzero": got["negzero"], "signbit": got["signbit"]}  # NaN aside
            if got["nan"]:  # as below: the rest is moot
                return dict(out, nan=True, posinf=True, neginf=True, absmax=_INF, **signs)
            lo, hi = got["lo"], got["hi"]
            return dict(out, posinf=hi == _INF, neginf=lo == -_INF, absmax=max(abs(lo), abs(hi)),
                        **signs)
        st = pre if pre is not None else xp.stack([x.min(), x.max()]).astype(np.float64)
        lo, hi = _host(st).tolist()
        if lo != lo or hi != hi:  # min and max propagate NaN: the rest is unknown, and moot
            return dict(out, nan=True, posinf=True, neginf=True, absmax=_INF)
        return dict(out, posinf=hi == _INF, neginf=lo == -_INF, absmax=max(abs(lo), abs(hi)))
    lo, hi = _host(pre if pre is not None else xp.stack([x.min(), x.max()])).tolist()  # ints
    return dict(out, min=lo, max=hi, absmax=max(abs(lo), abs(hi)), signbit=lo < 0)


def fused(x: Any, xp: Any) -> bool:
    """Whether ``x`` takes the one-kernel range (a C-contiguous float cupy array)."""
    if getattr(xp, "__name__", "") != "cupy" or x is None or x.dtype.kind != "f":
        return False
    from .backends.cuda import operand_range

    return operand_range.applies(x)


def sign_facts(x: Any, xp: Any, dt: np.dtype) -> dict:
    """Whether a float ``x`` holds a -0 and a value with its sign bit set (NaN aside). Where the
    values are gone (a device result's facts without them), both are taken as present: the
    caller then does what it would do for an operand that holds them."""
    if dt.kind != "f":
        return {"negzero": False, "signbit": False}
    if x is None:
        return {"negzero": True, "signbit": True}
    sb = xp.signbit(x) & (x == x)
    st = xp.stack([(sb & (x == 0)).any(), sb.any()])
    neg, any_sb = (bool(v) for v in _host(st).tolist())
    return {"negzero": neg, "signbit": any_sb}


def small_facts(x: Any, xp: Any, dt: np.dtype) -> dict:
    if not x.size or dt.kind != "f":
        return {"min_abs": _INF, "subnormal": 0}
    mag = xp.abs(x)
    smallest = float(_host(xp.where(mag == 0, _INF, mag).min().astype(np.float64)[None])[0])
    tiny = float(np.finfo(dt).tiny)
    sub = 0
    if smallest < tiny:  # only then count (rare): one more pass
        sub = int(_host(((mag > 0) & (mag < tiny)).sum()[None])[0])
    return {"min_abs": smallest, "subnormal": sub}


__all__ = ["fused", "range_facts", "sign_facts", "small_facts"]
