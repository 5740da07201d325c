"""Reading several result buffers back with one device read.

A kernel with two outputs (bind's planes, a GEMM's values and argmax) would otherwise wait for the
device twice. Here the outputs are copied on the device into one staging buffer, one after the
other, and read back together: one wait, one map. Outputs too large to share one buffer are read
one by one. :func:`finish` instead leaves them on the device when the operands were resident.
"""

from __future__ import annotations

import numpy as np

from .array import WgpuArray
from .engine import Engine
from .pool import DeviceBuffer


def _round8(n: int) -> int:
    return (int(n) + 7) & ~7  # each output starts 8-byte aligned: numpy views stay aligned


def download_all(eng: Engine, *items: tuple[DeviceBuffer, object, tuple]) -> list[np.ndarray]:
    """``[eng.download(buf, dtype, shape) for ...]`` with one read for all of them."""
    sizes = [int(np.prod(shape, dtype=np.int64)) * np.dtype(dt).itemsize for _, dt, shape in items]
    total = sum(_round8(n) for n in sizes)
    if len(items) < 2 or total > eng.limits.max_buffer_size:
        return [eng.download(buf, dt, shape) for buf, dt, shape in items]
    stage = eng.alloc(total)
    cmds, off = [], 0
    for (buf, _, _), n in zip(items, sizes):
        if n:
            cmds.append(eng.copy(buf, stage, n, dst_offset=off))
        off += _round8(n)
    eng.submit(cmds)
    raw = eng.download(stage, np.uint8, (total,))
    eng.release(stage)
    out, off = [], 0
    for (_, dt, shape), n in zip(items, sizes):
        out.append(raw[off:off + n].view(np.dtype(dt)).reshape(shape))
        off += _round8(n)
    return out


def resident(*xs) -> bool:
    """Whether an operation on these operands leaves its results on the device (any is resident)."""
    return any(isinstance(x, WgpuArray) for x in xs)


def finish(eng: Engine, keep: bool, *items: tuple[DeviceBuffer, object, tuple]) -> list:
    """The outputs of one operation: left on the device as WgpuArrays (``keep``: no read, no wait)
    or downloaded together (:func:`download_all`)."""
    if keep:
        return [WgpuArray.adopt(eng, buf, dt, shape) for buf, dt, shape in items]
    return download_all(eng, *items)


def upload_result(eng: Engine, keep: bool, x):
    """A result computed in pieces on the host side: back on the device when it should be resident."""
    return WgpuArray.from_numpy(x, eng) if keep else x


__all__ = ["download_all", "finish", "resident", "upload_result"]
