"""Ternary VSA operations on ``be``: bind, bundle, permute and the soft counters' accumulate and
harden. Each validates its operands, runs the backend's kernel and gives the planes back in the
caller's array kind; the public verbs are in :mod:`pytropical_gpu.vsa`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._checks import int_arg
from ..types import SoftTernaryVec, TernaryVec
from ._checks import _bshape, _check_tv, _nonneg_int, _same_dim, bundle_operands
from ._planes import flat, planes2d, rows, tv_out


def bind(be: Any, a: TernaryVec, b: TernaryVec) -> TernaryVec:
    """Elementwise product of trits (batch dimensions broadcast)."""
    _check_tv(a, "bind", "a"), _check_tv(b, "bind", "b")
    _same_dim("bind", a, b)
    shape = _bshape("bind", a.batch_shape, b.batch_shape)
    ap, an = planes2d(be, a, shape)
    bp, bn = planes2d(be, b, shape)
    if a.words == 0 or ap.shape[0] == 0:
        z = be.xp.zeros((ap.shape[0], a.words), np.uint32)
        return tv_out(z, z.copy(), shape, a.dim, a, b)
    p, n = be._bind(ap, an, bp, bn)
    return tv_out(p, n, shape, a.dim, a, b)


def unbind(be: Any, a: TernaryVec, b: TernaryVec) -> TernaryVec:
    """Same as :func:`bind`: trits are self-inverse on their support."""
    return bind(be, a, b)


def bundle(be: Any, *vectors: TernaryVec | Sequence[TernaryVec], threshold: int = 1) -> TernaryVec:
    """Per-element majority: sign(Σ v) where |Σ v| >= threshold, else 0 (exact)."""
    vs = bundle_operands(vectors)
    threshold = _nonneg_int(threshold, "bundle", "threshold")
    if isinstance(vs, TernaryVec):
        if vs.pos.ndim < 2:
            raise ValueError("bundle: a single TernaryVec must be batched (leading dim = vectors)")
        dim, rest, nvec = vs.dim, vs.batch_shape[1:], vs.batch_shape[0]
        if nvec == 0:
            raise ValueError(f"bundle: the batched TernaryVec holds no vectors (batch shape "
                             f"{vs.batch_shape}); nothing to bundle")
        p = be.asnative(vs.pos).reshape(nvec, rows(rest) * vs.words)
        n = be.asnative(vs.neg).reshape(nvec, rows(rest) * vs.words)
        srcs = (vs,)
    else:
        if not vs:
            raise ValueError("bundle: no vectors given")
        for i, v in enumerate(vs):
            _check_tv(v, "bundle", f"vs[{i}]")
            _same_dim("bundle", vs[0], v)
        dim = vs[0].dim
        rest = _bshape("bundle", *[v.batch_shape for v in vs])
        planes = [planes2d(be, v, rest) for v in vs]
        why = "bundle of a list stacks on the host; pass one batched TernaryVec to stay resident"
        p = be.xp.stack([be._host(pl[0], why).reshape(-1) for pl in planes])
        n = be.xp.stack([be._host(pl[1], why).reshape(-1) for pl in planes])
        srcs = tuple(vs)
    if p.shape[1] == 0:
        z = be.xp.zeros(p.shape[1], np.uint32)
        return tv_out(z, z.copy(), rest, dim, *srcs)
    rp, rn = be._bundle(be._contig(p), be._contig(n), max(threshold, 1))
    return tv_out(rp, rn, rest, dim, *srcs)


def multiset(be: Any, batched: TernaryVec, *, threshold: int = 1) -> TernaryVec:
    """torchhd's name for bundling one batched TernaryVec along its leading dimension."""
    _check_tv(batched, "multiset", "batched")
    return bundle(be, batched, threshold=threshold)


def permute(be: Any, a: TernaryVec, shifts: int = 1) -> TernaryVec:
    """Cyclic shift of the trits: element i moves to (i + shifts) mod dim (torch.roll)."""
    _check_tv(a, "permute", "a")
    s = int_arg(shifts, "permute", "shifts")
    s = s % a.dim if a.dim else 0
    p, n = flat(be, a)
    if s == 0 or p.shape[0] == 0:
        p, n = be._host(p), be._host(n)
        return tv_out(p.copy(), n.copy(), a.batch_shape, a.dim, a)
    rp, rn = be._permute(p, n, a.dim, s)
    return tv_out(rp, rn, a.batch_shape, a.dim, a)


def accumulate(be: Any, soft: SoftTernaryVec, hard: TernaryVec) -> SoftTernaryVec:
    """s <- clamp(s + h) in place; returns ``soft``."""
    if not isinstance(soft, SoftTernaryVec):
        raise TypeError(f"accumulate: expected SoftTernaryVec, got {type(soft).__name__}")
    _check_tv(hard, "accumulate", "hard")
    _same_dim("accumulate", soft, hard)
    if _bshape("accumulate", soft.batch_shape, hard.batch_shape) != soft.batch_shape:
        raise ValueError(f"accumulate: batch shape {hard.batch_shape} does not broadcast to the "
                         f"counters' {soft.batch_shape}")
    r = rows(soft.batch_shape)
    sg = be.asnative(soft.sign).reshape(r, soft.words)
    mg = be.asnative(soft.mag).reshape(soft.bits, r, soft.words)
    hp, hn = planes2d(be, hard, soft.batch_shape)
    if r and soft.words:
        sg, mg = be._accumulate(be.xp.ascontiguousarray(sg), be.xp.ascontiguousarray(mg), hp, hn)
    soft._store(sg.reshape(soft.sign.shape), mg.reshape(soft.mag.shape))
    return soft


def harden(be: Any, soft: SoftTernaryVec, threshold: int = 1) -> TernaryVec:
    """sign(s) where |s| >= threshold else 0, as a TernaryVec."""
    if not isinstance(soft, SoftTernaryVec):
        raise TypeError(f"harden: expected SoftTernaryVec, got {type(soft).__name__}")
    t = max(_nonneg_int(threshold, "harden", "threshold"), 1)
    r = rows(soft.batch_shape)
    sg = be.xp.ascontiguousarray(be.asnative(soft.sign).reshape(r, soft.words))
    mg = be.xp.ascontiguousarray(be.asnative(soft.mag).reshape(soft.bits, r, soft.words))
    if t > 2 ** soft.bits - 1 or r == 0 or soft.words == 0:
        z = be.xp.zeros_like(sg)
        return tv_out(z, z.copy(), soft.batch_shape, soft.dim, soft)
    p, n = be._harden(sg, mg, t)
    return tv_out(p, n, soft.batch_shape, soft.dim, soft)


__all__ = ["accumulate", "bind", "bundle", "harden", "multiset", "permute", "unbind"]
