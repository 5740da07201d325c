"""VSA work on rows beyond one storage binding (2^30 trits is 128 MiB a plane, wgpu's default limit).

Such rows run in word ranges of at most :func:`piece_words` words: dot and nnz add the ranges'
sums (exact, int64); permute computes output word ranges, each reading the source window(s) its bits
come from (two when the range wraps past dim to bit 0). Slices are flat views of the planes, so
resident operands bind in place (or are copied on the device), never through the host. The per-range
kernels are the callers' own (passed in), so this module only plans the ranges.
"""

from __future__ import annotations

import numpy as np

from .engine import WG, Engine, pack_params


def chunks(total: int, per: int):
    """(start, stop) ranges of at most ``per`` covering ``range(total)``."""
    per = max(1, per)
    for s in range(0, total, per):
        yield s, min(total, s + per)


def piece_words(eng: Engine) -> int:
    """Words of one row per piece when a row exceeds a binding: a multiple of 64 words (resident
    views then bind in place) with room for permute's extra source words."""
    per = eng.max_binding // 4 - 4
    return per // 64 * 64 if per >= 64 else max(1, per)


def is_long(eng: Engine, w: int) -> bool:
    """True when one row of ``w`` words does not fit one storage binding."""
    return 4 * w > eng.max_binding


def dot_long(eng: Engine, ap, an, bp, bn, dot):
    """Rows beyond one binding: each pair's dot is the sum of its word ranges' dots (int64)."""
    q, w = ap.shape
    m = bp.shape[0]
    fa = [x.reshape(-1) for x in (ap, an)]
    fb = [x.reshape(-1) for x in (bp, bn)]
    out = np.zeros((q, m), np.int64)
    for w0, w1 in chunks(w, piece_words(eng)):
        for i in range(q):
            a = [x[i * w + w0:i * w + w1].reshape(1, w1 - w0) for x in fa]
            for j in range(m):
                b = [x[j * w + w0:j * w + w1].reshape(1, w1 - w0) for x in fb]
                out[i, j] += dot(eng, *a, *b)[0, 0]
    return out


def nnz_long(eng: Engine, p, n, nnz):
    """Non-zero trits of rows beyond one binding: the counts of word ranges added (int64)."""
    rows, w = p.shape
    fp, fn = p.reshape(-1), n.reshape(-1)
    out = np.zeros(rows, np.int64)
    for w0, w1 in chunks(w, piece_words(eng)):
        for i in range(rows):
            out[i] += nnz(eng, fp[i * w + w0:i * w + w1].reshape(1, w1 - w0),
                          fn[i * w + w0:i * w + w1].reshape(1, w1 - w0))[0]
    return out


def permute_long(eng: Engine, pipe, x, dim: int, shifts: int):
    """One plane (rows, w) of rows beyond one binding, permuted range by range of output words."""
    rows, w = x.shape
    out = np.empty((rows, w), np.uint32)
    flat = x.reshape(-1)
    for r in range(rows):
        for o0, o1 in chunks(w, piece_words(eng)):
            out[r, o0:o1] = _permute_range(eng, pipe, flat[r * w:(r + 1) * w], w, dim, shifts, o0, o1)
    return out
def _permute_range(eng: Engine, pipe, row, w: int, dim: int, shifts: int, o0: int, o1: int):
    """Output words [o0, o1) of one permuted row (``row``: its w words, flat). Their source bits
    start at bit (32*o0 - shifts) mod dim and may wrap past dim to bit 0: window A holds the words
    from there on (to the row's end if it wraps), window B the row's first words."""
    start = (32 * o0 - shifts) % dim
    nbits = min(32 * o1, dim) - 32 * o0
    a0 = start // 32
    if start + nbits <= dim:
        a1, b1 = min(w, (start + nbits - 1) // 32 + 2), 0
    else:
        a1, b1 = w, min(w, (start + nbits - dim - 1) // 32 + 2)
    win_a = eng.upload(row[a0:a1])
    win_b = eng.upload(row[0:b1]) if b1 else win_a
    dst = eng.alloc((o1 - o0) * 4)
    gx, gy, _ = eng.grid(-(-(o1 - o0) // WG))
    eng.submit([eng.dispatch(pipe, [win_a.binding(), win_b.binding(), dst.binding()], (gx, gy, 1),
                             pack_params(o1 - o0, w, dim, shifts, gx, o1 - o0, o0, a0))])
    res = eng.download(dst, np.uint32, (o1 - o0,))
    eng.release(win_a, dst, *([win_b] if b1 else []))
    return res


__all__ = ["chunks", "dot_long", "is_long", "nnz_long", "permute_long", "piece_words"]
