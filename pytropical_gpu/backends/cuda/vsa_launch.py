"""Launches of the vectorised VSA kernels (``cuda/vsa_vec.cu``) for the CUDA backend's kernel
methods ``_bind``, ``_bundle``, ``_dot`` (rows of 2,048 words or more), ``_accumulate`` and
``_harden``, and the switch between them and the previous kernels (``cuda/vsa.cu`` and CuPy's
ElementwiseKernel for bind), kept so that benchmarks/bench_vsa_cuda.py times both in one run.

16-byte accesses need every array of a call at the same address modulo 16: outputs are allocated at
the inputs' offset, and a call whose inputs disagree runs the kernels' scalar path (still exact).
Grids are sized to the SM count (``BLOCKS_PER_SM`` blocks of 256 threads, grid-stride loops).
"""

from __future__ import annotations

import numpy as np

from . import kernels

#: True: the vectorised kernels of cuda/vsa_vec.cu; False: the previous kernels (cuda/vsa.cu and
#: CuPy's ElementwiseKernel for bind). Read at every call.
VECTORISED = True
#: resident 256-thread blocks per SM the grid-stride kernels are launched with (2,048 threads).
BLOCKS_PER_SM = 8
_THREADS = 256
_MAX_BLOCKS = 2**31 - 1


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _off(x) -> int:
    return x.data.ptr % 16


def same_offset(*xs) -> bool:
    """True when every array starts at the same address modulo 16 (16-byte accesses line up)."""
    return len({_off(x) for x in xs}) == 1


def empty_at(cp, n: int, like):
    """An uninitialised uint32 array of ``n`` words starting at ``like``'s address modulo 16."""
    buf = cp.empty(n + 3, np.uint32)
    k = ((like.data.ptr - buf.data.ptr) % 16) // 4
    return buf[k:k + n]


def _blocks(be, units: int) -> int:
    return max(1, min(_cdiv(units, _THREADS), be._sm_count() * BLOCKS_PER_SM))


def bind_v(be, ap, an, bp, bn):
    """(N, W) planes -> (p, n) of the elementwise trit product."""
    cp = be._cp
    shape, nw = ap.shape, ap.size
    p, n = empty_at(cp, nw, ap), empty_at(cp, nw, ap)
    vec = same_offset(ap, an, bp, bn)
    kernels.function(kernels.VSA_VEC, "bind")((_blocks(be, _cdiv(nw, 4) if vec else nw),), (_THREADS,), (
        ap, an, bp, bn, p, n, np.int64(nw), np.int32(vec)))
    return p.reshape(shape), n.reshape(shape)


def dot_block_v(be, ap, an, bp, bn, out) -> None:
    """Adds the (q, m) dots of long rows into ``out`` (zeroed, contiguous int64)."""
    q, w = ap.shape
    m = bp.shape[0]
    pairs = q * m
    if pairs == 0:
        return
    per_pair = _cdiv(w, 4 * _THREADS * 4)  # at least 4 iterations of 16 bytes a thread
    gy = max(1, min(_cdiv(be._sm_count() * BLOCKS_PER_SM, pairs), per_pair, 65535))
    kernels.function(kernels.VSA_VEC, "dot")((pairs, gy), (_THREADS,), (
        ap, an, bp, bn, out, np.int64(m), np.int64(w), np.int32(1)))  # offsets: checked per pair


def bundle_plan(sms: int, v: int, r: int) -> tuple[int, int]:
    """(S, vectors per slice): split the vectors of a word over S = 1/2/4/8 slices of a block while
    there are fewer than 1,024 threads a SM and each slice keeps 16 vectors or more."""
    s = 1
    while s < 8 and r * s < sms * 1024 and _cdiv(v, 2 * s) >= 16:
        s *= 2
    return s, _cdiv(_cdiv(v, s), 8) * 8


