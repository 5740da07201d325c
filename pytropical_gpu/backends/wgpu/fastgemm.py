"""The batch fast path's 2-D GEMM, per call: a *plan* per call signature (issue 13's ≤ 30 µs row).

:mod:`.fastpath` keeps one compiled op record per (semiring, dtype, m, k, n, guard); on top of it a
queued GEMM still re-derived, on every call, what depends only on how it was called: the semiring
from its name, the dtype and shape checks, the key-only checks, the binding sizes, the result's size
class, shape and facts kind. A :class:`_Plan` keeps all of that per (semiring as passed, shapes,
dtypes, the fused-facts setting), in the same per-engine table as the records (so it is dropped with
them: a new runtime, or the table's size cap). What a plan never holds: a buffer, an operand's facts
or the adapter's flushing flag; those are read on every call.

Per call what is left is what depends on the operands: their engine, offsets and validity, their
facts (NaN refused now when known, else queued; the flushing adapter's subnormal rule), the guard
choice, a pool buffer, the result's objects and one Dispatch. The deferred checks of consecutive
fast GEMMs are queued as one :class:`_Group` (the same checks, in the same order, with the same
messages, as one deferred call per product would run).
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ... import batch, facts
from ...facts import Facts
from ...ops.gemm import _no_nan
from ...semirings import Semiring, get_semiring
from . import fastpath as fp
from . import stats
from .array import WgpuArray, _Storage
from .fastbuf import _facts_slot, _operand
from .fastchecks import _quiet, cleared
from .fastrecord import _GEMM_DTYPES, _GemmRecord, _whole, separate
from .runtime import Binding, Dispatch

_new = object.__new__
_tnew = tuple.__new__  # a NamedTuple made without its __new__'s Python frame (same object)
_local = batch._local
#: False: every fast GEMM takes :func:`.fastpath.matmul` (the path before plans; benchmarks compare)
PLANS = True


class _Plan:
    """What a fast GEMM of one call signature needs that does not depend on the operands' data."""

    __slots__ = ("sr", "dt", "base", "m", "k", "n", "abytes", "bbytes", "align", "shape", "float",
                 "guarded", "recs")

    def __init__(self, sr: Semiring, dt, m: int, k: int, n: int, align: int):
        self.sr, self.dt, self.m, self.k, self.n = sr, dt, m, k, n
        self.base = ("mm", sr, dt, m, k, n)
        size = dt.itemsize
        self.abytes, self.bbytes = max((m * k * size + 3) & ~3, 4), max((k * n * size + 3) & ~3, 4)
        self.align, self.shape = math.lcm(4, align), (m, n)
        self.float, self.guarded = dt.kind == "f", sr.guarded
        self.recs: list = [None, None]  # the records without / with the guarded ⊗


def _plan(be, eng, recs: dict, key: tuple, a, b, semiring):
    """The plan of ``key`` (made now, running the key-only checks in the generic path's order), or
    False when the fast path does not cover such calls (kept too: the same answer every time)."""
    plan = False
    dt = a.dtype
    ok = b.dtype == dt and dt in _GEMM_DTYPES and len(a.shape) == 2 and len(b.shape) == 2
    if ok:
        (m, k), (k2, n) = a.shape, b.shape
        ok = k == k2 and m and k and n
    if ok:
        sr = get_semiring(semiring)  # the generic path's first step (same errors)
        if not (sr.builtin and sr.add_op in ("lor", "lxor")):
            base = ("mm", sr, dt, m, k, n)
            if base not in recs:  # the checks that depend only on the key, in the generic order
                be._check_semiring(sr, sr.check_dtype(dt))
                if not _whole(eng, sr, dt, m, k, n):
                    base = None
                else:
                    recs[base] = True
            if base is not None:
                plan = _Plan(sr, dt, m, k, n, eng.limits.min_storage_offset_alignment)
    recs[key] = plan
    return plan


