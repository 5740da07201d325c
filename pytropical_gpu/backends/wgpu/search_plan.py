"""Search over a resident memory through a cached plan: one write, one submit, one small read.

A program that searches the same resident memory again and again (VSA clean-up) would otherwise pay,
per call, the pipeline look-ups, the grid and uniform arithmetic, pool traffic for the scores and
candidate buffers, two query uploads, and a read-back that creates a mappable buffer and waits
through wgpu-py's poll thread. Everything that depends only on (memory planes, Q, k, the pass-one
constants) is worked out once into a :class:`_Plan` kept per engine: the pipelines, the scratch
buffers (taken from the pool, kept while the memory lives), the command list. A call then writes
the query planes with one ``write_buffer`` (or binds a resident query in place), submits the
plan's commands with the (score, index) pairs copied into a recycled mappable buffer at the end of
the same command buffer (:mod:`.mapread`), and reads those ``2 * Q * k`` words back.

The commands are those of the generic path (:func:`.vsa_search.commands`): the same pipelines,
grids and uniforms, so the results are bit-identical. Anything the plan does not cover (a host
memory, views the device cannot bind in place, a memory or query block beyond one chunk, a batch
recording) returns None and takes the generic path.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict

import numpy as np

from . import mapread, recorded
from . import vsa_search as _vs
from .array import WgpuArray
from .pool import DeviceBuffer
from .runtime import Binding, Copy

#: False: every search takes the generic path (benchmarks time both in one run)
ENABLED = True
#: False: a plan's commands go through ``rt.submit`` (bind groups made per call) instead of
#: :mod:`.recorded` (bind groups and uniforms made once)
RECORD = True
#: plans kept per engine (each holds its scratch: Q x M x 4 bytes of scores and the candidates)
MAX_PLANS = 4


class _Plan:
    """The commands of one (memory, Q, k) search and the buffers they use."""

    def __init__(self, eng, bp, bn, q: int, w: int, k: int):
        m = bp.shape[0]
        pipes, qb, br, mrows, qrows = _vs.layout(eng, q, m, w, k)
        self.ok = q <= qrows and m <= mrows
        # when the memory dies its plan can never run again: the scratch goes back at once (the
        # pool takes handles back through a deque, safe from a collector's callback) instead of
        # staying live until the plan is looked up again or evicted
        self.refs = (weakref.ref(bp._storage, self._memory_died),
                     weakref.ref(bn._storage, self._memory_died))
        self.taken: list[DeviceBuffer] = []
        self.pool = eng.pool
        self.staging = self.rec = None
        if not self.ok:
            return
        align = eng.limits.min_storage_offset_alignment
        self.qbytes = q * w * 4
        self.qoff = -(-self.qbytes // align) * align  # the neg plane's offset in the query buffer
        self.qbuf = self._take(self.qoff + self.qbytes)
        self.host = np.zeros(self.qoff + self.qbytes, np.uint8)  # both planes, one write
        # the two planes' places in it, made once (a call copies each query plane in with one
        # assignment instead of making four views of it)
        self.hq = (self.host[:self.qbytes].view(np.uint32).reshape(q, w),
                   self.host[self.qoff:].view(np.uint32).reshape(q, w))
        mem = [Binding(x._storage.handle, x.offset, max(x.nbytes, 4)) for x in (bp, bn)]
        self.qbinds = [self.qbuf.binding(0, self.qbytes), self.qbuf.binding(self.qoff, self.qbytes)]
        self.cmds, _, cur = _vs.commands(eng, pipes, self.qbinds + mem, q, 0, m, w, k, qb, br,
                                        self._take)
        self.pairs = q * k * 4  # bytes of the scores, then of the indices
        self.staging = mapread.staging(eng.rt, 2 * self.pairs)
        if self.staging is not None:
            dst = self.staging.handle
        else:  # another runtime: a pool buffer read through the runtime
            self.out = self._take(2 * self.pairs)
            dst = self.out.handle
        self.cmds += [Copy(cur[0].handle, 0, dst, 0, self.pairs),
                      Copy(cur[1].handle, 0, dst, self.pairs, self.pairs)]
        self.shape = (2, q, k)
        self.rec = recorded.record(eng.rt, self.cmds) if RECORD else None

    def _take(self, nbytes: int) -> DeviceBuffer:
        cap = self.pool._class(nbytes)
        buf = DeviceBuffer(self.pool.take(cap), int(nbytes), cap)
        self.taken.append(buf)
        return buf

    def _memory_died(self, _ref) -> None:
        taken, self.taken = self.taken, []
        for b in taken:
            self.pool.returned.append((b.capacity, b.handle))

    def alive(self, sb, sn) -> bool:
        """The plan was made for these storages (not for dead ones whose ids were reused)."""
        return self.refs[0]() is sb and self.refs[1]() is sn

    def run(self, eng, ap, an):
        """(idx int64 (Q, k), scores int64 (Q, k)) of the host or resident query planes."""
        cmds, first = self.cmds, None
        if type(ap) is WgpuArray:  # a resident query bound in place: the first dispatch changes
            d = cmds[0]
            b = [Binding(x._storage.handle, x.offset, max(x.nbytes, 4)) for x in (ap, an)]
            first = (*b, *d.bindings[2:])
            cmds = [type(d)(d.pipeline, first, d.groups, d.params)] + cmds[1:]
        else:
            h, (hp, hn) = self.host, self.hq
            hp[...] = ap  # (q, w) uint32 planes (the kernel contract): no cast
            hn[...] = an
            if self.rec is not None:
                self.rec.write(self.qbuf.handle, h)
            else:
                eng.rt.write(self.qbuf.handle, h)
        if self.rec is not None:
            self.rec.submit(first)
        else:
            eng.rt.submit(cmds)
        if self.staging is not None:
            raw = self.staging.read(2 * self.pairs)
        else:
            raw = np.frombuffer(eng.rt.read(self.out.handle, 0, 2 * self.pairs), np.uint8)
        both = raw.view(np.uint32).reshape(self.shape)
        return both[1].astype(np.int64), both[0].view(np.int32).astype(np.int64)

    def close(self) -> None:
        """Give the scratch back to the pool and free the staging buffer."""
        for b in self.taken:
            self.pool.returned.append((b.capacity, b.handle))
        self.taken = []
        if self.rec is not None:
            self.rec.close()
            self.rec = None
        if self.staging is not None:
            self.staging.destroy()
            self.staging = None


def plans(eng) -> OrderedDict:
    """The engine's plans, least recently used first (emptied when its runtime changes)."""
    got = eng.__dict__.get("_search_plans")
    if got is None or got[0] is not eng.rt:
        got = eng._search_plans = (eng.rt, OrderedDict())
    return got[1]


