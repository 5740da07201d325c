"""Item-memory search on the CUDA backend (``cuda/vsa_search*.cu``, ``cuda/vsa_topk.cu``): the exact
int32 dot of every (query, memory row) pair, then the k best rows per query on the device; the
scores never leave it.

From :data:`MMA_FROM_Q` queries on, the scores come from ``search_mma``: 1-bit tensor cores
(``mma.sync`` b1 AND + popcount, three products per 256 trits), the memory read once per block of
``8 NT`` queries at 0.25 byte a trit (``search_mma_cp``, which stages the rows through shared
memory, measured slower and stays for the benchmarks). One query: ``search_scan_tmag``/``_tma`` (rows by
sm_90 bulk copies) or ``search_scan_cp`` (by ``cp.async``; planes 16-byte aligned), else ``search_scan``
(16-byte reads) or ``search_popc`` (4-byte reads, any alignment). The top-k is two passes
(``topk_scores`` per block of rows, ``topk_merge`` per query) for k <= 64; for k <= 32 the first
pass is fused into the one-query scan and, at the widths :data:`FUSED_NT` names, into
``search_mma`` (search_fused.py: no score matrix, one launch fewer), unless :data:`FUSE` is off;
the one-query scan's last block merges (:data:`LAST_MERGE`: one launch). Otherwise, from 2
queries with k <= 32, search_two.py (:data:`PLANNED`): the kept launch plan, int16 scores where
dim < 2^15, and ``topk_one_v``/``_w`` (the top-k's blocks and merge in one launch). A larger k sorts the
int32 scores (``CudaBackend._topk``). Rows of 2^30 trits or more, or 2^31 rows or more, take the
previous path (``_dot`` then ``_topk``), whose int64 scores cannot overflow. Which variants of
each kernel exist (the module specs) is search_specs.py's, re-exported here; the switches that pick
among them are this module's. Measurements: ``benchmarks/results/search_cuda_notes.md``.
"""

from __future__ import annotations

import sys

import numpy as np

from . import kernels, search_fused, search_two
from .search_specs import (
    CP_VARIANTS,
    FUSED_K,
    FUSED_SCAN_STAGES,
    MMA_PICK,
    MMA_VARIANTS,
    REG_VARIANTS,
    SCAN_CP_STAGES,
    SCAN_TMA_STAGES,
    SCAN_U,
    SEARCH,
    SEARCH_CP,
    SEARCH_TMA,
    SPECS,
    TOPK,
    TOPK_K,
    TOPK_V,
    _allow_smem,
)

#: k <= 32: the top-k's first pass inside the scoring kernel (search_fused.py); False: the scores
#: written out and read back by topk_scores (benchmarks compare the two).
FUSE = True
#: query tile widths NT whose search_mma runs fused: none (H200, v8: the unfused kernel and its
#: k-lane top-k pass beat the fused kernel from 2 to 64 queries by 16-26 us: the list insertions,
#: serial within a warp at 8 warps a SM, cost more than the score round trip; the one-query scan
#: is fused, 23 us faster). Tests and benchmarks set (1, 2, 4, 8).
FUSED_NT: tuple[int, ...] = ()
#: fused search_mma: two buffers for a round's scores (one barrier a round instead of two) where
#: shared memory holds them without an extra chunk of the query planes (H200, v8, 64 queries with
#: int16 scores: 0.375 against 0.390 ms; v7, int32, 227 KB of shared memory: 0.512, L1 starved).
DOUBLE_BUFFER = True
#: fused search_mma: a round's scores as int16 in shared memory where |score| <= dim < 2^15.
NARROW = True
#: one launch for the top-k where k <= 32: the last block to finish (an atomic counter kept per
#: stream) merges the candidates, in the fused one-query scan and in the two-kernel path below.
LAST_MERGE = True
#: 2+ queries, k <= 32, unfused: search_two.py (the launch plan kept per shape; int16 scores where
#: dim < 2^15 when SCORES16; then topk_one_w, or topk_scores_w + topk_merge_w without LAST_MERGE).
PLANNED = True
SCORES16 = True
#: "auto" (by query count), "mma", "scan" or "popc" (always that scoring kernel; "scan" where it
#: can run: one query, aligned planes; else as "auto"), "old" (``_dot`` then ``_topk``, the path
#: before this module). Read at every call; benchmarks switch it.
ENGINE = "auto"
#: queries from which the tensor-core kernel scores (below: search_scan, or search_popc).
MMA_FROM_Q = 2
#: a value of MMA_VARIANTS forcing the tensor-core kernel (benchmarks), or None for MMA_PICK.
VARIANT = None
#: the one-query kernel: a value of SCAN_U (search_scan), "cp3"/"cp5" (search_scan_cp; buffers too
#: large: search_scan), "tma<N>[v]" (search_scan_tma, N in SCAN_TMA_STAGES) or "tmag<G>s<N>[x][t]"
#: (search_group.py: G rows a bulk copy); cp3 below compute 9.0. H200, s5: tmag3s2xt (1 block a
#: SM) scan + merge 0.133 ms against tma3's 0.145 (s4: tma3 0.144, cp3 0.148; tma6-8 at 1 a SM
#: 0.160-0.175), public call 0.146 against 0.160 (search_cuda_notes.md, session 5).
SCAN = "tmag3s2xt"
#: blocks a SM of search_scan_tma (None: as many as shared memory holds, at most 4; H200, s4:
#: 2 beat 3 by 4-6 us at 3 stages).
TMA_BLOCKS: int | None = 2
#: dynamic shared memory a search_mma block may take (the query planes of a chunk of the row).
SMEM_BUDGET = 200 * 1024
#: unused dynamic shared memory added to an unfused search_mma block (benchmarks: the L1 it costs).
SMEM_PAD = 0
#: bytes of int32 scores one pass over the memory holds (more queries: several passes).
SCORES_BUDGET = 1 << 28
#: scores a thread of topk_scores takes (its block: 256 threads). H200, v9, 64 queries: 128 (7
#: blocks a query) beat 64 by 10 us and 16 by 60: each block pays its lists' first insertions;
#: s4: 256 (5 blocks a query) 1 us faster again, both with topk_one_w and topk_one_v.
TOPK_PER_THREAD = 256

