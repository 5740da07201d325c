"""Item-memory search on the GPU: exact ternary dots of query blocks (``vsa_search_dot``), then the
k best per query (``vsa_search``: a per-workgroup k-best selection and merge passes).

Pass one reads the memory once per block of ``SEARCH_QB`` queries with coalesced loads (``L`` lanes
per row) and writes exact i32 scores, 4 B per (query, row) against the 8 B per word of the row it
reads; the selection passes keep only k (score, index) pairs per query. All passes of a memory chunk
go in one submit and one (Q, k) read-back. See ``benchmarks/results/search_wgpu_notes.md``.
"""

from __future__ import annotations

import numpy as np

from . import vsa_long as long
from .engine import Engine, pack_params
from .vsa_long import chunks as _chunks

#: largest k that :func:`search` selects on the GPU (one reduction round per k); larger k goes through
#: the host path (all dot scores read back, numpy argsort), see ``WgpuBackend._search``
TOPK_MAX = 64
#: candidates per thread in the selection passes: TR = 256 * RPT per workgroup, so each pass
#: shrinks the candidate list by at least TR / TOPK_MAX = 16
SEARCH_RPT = 4
_TR = 256 * SEARCH_RPT
#: candidates per thread of a last merge pass: when a query's candidates fit 256 * this many, one
#: pass merges them all (1 query x 200,000 rows: 1,960 candidates, one pass instead of two)
SEARCH_RPT_LAST = 8
#: queries per pass one (the memory is read once per block of this many queries); fewer queries
#: use the smallest power of two that holds them. Timed variants: ``bench_search.py --variants``
SEARCH_QB = 16
#: lanes reading one memory row (consecutive words; 8 lanes = one 32 B sector per load)
SEARCH_LANES = 8
#: memory rows per thread in pass one (R x QB partial dots in registers)
SEARCH_ROWS = 2
#: (lanes, rows per thread) of pass one for a single query (a memory read for one query: a warp
#: per row reads 128 B per load), or None for ``SEARCH_LANES``, ``SEARCH_ROWS``
SEARCH_ONE: tuple[int, int] | None = (32, 2)


def exact_words(w: int) -> bool:
    """True when a per-row sum over w words fits i32 on the GPU: |dot|, nnz <= 32 * w < 2^31."""
    return 32 * int(w) < 2**31


def _qb(nq: int) -> int:
    qb = 1
    while qb < min(nq, SEARCH_QB):
        qb *= 2
    return min(qb, SEARCH_QB)


def _shape(q: int) -> tuple[int, int]:
    """(lanes per row, rows per thread) of pass one for ``q`` queries."""
    return SEARCH_ONE if q == 1 and SEARCH_ONE else (SEARCH_LANES, SEARCH_ROWS)


