"""Recording fast path: small operations on resident operands inside a wgpu batch (issue 13).

Inside ``with ctx.batch():`` a ``bind`` of two resident TernaryVecs, or a 2-D ``matmul`` of two
resident WgpuArrays, records one dispatch; what the generic path spends on the way there (the
operation layer's normalisation, the shape planner, the kernel choice, the pipeline key, dispatch
grids and uniform bytes) depends only on the operation, the shapes, the dtype and the semiring, so
it is worked out once into a *compiled op record* kept per engine and reused by every later call
with the same key (a GEMM's call reaches it through :mod:`.fastgemm`'s plan per call signature).
A call the record does not cover (host or mixed operands, broadcasting, views
the device cannot bind in place, ``c``/``out``/``return_argmax``, work beyond one binding, no batch
open on this thread) returns None and takes the generic path, unchanged.

Checks are not skipped: those that depend only on the key (dtype against semiring and backend)
run when the record is made, exactly as the generic path runs them; those that depend on the data
(NaN in a float operand, the subnormal rule of a flushing adapter, the guard on ⊗) run on every
call from the operands' facts, through the same functions (queued to the batch's end when a fact
is a device fact not yet known). A result's contents are bit-identical: the same pipeline, the
same bindings, the same grid and uniforms as the generic path's.

The jobs live in small modules: :mod:`.fastbuf` (operand and result buffers, the facts arena),
:mod:`.fastrecord` (a GEMM's compiled op record, the separate facts dispatch) and
:mod:`.fastchecks` (the data checks). The switches below stay here: the code reads them through
this module (tests and benchmarks set them here).
"""

from __future__ import annotations

import math

from ... import batch, facts
from ...semirings import get_semiring
from ...types import TernaryVec
from . import stats
from . import vsa as _vsa
from .array import WgpuArray
from .fastbuf import _facts_slot, _in_place, _operand, _result
from .fastchecks import _checks
from .fastrecord import _GEMM_DTYPES, _U32, _GemmRecord, _whole, separate
from .runtime import Binding, Dispatch

#: False: every call takes the generic path (benchmarks compare the two in one run)
ENABLED = True
#: records kept per engine before the table is cleared (shapes of a sweep would pile up)
MAX_RECORDS = 256
#: a tiled GEMM of at most this many workgroups computes its result's facts in its own epilogue
#: (``FACTS`` in ``wgsl/gemm_tiled.wgsl``: one dispatch instead of two); 0: the separate facts pass
FUSED_FACTS_GROUPS = 64


def records(eng) -> dict:
    """The engine's compiled op records (emptied when its runtime changes, e.g. in a forked child)."""
    got = eng.__dict__.get("_fast_records")
    if got is None or got[0] is not eng.rt:
        got = eng._fast_records = (eng.rt, {})
    if len(got[1]) > MAX_RECORDS:
        got[1].clear()
    return got[1]


def _recording(eng) -> bool:
    """A batch is open on this thread and records on ``eng`` (its lock is held by this thread)."""
    cur = batch.current()
    return ENABLED and cur is not None and cur._engine is eng and eng.recording is not None


