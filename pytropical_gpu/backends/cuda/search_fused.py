"""Item-memory search with the top-k's first pass inside the scoring kernel (k <= 32):
``search_mma`` and ``search_scan_cp`` with ``K > 0`` keep warp-wide lists of the best (score, row)
keys and write only each block's K best per query (no (Q, M) score matrix, one launch fewer);
``topk_merge_w`` then takes each query's k best of its blocks' lists; in the one-query scan with
``LAST_MERGE``, the last of its blocks to finish does that merge instead (an atomic counter kept per
device and stream, put back to 0 by that block): one launch. Ties go to the smaller row in both
passes (a key is the score, then the complement of the row).

A call's launch plan (kernels, grids, shared memory, scalar arguments) is computed once per shape
and switch setting and kept; the candidate lists go to a buffer kept per device and stream
(rewritten in full by every call, so stream order makes reuse safe; kept by the stream's handle). Used by
``search_launch.search``, which passes itself in: the switches (ENGINE, VARIANT, SCAN, ...) are
read from there at every call.
"""

from __future__ import annotations

import numpy as np

from . import kernels, search_group, search_raw
from .streams import stream_key

#: candidate buffers up to this many bytes are kept between calls (larger: allocated per call).
CAND_KEEP = 1 << 24
#: launch plans kept (the table is emptied when it reaches this many shapes).
PLANS_KEEP = 256

#: the one-query launch takes the results' addresses as integers and makes their views after it
#: (host work before the launch counts where the device waits for it; H200, s4: 3-8 us).
PTR_ARGS = True
#: the one-query launch through ``cuLaunchKernel`` on a kept parameter block (no CuPy argument
#: packing), where CuPy exposes it (H200, s4: host time a public call 25 us against 29-30).
RAW_LAUNCH = True
#: the one-query scan's blocks put their k-th key into a global floor (atomicMax) and the last
#: block merges from it in one round of loads (search_scan_tma with FL; tma3/tma4 only). H200,
#: s4c: scan + merge 0.1455 -> 0.1443 ms, public call 1-1.5 us faster.
FLOOR_MERGE = True
#: the one-query results' buffer for a call is allocated after the previous call's launch (kept
#: per stream and shape, handed out once), so no allocation comes before the launch. H200, s4c:
#: with FLOOR_MERGE, public call 0.163 -> 0.160 ms.
OUT_AHEAD = True

_NULL = np.uint64(0)  # the unused score pointer
_plans: dict[tuple, tuple | None] = {}
_raw_blocks: dict[int, tuple] = {}
_cand: dict[tuple, object] = {}
_counters: dict[tuple, object] = {}
_ahead: dict[tuple, object] = {}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def cached(plans: dict, key: tuple, make):
    """``plans[key]``, made by ``make()`` on first use (a None, "this path does not apply", is kept
    too); the table is emptied when it holds PLANS_KEEP plans."""
    plan = plans.get(key)
    if plan is None and key not in plans:
        if len(plans) >= PLANS_KEEP:
            plans.clear()
        plan = plans[key] = make()
    return plan


