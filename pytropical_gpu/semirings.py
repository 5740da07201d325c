"""The semiring registry, after python-graphblas: a monoid (⊕, its identity) and a multiply op (⊗).

Every builtin semiring has one precise scalar semantics, implemented here in numpy (the reference)
and re-implemented by each GPU backend from the operator names (``add_op``, ``mul_op``):

* ``min``/``max`` based ⊕ over float: the zero is ±inf; over int32/int64 it is INT_MAX/INT_MIN of
  the dtype.
* "guarded" ⊗ (``plus`` or ``times`` under a min/max ⊕): if either operand equals the semiring zero
  the product is the zero (absorbing: ``inf + x = inf``, ``INT_MIN ⊗ x = INT_MIN``). Otherwise the
  float result is IEEE ``a + b`` / ``a * b`` with a NaN result (``-inf * 0``, ``inf + -inf``)
  replaced by the zero; integer ``plus`` saturates to [INT_MIN, INT_MAX] (no wrap-around) and
  integer ``times`` wraps like numpy's multiply (int32 and int64 alike).
* ``plus_times`` is ordinary arithmetic (numpy's: integers wrap, floats IEEE).
* boolean ⊕/⊗ are logical; ``bor``/``bxor``/``band`` are bitwise on unsigned words.

A user-defined :class:`Semiring` carries numpy ufuncs (cpu) plus WGSL and CUDA expressions in the
variables ``a`` and ``b`` that the GPU backends splice into their kernel templates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ._checks import dt_name

__all__ = ["Semiring", "get_semiring", "semiring_names", "SemiringName"]

SemiringName = Literal[
    "plus_times", "min_plus", "tropical_min", "max_plus", "tropical", "min_times", "max_times",
    "min_max", "max_min", "lor_land", "or_and", "lxor_land", "xor_and", "gf2", "bor_band", "bitwise",
    "bxor_band",
]

_FLOATS = ("float32", "float64")
_NUMERIC = ("float32", "float64", "int32", "int64")


@dataclass(frozen=True, eq=False)
class Semiring:
    """A semiring (⊕, ⊗, zero, one) usable on every backend.

    Parameters
    ----------
    name : str
        Registry-style name, e.g. ``"min_plus"``.
    add, mul : numpy ufunc
        ⊕ and ⊗ for the cpu backend. ``add`` must be associative and commutative with identity
        ``zero``; it needs ``.reduce`` (any numpy ufunc has it).
    zero, one : scalar
        Identities of ⊕ and ⊗. For integer dtypes ``±inf`` means the dtype's max/min.
    dtypes : tuple of str
        Accepted dtypes (numpy names).
    wgsl_add, wgsl_mul, cuda_add, cuda_mul : str, optional
        Expressions in ``a`` and ``b`` (of the element type) for the GPU backends, e.g.
        ``"min(a, b)"``. Without them the semiring runs on cpu only.
    selective : bool
        ⊕ always returns one of its operands (min/max): enables ``return_argmax``.

    Shapes:
        not applicable (a semiring is scalar semantics; :func:`pytropical_gpu.matmul` has shapes).

    Examples
    --------
    >>> import numpy as np
    >>> sr = Semiring("max_min_user", np.maximum, np.minimum, -np.inf, np.inf,
    ...               wgsl_add="max(a, b)", wgsl_mul="min(a, b)", selective=True)
    >>> sr.zero_for(np.float32)
    np.float32(-inf)
    """

    name: str
    add: Callable[..., Any]
    mul: Callable[..., Any]
    zero: Any
    one: Any
    dtypes: tuple[str, ...] = ("float32", "float64", "int32", "int64")
    wgsl_add: str | None = None
    wgsl_mul: str | None = None
    cuda_add: str | None = None
    cuda_mul: str | None = None
    selective: bool = False
    # Builtins only: operator names the GPU backends translate (see module docstring).
    add_op: str | None = None
    mul_op: str | None = None
    builtin: bool = False
    aliases: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"Semiring: name must be a str, got {type(self.name).__name__}")
        for arg in ("add", "mul"):
            if not callable(getattr(self, arg)):
                raise TypeError(f"Semiring {self.name!r}: {arg} must be a numpy ufunc or a callable, "
                                f"got {type(getattr(self, arg)).__name__}")
        dts = (self.dtypes,) if isinstance(self.dtypes, (str, type, np.dtype)) else self.dtypes
        try:
            names = tuple(np.dtype(d).name for d in dts)
        except TypeError as e:
            raise TypeError(f"Semiring {self.name!r}: dtypes must be numpy dtype names, got "
                            f"{self.dtypes!r} ({e})") from None
        object.__setattr__(self, "dtypes", names)
        for dt in names:  # the identities must be exact in every dtype the semiring accepts
            for which in ("zero", "one"):
                _exact_scalar(getattr(self, which), np.dtype(dt), f"Semiring {self.name!r}: {which}")

    @property
    def guarded(self) -> bool:
        """True when ⊗ treats the zero as absorbing (min/max ⊕ with plus/times ⊗)."""
        return self.add_op in ("min", "max") and self.mul_op in ("plus", "times")

    def zero_for(self, dtype: Any) -> np.generic:
        """The ⊕ identity as a scalar of ``dtype`` (±inf become the integer extremes)."""
        return _scalar(self.zero, np.dtype(dtype))

    def one_for(self, dtype: Any) -> np.generic:
        """The ⊗ identity as a scalar of ``dtype``."""
        return _scalar(self.one, np.dtype(dtype))

    def check_dtype(self, dtype: Any, where: str = "matmul") -> np.dtype:
        """Return ``dtype`` as np.dtype, or raise TypeError naming the accepted ones."""
        dt = np.dtype(dtype)
        if dt_name(dt) not in self.dtypes:
            raise TypeError(
                f"{where}: semiring {self.name!r} does not accept dtype {dt.name}; "
                f"accepted: {', '.join(self.dtypes)}"
            )
        return dt

    def __repr__(self) -> str:
        return f"Semiring({self.name!r})"


def _scalar(value: Any, dt: np.dtype) -> np.generic:
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if isinstance(value, float) and np.isinf(value):
            return dt.type(info.max if value > 0 else info.min)
        if isinstance(value, bool) and dt.kind == "u":
            return dt.type(info.max if value else 0)
    return dt.type(value)


def _exact_scalar(value: Any, dt: np.dtype, where: str) -> None:
    """Raise ValueError unless ``value`` is exactly representable in ``dt`` (±inf: integer extremes)."""
    if dt.kind not in "iu":
        return
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, float) and np.isinf(value)):
        return
    try:
        ok = float(value) == int(value) and np.iinfo(dt).min <= int(value) <= np.iinfo(dt).max
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        info = np.iinfo(dt)
        raise ValueError(f"{where} {value!r} is not exactly representable in {dt.name} "
                         f"(integers {info.min}..{info.max}, or ±inf for the extremes)")


_REGISTRY: dict[str, Semiring] = {}


def _register(sr: Semiring) -> None:
    _REGISTRY[sr.name] = sr
    for alias in sr.aliases:
        _REGISTRY[alias] = sr


def _builtin(name, add, mul, zero, one, dtypes, add_op, mul_op, aliases=(), selective=False):
    _register(Semiring(name, add, mul, zero, one, dtypes, selective=selective, add_op=add_op,
                       mul_op=mul_op, builtin=True, aliases=tuple(aliases)))


_INF = float("inf")
_builtin("plus_times", np.add, np.multiply, 0, 1, _NUMERIC, "plus", "times")
_builtin("min_plus", np.minimum, np.add, _INF, 0, _NUMERIC, "min", "plus", ["tropical_min"], True)
_builtin("max_plus", np.maximum, np.add, -_INF, 0, _NUMERIC, "max", "plus", ["tropical"], True)
_builtin("min_times", np.minimum, np.multiply, _INF, 1, _NUMERIC, "min", "times", (), True)
_builtin("max_times", np.maximum, np.multiply, -_INF, 1, _NUMERIC, "max", "times", (), True)
_builtin("min_max", np.minimum, np.maximum, _INF, -_INF, _NUMERIC, "min", "max", (), True)
_builtin("max_min", np.maximum, np.minimum, -_INF, _INF, _NUMERIC, "max", "min", (), True)
_builtin("lor_land", np.logical_or, np.logical_and, False, True, ("bool",), "lor", "land", ["or_and"])
_builtin("lxor_land", np.logical_xor, np.logical_and, False, True, ("bool",), "lxor", "land",
         ["xor_and", "gf2"])
_builtin("bor_band", np.bitwise_or, np.bitwise_and, 0, True, ("uint32", "uint64"), "bor", "band",
         ["bitwise"])
_builtin("bxor_band", np.bitwise_xor, np.bitwise_and, 0, True, ("uint32", "uint64"), "bxor", "band")


def strictly_better(sr: Semiring, xp: Any = np):
    """The argmax rule of every backend, elementwise on arrays of module ``xp``: a function
    ``(v, acc)`` true where ``v ⊕ acc == v and v != acc`` (``xp.less`` for min, ``xp.greater``
    for max), so ties keep the smaller k (KERNELS.md rule 3)."""
    if sr.add_op == "min":
        return xp.less
    if sr.add_op == "max":
        return xp.greater
    add = sr.add

    def better(v, acc):
        return (add(v, acc) == v) & (v != acc)
    return better


def semiring_names() -> list[str]:
    """All registered names, aliases included, sorted.

    Returns
    -------
    list of str

    Shapes:
        not applicable.

    Examples
    --------
    >>> "tropical" in semiring_names() and "min_plus" in semiring_names()
    True
    """
    return sorted(_REGISTRY)


def get_semiring(semiring: str | Semiring) -> Semiring:
    """Resolve a name, alias or :class:`Semiring` object.

    Parameters
    ----------
    semiring : str or Semiring
        A registered name or alias (python-graphblas style), or an object (returned as is).

    Returns
    -------
    Semiring

    Raises
    ------
    ValueError
        An unknown name (the message lists the known ones).
    TypeError
        Neither a string nor a Semiring.

    Shapes:
        not applicable.

    Examples
    --------
    >>> get_semiring("tropical").name
    'max_plus'
    """
    if isinstance(semiring, Semiring):
        return semiring
    if not isinstance(semiring, str):
        raise TypeError(f"semiring must be a name or a Semiring, got {type(semiring).__name__}")
    try:
        return _REGISTRY[semiring]
    except KeyError:
        raise ValueError(
            f"unknown semiring {semiring!r}; known: {', '.join(semiring_names())}"
        ) from None
