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


def reduce_range(x: Any, xp: Any, dt: np.dtype) -> Any:
    """The range of ``x`` reduced to a small vector, on ``x``'s device, not read back: a C-contiguous
    float cupy array's ``operand_range.keys`` (range and signs in one kernel, uint64), else
    ``[min, max]`` (float64 for a float array, which keeps NaN)."""
    if getattr(xp, "__name__", "") == "cupy" and dt.kind == "f":
        from .backends.cuda import operand_range

        if operand_range.applies(x):
            return operand_range.keys(x)
    st = xp.stack([x.min(), x.max()])
    return st.astype(np.float64) if dt.kind == "f" else st


def range_facts(x: Any, xp: Any, dt: np.dtype, pre: Any = None, size: int | None = None) -> dict:
    """The range facts of ``x`` (and, from the one kernel, its signs); ``pre``: its
    :func:`reduce_range` already queued (``x`` may then be None: :meth:`Facts.start` let go of
    it), ``size`` its element count."""
    out = {"nan": False, "posinf": False, "neginf": False, "absmax": 0, "min": None, "max": None}
    if dt.kind != "f":
        out.update(min_abs=_INF, subnormal=0, negzero=False)  # no small end, no -0: not a float
    if not (x.size if size is None else size) or dt.kind not in "fiu":
        return dict(out, negzero=False, signbit=False)
    st = pre if pre is not None else reduce_range(x, xp, dt)
    if dt.kind != "f":
        lo, hi = _host(st).tolist()  # ints
        return dict(out, min=lo, max=hi, absmax=max(abs(lo), abs(hi)), signbit=lo < 0)
    signs = {}
    if st.dtype == np.uint64:  # operand_range's keys: range and signs
        from .backends.cuda import operand_range

        got = operand_range.decode(_host(st), dt)
        signs = {"negzero": got["negzero"], "signbit": got["signbit"]}  # NaN aside
        lo, hi = (float("nan"),) * 2 if got["nan"] else (got["lo"], got["hi"])
    else:
        lo, hi = _host(st).tolist()
    if lo != lo or hi != hi:  # min and max propagate NaN: the rest is unknown, and moot
        return dict(out, nan=True, posinf=True, neginf=True, absmax=_INF, **signs)
    return dict(out, posinf=hi == _INF, neginf=lo == -_INF, absmax=max(abs(lo), abs(hi)), **signs)


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


__all__ = ["range_facts", "reduce_range", "sign_facts", "small_facts"]
