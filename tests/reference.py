"""Naive references written independently of the library: scalar semantics from SPEC.md, evaluated
with explicit broadcasting in float64 / int64 (one rounding to float32 is exact for + and *)."""

from __future__ import annotations

import numpy as np

INF = np.inf
I32 = np.iinfo(np.int32)

# name: (add kind, mul kind, float zero)
SEMIRINGS = {
    "plus_times": ("sum", "times", 0.0),
    "min_plus": ("min", "plus", INF),
    "max_plus": ("max", "plus", -INF),
    "min_times": ("min", "times", INF),
    "max_times": ("max", "times", -INF),
    "min_max": ("min", "max", INF),
    "max_min": ("max", "min", -INF),
}


def zero_of(name, dtype):
    z = SEMIRINGS[name][2]
    if np.dtype(dtype).kind == "i":
        if z == INF:
            return I32.max
        if z == -INF:
            return I32.min
        return 0
    return z


def _zero_ordered(result, terms, kind):
    """Where ``result`` is a zero, give it the sign IEEE 754-2019's maximum / minimum give (-0 < +0):
    a max is +0 if any term is +0, a min is -0 if any term is -0. ``terms``: arrays broadcasting
    to ``result`` (a tuple), or one array whose axis -2 is reduced."""
    if isinstance(terms, tuple):
        pos = np.zeros(np.shape(result), bool)
        neg = np.zeros(np.shape(result), bool)
        for t in terms:
            pos |= (t == 0) & ~np.signbit(t)
            neg |= (t == 0) & np.signbit(t)
    else:
        pos = ((terms == 0) & ~np.signbit(terms)).any(axis=-2)
        neg = ((terms == 0) & np.signbit(terms)).any(axis=-2)
    signed = neg if kind == "min" else ~pos  # the zero is -0 exactly when this holds
    r = np.asarray(result)
    z = np.where(signed, -0.0, 0.0).astype(r.dtype)
    return np.where(r == 0, z, r)


def products(a, b, name):
    """P[..., i, k, j] = a[..., i, k] ⊗ b[..., k, j] with guards/saturation, in the input dtype."""
    addk, mulk, _ = SEMIRINGS[name]
    dt = a.dtype
    z = zero_of(name, dt)
    x = a[..., :, :, None]
    y = b[..., None, :, :]
    if dt.kind == "f":
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            if mulk == "plus":
                p = x64 + y64
            elif mulk == "times":
                p = x64 * y64
            elif mulk == "max":
                p = _zero_ordered(np.maximum(x64, y64), (x64, y64), "max")
            else:
                p = _zero_ordered(np.minimum(x64, y64), (x64, y64), "min")
            p = p.astype(dt)
        if addk != "sum":
            guard = mulk in ("plus", "times")
            if guard:
                p = np.where((x == z) | (y == z), dt.type(z), p)
                p = np.where(np.isnan(p), dt.type(z), p)
        return p
    x64, y64 = x.astype(np.int64), y.astype(np.int64)
    if mulk == "plus":
        p = x64 + y64
        if addk != "sum":
            p = np.clip(p, I32.min, I32.max)
    elif mulk == "times":
        p = (x64 * y64) & 0xFFFFFFFF
        p = np.where(p >= 2**31, p - 2**32, p)
    elif mulk == "max":
        p = np.maximum(x64, y64)
    else:
        p = np.minimum(x64, y64)
    if addk != "sum" and mulk in ("plus", "times"):
        p = np.where((x64 == z) | (y64 == z), z, p)
    return p.astype(dt)


def ref_matmul(a, b, name, c=None):
    """(d, argmax) for 2-D or batched inputs (batch 1 broadcasts)."""
    addk = SEMIRINGS[name][0]
    p = products(a, b, name)  # (..., m, k, n)
    dt = a.dtype
    if addk == "sum":
        if dt.kind == "f":
            d = np.einsum("...ik,...kj->...ij", a.astype(np.float64), b.astype(np.float64))
            d = d.astype(dt)
        else:
            d = (p.astype(np.int64).sum(axis=-2) & 0xFFFFFFFF)
            d = np.where(d >= 2**31, d - 2**32, d).astype(dt)
        if c is not None:
            d = (d + c).astype(dt)
        return d, None
    z = zero_of(name, dt)
    if p.shape[-2] == 0:
        best = np.full(p.shape[:-2] + p.shape[-1:], z, dt)
        idx = np.full(best.shape, -1, np.int32)
    else:
        best = p.min(axis=-2) if addk == "min" else p.max(axis=-2)
        if dt.kind == "f":
            best = _zero_ordered(best, p, addk)
        idx = np.argmax(p == best[..., None, :], axis=-2).astype(np.int32)  # first k attaining
        idx = np.where(best == z, -1, idx).astype(np.int32)
    if c is not None:
        if addk == "min":
            improves = best < c
            d = np.minimum(best, c)
        else:
            improves = best > c
            d = np.maximum(best, c)
        if dt.kind == "f":
            d = _zero_ordered(d, (best, c), addk)
        idx = np.where(improves, idx, -1).astype(np.int32)
        best = d.astype(dt)
    return best, idx


def ref_bool(a, b, kind):
    """lor_land / lxor_land / bor_band / bxor_band by explicit loops over k."""
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + (m, k))
    b = np.broadcast_to(b, batch + (k, n))
    if kind in ("lor_land", "lxor_land"):
        acc = np.zeros(batch + (m, n), bool)
        for kk in range(k):
            t = a[..., :, kk, None] & b[..., None, kk, :]
            acc = (acc | t) if kind == "lor_land" else (acc ^ t)
        return acc
    acc = np.zeros(batch + (m, n), a.dtype)
    for kk in range(k):
        t = a[..., :, kk, None] & b[..., None, kk, :]
        acc = (acc | t) if kind == "bor_band" else (acc ^ t)
    return acc


def ref_bundle(trits, threshold):
    """trits: (V, ..., dim) int -> sign(sum) where |sum| >= max(threshold, 1)."""
    s = trits.astype(np.int64).sum(axis=0)
    t = max(threshold, 1)
    return np.where(s >= t, 1, np.where(s <= -t, -1, 0)).astype(np.int8)


def ref_soft(sequence, bits):
    """Replay saturating accumulation element by element in plain int arithmetic."""
    lim = 2**bits - 1
    s = np.zeros(sequence[0].shape, np.int64)
    for h in sequence:
        s = np.clip(s + h, -lim, lim)
    return s
