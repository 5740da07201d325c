"""The buffers of a recorded fast-path operation (:mod:`.fastpath`, :mod:`.fastgemm`): operands
bound in place, results owned at once by a new WgpuArray, and the batch's facts arena slots."""

from __future__ import annotations

import functools
import weakref

from ... import batch, facts
from . import stats
from .array import WgpuArray, _read, _Storage
from .runtime import Binding


def _in_place(eng, xs) -> bool:
    """Every array lives on ``eng`` at an offset the device binds in place (no copy needed)."""
    align = eng.limits.min_storage_offset_alignment
    for x in xs:
        if x._storage.engine is not eng or x.offset % 4 or x.offset % align:
            return False
    return True


def _operand(eng, x) -> Binding:
    """``x``'s buffer bound in place (as :meth:`WgpuArray.device_buffer`), kept alive until the
    recorded commands are submitted; raises as it does for a result of a failed batch."""
    s = x._storage
    if s.error is not None:
        s.check()
    eng._keep.append(s)
    return Binding(s.handle, x.offset, max((x.nbytes + 3) & ~3, 4))


def _result(eng, cap: int, nbytes: int, dt, shape: tuple, reader=None):
    """A result buffer of size class ``cap`` owned at once by a new WgpuArray (what
    :meth:`WgpuArray.adopt` makes of a pool buffer, without the intermediate DeviceBuffer) and its
    binding. Its facts: ``reader``'s (computed on the device beside it), else read when asked."""
    h = eng.pool.take(cap)
    st = _Storage(eng, h, nbytes, cap, pooled=True)
    x = object.__new__(WgpuArray)
    x._storage, x.shape, x.dtype, x.offset = st, shape, dt, 0
    x.stats = facts.Facts.lazy(dt, nbytes // dt.itemsize, reader if reader is not None
                               else functools.partial(_read, st, dt, shape))
    eng.made.append(weakref.ref(st))  # alive until submitted (see WgpuArray.adopt)
    eng._keep.append(st)
    return x, Binding(h, 0, max((nbytes + 3) & ~3, 4))


def _facts_slot(eng, nbytes: int) -> tuple:
    """``(arena, offset)`` for ``nbytes`` of facts words: in this batch's current arena, or a new
    one (each batch starts its own, so a replayed batch binds the same offsets: bind groups hit)."""
    cur = batch.current()
    got = eng.__dict__.get("_facts_arena")
    if got is not None and got[0] is cur:
        at = got[1].slot(nbytes)
        if at is not None:
            return got[1], at
    arena = stats.Arena(eng)
    eng._facts_arena = (cur, arena)
    return arena, arena.slot(nbytes)


__all__: list[str] = []