# ---------------------------------------------------------------------- bind
def bind(be, a, b):
    """``be.bind(a, b)`` recorded through a compiled op record, or None (take the generic path)."""
    eng = be.engine
    if type(a) is not TernaryVec or type(b) is not TernaryVec or not _recording(eng):
        return None
    planes = (a.pos, a.neg, b.pos, b.neg)
    shape = a.pos.shape
    for x in planes:
        if type(x) is not WgpuArray or x.shape != shape or (x.dtype is not _U32
                                                             and x.dtype != _U32):
            return None
    if a.dim != b.dim or not _in_place(eng, planes):
        return None
    recs = records(eng)
    key = ("bind", shape)
    rec = recs.get(key)
    if rec is None:
        total = math.prod(shape)
        if total == 0 or total * 4 > eng.max_binding:  # empty, or run in chunks: generic
            return None
        d = _vsa.elementwise_dispatch(eng, "bind", 0, total, ())  # the generic path's kernel
        rec = recs[key] = (d.pipeline, d.groups, d.params, total * 4, eng.pool._class(total * 4))
        eng.count("fast_records")
    pipe, groups, params, nbytes, cap = rec
    keep = eng._keep
    binds = []
    for x in planes:  # _operand, inlined: every plane is nbytes long (a u32 plane of this shape)
        s = x._storage
        if s.error is not None:
            s.check()
        keep.append(s)
        binds.append(Binding(s.handle, x.offset, nbytes))
    p, bp = _result(eng, cap, nbytes, _U32, shape)
    n, bn = _result(eng, cap, nbytes, _U32, shape)
    binds += (bp, bn)
    eng.submit((Dispatch(pipe, binds, groups, params),))
    eng.count("fast_calls")
    return TernaryVec._trusted(p, n, a.dim)


# ---------------------------------------------------------------------- matmul
def matmul(be, a, b, semiring, c=None, out=None, return_argmax=False):
    """``be.matmul(a, b, semiring)`` recorded through a compiled op record, or None (generic)."""
    eng = be.engine
    if (c is not None or out is not None or return_argmax or type(a) is not WgpuArray
            or type(b) is not WgpuArray or not _recording(eng)):
        return None
    dt = a.dtype
    if b.dtype != dt or dt not in _GEMM_DTYPES or len(a.shape) != 2 or len(b.shape) != 2:
        return None
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2 or not (m and k and n) or not _in_place(eng, (a, b)):
        return None
    fa, fb = a.stats, b.stats
    if not (isinstance(fa, facts.Facts) and isinstance(fb, facts.Facts)):
        return None
    sr = get_semiring(semiring)  # the generic path's first step (same errors)
    if sr.builtin and sr.add_op in ("lor", "lxor"):
        return None
    recs = records(eng)
    base = ("mm", sr, dt, m, k, n)
    if base not in recs:  # the checks that depend only on the key, in the generic path's order
        be._check_semiring(sr, sr.check_dtype(dt))
        if not _whole(eng, sr, dt, m, k, n):
            return None
        recs[base] = True
    _checks(be, sr, dt, fa, fb)
    # as wgpu.gemm.gemm inside a batch: results' facts not yet read are not waited for
    special = (sr.guarded and not (fa.computed and fb.computed)) \
        or facts.guard_needed(sr, dt, fa, fb)
    key = base + (special, FUSED_FACTS_GROUPS)
    rec = recs.get(key)
    if rec is None:
        rec = recs[key] = _GemmRecord(eng, sr, dt, m, k, n, special, FUSED_FACTS_GROUPS)
        eng.count("fast_records")
    binds = (_operand(eng, a), _operand(eng, b))
    reader = None
    if rec.fslots:  # the result's facts written by the GEMM itself, a set per workgroup
        nf = 32 * rec.fslots
        arena, at = _facts_slot(eng, nf)
        reader = stats.Reader(eng, None, rec.kind, rec.fslots, arena, at)
        eng._keep.append(reader)  # (its arena) not recycled before the recorded commands run
        d, bd = _result(eng, rec.cap, rec.nbytes, dt, (m, n), reader)
        cmds = [Dispatch(rec.pipe, binds + (bd, Binding(reader.handle, at, nf)), rec.groups,
                         rec.params)]
        if rec.zs is not None:  # the zero-sign gate and pass, in place on D (facts ignore its sign)
            cmds += rec.zs.dispatches(*binds, bd)
        eng.submit(cmds)
        eng.count("fast_calls")
        return d
    return separate(eng, rec, binds, dt, (m, n))


__all__ = ["ENABLED", "FUSED_FACTS_GROUPS", "MAX_RECORDS", "bind", "matmul", "records"]
