"""Operand facts: what the operations and the kernels need to know about an array's values.

For a float array: NaN present, +inf / -inf present, the number of subnormals, the smallest
non-zero magnitude and the largest magnitude; for an integer array: its minimum and maximum (hence
the largest magnitude, and whether an extreme such as a semiring's zero occurs). They are computed
together, once per operand per call (on the device for a cupy array, with one read-back), and only
when some layer asks: the operation refuses NaN with them, the kernels choose a guarded ⊗ and the
DPX path with them, and a subnormal-flushing wgpu adapter decides from them whether a call is exact.

A resident :class:`~pytropical_gpu.backends.wgpu.array.WgpuArray` computes its facts once at
``to_device`` (it is immutable) and keeps them; :func:`of` hands those out. cupy arrays, resident or
not, get fresh facts per call: they are the caller's mutable arrays, and a fact kept from
``to_device`` would go stale after an in-place write (a missed NaN, a wrong DPX choice), while the
device reductions cost one pass over the operand against the product's m·n·k.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _arrays

_INF = float("inf")


class Facts:
    """The facts of one operand, computed on first use (all of them together) and then kept."""

    __slots__ = ("_x", "_xp", "_v", "dtype")

    def __init__(self, x: Any, xp: Any = np):
        self._x, self._xp, self._v, self.dtype = x, xp, None, np.dtype(x.dtype)

    @classmethod
    def of_host(cls, a: np.ndarray) -> Facts:
        """The facts of a host array, computed now (what ``to_device`` keeps)."""
        f = cls(a)
        f._values()
        return f

    @property
    def computed(self) -> bool:
        """True once the values are known (asking for them then costs nothing)."""
        return self._v is not None

    def _values(self) -> dict:
        if self._v is None:
            self._v = _compute(self._x, self._xp)
            self._x = None
        return self._v

    def __getitem__(self, key: str) -> Any:
        """One computed value by name ("nan", "posinf", "neginf", "subnormal", "min_abs",
        "absmax", "min", "max", "size")."""
        return self._values()[key]

    def as_dict(self) -> dict:
        """The facts that matter for this dtype, by name: nan, inf, subnormal and min_abs for
        floats; min and max for integers; nothing for an empty or bool array."""
        if not self._v["size"] or self.dtype.kind not in "fiu":
            return {}
        if self.dtype.kind == "f":
            return {"nan": self.nan, "inf": self.inf, "subnormal": self.subnormal,
                    "min_abs": self.min_abs}
        return {"min": self["min"], "max": self["max"]}

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Facts):
            return self.dtype == other.dtype and self.as_dict() == other.as_dict()
        if isinstance(other, dict):
            return self.as_dict() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # values, not identity

    @property
    def nan(self) -> bool:
        return self._values()["nan"]

    @property
    def inf(self) -> bool:
        v = self._values()
        return v["posinf"] or v["neginf"]

    @property
    def subnormal(self) -> int:
        """How many values are subnormal (0 < |x| < the dtype's smallest normal)."""
        return self._values()["subnormal"]

    @property
    def min_abs(self) -> float:
        """The smallest non-zero magnitude (inf when there is none)."""
        return self._values()["min_abs"]

    @property
    def absmax(self) -> int | float:
        """The largest magnitude (a Python int for integers: no overflow; 0 for an empty array)."""
        return self._values()["absmax"]

    def contains(self, value: Any) -> bool:
        """Whether ``value`` may occur: exact for ±inf, NaN and an integer dtype's extremes (a
        semiring's zero), conservative (True) for a value inside the array's range."""
        v = self._values()
        if self.dtype.kind == "f":
            x = float(value)
            if x == _INF:
                return v["posinf"]
            if x == -_INF:
                return v["neginf"]
            return v["size"] > 0
        if self.dtype.kind not in "iu" or v["min"] is None:
            return v["size"] > 0
        value = int(value)
        if value in (v["min"], v["max"]):
            return True
        info = np.iinfo(self.dtype)
        if value in (info.min, info.max):
            return False  # an extreme occurs exactly when it is the min or the max
        return v["min"] <= value <= v["max"]


def _compute(x: Any, xp: Any) -> dict:
    dt = np.dtype(x.dtype)
    out = {"size": int(x.size), "nan": False, "posinf": False, "neginf": False, "subnormal": 0,
           "min_abs": _INF, "absmax": 0, "min": None, "max": None}
    if not x.size or dt.kind not in "fiu":
        return out
    if dt.kind == "f":
        mag = xp.abs(x)
        nan = xp.isnan(x)
        finite_or_inf = xp.where(nan, 0, mag)
        tiny = np.finfo(dt).tiny
        stats = xp.stack([
            nan.any().astype(np.float64), (x == _INF).any().astype(np.float64),
            (x == -_INF).any().astype(np.float64),
            ((mag > 0) & (mag < tiny)).sum().astype(np.float64),
            xp.where((mag == 0) | nan, _INF, mag).min().astype(np.float64),
            finite_or_inf.max().astype(np.float64)])
        s = stats.get() if hasattr(stats, "get") and not isinstance(stats, np.ndarray) else stats
        out.update(nan=bool(s[0]), posinf=bool(s[1]), neginf=bool(s[2]), subnormal=int(s[3]),
                   min_abs=float(s[4]), absmax=float(s[5]))
        return out
    lo_hi = xp.stack([x.min(), x.max()])
    lo_hi = lo_hi.get() if not isinstance(lo_hi, np.ndarray) else lo_hi
    lo, hi = int(lo_hi[0]), int(lo_hi[1])
    out.update(min=lo, max=hi, absmax=max(abs(lo), abs(hi)))
    return out


def of(x: Any, xp: Any = None) -> Facts:
    """The facts of a native operand: a WgpuArray's kept ones, else new (computed on first use)."""
    kept = getattr(x, "stats", None)
    if isinstance(kept, Facts):
        return kept
    return Facts(x, _arrays.xp_of(x) if xp is None else xp)


def guard_needed(sr: Any, dt: np.dtype, fa: Facts, fb: Facts) -> bool:
    """Whether ⊗ needs its guarded form for operands with these facts: a float operand holds ±inf
    (the zero of the guarded semirings, or an inf that meets it), an integer operand holds the
    semiring's zero, or an integer ``plus`` may overflow (|a| + |b| beyond the dtype's max)."""
    if not sr.guarded:
        return False
    dt = np.dtype(dt)
    if dt.kind == "f":
        return fa.inf or fb.inf
    zero = sr.zero_for(dt)
    if fa.contains(zero) or fb.contains(zero):
        return True
    if sr.mul_op == "plus":
        return int(fa.absmax) + int(fb.absmax) > np.iinfo(dt).max
    return False


__all__ = ["Facts", "guard_needed", "of"]