def search(be, sl, qp, qn, mp, mn, k: int, kb: int):
    """(idx, vals) int64 (Q, k), or None where the fused kernels do not apply (the caller then
    takes the unfused path): the one-query kernel is not search_scan_cp at a fused STAGES, or the
    scores would come from search_popc, or the tensor-core variant is not fused (VARIANT not an
    MMA_PICK value, or its NT not in FUSED_NT). ``sl``: the search_launch module (its switches
    and module specs; passed in, not imported, so the two modules form no import cycle)."""
    cp = be._cp
    q, w = qp.shape
    m = mp.shape[0]
    pm, pn = mp.data.ptr, mn.data.ptr
    aligned = pm % 16 == 0 and pn % 16 == 0
    dev = cp.cuda.runtime.getDevice()
    key = (dev, q, w, m, kb, aligned, sl.ENGINE, sl.VARIANT, sl.SCAN, sl.MMA_FROM_Q,
           sl.SMEM_BUDGET, sl.SCORES_BUDGET, sl.DOUBLE_BUFFER, sl.FUSED_NT, sl.NARROW, sl.LAST_MERGE,
           sl.TMA_BLOCKS, FLOOR_MERGE)
    plan = cached(_plans, key, lambda: _plan(be, sl, q, w, m, kb, aligned))
    if plan is None:
        return None
    fn, grid, block, smem, (pre, with_q, post, last), group, per_query, merge, n = plan
    skey = stream_key(cp, dev)
    okey = skey + (q, k) if OUT_AHEAD and merge is None else None
    out = _ahead.pop(okey, None) if okey else None
    if out is None:
        out = cp.empty((2, q, k), np.int64)  # idx, vals: one allocation
    nbytes = 8 * min(q, group) * per_query
    cand = _cand.get(skey)
    if cand is None or cand.size < nbytes // 8:
        cand = cp.empty(nbytes // 8, np.int64)
        if nbytes <= CAND_KEEP:
            _cand[skey] = cand
    if merge is None:  # the one-query scan merges in its last block
        cnt = _counters.get(skey)
        if cnt is None:  # the block counter, a count, the uint64 floor (FLOOR_MERGE)
            cnt = _counters[skey] = cp.zeros(4, np.uint32)
        v = (pm, pn, qp.data.ptr, qn.data.ptr, cand.data.ptr, k, out.data.ptr, cnt.data.ptr, q * k)
        if RAW_LAUNCH and _raw(cp, plan, fn, grid[0], smem, skey[1], v):
            return _after(cp, okey, out)
        kk = np.int32(k)
        if PTR_ARGS:  # the results' addresses as integers: their views made after the launch
            p = out.data.ptr
            fn((grid[0], 1), block, (mp, mn, qp, qn, _NULL, *pre, *post, cand, kk, np.uint64(p),
                                     np.uint64(p + 8 * q * k), cnt), shared_mem=smem)
            return _after(cp, okey, out)
        fn((grid[0], 1), block, (mp, mn, qp, qn, _NULL, *pre, *post, cand, kk, out[0], out[1],
                                 cnt), shared_mem=smem)
        return _after(cp, okey, out)
    idx, val, kk = out[0], out[1], np.int32(k)
    if group >= q:
        fn((grid[0], _cdiv(q, grid[1])), block,
           (mp, mn, qp, qn, _NULL, *pre, *with_q, *post, cand, kk, *last), shared_mem=smem)
        merge((q,), (256,), (cand, n, idx, val, kk))
        return idx, val
    for q0 in range(0, q, group):
        q1 = min(q, q0 + group)
        fn((grid[0], _cdiv(q1 - q0, grid[1])), block, (mp, mn, qp[q0:q1], qn[q0:q1], _NULL, *pre,
                                                       np.int64(q1 - q0), *post, cand, kk, *last),
           shared_mem=smem)
        merge((q1 - q0,), (256,), (cand, n, idx[q0:q1], val[q0:q1], kk))
    return idx, val


def _after(cp, okey, out):
    """The one-query results (idx, vals) of ``out``, after its launch; with OUT_AHEAD (``okey``)
    the next call's buffer is allocated now, while the kernel runs."""
    if okey:
        if len(_ahead) >= PLANS_KEEP:
            _ahead.clear()
        _ahead[okey] = cp.empty(out.shape, np.int64)
    return out[0], out[1]


def scan_tma(be, sl, w: int, kb: int):
    """(fn, shared memory, blocks) of search_scan_tma (lists of kb keys; 0: scores) when sl.SCAN
    is "tma<STAGES>" or "tma<STAGES>v" (the query as 4 shifted copies), the device has compute
    9.0+ and the buffers fit, else None. Blocks: sl.TMA_BLOCKS a SM, or as many as shared memory
    holds (at most 4)."""
    scan = sl.SCAN
    if isinstance(scan, str) and scan.startswith("tmag"):  # the grouped scan's unfused scores, and
        scan = "tma3"  # its fallback where its buffers do not fit (large dims)
    if not (isinstance(scan, str) and scan.startswith("tma")) or int(
            be._cp.cuda.Device().compute_capability) < 90:
        return None
    vq = scan.endswith("v")
    stages, span = int(scan[3:len(scan) - vq]), _cdiv(w, 4) + 1
    smem = 64 * stages + (128 * span if vq else 16 * _cdiv(2 * w, 4)) + 8 * stages * 2 * span * 16
    if smem > 227 * 1024:
        return None
    fl = "f" if kb and FLOOR_MERGE and stages in (3, 4) else ""
    fn = kernels.function(sl.SEARCH_TMA, f"scan_tma{stages}{'v' if vq else ''}_k{kb}{fl}")
    sl._allow_smem(fn, smem)
    per_sm = sl.TMA_BLOCKS or max(1, min(4, (228 * 1024) // (smem + 1024)))
    return fn, smem, be._sm_count() * per_sm


def _raw(cp, plan, fn, gx: int, smem: int, stream: int, v: tuple) -> bool:
    """Launch the one-query scan by ``cuLaunchKernel`` on a parameter block kept per plan and
    thread (13 eight-byte slots; the int32 ones hold their value in the low bytes), rewriting only
    the addresses and k: v = (mp, mn, qp, qn, candidates, k, results, counter, q k). False where
    CuPy has no ``driver.launchKernel`` (the caller then launches through CuPy)."""
    launch = getattr(cp.cuda.driver, "launchKernel", None)
    if launch is None:
        return False
    tl = _raw_blocks.get(id(plan))
    blk = getattr(tl[1], "blk", None) if tl is not None and tl[0] is plan else None
    if blk is None:
        blk = search_raw.param_block(_raw_blocks, plan, 13, PLANS_KEEP, _raw_fill)
    vals = blk[0]
    vals[0], vals[1], vals[2], vals[3], vals[8], vals[9], vals[10], vals[12] = v[:8]
    vals[11] = v[6] + 8 * v[8]
    launch(fn.ptr, gx, 1, 1, 256, 1, 1, smem, stream, blk[1], 0)
    return True


def _raw_fill(vals, plan) -> None:
    """The one-query scan's fixed slots, set once a block: rows M, words W, 16-byte span."""
    pre, _, (w, span), _ = plan[4]
    vals[5], vals[6], vals[7] = int(pre[0]), int(w), int(span)


def _plan(be, sl, q: int, w: int, m: int, kb: int, aligned: bool):
    """(fn, (gx, queries a block), block, smem, (scalar args before the query count, the count
    (none for the one-query kernel), after it, after k), query group, candidates a query, merge
    fn (None: the one-query kernel merges in its last block), merge n), or None."""
    sms = be._sm_count()
    merge = kernels.function(sl.TOPK, f"merge{kb}")
    if q == 1 and aligned and (sl.ENGINE == "scan" or (sl.ENGINE == "auto" and q < sl.MMA_FROM_Q)):
        span, grp = _cdiv(w, 4) + 1, search_group.scan(be, sl, w, kb)
        tma = None if grp else scan_tma(be, sl, w, kb)
        if grp is not None:  # rows in runs a warp, G rows a copy (search_group.py)
            fn, smem, gx, span = grp
            gx = max(1, min(_cdiv(m, 8), gx))
        elif tma is not None:
            fn, smem, gx = tma
            gx = max(1, min(_cdiv(m, 8), gx))
        else:
            scan = sl.SCAN if isinstance(sl.SCAN, str) else None
            stages = (None if scan is None else int(scan[2:]) if scan.startswith("cp")
                      else 3 if scan.startswith("tma") else None)
            if stages not in sl.FUSED_SCAN_STAGES:  # "tma..." where bulk copies cannot run: cp3
                return None
            smem = 16 * _cdiv(2 * w, 4) + 8 * stages * 2 * span * 16
            if smem > 110 * 1024:
                return None
            fn = kernels.function(sl.SEARCH_CP, f"scan_cp{stages}_k{kb}")
            sl._allow_smem(fn, smem)
            gx = max(1, min(_cdiv(m, 8), sms * 2))
        last = () if sl.LAST_MERGE else (_NULL, _NULL, _NULL)  # no idx, val, counter: merge after
        return (fn, (gx, 1), (256,), smem, ((np.int64(m),), (), (np.int64(w), np.int32(span)), last),
                1, gx * kb, None if sl.LAST_MERGE else merge, np.int64(gx * kb))
    if sl.ENGINE not in ("mma", "auto") or (sl.ENGINE == "auto" and q < sl.MMA_FROM_Q):
        return None
    nt = 1 if q <= 8 else 2 if q <= 16 else 4 if q <= 32 else 8
    variant = sl.VARIANT or sl.MMA_PICK[nt]
    if variant not in sl.MMA_PICK.values() or variant[0] not in sl.FUSED_NT:
        return None
    nt, mt, warps, g = variant
    steps, rows = _cdiv(w, 8), 16 * mt
    narrow = int(sl.NARROW and 32 * w < 2**15)  # int16 scores: |score| <= dim <= 32 w
    stage = 8 * nt * (warps * rows + 4) * (2 if narrow else 4)  # a round's scores

    def chunk(nbuf: int) -> int:  # k-steps of the query planes a chunk
        budget = min(sl.SMEM_BUDGET, 227 * 1024 - nbuf * stage - 1024)
        cs = max(1, min(steps, budget // (nt * 512)))
        return _cdiv(steps, _cdiv(steps, cs))

    # two score buffers (one barrier a round) where they cost no extra chunk of the query planes
    dbl = int(sl.DOUBLE_BUFFER and _cdiv(steps, chunk(2)) == _cdiv(steps, chunk(1)))
    cs = chunk(1 + dbl)
    smem = cs * nt * 512 + (1 + dbl) * stage
    fn = kernels.function(sl.SEARCH, f"mma{nt}_{mt}_{warps}_{g}_k{kb}")
    sl._allow_smem(fn, smem)
    per_sm = max(1, min(2048 // (32 * warps), (227 * 1024) // (smem + 1024)))
    gx = max(1, min(_cdiv(_cdiv(m, rows), warps), sms * per_sm))
    per_query = gx * kb
    group = q if 8 * q * per_query <= sl.SCORES_BUDGET else max(
        8 * nt, sl.SCORES_BUDGET // (8 * per_query) // (8 * nt) * (8 * nt))
    group = min(group, 65535 * 8 * nt)
    scalars = ((np.int64(m),), (np.int64(q),), (np.int64(w), np.int32(8 * cs)),
               (np.int32(dbl), np.int32(narrow)))
    return fn, (gx, 8 * nt), (32 * warps,), smem, scalars, group, per_query, merge, np.int64(per_query)


__all__ = ["CAND_KEEP", "FLOOR_MERGE", "OUT_AHEAD", "PLANS_KEEP", "PTR_ARGS", "RAW_LAUNCH", "cached",
           "scan_tma", "search"]
