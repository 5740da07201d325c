"""Operand facts: what the operations and the kernels need to know about an array's values.

For a float array: NaN present, +inf / -inf present, the number of subnormals, the smallest
non-zero magnitude and the largest magnitude, and whether a -0 or any value with its sign bit set
occurs; for an integer array: its minimum and maximum (hence the largest magnitude, and whether an
extreme such as a semiring's zero occurs). Each is computed once per operand per call, in this
module (its reductions in :mod:`pytropical_gpu._fact_scans`: on the device for a cupy array, one
read-back per group, see :class:`Facts`; a C-contiguous float cupy array's range and sign facts
come from one kernel), and only when some layer asks: the operation refuses NaN with
them, the kernels choose a guarded ⊗ and the DPX path with them, the cuda backend skips the
zero-sign pass where no zero term can be -0, and a subnormal-flushing wgpu adapter decides from
them whether a call is exact. Nothing else scans an operand's values.

A resident :class:`~pytropical_gpu.backends.wgpu.array.WgpuArray` computes its facts once at
``to_device`` (it is immutable) and keeps them; :func:`of` hands those out. cupy arrays, resident or
not, get fresh facts per call: they are the caller's mutable arrays, and a fact kept from
``to_device`` would go stale after an in-place write (a missed NaN, a wrong DPX choice), while the
device reductions cost one pass over the operand against the product's m·n·k.

Within one verb call the facts are shared (:data:`CALL`): "auto" routing asks a flushing wgpu
adapter whether the call is exact (:mod:`pytropical_gpu._route_exact`), and the operation then checks
the same operands; the facts learned of a host operand by the first serve the second, so its values
are scanned once. They are kept for that call only (the verb drops them when it returns or raises):
the next call may follow an in-place change.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import numpy as np

from . import _arrays
from ._fact_scans import _INF, reduce_range, sign_facts
from ._fact_scans import range_facts as _range  # module names: the tests spy on them
from ._fact_scans import small_facts as _small


class Facts:
    """The facts of one operand, each learned once and then kept.

    Three groups, each computed together the first time one of its facts is asked: the range (NaN,
    ±inf, largest magnitude, integer min/max: two reductions, ``x.min()`` and ``x.max()``, which
    propagate NaN; for a C-contiguous float cupy array one kernel, which also gives the signs),
    for floats the signs (a -0, a sign bit) and the small end (smallest non-zero magnitude,
    subnormal count: what only a subnormal-flushing adapter asks). Asking costs nothing the second
    time; :meth:`peek` tells what is known without computing anything."""

    __slots__ = ("_x", "_xp", "_v", "dtype", "_pre", "_reader")

    def __init__(self, x: Any, xp: Any = np):
        self._x, self._xp, self.dtype = x, xp, np.dtype(x.dtype)
        self._v: dict = {"size": int(x.size)}
        self._pre = self._reader = None

    @classmethod
    def lazy(cls, dtype: Any, size: int, reader: Any) -> Facts:
        """The facts of a device result (a wgpu operation's resident output): nothing is known until
        a fact is asked; then ``reader()`` brings the values (an array) or the facts computed on
        the device (a dict of every fact) to the host once."""
        f = cls.__new__(cls)
        f._x, f._xp, f.dtype, f._v, f._pre = None, np, np.dtype(dtype), {"size": int(size)}, None
        f._reader = reader
        return f

    @property
    def on_device(self) -> bool:
        """True when asking a fact not yet known would wait for the device (a device read)."""
        return (self._reader is not None or self._pre is not None
                or (self._xp is not np and self._x is not None))

    def start(self) -> None:
        """Queue the range reductions of a device (cupy) operand now, on the current stream, without
        waiting: the facts asked later read their result (a batch checks them at its end)."""
        if self._reader is None and self._pre is None and not self.computed and self._x is not None \
                and self._x.size and self.dtype.kind in "fiu":
            self._pre = reduce_range(self._x, self._xp, self.dtype)  # one kernel where it can
            self._x = None  # not kept alive until the batch ends (the small end stays unknown)

    @classmethod
    def of_host(cls, a: np.ndarray) -> Facts:
        """Every fact of a host array, computed now (what ``to_device`` keeps)."""
        f = cls(a)
        f._group("min_abs")
        return f

    @property
    def computed(self) -> bool:
        """True once the range facts are known (asking for them then costs nothing)."""
        return "nan" in self._v

    def _group(self, key: str) -> dict:
        v = self._v
        if self._reader is not None:  # a device result: its facts (or values) come to the host
            got, self._reader = self._reader(), None
            if isinstance(got, dict):  # facts computed on the device (backends/wgpu/stats.py)
                v.update(got)
                if self.dtype.kind == "f" and "negzero" not in v:
                    v.update(sign_facts(None, np, self.dtype))  # not learned there: may occur
                return v
            self._x = got
        if "nan" not in v:
            v.update(_range(self._x, self._xp, self.dtype, self._pre, v["size"]))
        if key in ("negzero", "signbit") and "negzero" not in v:
            v.update(sign_facts(self._x, self._xp, self.dtype))
        if key in ("min_abs", "subnormal") and "min_abs" not in v:
            if self._x is None:  # started on the device without its operand (cupy in a batch)
                raise RuntimeError("Facts: the small-end facts of an operand whose range was "
                                   "queued on the device are not known")
            v.update(_small(self._x, self._xp, self.dtype))
        if "min_abs" in v or self.dtype.kind != "f":
            self._x = None  # range and small end known: the operand is not kept (signs asked
            # after this are taken as present, as for a device result: see sign_facts)
        return v

    def __getitem__(self, key: str) -> Any:
        """One value by name ("nan", "posinf", "neginf", "subnormal", "min_abs", "absmax", "min",
        "max", "negzero", "signbit", "size")."""
        return self._group(key)[key]

    def peek(self, key: str) -> Any:
        """The fact ``key`` if it is known already, else None: nothing is computed or read back."""
        return self._v.get(key)

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
        v = self._v
        return v["nan"] if "nan" in v else self._group("nan")["nan"]

    @property
    def inf(self) -> bool:
        return self["posinf"] or self["neginf"]

    @property
    def subnormal(self) -> int:
        """How many values are subnormal (0 < |x| < the dtype's smallest normal)."""
        return self["subnormal"]

    @property
    def negzero(self) -> bool:
        """Whether a -0 occurs (float; False for an integer array). True also where it may but the
        values are gone (a device result's facts, or asked after the small end let the operand
        go); the one-kernel range of a cupy array always learns it exactly."""
        return self["negzero"]

    @property
    def signbit(self) -> bool:
        """Whether a value with its sign bit set occurs: a negative or -0, NaN aside (float; for
        an integer array, whether a negative occurs). True also where it may, as :attr:`negzero`."""
        return self["signbit"]

    @property
    def min_abs(self) -> float:
        """The smallest non-zero magnitude (inf when there is none)."""
        return self["min_abs"]

    @property
    def absmax(self) -> int | float:
        """The largest magnitude (a Python int for integers: no overflow; 0 for an empty array)."""
        return self["absmax"]

    def contains(self, value: Any) -> bool:
        """Whether ``value`` may occur: exact for ±inf and an integer dtype's extremes (a semiring's
        zero), conservative (True) for a value inside the array's range."""
        v = self._group("nan")
        if not v["size"]:
            return False
        if self.dtype.kind == "f":
            x = float(value)
            if x == _INF:
                return v["posinf"]
            if x == -_INF:
                return v["neginf"]
            return True
        if v["min"] is None:
            return True
        value = int(value)
        if value in (v["min"], v["max"]):
            return True
        if self.dtype.kind in "iu":
            info = np.iinfo(self.dtype)
            if value in (info.min, info.max):
                return False  # an extreme occurs exactly when it is the min or the max
        return v["min"] <= value <= v["max"]


class _Call(threading.local):
    """The facts learned during the verb call running on this thread: ``shared`` maps an operand's
    ``id`` to ``(operand, xp, Facts)`` while a verb call is open (:func:`verb_call`), else None:
    nothing is shared."""

    shared: dict | None = None


#: this thread's open verb call (see the module docstring)
CALL = _Call()


@contextlib.contextmanager
def verb_call():
    """Share facts for one verb call (:data:`CALL`): a fresh share while it runs, and whatever was
    there before (an outer verb call's share, or none) when it returns or raises, so a verb called
    inside another (a user semiring's callback) neither ends nor reuses the outer call's share."""
    outer = CALL.shared
    CALL.shared = {}
    try:
        yield
    finally:
        CALL.shared = outer


def of(x: Any, xp: Any = None) -> Facts:
    """The facts of a native operand: a WgpuArray's kept ones, else those learned of the same
    object earlier in this verb call (:data:`CALL`), else new (computed on first use)."""
    kept = getattr(x, "stats", None)
    if isinstance(kept, Facts):
        return kept
    xp = _arrays.xp_of(x) if xp is None else xp
    shared = CALL.shared
    if shared is None:
        return Facts(x, xp)
    got = shared.get(id(x))
    if got is not None and got[0] is x and got[1] is xp:
        return got[2]
    f = shared[id(x)] = (x, xp, Facts(x, xp))  # (x kept: its id is not reused during the call)
    return f[2]


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


__all__ = ["CALL", "Facts", "guard_needed", "of", "verb_call"]
