"""Packed boolean kernels: pack bools along k on the GPU, AndOr / XorAnd over u32 words."""

from __future__ import annotations

import numpy as np

from .array import WgpuArray
from .engine import WG, Engine, pack_params

KW = 8  # words per k step of the product kernel


def pack(eng: Engine, bits: np.ndarray) -> np.ndarray:
    """bool (r, k) -> uint32 (r, ceil(k/32)), LSB first, zero tail."""
    r, k = bits.shape
    w = (k + 31) // 32
    out = np.empty((r, w), np.uint32)
    pipe = eng.pipeline("pack", WG=WG)
    rb = max(1, min(r, eng.max_binding // max(k, 1)))
    for r0 in range(0, r, rb):
        r1 = min(r, r0 + rb)
        blk = bits[r0:r1]
        src = eng.upload(blk if isinstance(blk, WgpuArray) else np.ascontiguousarray(blk).view(np.uint8))
        dst = eng.alloc((r1 - r0) * w * 4)
        gx, gy, _ = eng.grid(-(-((r1 - r0) * w) // WG))
        eng.submit([eng.dispatch(pipe, [src.binding(), dst.binding()], (gx, gy, 1),
                                 pack_params(r1 - r0, k, w, gx))])
        out[r0:r1] = eng.download(dst, np.uint32, (r1 - r0, w))
        eng.release(src, dst)
    return out


def andor(eng: Engine, aw: np.ndarray, bw: np.ndarray, xor: bool = False) -> np.ndarray:
    """bool (m, n): OR over words of (a & b) != 0, or (xor) parity of popcount(XOR of a & b)."""
    m, w = aw.shape
    n = bw.shape[0]
    pipe = eng.pipeline("andor", KW=KW, XOR=bool(xor))
    out = np.empty((m, n), np.bool_)
    lim = eng.max_binding
    wmax = eng.limits.max_workgroups_per_dim
    mb = max(1, min(m, lim // (4 * w), wmax * 64))
    nb = max(4, min(n, lim // (4 * w), wmax * 64) // 4 * 4)
    for n0 in range(0, n, nb):
        n1 = min(n, n0 + nb)
        bbuf = eng.upload(bw[n0:n1])
        nn = n1 - n0
        n4 = (nn + 3) // 4
        mb2 = max(1, min(mb, lim // (4 * n4)))
        for m0 in range(0, m, mb2):
            m1 = min(m, m0 + mb2)
            abuf = eng.upload(aw[m0:m1])
            obuf = eng.alloc((m1 - m0) * n4 * 4)
            groups = (-(-nn // 64), -(-(m1 - m0) // 64), 1)
            eng.submit([eng.dispatch(pipe, [abuf.binding(), bbuf.binding(), obuf.binding()], groups,
                                     pack_params(m1 - m0, nn, w, n4))])
            res = eng.download(obuf, np.uint8, (m1 - m0, n4 * 4))
            out[m0:m1, n0:n1] = res[:, :nn].view(np.bool_)
            eng.release(abuf, obuf)
        eng.release(bbuf)
    return out