_I32 = 2**31 - 1
_NULL, _ZERO = np.uint64(0), np.int32(0)  # the unfused kernels' candidate pointer, k, flags


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _list_len(k: int) -> int | None:
    """The shortest top-k list length of TOPK_K that holds k, or None (a sort)."""
    for x in TOPK_K:
        if x >= k:
            return x
    return None


def search(be, qp, qn, mp, mn, k: int):
    """(idx, vals) int64 (Q, k): the k best rows of memory (mp, mn) for each query (qp, qn)."""
    cp = be._cp
    q, w = qp.shape
    m = mp.shape[0]
    if ENGINE == "old" or w * 32 >= 2**30 or m >= _I32:
        return be._topk(be._dot(qp, qn, mp, mn), k)
    kb = _list_len(k)
    if FUSE and kb in FUSED_K and (q == 1 or FUSED_NT):  # 2+ queries: fused only in FUSED_NT
        out = search_fused.search(be, sys.modules[__name__], qp, qn, mp, mn, k, kb)
        if out is not None:
            return out
    if PLANNED and kb in FUSED_K:
        out = search_two.search(be, sys.modules[__name__], qp, qn, mp, mn, k, kb)
        if out is not None:
            return out
    group = max(1, min(q, SCORES_BUDGET // (4 * m), 65535))
    if group < q and group > 64:
        group -= group % 64
    idx, val = cp.empty((q, k), np.int64), cp.empty((q, k), np.int64)
    for q0 in range(0, q, group):
        q1 = min(q, q0 + group)
        s = scores(be, qp[q0:q1], qn[q0:q1], mp, mn)
        if kb is None:
            idx[q0:q1], val[q0:q1] = be._topk(s.astype(np.int64), k)
        else:
            topk(be, s, k, kb, idx[q0:q1], val[q0:q1])
    return idx, val


def scores(be, qp, qn, mp, mn):
    """int32 (Q, M) dots (|dot| <= dim < 2^30), by the kernel :data:`ENGINE` picks."""
    cp = be._cp
    q, w = qp.shape
    m = mp.shape[0]
    s = cp.empty((q, m), np.int32)
    sms = be._sm_count()
    scan = q == 1 and mp.data.ptr % 16 == 0 and mn.data.ptr % 16 == 0
    if scan and (ENGINE == "scan" or (ENGINE == "auto" and q < MMA_FROM_Q)):
        span = _cdiv(w, 4) + 1  # 16-byte vectors covering a row at any alignment
        tma = search_fused.scan_tma(be, sys.modules[__name__], w, 0)
        if tma is not None:
            fn, smem, gx = tma
            fn((max(1, min(_cdiv(m, 8), gx)),), (256,),
               (mp, mn, qp, qn, s, np.int64(m), np.int64(w), np.int32(span), _NULL, _ZERO,
                _NULL, _NULL, _NULL), shared_mem=smem)
            return s
        if isinstance(SCAN, str):  # "tma..." where bulk copies cannot run: cp3
            stages = int(SCAN[2:]) if SCAN.startswith("cp") else 3
            smem = 16 * _cdiv(2 * w, 4) + 8 * stages * 2 * span * 16
            if smem <= 110 * 1024:
                fn = kernels.function(SEARCH_CP, f"scan_cp{stages}")
                _allow_smem(fn, smem)
                fn((max(1, min(_cdiv(m, 8), sms * 2)),), (256,),
                   (mp, mn, qp, qn, s, np.int64(m), np.int64(w), np.int32(span), _NULL, _ZERO,
                    _NULL, _NULL, _NULL),
                   shared_mem=smem)
                return s
        u = SCAN if isinstance(SCAN, int) else SCAN_U[-1]
        qsh = 8 * w <= 48 * 1024  # the query's planes in shared memory
        kernels.function(SEARCH, f"scan{u}" + ("" if qsh else "g"))(
            (max(1, min(_cdiv(m, 8), sms * 8)),), (256,),
            (mp, mn, qp, qn, s, np.int64(m), np.int64(w)), shared_mem=8 * w if qsh else 0)
        return s
    if ENGINE == "popc" or (ENGINE == "auto" and q < MMA_FROM_Q):
        kernels.function(SEARCH, "popc")((max(1, min(_cdiv(m, 8), sms * 8)),), (256,), (
            mp, mn, qp, qn, s, np.int64(m), np.int64(q), np.int64(w)))
        return s
    nt = 1 if q <= 8 else 2 if q <= 16 else 4 if q <= 32 else 8
    variant = VARIANT or MMA_PICK[nt]
    _mma(be, variant, qp, qn, mp, mn, s)
    return s


def _mma(be, variant, qp, qn, mp, mn, s) -> None:
    q, w = qp.shape
    fn, grid, block, smem, cs = mma_launch(be, variant, q, w, mp.shape[0])
    args = (mp, mn, qp, qn, s, np.int64(mp.shape[0]), np.int64(q), np.int64(w), np.int32(8 * cs))
    tail = () if variant[0] == "cp" else (_NULL, _ZERO, _ZERO, _ZERO)  # no list, k, dbl, narrow
    fn(grid, block, args + tail, shared_mem=smem)


def mma_launch(be, variant, q: int, w: int, m: int, s16: bool = False):
    """(fn, grid, block, shared memory, k-steps a chunk) of the unfused scoring kernel ``variant``
    (int16 scores with ``s16``: a search_mma variant only)."""
    steps = _cdiv(w, 8)
    if variant[0] == "cp":
        _, nt, warps, stages = variant
        rows, staging = 16, warps * stages * 3072
        fn = kernels.function(SEARCH_CP, f"cp{nt}_{warps}_{stages}")
    else:
        nt, mt, warps, g = variant
        rows, staging = 16 * mt, 0
        fn = kernels.function(SEARCH, f"mma{nt}_{mt}_{warps}_{g}" + ("_s16" if s16 else ""))
    budget = min(SMEM_BUDGET, 227 * 1024 - staging - 1024)
    cs = max(1, min(steps, budget // (nt * 512)))  # k-steps of 8 words in shared memory
    cs = _cdiv(steps, _cdiv(steps, cs))  # chunks of equal length
    smem = cs * nt * 512 + staging + SMEM_PAD
    _allow_smem(fn, smem)
    per_sm = max(1, min(2048 // (32 * warps), (227 * 1024) // (smem + 1024)))
    gx = max(1, min(_cdiv(_cdiv(m, rows), warps), be._sm_count() * per_sm))
    return fn, (gx, _cdiv(q, 8 * nt)), (32 * warps,), smem, cs


def topk(be, s, k: int, kb: int, idx, val) -> None:
    """The k (<= kb) best of each row of the int32 scores ``s`` into ``idx`` and ``val``."""
    cand = topk_blocks(be, s, kb, k)
    topk_merge(cand, k, idx, val)


def topk_blocks(be, s, kb: int, k: int | None = None):
    """(Q, blocks, kb) int64 keys: the kb best of each block of rows (at least 2 blocks a SM); the
    first k (default kb) of each are exact, the rest real keys (kb <= 32: the lists kept to k)."""
    q, m = s.shape
    chunks = max(_cdiv(m, 256 * TOPK_PER_THREAD), min(_cdiv(m, 2048), _cdiv(2 * be._sm_count(), q)))
    chunk = _cdiv(m, chunks)
    chunks = _cdiv(m, chunk)
    cand = be._cp.empty((q, chunks, kb), np.int64)
    kernels.function(TOPK, f"topk{kb}")((chunks, q), (256,), (s, cand, np.int64(m), np.int64(chunk))
                                        + ((np.int32(k or kb),) if kb <= 32 else ()))
    return cand


def topk_merge(cand, k: int, idx, val) -> None:
    """The k best of each query's candidate keys into ``idx``, ``val`` (int64 (Q, k))."""
    q, chunks, kb = cand.shape
    kernels.function(TOPK, f"merge{kb}")((q,), (256,), (cand, np.int64(chunks * kb), idx, val,
                                                          np.int32(k)))


__all__ = ["CP_VARIANTS", "ENGINE", "FUSE", "FUSED_K", "FUSED_SCAN_STAGES", "MMA_FROM_Q", "MMA_PICK",
           "MMA_VARIANTS", "REG_VARIANTS", "SCAN_CP_STAGES", "SCAN_TMA_STAGES", "SCAN_U", "SEARCH",
           "SEARCH_CP", "SEARCH_TMA", "SPECS", "TOPK", "TOPK_K", "TOPK_V", "VARIANT", "mma_launch",
           "scores", "search", "topk", "topk_blocks", "topk_merge"]
