"""Reading several result buffers back with one device read.

A kernel with two outputs (bind's planes, a GEMM's values and argmax) would otherwise wait for the
device twice. Here the outputs are copied on the device into one staging buffer, one after the
other, and read back together: one wait, one map. Outputs too large to share one buffer are read
one by one.
"""

from __future__ import annotations

import numpy as np

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


__all__ = ["download_all"]
