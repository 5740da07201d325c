"""Item-memory search in two launches for 2+ queries and k <= 32: ``search_mma`` writes the (Q, M)
scores (int16 where |score| <= dim < 2^15: half the bytes written and read back), then
``topk_one_w`` keeps each block's k best per query and the last block of each query to finish
merges them (an atomic counter per query, put back to 0 by that block) into idx and vals; with
``LAST_MERGE`` off, ``topk_scores_w`` and ``topk_merge_w`` (three launches, as before).

The launch plan (kernels, grids, shared memory, scalars) is computed once per shape and switch
setting; the score, candidate and counter buffers are kept per device and stream (rewritten by
every call before they are read, and the counters back at 0 after every launch, so stream order
makes reuse safe). The switches are read from ``search_launch`` (passed in as ``sl``) at every
call. Exact: ties go to the smaller row (a key is the score, then the complement of the row).
"""

from __future__ import annotations

import numpy as np

from . import kernels, search_fused, search_raw
from .streams import stream_key

#: score, candidate and counter buffers up to this many bytes are kept between calls.
KEEP = 1 << 27
#: int16 scores, M a multiple of 8: topk_one_v with this many 16-byte vectors a lane in flight
#: (a value of search_launch.TOPK_V), or 0 for topk_one_w (one score a load). H200, s4, 64
#: queries: 4 vectors, top-k 33 us against 40 (8 vectors: 40-47).
TOPK_VEC = 4
#: topk_one_v: a query's last block merges by one warp where its blocks' lists hold <= 256 keys
#: (merge_keys_warp: one round of loads, no block barrier). H200, s4c, 64 queries: top-k 33.1 ->
#: 30.8 us.
WARP_MERGE = True
#: the scoring kernel (the first launch: the host work before it is on the call's time) through
#: ``cuLaunchKernel`` on a kept parameter block (search_raw.py) instead of CuPy's packing. H200,
#: s4c, 64 queries, with WARP_MERGE: public call 0.302 -> 0.298 ms.
RAW_LAUNCH = True
_NULL, _ZERO = np.uint64(0), np.int32(0)
_plans: dict[tuple, tuple | None] = {}
_bufs: dict[tuple, object] = {}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _buf(cp, key: tuple, n: int, dtype, zero: bool = False):
    """A kept device buffer of at least n elements (zeros when first made, if ``zero``)."""
    b = _bufs.get(key)
    if b is None or b.size < n:
        b = cp.zeros(n, dtype) if zero else cp.empty(n, dtype)
        if b.nbytes <= KEEP:
            _bufs[key] = b
    return b


def search(be, sl, qp, qn, mp, mn, k: int, kb: int):
    """(idx, vals) int64 (Q, k), or None where this path does not apply (one query or the scan or
    popcount engine, a ``search_mma_cp`` variant): the caller then takes the general path."""
    cp = be._cp
    q, w = qp.shape
    m = mp.shape[0]
    dev = cp.cuda.runtime.getDevice()
    key = (dev, q, w, m, kb, sl.ENGINE, sl.VARIANT, sl.MMA_FROM_Q, sl.SMEM_BUDGET, sl.SMEM_PAD,
           sl.SCORES_BUDGET, sl.SCORES16, sl.LAST_MERGE, sl.TOPK_PER_THREAD, TOPK_VEC, WARP_MERGE)
    plan = search_fused.cached(_plans, key, lambda: _plan(be, sl, q, w, m, kb))
    if plan is None:
        return None
    fn, gx, per_block, block, smem, scalars, st, group, topk, chunks, chunk, merge, raw = plan
    skey = stream_key(cp, dev)
    s = _buf(cp, skey + ("s", st), min(q, group) * m, st)
    m64 = np.int64(m)
    if group >= q and not (RAW_LAUNCH and search_raw.launch(
            cp, plan, fn, (gx, _cdiv(q, per_block), 1), block[0], smem, skey[1],
            [mp.data.ptr, mn.data.ptr, qp.data.ptr, qn.data.ptr, s.data.ptr, m, q, *raw])):
        # one pass: the scores launched first, the rest while they run
        fn((gx, _cdiv(q, per_block)), block, (mp, mn, qp, qn, s, m64, np.int64(q), *scalars),
           shared_mem=smem)
    cand = _buf(cp, skey + ("c",), min(q, group) * chunks * kb, np.int64)
    out = cp.empty((2, q, k), np.int64)  # idx, vals: one allocation
    idx, val = out[0], out[1]
    kk, chunk64 = np.int32(k), np.int64(chunk)
    for q0 in range(0, q, group):
        q1 = min(q, q0 + group)
        if group < q:
            fn((gx, _cdiv(q1 - q0, per_block)), block, (mp, mn, qp[q0:q1], qn[q0:q1], s, m64,
                                                        np.int64(q1 - q0), *scalars), shared_mem=smem)
        iq, vq = (idx, val) if group >= q else (idx[q0:q1], val[q0:q1])
        if merge is None:
            cnt = _buf(cp, skey + ("n",), q1 - q0, np.uint32, zero=True)
            topk((chunks, q1 - q0), (256,), (s, cand, m64, chunk64, kk, iq, vq, cnt))
        else:
            topk((chunks, q1 - q0), (256,), (s, cand, m64, chunk64, kk))
            merge((q1 - q0,), (256,), (cand, np.int64(chunks * kb), iq, vq, kk))
    return idx, val


