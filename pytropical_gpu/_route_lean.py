"""The lean routing path: host (numpy) operands on the cpu side of the route table, decided in a few
hundred nanoseconds.

On the H200 the smallest cpu calls take 10-20 us (a bind of 512 trits: 11 us), so a router costing
1.5-3 us per call cannot stay within 10% of them. Most small calls have numpy operands and go to
cpu, and for those one comparison decides: per route key, the size below which the table says cpu
(:func:`cpu_cuts`, rebuilt whenever the table or the GPU changes, so a new calibration changes the
decisions at once). :func:`lean_size` reads a call's route key and size off its operands only when
they are exactly the plain kinds (numpy arrays, TernaryVec / SoftTernaryVec of numpy planes); any
other call (resident data, lists, torch, wrong types, odd shapes) returns None and takes the full
path (:meth:`pytropical_gpu._route_decide.Decide._backend_for`), which decides the same way.
Nothing here validates: the operation does that, as on the full path, so bad input raises the same
errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .thresholds import NEVER
from .types import SoftTernaryVec, TernaryVec

_nd = np.ndarray


def _int_key(dtype: np.dtype) -> str:
    """``matmul_int`` for the integer GEMM dtypes (int32/int64/uint32/uint64: kind i or u, 4 or 8
    bytes, as ``thresholds.INT_DTYPES``), else ``matmul``."""
    return "matmul_int" if dtype.kind in "iu" and dtype.itemsize >= 4 else "matmul"


def _matmul(ops: tuple) -> tuple[str, int] | None:
    a, b = ops[0], ops[1]
    c = ops[2] if len(ops) > 2 else None
    if type(a) is not _nd or type(b) is not _nd or (c is not None and type(c) is not _nd):
        return None
    sa, sb = a.shape, b.shape
    if len(sa) != 2 or len(sb) != 2:
        return None
    return _int_key(a.dtype), sa[0] * sa[1] * sb[1]


def _andor(ops: tuple) -> tuple[str, int] | None:
    a, b = ops
    if type(a) is not _nd or type(b) is not _nd or a.ndim != 2 or b.ndim != 2:
        return None
    sa, sb = a.shape, b.shape
    return "andor_matmul", sa[0] * sb[1] * max(sa[1], 1) // 32


def _pack(ops: tuple) -> tuple[str, int] | None:
    x = ops[0]
    return ("pack", x.size) if type(x) is _nd else None


def _soft(key: str):
    def size(ops: tuple) -> tuple[str, int] | None:
        s = ops[0]
        if type(s) is not SoftTernaryVec or type(s.sign) is not _nd:
            return None
        return key, s.sign.size * s.bits
    return size


def _vsa(key: str):
    def size(ops: tuple) -> tuple[str, int] | None:
        n = 0
        for v in ops:
            if type(v) is not TernaryVec or type(v.pos) is not _nd:
                return None
            n += v.pos.size
        return key, n
    return size


#: op (as backend_for receives it) -> operands -> (route key, size), or None: not a plain call
SIZE = {"matmul": _matmul, "andor_matmul": _andor, "pack_rows": _pack, "pack_cols": _pack,
         "accumulate": _soft("accumulate"), "harden": _soft("harden"),
         **{op: _vsa(key) for op, key in (("bind", "bind"), ("unbind", "bind"), ("bundle", "bundle"),
                                          ("multiset", "bundle"), ("permute", "permute"),
                                          ("dot", "dot"), ("cosine", "cosine"), ("search", "search"))}}


def lean_size(op: str, operands: tuple) -> tuple[str, int] | None:
    """(route key, size) of a call whose operands are all plain host data, else None."""
    f = SIZE.get(op)
    return None if f is None else f(operands)


def cpu_cuts(table: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] | None,
             keys: Any) -> dict[str, int]:
    """Route key -> the size below which ``table`` runs it on cpu (0: a GPU from the start;
    :data:`NEVER`: cpu everywhere). ``table`` None: no GPU, cpu everywhere."""
    if table is None:
        return dict.fromkeys(keys, NEVER)
    cuts = {}
    for key, (starts, names) in table.items():
        if names[0] != "cpu":
            cuts[key] = 0
        else:
            cuts[key] = starts[1] if len(starts) > 1 else NEVER
    return cuts


__all__ = ["SIZE", "cpu_cuts", "lean_size"]
