"""A fast-path GEMM's compiled op record (:class:`_GemmRecord`, made once per key by
:mod:`.fastpath` and :mod:`.fastgemm`) and the recording of a GEMM whose result's facts take a
second dispatch (:func:`separate`)."""

from __future__ import annotations

import numpy as np

from . import gemm as _gemm
from . import stats, zsign
from .engine import WG, pack_params
from .fastbuf import _result
from .runtime import Binding, Dispatch

_U32 = np.dtype(np.uint32)
_GEMM_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.int32), _U32})


class _GemmRecord:
    """What a 2-D GEMM of one (semiring, dtype, m, k, n, guard, fused-facts setting) records:
    pipeline, grid, uniforms, result bytes, the facts reduction's pipeline, grid and uniforms, and
    ``zs``: the zero-sign gate and pass (:class:`.zsign.Pass`, with its own flags buffer) on A,
    B, D, or None (:mod:`.zsign`).
    ``fused``: the most workgroups whose tiled GEMM writes its result's facts in its own epilogue
    (:data:`.fastpath.FUSED_FACTS_GROUPS`, as read by the caller for the record's key)."""

    __slots__ = ("pipe", "groups", "params", "nbytes", "cap", "kind", "fpipe", "fgroups",
                 "fparams", "fone", "fslots", "zs")

    def __init__(self, eng, sr, dt, m: int, k: int, n: int, special: bool, fused: int):
        code = _gemm.semiring_code(sr, dt, special)
        kname, kp = _gemm.choose_kernel(m, n, k, False, eng.limits.max_workgroup_storage)
        self.kind = stats.KINDS.get(dt.name)
        self.fslots = 0  # > 0: the GEMM's epilogue writes its facts, one set per workgroup
        if kname == "gemm_tiled" and self.kind is not None and not kp.get("SK"):
            ng = -(-m // kp["BM"]) * -(-n // kp["BN"])
            if ng <= fused:
                self.fslots = ng
                kp = dict(kp, FACTS=True, FKIND=self.kind)
        self.pipe = eng.pipeline(kname, _key=(kname, code, tuple(kp.items()), False),
                                 **code.params(), **kp, HAS_C=False)
        d = _gemm.make_dispatch(eng, self.pipe, kname, kp, (), m, n, k, 1, 0, 0, 0)
        self.groups, self.params = d.groups, d.params
        self.zs = zsign.scratch(eng, zsign.record(eng, sr, dt, m, n, k))
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


def _whole(eng, sr, dt, m: int, k: int, n: int) -> bool:
    """One dispatch covers the product (what the generic path calls ``whole``)."""
    kname, kp = _gemm.choose_kernel(m, n, k, False, eng.limits.max_workgroup_storage)
    wmax = eng.limits.max_workgroups_per_dim
    ok = max(m * k, k * n, m * n) * dt.itemsize <= eng.max_binding
    if kname == "gemm_tiled":
        ok = ok and -(-m // kp["BM"]) <= wmax and -(-n // kp["BN"]) <= wmax
    return ok


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
    if rec.zs is not None:  # the zero-sign gate and pass, in place on D (facts ignore its sign)
        cmds += rec.zs.dispatches(*binds, bd)
    if reader is not None:
        cmds.append(Dispatch(rec.fpipe, (bd, Binding(reader.handle, 0, 32)), rec.fgroups,
                             rec.fparams))
    eng.submit(cmds)
    eng.count("fast_calls")
    return d


__all__ = ["separate"]
