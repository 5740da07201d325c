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
"""

from __future__ import annotations

import functools
import math
import weakref

import numpy as np

from ... import batch, facts
from ...ops.gemm import _no_nan
from ...semirings import get_semiring
from ...types import TernaryVec
from . import gemm as _gemm
from . import stats
from . import vsa as _vsa
from .array import WgpuArray, _read, _Storage
from .engine import WG, pack_params
from .runtime import Binding, Dispatch

_U32 = np.dtype(np.uint32)
_GEMM_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.int32), _U32})
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
class _GemmRecord:
    """What a 2-D GEMM of one (semiring, dtype, m, k, n, guard) records: pipeline, grid, uniforms,
    result bytes, and the facts reduction's pipeline, grid and uniforms."""

    __slots__ = ("pipe", "groups", "params", "nbytes", "cap", "kind", "fpipe", "fgroups",
                 "fparams", "fone", "fslots")

    def __init__(self, eng, sr, dt, m: int, k: int, n: int, special: bool):
        code = _gemm.semiring_code(sr, dt, special)
        kname, kp = _gemm.choose_kernel(m, n, k, False, eng.limits.max_workgroup_storage)
        self.kind = stats.KINDS.get(dt.name)
        self.fslots = 0  # > 0: the GEMM's epilogue writes its facts, one set per workgroup
        if kname == "gemm_tiled" and self.kind is not None and not kp.get("SK"):
            ng = -(-m // kp["BM"]) * -(-n // kp["BN"])
            if ng <= FUSED_FACTS_GROUPS:
                self.fslots = ng
                kp = dict(kp, FACTS=True, FKIND=self.kind)
        self.pipe = eng.pipeline(kname, _key=(kname, code, tuple(kp.items()), False),
                                 **code.params(), **kp, HAS_C=False)
        d = _gemm.make_dispatch(eng, self.pipe, kname, kp, (), m, n, k, 1, 0, 0, 0)
        self.groups, self.params = d.groups, d.params
        self.nbytes = m * n * dt.itemsize
        self.cap = eng.pool._class(self.nbytes)
        size = m * n
        if self.kind is not None and not self.fslots:  # as stats.record
            ng = min(-(-size // (WG * stats.ONE_GROUP_ITEMS)), stats.MAX_GROUPS)
            self.fone = ng == 1
            self.fpipe = eng.pipeline("facts", _key=("facts", self.kind, self.fone), KIND=self.kind,
                                      ONE=self.fone, WG=WG)
            gx, gy, _ = eng.grid(ng)
            self.fgroups, self.fparams = (gx, gy, 1), pack_params(size, gx, 0, 0)


def _checks(be, sr, dt, fa, fb) -> None:
    """The generic path's data checks (ops.gemm.matmul's NaN refusal, then the backend's operand
    rule on a flushing adapter; neither applies to integers), in its order: each now when its facts
    are known, else at the batch's end — there as one deferred call per product (the generic path
    queues one per check: the same checks in the same order)."""
    if dt.kind != "f":
        return
    flushing = be.flushes_subnormals
    pend = [f for f in (fa, fb) if not f.computed and f.on_device]
    later = []
    for name, f in (("a", fa), ("b", fb)):
        if any(f is g for g in pend):
            later.append((name, f))
        else:
            _no_nan(name, f)
    if not pend:
        if flushing:
            be._check_operands("matmul", sr, dt, {"a": fa, "b": fb, "c": None})
        return
    batch.defer(functools.partial(_deferred, be, sr, dt, fa, fb, later, flushing), *pend)


def _deferred(be, sr, dt, fa, fb, later, flushing) -> None:
    for name, f in later:
        _no_nan(name, f)
    if flushing:  # the operand rule, as WgpuBackend._check_operands runs it
        got = be._flush_rule("matmul", sr, dt, {"a": fa, "b": fb})
        if got is not None:
            raise got[0](got[1])


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


def _whole(eng, sr, dt, m: int, k: int, n: int) -> bool:
    """One dispatch covers the product (what the generic path calls ``whole``)."""
    kname, kp = _gemm.choose_kernel(m, n, k, False, eng.limits.max_workgroup_storage)
    wmax = eng.limits.max_workgroups_per_dim
    ok = max(m * k, k * n, m * n) * dt.itemsize <= eng.max_binding
    if kname == "gemm_tiled":
        ok = ok and -(-m // kp["BM"]) <= wmax and -(-n // kp["BN"]) <= wmax
    return ok


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
        rec = recs[key] = _GemmRecord(eng, sr, dt, m, k, n, special)
        eng.count("fast_records")
    binds = (_operand(eng, a), _operand(eng, b))
    reader = None
    if rec.fslots:  # the result's facts written by the GEMM itself, a set per workgroup
        nf = 32 * rec.fslots
        arena, at = _facts_slot(eng, nf)
        reader = stats.Reader(eng, None, rec.kind, rec.fslots, arena, at)
        eng._keep.append(reader)  # (its arena) not recycled before the recorded commands run
        d, bd = _result(eng, rec.cap, rec.nbytes, dt, (m, n), reader)
        eng.submit((Dispatch(rec.pipe, binds + (bd, Binding(reader.handle, at, nf)), rec.groups,
                             rec.params),))
        eng.count("fast_calls")
        return d
    return separate(eng, rec, binds, dt, (m, n))


def separate(eng, rec, binds, dt, shape):
    """Queue ``rec``'s GEMM on ``binds`` with the result's facts computed by a second dispatch
    beside it (as stats.record; none for a result without facts); the result."""
    reader = None
    if rec.kind is not None:
        st = eng.pool.acquire(32)
        if not rec.fone:
            eng.rt.write(st.handle, stats.INIT)
        reader = stats.Reader(eng, st, rec.kind)
        eng._keep.append(reader)
    d, bd = _result(eng, rec.cap, rec.nbytes, dt, shape, reader)
    cmds = [Dispatch(rec.pipe, binds + (bd,), rec.groups, rec.params)]
    if reader is not None:
        cmds.append(Dispatch(rec.fpipe, (bd, Binding(reader.handle, 0, 32)), rec.fgroups,
                             rec.fparams))
    eng.submit(cmds)
    eng.count("fast_calls")
    return d


__all__ = ["ENABLED", "FUSED_FACTS_GROUPS", "MAX_RECORDS", "bind", "matmul", "records"]
