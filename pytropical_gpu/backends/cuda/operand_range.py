"""The range facts of a float cupy operand in one read (``cuda/operand_range.cu``), for
:mod:`pytropical_gpu.facts`: the least and greatest value, NaN, and whether a -0 or any value with its
sign bit set occurs. Two CuPy reductions (``x.min()``, ``x.max()``) read the operand twice and say
nothing of -0; the sign facts let the cuda backend skip the zero-sign pass where no zero term can be
-0 (:func:`pytropical_gpu.zero_order.no_negative_zero`).
"""

from __future__ import annotations

import struct

import numpy as np

from . import kernels

SPEC = kernels.ModuleSpec("operand_range", "operand_range.cu", {
    "range_float32": "ptg::operand_range<float>", "range_float64": "ptg::operand_range<double>"})
#: threads a block (cuda/operand_range.cu reduces 8 warps), most blocks (grid-stride beyond)
THREADS, MAX_BLOCKS = 256, 1056
#: dtype -> (role, struct format of its bits, of the float): looked up by the dtype object, as
#: ``dtype.name`` costs microseconds a call in numpy 2 and the facts run on every matmul
_ROLE = {np.dtype(np.float32): ("range_float32", "<I", "<f"),
         np.dtype(np.float64): ("range_float64", "<Q", "<d")}


def applies(x) -> bool:
    """Whether :func:`keys` takes ``x``: a C-contiguous float32 / float64 cupy array."""
    return x.dtype in _ROLE and x.flags.c_contiguous


def keys(x):
    """A device uint64[3]: ~(the least key), the greatest key, the flags (bit 0 NaN, bit 1 -0, bit 2
    a sign bit), queued on the current stream without waiting; read it with :func:`decode`."""
    import cupy as cp

    out = cp.zeros(3, np.uint64)
    if x.size:
        blocks = min(MAX_BLOCKS, -(-x.size // THREADS))
        kernels.function(SPEC, _ROLE[x.dtype][0])((blocks,), (THREADS,), (x, np.int64(x.size), out))
    return out


def _value(key: int, dt: np.dtype) -> float:
    """The float whose order-preserving key (cuda/operand_range.cu) is ``key``."""
    _, ufmt, ffmt = _ROLE[dt]
    bits = 8 * dt.itemsize
    sign = 1 << (bits - 1)
    u = key & ~sign if key & sign else ~key & ((1 << bits) - 1)
    return struct.unpack(ffmt, struct.pack(ufmt, u))[0]


def decode(vec, dt) -> dict:
    """The facts in :func:`keys`' vector (on the host): lo and hi (None where every value is NaN),
    nan, negzero, signbit."""
    dt = np.dtype(dt)
    inv_lo, hi, flags = (int(v) for v in np.asarray(vec).tolist())
    some = inv_lo != 0
    return {"lo": _value(~inv_lo & ((1 << 64) - 1), dt) if some else None,
            "hi": _value(hi, dt) if some else None, "nan": bool(flags & 1),
            "negzero": bool(flags & 2), "signbit": bool(flags & 4)}


__all__ = ["SPEC", "applies", "decode", "keys"]
