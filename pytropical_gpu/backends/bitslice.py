"""Bit-sliced arithmetic on numpy word arrays: counters, comparisons and shifts over bit planes.

A bit-sliced number keeps bit j of every element in plane j, so one word operation acts on 64
elements at once. The cpu backend's bundle, accumulate and harden are built from these, and the GPU
kernels implement the same circuits per word.
"""

from __future__ import annotations

import numpy as np

_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


def as64(x: np.ndarray) -> np.ndarray:
    """View (..., W) uint32 as (..., ceil(W/2)) uint64 (padding one zero word if W is odd)."""
    if x.shape[-1] % 2:
        x = np.concatenate([x, np.zeros(x.shape[:-1] + (1,), np.uint32)], axis=-1)
    return np.ascontiguousarray(x).view(np.uint64)


def as32(x: np.ndarray, shape: tuple) -> np.ndarray:
    """Inverse of :func:`as64`: back to uint32 with the original last dimension."""
    return np.ascontiguousarray(x).view(np.uint32)[..., : shape[-1]].reshape(shape)


def pack_bits(bits: np.ndarray) -> np.ndarray:
    """bool (..., k) -> uint32 (..., ceil(k/32)), LSB first, zero tail."""
    k = bits.shape[-1]
    w = (k + 31) // 32
    by = np.packbits(bits, axis=-1, bitorder="little")
    pad = w * 4 - by.shape[-1]
    if pad:
        by = np.concatenate([by, np.zeros(by.shape[:-1] + (pad,), np.uint8)], axis=-1)
    return np.ascontiguousarray(by).view(np.uint32)


def unpack_bits(words: np.ndarray, k: int) -> np.ndarray:
    """uint32 (..., W) -> bool (..., k)."""
    by = np.ascontiguousarray(words).view(np.uint8)
    return np.unpackbits(by, axis=-1, bitorder="little", count=k).astype(bool)


def add_bit(planes: list, x: np.ndarray, live: int) -> None:
    """Add the 0/1 vector ``x`` into the counter ``planes`` (ripple carry over the first ``live``)."""
    for j in range(live):
        carry = planes[j] & x
        planes[j] ^= x
        x = carry


def add_const(planes: list, t: int, width: int) -> list:
    """planes + t (t >= 0) as ``width`` new planes (the counter must not overflow width)."""
    zero = np.zeros_like(planes[0])
    out, carry = [], zero
    for j in range(width):
        x = planes[j] if j < len(planes) else zero
        if (t >> j) & 1:
            out.append(~(x ^ carry))
            carry = x | carry
        else:
            out.append(x ^ carry)
            carry = x & carry
    return out


def borrow_out(x: list, y: list, width: int) -> np.ndarray:
    """Per element: 1 where x < y (the final borrow of x - y), both unsigned ``width``-bit."""
    zero = np.zeros_like(x[0])
    borrow = zero
    for j in range(width):
        xj = x[j] if j < len(x) else zero
        yj = y[j] if j < len(y) else zero
        borrow = (~xj & yj) | (~(xj ^ yj) & borrow)
    return borrow


def bundle(p: np.ndarray, n: np.ndarray, threshold: int, chunk: int = 1 << 14):
    """Exact majority of V vectors: counts P, N per element; pos where P >= N + t, neg where N >= P + t."""
    v, r = p.shape
    width = max(v, threshold).bit_length() + 2
    out_p = np.empty(r, np.uint32)
    out_n = np.empty(r, np.uint32)
    for c0 in range(0, r, chunk):
        pp = as64(p[:, c0:c0 + chunk])
        nn = as64(n[:, c0:c0 + chunk])
        cp = [np.zeros(pp.shape[1], np.uint64) for _ in range(width)]
        cn = [np.zeros(pp.shape[1], np.uint64) for _ in range(width)]
        for i in range(v):
            live = (i + 1).bit_length()
            add_bit(cp, pp[i], live)
            add_bit(cn, nn[i], live)
        ge_p = ~borrow_out(cp, add_const(cn, threshold, width), width)
        ge_n = ~borrow_out(cn, add_const(cp, threshold, width), width)
        w = min(chunk, r - c0)
        out_p[c0:c0 + w] = as32(ge_p, (w,))
        out_n[c0:c0 + w] = as32(ge_n, (w,))
    return out_p, out_n


def accumulate(sign: np.ndarray, mag: np.ndarray, hp: np.ndarray, hn: np.ndarray):
    """Saturating s <- clamp(s + h) on sign-magnitude bit-sliced counters (new arrays returned)."""
    shape = sign.shape
    s = as64(sign)
    planes = [as64(mag[j]) for j in range(mag.shape[0])]
    hp64, hn64 = as64(hp), as64(hn)
    active = hp64 | hn64
    nz = np.zeros_like(s)
    full = np.full_like(s, _ALL)
    for pl in planes:
        nz |= pl
        full &= pl
    opposite = (s ^ hn64) & nz & active
    same = active & ~opposite
    carry = same & ~full
    borrow = opposite
    for j, pl in enumerate(planes):
        c_next = pl & carry
        b_next = ~pl & borrow
        planes[j] = pl ^ carry ^ borrow
        carry, borrow = c_next, b_next
    nz_new = np.zeros_like(s)
    for pl in planes:
        nz_new |= pl
    s_new = ((s & ~same) | (hn64 & same)) & nz_new
    mag_new = np.stack([as32(pl, shape) for pl in planes])
    return as32(s_new, shape), mag_new


def harden(sign: np.ndarray, mag: np.ndarray, threshold: int):
    """pos/neg planes where |s| >= threshold (threshold >= 1)."""
    shape = sign.shape
    planes = [as64(mag[j]) for j in range(mag.shape[0])]
    t_planes = [np.full_like(planes[0], _ALL if (threshold >> j) & 1 else 0)
                for j in range(len(planes))]
    ge = ~borrow_out(planes, t_planes, len(planes))
    s = as64(sign)
    return as32(ge & ~s, shape), as32(ge & s, shape)


def roll(words: np.ndarray, dim: int, shifts: int) -> np.ndarray:
    """Cyclic shift of the first ``dim`` bits of every row: bit i moves to (i + shifts) % dim."""
    bits = unpack_bits(words, dim)
    return pack_bits(np.roll(bits, shifts, axis=-1))
