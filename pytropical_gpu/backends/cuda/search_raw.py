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


def param_block(table: dict, plan, n: int, keep: int, fill=None) -> tuple:
    """(slots, address of the pointer array) of the ``n``-slot parameter block kept in ``table``
    for ``plan`` and this thread, made (and ``fill(slots, plan)`` run once) where there is none of
    ``n`` slots; ``table`` is emptied when it holds ``keep`` plans. The launches look a kept block
    up themselves (``table[id(plan)]``: (plan, thread-local with ``blk``)) and call this on a miss."""
    tl = table.get(id(plan))
    if tl is None or tl[0] is not plan:
        if len(table) >= keep:
            table.clear()
        tl = table[id(plan)] = (plan, threading.local())
    blk = getattr(tl[1], "blk", None)
    if blk is None or len(blk[0]) != n:
        slots = (ctypes.c_uint64 * n)()
        if fill is not None:
            fill(slots, plan)
        ptrs = (ctypes.c_void_p * n)(*[ctypes.addressof(slots) + 8 * i for i in range(n)])
        blk = tl[1].blk = (slots, ctypes.addressof(ptrs), ptrs)
    return blk


def launch(cp, plan, fn, grid: tuple, block: int, smem: int, stream: int, vals: list) -> bool:
    """Launch ``fn`` on ``grid`` (3 ints) x ``block`` threads with the parameter values ``vals``
    (ints: addresses, or scalars whose slot the kernel reads at its own width), on the block kept
    for ``plan``. False where CuPy has no ``driver.launchKernel`` (the caller launches by CuPy)."""
    go = getattr(cp.cuda.driver, "launchKernel", None)
    if go is None:
        return False
    tl = _blocks.get(id(plan))  # the kept block looked up here: a call less on the hot path
    blk = getattr(tl[1], "blk", None) if tl is not None and tl[0] is plan else None
    if blk is None or len(blk[0]) != len(vals):
        blk = param_block(_blocks, plan, len(vals), KEEP)
    blk[0][:] = vals
    go(fn.ptr, grid[0], grid[1], grid[2], block, 1, 1, smem, stream, blk[1], 0)
    return True


__all__ = ["KEEP", "launch", "param_block"]