def bundle_v(be, p, n, threshold: int):
    """(V, R) planes -> (R,) exact majority planes (threshold <= V)."""
    cp = be._cp
    v, r = p.shape
    width = max(v, threshold).bit_length() + 2
    w = next(x for x in kernels.BUNDLE_V_WIDTHS if x >= width)
    s, chunk = bundle_plan(be._sm_count(), v, r)
    op, on = cp.empty(r, np.uint32), cp.empty(r, np.uint32)
    blocks = max(1, min(_cdiv(r, _THREADS // s), _MAX_BLOCKS))
    kernels.function(kernels.VSA_VEC, f"bundle{w}")((blocks,), (_THREADS,), (
        p, n, op, on, np.int64(v), np.int64(r), np.int64(threshold), np.int32(s), np.int64(chunk)),
        shared_mem=(2 * w * 128 * 4) if s > 1 else 0)
    return op, on


def accumulate_v(be, sign, mag, hp, hn):
    """s <- clamp(s + h) in place on contiguous sign (N, W) and mag (bits, N, W)."""
    bits = mag.shape[0]
    nw = sign.size
    vec = same_offset(sign, mag, hp, hn) and (nw % 4 == 0 or bits == 1)
    maxb = next(b for b in kernels.ACC_BITS if b >= bits)
    kernels.function(kernels.VSA_VEC, f"accumulate{maxb}")(
        (_blocks(be, _cdiv(nw, 4) if vec else nw),), (_THREADS,), (
            sign, mag, hp, hn, np.int64(nw), np.int32(bits), np.int32(vec)))
    return sign, mag


def harden_v(be, sign, mag, threshold: int):
    """(p, n) where |s| >= threshold (1 <= threshold <= 2^bits - 1)."""
    cp = be._cp
    bits = mag.shape[0]
    nw = sign.size
    op, on = empty_at(cp, nw, sign), empty_at(cp, nw, sign)
    vec = same_offset(sign, mag) and (nw % 4 == 0 or bits == 1)
    kernels.function(kernels.VSA_VEC, "harden")((_blocks(be, _cdiv(nw, 4) if vec else nw),), (_THREADS,), (
        sign, mag, op, on, np.int64(nw), np.int32(bits), np.int64(threshold), np.int32(vec)))
    return op.reshape(sign.shape), on.reshape(sign.shape)


# ------------------------------------------------------------------ the previous kernels
def bind_old(be, ap, an, bp, bn):
    return kernels.elementwise("bind")(ap, an, bp, bn)


def _grid(n: int) -> tuple[int]:
    return (max(1, min(_cdiv(n, _THREADS), 8 * 65536)),)


def bundle_old(be, p, n, threshold: int):
    cp = be._cp
    v, r = p.shape
    op, on = cp.empty(r, np.uint32), cp.empty(r, np.uint32)
    width = max(v, threshold).bit_length() + 2
    w = next(x for x in kernels.BUNDLE_WIDTHS if x >= width)
    kernels.function(kernels.VSA, f"bundle{w}")(_grid(r), (_THREADS,), (
        p, n, op, on, np.int64(v), np.int64(r), np.int64(threshold)))
    return op, on


def dot_block_old(be, ap, an, bp, bn, out) -> None:
    q, w = ap.shape
    m = bp.shape[0]
    chunk = max(4096, _cdiv(w, 65535))
    kernels.function(kernels.VSA, "dot_block")((q * m, _cdiv(w, chunk)), (_THREADS,), (
        ap, an, bp, bn, out, np.int64(m), np.int64(w), np.int64(chunk)))


def accumulate_old(be, sign, mag, hp, hn):
    nw = sign.size
    kernels.function(kernels.VSA, "accumulate")(_grid(nw), (_THREADS,), (
        sign, mag, hp, hn, np.int64(nw), np.int32(mag.shape[0])))
    return sign, mag


def harden_old(be, sign, mag, threshold: int):
    cp = be._cp
    nw = sign.size
    op, on = cp.empty_like(sign), cp.empty_like(sign)
    kernels.function(kernels.VSA, "harden")(_grid(nw), (_THREADS,), (
        sign, mag, op, on, np.int64(nw), np.int32(mag.shape[0]), np.int64(threshold)))
    return op, on


# ------------------------------------------------------------------ what the backend calls
def _pick(name: str):
    def call(*args):
        return globals()[name + ("_v" if VECTORISED else "_old")](*args)
    call.__name__ = name
    call.__doc__ = f"``{name}_v`` when :data:`VECTORISED`, else ``{name}_old``."
    return call


bind = _pick("bind")
bundle = _pick("bundle")
dot_block = _pick("dot_block")
accumulate = _pick("accumulate")
harden = _pick("harden")

__all__ = ["VECTORISED", "BLOCKS_PER_SM", "bind", "bundle", "bundle_plan", "dot_block", "accumulate",
           "harden", "empty_at", "same_offset"]
