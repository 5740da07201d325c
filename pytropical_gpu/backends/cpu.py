"""The numpy backend: the reference every GPU backend is tested against, and the small-size path.

GEMM runs in cache-sized blocks (rows × a k-chunk × n) with preallocated scratch, so memory stays
bounded whatever the size; ``plus_times`` on floats goes to BLAS. Bit planes are processed as 64-bit
words with ``np.bitwise_count``; bundle/accumulate/harden are bit-sliced counters, exact per element.
"""

from __future__ import annotations

import numpy as np

from .. import zero_order
from ..semirings import Semiring, strictly_better
from . import bitslice
from .base import Backend

_BLOCK = 1 << 18  # elements of scratch per block (1 MiB of float32)


def probe() -> tuple[bool, str]:
    return True, f"numpy {np.__version__}"


def create() -> CpuBackend:
    return CpuBackend()


class CpuBackend(Backend):
    """numpy implementation of every operation."""

    name = "cpu"
    #: numpy runs a user's ufuncs on every dtype it accepts, bool included
    user_dtypes = Backend.gemm_dtypes

    def describe(self) -> dict:
        return {"name": self.name, "device": "host CPU", "numpy": np.__version__}

    # ------------------------------------------------------------------ GEMM
    def _gemm(self, a, b, sr: Semiring, c, argmax, facts):
        if sr.add_op in ("lor", "lxor"):
            return self._gemm_bool(a, b, sr, c), None
        batch = max(a.shape[0], b.shape[0], 1 if c is None else c.shape[0])
        m, k = a.shape[1:]
        n = b.shape[2]
        dt = a.dtype
        if sr.name == "plus_times" and dt.kind == "f" and not argmax:
            with np.errstate(invalid="ignore", over="ignore"):  # inf * 0: IEEE NaN, as BLAS
                d = np.matmul(a, b)
                if d.shape[0] != batch:
                    d = np.broadcast_to(d, (batch, m, n)).copy()
                return (d if c is None else d + c), None
        mul = _multiplier(sr, dt, facts["a"], facts["b"])
        zero = sr.zero_for(dt)
        d = np.empty((batch, m, n), dt)
        idx = np.empty((batch, m, n), np.int32) if argmax else None
        ufunc_add = isinstance(sr.add, np.ufunc)
        kb = 1 if argmax or not ufunc_add else max(1, min(k, _BLOCK // max(n, 1) // 16))
        rb = max(1, min(m, _BLOCK // max(n * kb, 1)))
        better = strictly_better(sr) if argmax else None
        tmp3 = np.empty((rb, kb, n), dt)
        for bi in range(batch):
            A = a[bi % a.shape[0]]
            B = b[bi % b.shape[0]]
            for r0 in range(0, m, rb):
                r1 = min(m, r0 + rb)
                acc = np.full((r1 - r0, n), zero, dt)
                ix = np.full((r1 - r0, n), -1, np.int32) if argmax else None
                for k0 in range(0, k, kb):
                    k1 = min(k, k0 + kb)
                    t = tmp3[: r1 - r0, : k1 - k0]
                    mul(A[r0:r1, k0:k1, None], B[None, k0:k1, :], t)
                    if argmax:
                        v = t[:, 0]
                        mask = better(v, acc)
                        np.copyto(acc, v, where=mask)
                        ix[mask] = k0
                    elif ufunc_add:
                        sr.add(acc, sr.add.reduce(t, axis=1), out=acc)
                    else:
                        for j in range(k1 - k0):
                            acc[...] = sr.add(acc, t[:, j])
                d[bi, r0:r1] = acc
                if argmax:
                    idx[bi, r0:r1] = ix
        if c is not None:
            cb = np.broadcast_to(c, d.shape)
            if argmax:
                idx[~better(d, cb)] = -1
            d = np.asarray(sr.add(cb, d)).astype(dt, copy=False)
        if zero_order.applies(sr, dt):
            zero_order.fix_host(d, a, b, sr, c)
        return d, idx

    # ------------------------------------------------------------------ packed boolean
    def _pack(self, bits):
        return bitslice.pack_bits(bits)

    def _andor(self, aw, bw):
        return self._pairwise(aw, bw, lambda x: (x != 0).any(axis=-1))

    def _xorand(self, aw, bw):
        return self._pairwise(aw, bw, lambda x: (np.bitwise_count(np.bitwise_xor.reduce(
            x, axis=-1)) & 1).astype(bool))

    @staticmethod
    def _pairwise(aw, bw, reduce):
        a64, b64 = bitslice.as64(aw), bitslice.as64(bw)
        m, n, w = a64.shape[0], b64.shape[0], a64.shape[1]
        out = np.empty((m, n), bool)
        rb = max(1, _BLOCK // max(n * w, 1))
        for r0 in range(0, m, rb):
            out[r0:r0 + rb] = reduce(a64[r0:r0 + rb, None, :] & b64[None, :, :])
        return out

    # ------------------------------------------------------------------ ternary VSA
    def _bind(self, ap, an, bp, bn):
        shape = ap.shape
        ap, an, bp, bn = (bitslice.as64(x) for x in (ap, an, bp, bn))
        p = (ap & bp) | (an & bn)
        n = (ap & bn) | (an & bp)
        return bitslice.as32(p, shape), bitslice.as32(n, shape)

    def _bundle(self, p, n, threshold):
        return bitslice.bundle(p, n, threshold)

    def _dot(self, ap, an, bp, bn):
        ap, an, bp, bn = (bitslice.as64(x) for x in (ap, an, bp, bn))
        q, m = ap.shape[0], bp.shape[0]
        out = np.empty((q, m), np.int64)
        for i in range(q):
            same = np.bitwise_count((ap[i] & bp) | (an[i] & bn)).sum(axis=-1, dtype=np.int64)
            diff = np.bitwise_count((ap[i] & bn) | (an[i] & bp)).sum(axis=-1, dtype=np.int64)
            out[i] = same - diff
        return out

    def _permute(self, p, n, dim, shifts):
        return bitslice.roll(p, dim, shifts), bitslice.roll(n, dim, shifts)

    def _accumulate(self, sign, mag, hp, hn):
        return bitslice.accumulate(sign, mag, hp, hn)

    def _harden(self, sign, mag, threshold):
        return bitslice.harden(sign, mag, threshold)


def _multiplier(sr: Semiring, dt: np.dtype, fa, fb):
    """A function ``mul(x, y, out)`` implementing ⊗ with the semantics of semirings.py, as cheap
    as the operands' facts (``fa``, ``fb``: :class:`~pytropical_gpu.facts.Facts`) allow."""
    op = sr.mul
    if not sr.guarded:
        if isinstance(op, np.ufunc):
            def mul(x, y, out):
                op(x, y, out=out, casting="unsafe")
        else:
            def mul(x, y, out):
                out[...] = op(x, y)
        return mul
    zero = sr.zero_for(dt)
    if dt.kind == "f":
        if not (fa.inf or fb.inf):  # finite operands: IEEE result (overflow to ±inf intended), never NaN
            def finite(x, y, out):
                with np.errstate(over="ignore"):
                    op(x, y, out=out)
            return finite

        def mul(x, y, out):
            with np.errstate(invalid="ignore", over="ignore"):
                op(x, y, out=out)
            bad = (x == zero) | (y == zero) | np.isnan(out)
            np.copyto(out, zero, where=bad)
        return mul
    # integers: plus saturates, times wraps; the zero is absorbing.
    info = np.iinfo(dt)
    has_zero = fa.contains(zero) or fb.contains(zero)
    saturate = sr.mul_op == "plus" and int(fa.absmax) + int(fb.absmax) > info.max  # Python ints

    def mul(x, y, out):
        if saturate:
            _sat_add(x, y, out, info)
        else:
            with np.errstate(over="ignore"):
                op(x, y, out=out)
        if has_zero:
            np.copyto(out, zero, where=(x == zero) | (y == zero))
    return mul


def _sat_add(x, y, out, info) -> None:
    """``out = clip(x + y)`` exactly, for int32 and int64 (no wider type needed)."""
    with np.errstate(over="ignore"):
        np.add(x, y, out=out)  # wraps
    # overflow iff x and y have the same sign and the sum's sign differs
    ov = ((x ^ out) & (y ^ out)) < 0
    if ov.any():
        np.copyto(out, np.where(x < 0, info.min, info.max), where=ov, casting="unsafe")