def dot_params(qb: int, storage: int = 16384, q: int = 2) -> dict:
    """Template parameters of pass one for ``qb`` queries per block (``q`` queries in all): CAP
    (row, query) pairs per thread per reduction round fit ``storage`` bytes of workgroup memory."""
    lanes, rows = _shape(q)
    stride = lanes * (256 // lanes + 1)
    cap = max(1, min(rows * qb, storage // (4 * stride)))
    return {"QB": qb, "L": lanes, "R": rows, "CAP": cap}


def query_blocks() -> list[int]:
    """Every queries-per-block value :func:`search` may use (powers of two up to ``SEARCH_QB``)."""
    return sorted({_qb(n) for n in range(1, SEARCH_QB + 1)})


def dot_variants() -> list[dict]:
    """The template parameters of every pass one :func:`search` may compile (16 KiB storage)."""
    out = [dot_params(qb) for qb in query_blocks()]
    one = dot_params(1, q=1)
    return out + ([one] if one not in out else [])


def check_args(eng: Engine, ap, bp, k: int) -> None:
    """ValueError unless :func:`search` runs these on the GPU: 1 <= k <= min(M, ``TOPK_MAX``),
    exact i32 row dots, rows within one binding."""
    w, m = ap.shape[1], bp.shape[0]
    if not (1 <= k <= min(m, TOPK_MAX) and exact_words(w) and m < 0xFFFFFFFF):
        raise ValueError(f"wgpu search: k must be in [1, min(M, {TOPK_MAX})] with exact i32 rows, "
                         f"got k={k}, M={m}, {w} words")
    if long.is_long(eng, w):
        raise ValueError(f"wgpu search: rows of {w} words exceed one binding (vsa.search ranks "
                         "their dots on the host)")


def search(eng: Engine, ap, an, bp, bn, k: int):
    """The k best memory rows per query, (idx int64 (Q, k), scores int64 (Q, k)), descending, ties
    to the smaller index; only (Q, k) pairs per memory chunk come back to the host.

    Memory beyond one binding runs in row chunks (their k best merged on the host), queries in
    chunks whose scores buffer and candidate lists fit a binding and whose grids fit a dispatch.
    (A resident memory in one chunk goes through :mod:`.search_plan` first, see ``vsa.search``.)"""
    q, w = ap.shape
    m = bp.shape[0]
    check_args(eng, ap, bp, k)
    out_i = np.empty((q, k), np.int64)
    out_s = np.empty((q, k), np.int64)
    pipes, qb, br, mrows, qrows = layout(eng, q, m, w, k)
    for q0, q1 in _chunks(q, qrows):
        nq = q1 - q0
        qa = [eng.upload(x[q0:q1]) for x in (ap, an)]
        parts = []
        for m0, m1 in _chunks(m, mrows):
            parts.append(_chunk(eng, pipes, qa, bp, bn, nq, m0, m1, w, k, qb, br))
        eng.release(*qa)
        if len(parts) == 1:
            s, i = parts[0]
            out_s[q0:q1], out_i[q0:q1] = s, i
        else:  # merge the chunks' k best on the host: (-score, index) lexicographic
            s = np.concatenate([p[0] for p in parts], axis=1).astype(np.int64)
            i = np.concatenate([p[1] for p in parts], axis=1).astype(np.int64)
            order = np.lexsort((i, -s), axis=-1)[:, :k]
            out_s[q0:q1] = np.take_along_axis(s, order, axis=-1)
            out_i[q0:q1] = np.take_along_axis(i, order, axis=-1)
    return out_i, out_s


def layout(eng: Engine, q: int, m: int, w: int, k: int):
    """(pipelines, queries per block, memory rows per pass-one workgroup, memory rows per chunk,
    queries per chunk) of a search of q queries over m rows of w words."""
    qb = _qb(q)
    # workgroup memory: WebGPU's guaranteed 16 KiB at most, so the variants are the same on every
    # device (``variants.vsa_variants``); the rounds beyond it cost two barriers each
    storage = min(eng.limits.max_workgroup_storage, 16384)
    pipes = (eng.pipeline("vsa_search_dot", **dot_params(qb, storage, q)),
             eng.pipeline("vsa_search", SRC="score", RPT=SEARCH_RPT),
             eng.pipeline("vsa_search", SRC="cand", RPT=SEARCH_RPT),
             eng.pipeline("vsa_search", SRC="cand", RPT=SEARCH_RPT_LAST))
    lim = eng.max_binding
    wmax = eng.limits.max_workgroups_per_dim
    lanes, rows_t = _shape(q)
    br = 256 // lanes * rows_t  # memory rows per pass-one workgroup
    rows = max(1, lim // (4 * w))
    mrows = min(rows, m, lim // 4, wmax * wmax * _TR, wmax * wmax * br)
    gmax = -(-mrows // _TR)  # selection groups per query in any memory chunk
    qrows = max(1, min(rows, lim // (4 * gmax * k), lim // (4 * mrows), (wmax * wmax) // gmax,
                       (wmax * wmax) // -(-mrows // br) * qb))
    if qrows >= qb:
        qrows -= qrows % qb  # whole query blocks per chunk
    return pipes, qb, br, mrows, qrows


def _chunk(eng: Engine, pipes, qa, bp, bn, nq, m0, m1, w, k, qb, br):
    """(scores int32 (nq, k), indices uint32 (nq, k)) of memory rows [m0, m1): pass one, the
    selection and the merge passes in one submit; one read-back (indices copied behind scores)."""
    mb = [eng.upload(x[m0:m1]) for x in (bp, bn)]
    cmds, bufs, cur = commands(eng, pipes, [b.binding() for b in qa + mb], nq, m0, m1 - m0, w, k,
                               qb, br, eng.alloc)
    out = eng.alloc(2 * nq * k * 4)
    cmds += [eng.copy(cur[0], out, nq * k * 4), eng.copy(cur[1], out, nq * k * 4, 0, nq * k * 4)]
    eng.submit(cmds)
    both = eng.download(out, np.uint32, (2, nq, k))
    eng.release(*mb, *bufs, out)
    return both[0].view(np.int32), both[1]


def commands(eng: Engine, pipes, binds, nq, m0, n, w, k, qb, br, alloc):
    """The dispatches of one memory chunk of ``n`` rows from global row ``m0`` (pass one, the
    selection, the merges): (commands, scratch buffers, the last (scores, indices) pair).
    ``binds``: the query and memory planes' bindings; ``alloc(nbytes)`` gives the scratch."""
    p_dot, p_score, p_cand, p_last = pipes
    sc = alloc(nq * n * 4)
    rblocks = -(-n // br)
    gx, gy, _ = eng.grid(rblocks * -(-nq // qb))
    cmds = [eng.dispatch(p_dot, list(binds) + [sc.binding()], (gx, gy, 1),
                         pack_params(nq, n, w, gx, rblocks, 0, 0, 0))]
    groups = -(-n // _TR)
    cur = [alloc(nq * groups * k * 4) for _ in range(2)]
    gx, gy, _ = eng.grid(nq * groups)
    cmds.append(eng.dispatch(p_score, [b.binding() for b in [sc] + cur], (gx, gy, 1),
                             pack_params(nq, n, 0, k, groups, gx, m0, 0)))
    bufs = [sc] + cur
    length = groups * k
    while groups > 1:
        last = length <= 256 * SEARCH_RPT_LAST
        groups = 1 if last else -(-length // _TR)
        nxt = [alloc(nq * groups * k * 4) for _ in range(2)]
        gx, gy, _ = eng.grid(nq * groups)
        pipe = p_last if last and length > _TR else p_cand
        cmds.append(eng.dispatch(pipe, [b.binding() for b in cur + nxt],
                                 (gx, gy, 1),
                                 pack_params(nq, length, 0, k, groups, gx, 0, 0)))
        bufs += nxt
        cur = nxt
        length = groups * k
    return cmds, bufs, cur


__all__ = ["SEARCH_LANES", "SEARCH_ONE", "SEARCH_QB", "SEARCH_ROWS", "SEARCH_RPT", "SEARCH_RPT_LAST",
           "TOPK_MAX",
           "check_args", "commands", "dot_params", "dot_variants", "exact_words", "layout", "query_blocks",
           "search"]