def matmul(be, a, b, semiring, c=None, out=None, return_argmax=False):
    """``be.matmul(a, b, semiring)`` recorded through its plan, or None (take the generic path)."""
    if (c is not None or out is not None or return_argmax or type(a) is not WgpuArray
            or type(b) is not WgpuArray):
        return None
    if not PLANS or (type(semiring) is not str and type(semiring) is not Semiring):  # (may not
        return fp.matmul(be, a, b, semiring, c, out, return_argmax)  # hash): as before plans
    eng = be.engine
    cur = getattr(_local, "batch", None)
    if not fp.ENABLED or cur is None or cur._engine is not eng or eng.recording is None:
        return None
    got = eng.__dict__.get("_fast_records")
    recs = got[1] if got is not None and got[0] is eng.rt else fp.records(eng)
    fused = fp.FUSED_FACTS_GROUPS
    key = ("plan", semiring, a.shape, b.shape, a.dtype, b.dtype, fused)
    plan = recs.get(key)
    if plan is None:
        if len(recs) > fp.MAX_RECORDS:
            recs = fp.records(eng)  # (clears the table)
        plan = _plan(be, eng, recs, key, a, b, semiring)
    if plan is False:
        return None
    sa, sb = a._storage, b._storage
    align = plan.align
    if sa.engine is not eng or sb.engine is not eng or a.offset % align or b.offset % align:
        return None
    fa, fb = a.stats, b.stats
    if not (isinstance(fa, Facts) and isinstance(fb, Facts)):
        return None
    va, vb = fa._v, fb._v
    if plan.float:  # the generic path's data checks (integers have none), in its order
        pa = "nan" not in va and fa.on_device
        pb = "nan" not in vb and fb.on_device
        if not pa:
            _no_nan("a", fa)
        if not pb:
            _no_nan("b", fb)
        if pa or pb:
            _defer(cur, be, plan, fa, fb, pa, pb)
        elif be.flushes_subnormals:
            be._check_operands("matmul", plan.sr, plan.dt, {"a": fa, "b": fb, "c": None})
    # as wgpu.gemm.gemm inside a batch: results' facts not yet read are not waited for
    special = plan.guarded and (not ("nan" in va and "nan" in vb)
                                or facts.guard_needed(plan.sr, plan.dt, fa, fb))
    rec = plan.recs[special]
    if rec is None:
        rec = plan.recs[special] = _record(eng, recs, plan, special, fused)
    if sa.error is not None:  # a result of a failed batch (as _operand)
        sa.check()
    if sb.error is not None:
        sb.check()
    if not rec.fslots:  # the separate facts dispatch: fastpath's general recording
        return separate(eng, rec, (_operand(eng, a), _operand(eng, b)), plan.dt, plan.shape)
    keep = eng._keep
    # the result's facts written by the GEMM itself, a set per workgroup, into the batch's arena
    nf = 32 * rec.fslots
    arena = eng.__dict__.get("_facts_arena")
    at = None
    if arena is not None and arena[0] is cur:
        arena = arena[1]
        at = arena.slot(nf)
    if at is None:
        arena, at = _facts_slot(eng, nf)
    reader = _new(stats.Reader)
    reader.eng, reader.kind, reader.slots, reader.offset, reader.arena = eng, rec.kind, \
        rec.fslots, at, arena
    reader.handle, reader.capacity, reader.values, reader.words = arena.handle, None, None, None
    # the result: a pool buffer owned at once by a new WgpuArray (as fastbuf._result)
    cap, nbytes, dt = rec.cap, rec.nbytes, plan.dt
    h = eng.pool.take(cap)
    st = _Storage(eng, h, nbytes, cap, True)
    d = _new(WgpuArray)
    d._storage, d.shape, d.dtype, d.offset = st, plan.shape, dt, 0
    f = d.stats = _new(Facts)  # Facts.lazy, its fields set directly
    f._x, f._xp, f.dtype, f._v, f._pre, f._reader = None, np, dt, {"size": plan.m * plan.n}, \
        None, reader
    eng.made.append(weakref.ref(st))  # alive until submitted (see WgpuArray.adopt)
    keep += (sa, sb, st, reader)  # (the reader: its arena not recycled before the commands run)
    ba, bb = _tnew(Binding, (sa.handle, a.offset, plan.abytes)), \
        _tnew(Binding, (sb.handle, b.offset, plan.bbytes))
    bd = _tnew(Binding, (h, 0, max((nbytes + 3) & ~3, 4)))
    eng.recording.append(_tnew(Dispatch, (rec.pipe, (ba, bb, bd, _tnew(
        Binding, (arena.handle, at, nf))), rec.groups, rec.params)))
    zs = rec.zs
    if zs is not None:  # the zero-sign gate and pass, in place on D (facts ignore a zero's sign)
        eng.recording += zs.dispatches(ba, bb, bd)
    counts = eng.stats
    counts["recorded"] = counts.get("recorded", 0) + 1
    counts["fast_calls"] = counts.get("fast_calls", 0) + 1
    return d


