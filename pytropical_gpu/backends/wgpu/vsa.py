"""Bitsliced ternary VSA kernels: bind, bundle, dot (two-level exact), permute, accumulate, harden,
nnz; the search top-k lives in :mod:`.vsa_search` (re-exported here).

Arrays are uint32 word planes (see base.py's kernel contract). Work beyond one storage binding runs
in chunks of words or rows; a single row beyond one binding runs in word ranges (:mod:`.vsa_long`);
search ranks such rows' tiled dots on the host.
"""

from __future__ import annotations

import numpy as np

from . import search_plan, vsa_search
from . import vsa_long as long
from .array import WgpuArray, host
from .engine import WG, Engine, pack_params
from .readback import download_all, finish, resident, upload_result
from .vsa_long import chunks as _chunks
from .vsa_search import SEARCH_RPT, TOPK_MAX, exact_words  # noqa: F401 (the backend's names)

#: elementwise kernels (bind, accumulate, harden): elements (vec4 words where the count allows)
#: per thread; dot: vec4 elements loaded ahead per thread (see benchmarks/results/wgpu_gemm_notes.md)
EW_PER = 1
DOT_UNROLL = 4


def _vec_chunk(eng: Engine, planes: int = 1) -> int:
    """Words per chunk: within one binding for ``planes`` planes, a multiple of 4 (vec4 kernels)."""
    return max(4, eng.max_binding // (16 * planes) * 4)


def elementwise_dispatch(eng: Engine, op: str, bits: int, nwords: int, binds, threshold: int = 0):
    """The dispatch of ``vsa_elementwise`` over ``nwords`` words per plane (vec4 elements when
    ``nwords`` is a multiple of 4)."""
    vec = nwords % 4 == 0
    units = nwords // 4 if vec else nwords
    pipe = eng.pipeline("vsa_elementwise", _key=("elementwise", op, bits, vec), OP=op, BITS=bits,
                        WG=WG, VEC=vec, PER=EW_PER)
    gx, gy, _ = eng.grid(-(-units // (WG * EW_PER)))
    return eng.dispatch(pipe, binds, (gx, gy, 1), pack_params(units, gx, threshold, 0))


def dot_plan(w: int) -> tuple[bool, int, int, int]:
    """(vec4, elements per row, elements per thread, chunks per pair) of ``vsa_dot`` on rows of
    ``w`` words."""
    vec = w % 4 == 0
    units = w // 4 if vec else w
    wpt = _wpt(units)
    return vec, units, wpt, -(-units // (256 * wpt))


def dot_dispatch(eng: Engine, binds, q: int, m: int, w: int):
    """The dispatch of ``vsa_dot`` for q x m pairs of rows of ``w`` words (one i32 partial per
    workgroup: ``dot_plan(w)[3]`` per pair)."""
    vec, units, wpt, chunks = dot_plan(w)
    pipe = eng.pipeline("vsa_dot", _key=("dot", vec), VEC=vec, UNROLL=DOT_UNROLL)
    gx, gy, _ = eng.grid(q * m * chunks)
    return eng.dispatch(pipe, binds, (gx, gy, 1), pack_params(q, m, units, chunks, wpt, gx, 0, 0))


def bind(eng: Engine, ap, an, bp, bn):
    shape = ap.shape
    total = ap.size
    keep = resident(ap, an, bp, bn)
    chunks = list(_chunks(total, _vec_chunk(eng)))
    flat = [x if len(chunks) == 1 else  # one chunk: the buffers as they are (no views to make)
            x.reshape(-1) if isinstance(x, WgpuArray) else np.ascontiguousarray(x).reshape(-1)
            for x in (ap, an, bp, bn)]
    op, on = (np.empty(total, np.uint32), np.empty(total, np.uint32))
    for s, e in chunks:
        ins = [eng.upload(x if len(chunks) == 1 else x[s:e]) for x in flat]
        outs = [eng.alloc((e - s) * 4) for _ in range(2)]
        eng.submit([elementwise_dispatch(eng, "bind", 0, e - s, [b.binding() for b in ins + outs])])
        if keep and len(chunks) == 1:  # the result stays on the device
            rp, rn = finish(eng, True, *[(o, np.uint32, shape) for o in outs])
            eng.release(*ins)
            return rp, rn
        op[s:e], on[s:e] = download_all(eng, *[(o, np.uint32, (e - s,)) for o in outs])
        eng.release(*ins, *outs)
    return upload_result(eng, keep, op.reshape(shape)), upload_result(eng, keep, on.reshape(shape))


def bundle(eng: Engine, p, n, threshold: int):
    v, r = p.shape
    if threshold > v:  # |sum| <= v < threshold everywhere
        return np.zeros(r, np.uint32), np.zeros(r, np.uint32)
    # |s| <= v, so any threshold above v gives the same all-zero result: clamp it (keeps the counter
    # WIDTH and the u32 parameter small; threshold >= 2**30 once emitted an invalid WIDTH=33 shader)
    threshold = min(int(threshold), v + 1)
    width = max(v, threshold).bit_length() + 2
    pipe = eng.pipeline("vsa_bundle", _key=("bundle", width), WIDTH=width, WG=WG)
    op, on = np.empty(r, np.uint32), np.empty(r, np.uint32)
    chunks = list(_chunks(r, eng.max_binding // (4 * v)))
    keep = resident(p, n)
    if len(chunks) > 1:  # column blocks are strided: resident planes come to the host once
        p, n = host(p, "bundle beyond one binding"), host(n, "bundle beyond one binding")
    for s, e in chunks:
        ins = [eng.upload(x if e - s == r else np.ascontiguousarray(x[:, s:e])) for x in (p, n)]
        outs = [eng.alloc((e - s) * 4) for _ in range(2)]
        gx, gy, _ = eng.grid(-(-(e - s) // WG))
        eng.submit([eng.dispatch(pipe, [b.binding() for b in ins + outs], (gx, gy, 1),
                                 pack_params(v, e - s, threshold, gx))])
        if keep and len(chunks) == 1:
            rp, rn = finish(eng, True, *[(o, np.uint32, (r,)) for o in outs])
            eng.release(*ins)
            return rp, rn
        op[s:e], on[s:e] = download_all(eng, *[(o, np.uint32, (e - s,)) for o in outs])
        eng.release(*ins, *outs)
    return upload_result(eng, keep, op), upload_result(eng, keep, on)


def _wpt(w: int) -> int:
    """Elements per thread of one dot chunk (at most 16: 2^30 trits, H200: 0.121 ms, 64: 0.125)."""
    return int(min(16, max(1, -(-w // 256))))


def dot(eng: Engine, ap, an, bp, bn):
    q, w = ap.shape
    m = bp.shape[0]
    if long.is_long(eng, w):
        return long.dot_long(eng, ap, an, bp, bn, dot)
    out = np.empty((q, m), np.int64)
    chunks = dot_plan(w)[3]
    lim = eng.max_binding
    rows = max(1, lim // (4 * w))
    wmax = eng.limits.max_workgroups_per_dim
    for q0, q1 in _chunks(q, rows):
        qa = [eng.upload(x[q0:q1]) for x in (ap, an)]
        # memory rows per dispatch: partials and the workgroup grid stay within the limits
        per = max(1, min(rows, lim // (4 * chunks * (q1 - q0)),
                         (wmax * wmax) // (chunks * (q1 - q0))))
        for m0, m1 in _chunks(m, per):
            mb = [eng.upload(x[m0:m1]) for x in (bp, bn)]
            res = eng.alloc((q1 - q0) * (m1 - m0) * chunks * 4)
            binds = [b.binding() for b in qa + mb] + [res.binding()]
            eng.submit([dot_dispatch(eng, binds, q1 - q0, m1 - m0, w)])
            part = eng.download(res, np.int32, (q1 - q0, m1 - m0, chunks))
            out[q0:q1, m0:m1] = part.sum(axis=-1, dtype=np.int64)
            eng.release(*mb, res)
        eng.release(*qa)
    return out


def search(eng: Engine, ap, an, bp, bn, k: int):
    """The k best memory rows per query (idx, scores): the fused kernels of :mod:`.vsa_search`, or,
    for rows beyond one binding, tiled :func:`dot` ranked on the host (ties: the smaller index)."""
    if long.is_long(eng, ap.shape[1]):
        scores = dot(eng, ap, an, bp, bn)
        order = np.argsort(-scores, axis=-1, kind="stable")[:, :k]
        return order.astype(np.int64), np.take_along_axis(scores, order, axis=-1)
    if search_plan.ENABLED:  # a resident memory in one chunk: a cached plan, one submit, one read
        vsa_search.check_args(eng, ap, bp, k)
        got = search_plan.search(eng, ap, an, bp, bn, k)
        if got is not None:
            return got
    return vsa_search.search(eng, ap, an, bp, bn, k)


def nnz(eng: Engine, p, n):
    """Non-zero trits per row, int64 (N,): popcount(pos | neg) per row on the GPU."""
    rows, w = p.shape
    assert exact_words(w)
    if long.is_long(eng, w):  # rows beyond one binding: add the counts of word ranges
        return long.nnz_long(eng, p, n, nnz)
    out = np.empty(rows, np.int64)
    pipe = eng.pipeline("vsa_nnz", WG=WG)
    for r0, r1 in _chunks(rows, eng.max_binding // (4 * w)):
        ins = [eng.upload(x[r0:r1]) for x in (p, n)]
        res = eng.alloc((r1 - r0) * 4)
        gx, gy, _ = eng.grid(-(-(r1 - r0) // WG))
        eng.submit([eng.dispatch(pipe, [b.binding() for b in ins] + [res.binding()], (gx, gy, 1),
                                 pack_params(r1 - r0, w, gx, 0))])
        out[r0:r1] = eng.download(res, np.uint32, (r1 - r0,))
        eng.release(*ins, res)
    return out


def permute(eng: Engine, p, n, dim: int, shifts: int):
    """Cyclic shift by ``shifts`` (0 <= shifts < dim) of every row: whole rows per dispatch, or, for
    rows beyond one binding, output word ranges each reading its source window(s) of the row."""
    rows, w = p.shape
    keep = resident(p, n)
    pipe = eng.pipeline("vsa_permute", _key=("permute",), WG=WG)
    outs = []
    for x in (p, n):
        out = np.empty((rows, w), np.uint32)
        if long.is_long(eng, w):
            outs.append(upload_result(eng, keep, long.permute_long(eng, pipe, x, dim, shifts)))
            continue
        chunks = list(_chunks(rows, eng.max_binding // (4 * w)))
        for r0, r1 in chunks:
            src = eng.upload(x[r0:r1])
            dst = eng.alloc((r1 - r0) * w * 4)
            total = (r1 - r0) * w
            gx, gy, _ = eng.grid(-(-total // WG))
            eng.submit([eng.dispatch(pipe, [src.binding(), src.binding(), dst.binding()],
                                     (gx, gy, 1), pack_params(total, w, dim, shifts, gx, w, 0, 0))])
            if keep and len(chunks) == 1:
                out = finish(eng, True, (dst, np.uint32, (rows, w)))[0]
                eng.release(src)
                break
            out[r0:r1] = eng.download(dst, np.uint32, (r1 - r0, w))
            eng.release(src, dst)
        else:
            out = upload_result(eng, keep, out)
        outs.append(out)
    return outs[0], outs[1]


def accumulate(eng: Engine, sign, mag, hp, hn):
    bits = mag.shape[0]
    shape = sign.shape
    total = sign.size
    s_flat = sign.reshape(-1)
    m_flat = mag.reshape(bits, -1)
    hp, hn = hp.reshape(-1), hn.reshape(-1)
    s_out = np.empty(total, np.uint32)
    m_out = np.empty((bits, total), np.uint32)
    for s, e in _chunks(total, _vec_chunk(eng, bits)):
        sb = eng.upload(s_flat[s:e])
        mbuf = eng.upload(np.ascontiguousarray(m_flat[:, s:e]))
        hb = [eng.upload(hp[s:e]), eng.upload(hn[s:e])]
        eng.submit([elementwise_dispatch(eng, "accumulate", bits, e - s,
                                         [sb.binding(), mbuf.binding()] + [b.binding() for b in hb])])
        s_out[s:e], m_out[:, s:e] = download_all(eng, (sb, np.uint32, (e - s,)),
                                                 (mbuf, np.uint32, (bits, e - s)))
        eng.release(sb, mbuf, *hb)
    return s_out.reshape(shape), m_out.reshape((bits,) + shape)


def harden(eng: Engine, sign, mag, threshold: int):
    bits = mag.shape[0]
    if threshold >= 1 << 32:  # only counters of more than 32 bits get here: compare on the host
        from .. import bitslice

        return bitslice.harden(sign, mag, threshold)
    shape = sign.shape
    total = sign.size
    s_flat = sign.reshape(-1)
    m_flat = mag.reshape(bits, -1)
    op, on = np.empty(total, np.uint32), np.empty(total, np.uint32)
    for s, e in _chunks(total, _vec_chunk(eng, bits)):
        sb = eng.upload(s_flat[s:e])
        mbuf = eng.upload(np.ascontiguousarray(m_flat[:, s:e]))
        outs = [eng.alloc((e - s) * 4) for _ in range(2)]
        eng.submit([elementwise_dispatch(eng, "harden", bits, e - s,
                                         [sb.binding(), mbuf.binding()] + [b.binding() for b in outs],
                                         threshold)])
        op[s:e], on[s:e] = download_all(eng, *[(o, np.uint32, (e - s,)) for o in outs])
        eng.release(sb, mbuf, *outs)
    return op.reshape(shape), on.reshape(shape)  # soft counters live on the host