def _bindable(eng, x) -> bool:
    s = getattr(x, "_storage", None)
    return (type(x) is WgpuArray and s.engine is eng and x.offset % 4 == 0
            and x.offset % eng.limits.min_storage_offset_alignment == 0)


def search(eng, ap, an, bp, bn, k: int):
    """``vsa_search.search`` through a cached plan, or None (the generic path runs)."""
    if eng.recording is not None or type(bp) is not WgpuArray or type(bn) is not WgpuArray:
        return None
    sb, sn = bp._storage, bn._storage
    key = (id(sb), bp.offset, id(sn), bn.offset, bp.shape[0], ap.shape, k, _vs.SEARCH_QB,
           _vs.SEARCH_LANES, _vs.SEARCH_ROWS, _vs.SEARCH_ONE, _vs.SEARCH_RPT, _vs.SEARCH_RPT_LAST)
    table = plans(eng)
    plan = table.get(key)
    if plan is None or not plan.alive(sb, sn):
        if plan is not None:
            table.pop(key).close()
        if not (_bindable(eng, bp) and _bindable(eng, bn)):
            return None
        plan = table[key] = _Plan(eng, bp, bn, ap.shape[0], ap.shape[1], k)
        eng.count("search_plans")
        while len(table) > MAX_PLANS:
            table.popitem(last=False)[1].close()
    else:
        table.move_to_end(key)
    if not plan.ok:
        return None
    if type(ap) is WgpuArray:
        if not (_bindable(eng, ap) and _bindable(eng, an)):
            return None
        ap._storage.check(), an._storage.check()
    sb.check(), sn.check()
    eng.count("search_planned")
    return plan.run(eng, ap, an)


def clear(eng) -> None:
    """Drop every plan of ``eng`` (their scratch goes back to the pool)."""
    table = plans(eng)
    while table:
        table.popitem()[1].close()


__all__ = ["ENABLED", "MAX_PLANS", "clear", "plans", "search"]