def _record(eng, recs: dict, plan: _Plan, special: bool, fused: int):
    """The compiled op record of ``plan`` with this guard choice (shared through the table)."""
    key = plan.base + (special, fused)
    rec = recs.get(key)
    if rec is None:
        rec = recs[key] = _GemmRecord(eng, plan.sr, plan.dt, plan.m, plan.k, plan.n, special,
                                      fused)
        eng.count("fast_records")
    return rec


# ---------------------------------------------------------------------- deferred checks
class _Group:
    """The deferred checks of consecutive fast GEMMs of one (backend, semiring, dtype, flushing
    rule), run at the batch's end as :func:`.fastchecks._deferred` runs each: a's NaN (if it was
    pending), b's, then the flushing adapter's operand rule; the first failure raises."""

    __slots__ = ("be", "sr", "dt", "flushing", "items")

    def __init__(self, be, sr, dt, flushing: bool):
        self.be, self.sr, self.dt, self.flushing, self.items = be, sr, dt, flushing, []

    def __call__(self) -> None:
        be, sr, dt, flushing = self.be, self.sr, self.dt, self.flushing
        screen = flushing and sr.builtin
        items = self.items
        if stats.WORDS and (screen or not flushing):  # the items that cannot raise, at once
            ok = cleared(items, flushing)
            if ok is not None:
                items = [it for it, c in zip(items, ok) if not c]
        for fa, fb, la, lb in items:  # (``f.nan`` read from its dict: the same value)
            if la and (fa._v if "nan" in fa._v else fa._group("nan"))["nan"]:
                _no_nan("a", fa)
            if lb and (fb._v if "nan" in fb._v else fb._group("nan"))["nan"]:
                _no_nan("b", fb)
            if flushing and not (screen and _quiet(fa) and _quiet(fb)):
                got = be._flush_rule("matmul", sr, dt, {"a": fa, "b": fb})
                if got is not None:
                    raise got[0](got[1])


def _defer(cur, be, plan: _Plan, fa, fb, pa: bool, pb: bool) -> None:
    """Queue this product's checks at the batch's end (into the last group when it matches), with
    its pending facts (read with the batch's one facts read), as :func:`pytropical_gpu.batch.defer`."""
    flushing = be.flushes_subnormals
    checks = cur.checks
    g = checks[-1] if checks else None
    if type(g) is not _Group or g.be is not be or g.sr is not plan.sr or g.dt is not plan.dt \
            or g.flushing != flushing:
        g = _Group(be, plan.sr, plan.dt, flushing)
        checks.append(g)
    g.items.append((fa, fb, pa, pb))
    for p, f in ((pa, fa), (pb, fb)):
        if p:
            if f._reader is None:
                f.start()
            cur.facts.append(f)


__all__ = ["PLANS", "matmul"]