def _plan(be, sl, q: int, w: int, m: int, kb: int):
    """(score fn, grid x, queries a block, block, shared memory, scalars after the query count,
    score dtype, query group, top-k fn, top-k blocks a query, rows a top-k block, merge fn or
    None, the scalars as ints for search_raw), or None."""
    if q < 2 or sl.ENGINE not in ("mma", "auto") or (sl.ENGINE == "auto" and q < sl.MMA_FROM_Q):
        return None
    nt = 1 if q <= 8 else 2 if q <= 16 else 4 if q <= 32 else 8
    variant = sl.VARIANT or sl.MMA_PICK[nt]
    if variant[0] == "cp":
        return None
    s16 = bool(sl.SCORES16 and 32 * w < 2**15)  # |score| <= dim <= 32 w
    st = np.int16 if s16 else np.int32
    fn, (gx, _), block, smem, cs = sl.mma_launch(be, variant, q, w, m, s16)
    per_block = 8 * variant[0]
    group = max(1, min(q, sl.SCORES_BUDGET // (np.dtype(st).itemsize * m), 65535))
    if group < q:
        group = max(per_block, group - group % per_block)
    chunks = max(_cdiv(m, 256 * sl.TOPK_PER_THREAD),
                 min(_cdiv(m, 2048), _cdiv(2 * be._sm_count(), min(q, group))))
    vec = TOPK_VEC if s16 and sl.LAST_MERGE and m % 8 == 0 else 0
    chunk = _cdiv(_cdiv(m, chunks), 8) * 8 if vec else _cdiv(m, chunks)
    chunks = _cdiv(m, chunk)
    sfx = "_s16" if s16 else ""
    if vec:  # 16-byte loads: each query's scores and chunk start 16-byte aligned
        topk, merge = kernels.function(sl.TOPK, f"one{kb}_s16_v{vec}{'m' if WARP_MERGE else ''}"), None
    elif sl.LAST_MERGE:
        topk, merge = kernels.function(sl.TOPK, f"one{kb}{sfx}"), None
    else:
        topk, merge = (kernels.function(sl.TOPK, f"topk{kb}{sfx}"),
                       kernels.function(sl.TOPK, f"merge{kb}"))
    scalars = (np.int64(w), np.int32(8 * cs), _NULL, _ZERO, _ZERO, _ZERO)  # no list, k, dbl, narrow
    return (fn, gx, per_block, block, smem, scalars, st, group, topk, chunks, chunk, merge,
            [int(x) for x in scalars])


__all__ = ["KEEP", "RAW_LAUNCH", "TOPK_VEC", "WARP_MERGE", "search"]
