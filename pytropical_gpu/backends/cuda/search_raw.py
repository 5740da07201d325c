"""Kernel launches through the driver's ``cuLaunchKernel`` on a parameter block kept per launch
plan and thread, for the search launches whose host time comes before the device starts (CuPy's
argument packing costs ~1 us a scalar there): one 8-byte slot a kernel parameter (a pointer, an
int64, or an int32 in the slot's low bytes on these little-endian hosts), rewritten at each call.
"""

from __future__ import annotations

import ctypes
import threading

#: parameter blocks kept (the table is emptied when it reaches this many plans).
KEEP = 256
_blocks: dict[int, tuple] = {}


def launch(cp, plan, fn, grid: tuple, block: int, smem: int, stream: int, vals: list) -> bool:
    """Launch ``fn`` on ``grid`` (3 ints) x ``block`` threads with the parameter values ``vals``
    (ints: addresses, or scalars whose slot the kernel reads at its own width), on the block kept
    for ``plan``. False where CuPy has no ``driver.launchKernel`` (the caller launches by CuPy)."""
    go = getattr(cp.cuda.driver, "launchKernel", None)
    if go is None:
        return False
    tl = _blocks.get(id(plan))
    if tl is None or tl[0] is not plan:
        if len(_blocks) >= KEEP:
            _blocks.clear()
        tl = _blocks[id(plan)] = (plan, threading.local())
    blk = getattr(tl[1], "blk", None)
    if blk is None or len(blk[0]) != len(vals):
        slots = (ctypes.c_uint64 * len(vals))()
        ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(slots) + 8 * i
                                               for i in range(len(vals))])
        blk = tl[1].blk = (slots, ptrs, ctypes.addressof(ptrs))
    blk[0][:] = vals
    go(fn.ptr, grid[0], grid[1], grid[2], block, 1, 1, smem, stream, blk[2], 0)
    return True


__all__ = ["KEEP", "launch"]
