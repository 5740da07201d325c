"""The backend protocol: public operations (validated, shape-normalised) over a small set of kernels.

Every backend subclasses :class:`Backend`. The public methods (``matmul``, ``bind``, ...) live here
once: they validate the user's input (shape, dtype, NaN, trits), normalise it to contiguous native
arrays (numpy for ``cpu``/``wgpu``, cupy for ``cuda``), call the backend's kernel methods (the
underscore methods below) and hand the result back as the caller's array kind. A backend only
implements the kernels; the kernels may assume everything the docstrings promise.

Kernel contract (``N``-prefixed shapes are native arrays, C-contiguous):

``_gemm(a, b, sr, c, argmax) -> (d, idx)``
    a (Ba, m, k), b (Bb, k, n), Ba, Bb in {1, B}; c (Bc, m, n) or None with Bc in {1, B};
    m, n, k >= 1; dtype equal and accepted by ``sr`` and by this backend. Returns d (B, m, n) of the
    same dtype and idx (B, m, n) int32 (argmax semantics in :mod:`pytropical_gpu.semirings` and
    ``cpu.py``) or None. Boolean semirings (``lor_land``/``lxor_land``) arrive here as bool arrays.
``_pack(bits) -> words``: bits (r, k) bool -> (r, ceil(k/32)) uint32, LSB first, zero tail.
``_andor(aw, bw) / _xorand(aw, bw) -> bool (m, n)``: aw (m, W), bw (n, W) uint32 packed along k;
    OR over words of (a & b) != 0, resp. parity of popcount(a & b).
``_bind(ap, an, bp, bn) -> (p, n)``: all (N, W) uint32.
``_bundle(p, n, threshold) -> (p, n)``: (V, R) uint32 planes of V vectors -> (R,), exact per element.
``_dot(ap, an, bp, bn) -> int64 (Q, M)``: a (Q, W), b (M, W).
``_nnz(p, n) -> int64 (N,)``: number of non-zero trits per row.
``_permute(p, n, dim, shifts) -> (p, n)``: (N, W); trit i moves to (i + shifts) % dim; 0 < shifts < dim.
``_accumulate(sign, mag, hp, hn) -> (sign, mag)``: sign (N, W), mag (bits, N, W), h (N, W).
``_harden(sign, mag, threshold) -> (p, n)``: threshold >= 1.
``_topk(scores, k) -> (idx int64 (Q, k), vals int64 (Q, k))``: descending, ties to the smaller index.
``_search(qp, qn, mp, mn, k) -> (idx, vals)``: q (Q, W), m (M, W), 1 <= k <= M; the k best rows of
    ``_dot`` per query as ``_topk`` gives them (the default is exactly ``_topk(_dot(...), k)``; a
    backend may fuse the two so the (Q, M) scores never leave the device).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _arrays
from .._checks import int_arg, is_array, show
from ..packed import PackedCols, PackedRows
from ..semirings import Semiring, get_semiring
from ..vsa import SoftTernaryVec, TernaryVec
from . import gemm_shapes
from ._validate import _bshape, _check_tv, _nonneg_int, _same_dim, recheck_handle

#: the cast named when a backend lacks a dtype that numpy gives by default
_CASTS = {"int64": "int32", "float64": "float32"}
_SELECTIVE_ERR = "return_argmax needs a min/max-based (selective) semiring"


class Backend:
    """Base class: the spec's operations, validated once, over the kernel methods."""

    name: str = "base"
    #: dtypes this backend can run GEMM on (subset of the semiring's).
    gemm_dtypes: frozenset[str] = frozenset(
        {"float32", "float64", "int32", "int64", "bool", "uint32", "uint64"})
    #: dtypes a user-defined Semiring runs on here (GPU kernels have no bool element type: the
    #: builtin lor_land/lxor_land run as packed bits, a user's bool ops cannot).
    user_dtypes: frozenset[str] = frozenset(
        {"float32", "float64", "int32", "int64", "uint32", "uint64"})

    # ---------------------------------------------------------------- array kinds
    @property
    def xp(self):
        return np

    def asnative(self, x: Any, name: str = "array") -> Any:
        """The caller's array as this backend's native kind (numpy here)."""
        return _arrays.to_numpy(x, name)

    # ---------------------------------------------------------------- residency
    def _resident(self, x: Any) -> Any:
        """One array kept where this backend's kernels read it (numpy here)."""
        return self.asnative(x)

    def to_device(self, x: Any) -> Any:
        """Keep ``x`` (an array, a TernaryVec, a PackedRows/PackedCols handle) on this backend's
        device across calls: cupy arrays on cuda, :class:`WgpuArray` on wgpu, numpy on cpu. Values
        are validated here (TernaryVec planes and packed words again: they may have been changed in
        place since they were made); operations on the result return numpy/cupy results as usual."""
        recheck_handle(x)
        if isinstance(x, TernaryVec):
            return TernaryVec._trusted(self._resident(x.pos), self._resident(x.neg), x.dim)
        if isinstance(x, (PackedRows, PackedCols)):
            return type(x)._trusted(self._resident(x.words), x.k)
        if isinstance(x, SoftTernaryVec):
            return x  # counters are updated in place: they stay where they are
        return self._resident(x)

    def to_host(self, x: Any) -> Any:
        """Bring ``x`` back as numpy (TernaryVec/packed handles keep their type)."""
        if isinstance(x, TernaryVec):
            return TernaryVec._trusted(_arrays.to_numpy(x.pos), _arrays.to_numpy(x.neg), x.dim)
        if isinstance(x, (PackedRows, PackedCols)):
            return type(x)._trusted(_arrays.to_numpy(x.words), x.k)
        if isinstance(x, SoftTernaryVec):
            x.sign, x.mag = _arrays.to_numpy(x.sign), _arrays.to_numpy(x.mag)
            return x
        return _arrays.to_numpy(x)

    def _contig(self, x: Any) -> Any:
        """C-contiguous native array; a resident WgpuArray (always contiguous) passes untouched."""
        if _arrays.is_wgpu(x):
            return x
        return self.xp.ascontiguousarray(x)

    def _host(self, x: Any, why: str = "") -> Any:
        """``x``, or a host copy of a resident WgpuArray for work that cannot run on it in place
        (logged at INFO: it is the slow path)."""
        if _arrays.is_wgpu(x):
            from .wgpu.array import host

            return host(x, why)
        return x

    def describe(self) -> dict:
        """A dict of facts about this backend (device name, ...) for ``info``."""
        return {"name": self.name}

    # ---------------------------------------------------------------- semiring GEMM
    def matmul(self, a: Any, b: Any, semiring: str | Semiring = "max_plus", *, c: Any = None,
               out: Any = None, return_argmax: bool = False) -> Any:
        """Semiring product ``c ⊕ (a ⊗ b)``; see :func:`pytropical_gpu.matmul`."""
        sr = get_semiring(semiring)
        kind = _arrays.kind_of(a, b, c)
        xp = self.xp
        A = self.asnative(a, "a")
        B = self.asnative(b, "b")
        C = None if c is None else self.asnative(c, "c")
        if A.dtype != B.dtype:
            raise TypeError(f"matmul: mixed dtypes {A.dtype.name} and {B.dtype.name}; "
                            "cast one operand first")
        dt = sr.check_dtype(A.dtype)
        self._check_semiring(sr, dt)
        if return_argmax and not sr.selective:
            raise ValueError(f"matmul: {_SELECTIVE_ERR}, got {sr.name!r}")
        if C is not None and C.dtype != dt:
            raise TypeError(f"matmul: c has dtype {C.dtype.name}, a and b have {dt.name}")
        g = gemm_shapes.plan(A, B, C, xp)  # numpy's 1-D / N-D batch rules
        a3, b3, c3, batch, m, k, n = g.a3, g.b3, g.c3, g.batch, g.m, g.k, g.n
        for arr, nm in ((A, "a"), (B, "b"), (C, "c")):
            if arr is None or dt.kind != "f" or not arr.size:
                continue
            # a resident (wgpu) operand was checked once when it went to the device
            nan = arr.has_nan() if _arrays.is_wgpu(arr) else bool(xp.isnan(arr).any())
            if nan:
                raise ValueError(f"matmul: {nm} contains NaN")
        self._check_operands("matmul", sr, dt, {"a": A, "b": B, "c": C})
        if out is not None:
            out_view = self._check_out(out, g.result, dt)
        if m == 0 or n == 0 or batch == 0:
            d = xp.empty((batch, m, n), dt)
            idx = xp.full((batch, m, n), -1, np.int32) if return_argmax else None
        elif k == 0:
            d = xp.empty((batch, m, n), dt)
            d[...] = sr.zero_for(dt) if c3 is None else c3
            idx = xp.full((batch, m, n), -1, np.int32) if return_argmax else None
        else:
            a3 = self._contig(a3)
            b3 = self._contig(b3)
            c3 = None if c3 is None else self._contig(c3)
            d, idx = self._gemm(a3, b3, sr, c3, return_argmax)
        d = d.reshape(g.result)
        idx = None if idx is None else idx.reshape(g.result)
        res = self._write_out(out, out_view, d) if out is not None else _arrays.to_kind(d, kind)
        if return_argmax:
            return res, _arrays.to_kind(idx, kind)
        return res

    def _check_semiring(self, sr: Semiring, dt: np.dtype) -> None:
        """Raise if this backend cannot run ``sr`` on ``dt`` (TypeError for dtypes)."""
        if dt.name not in self.gemm_dtypes:
            if dt.name in _CASTS:
                raise TypeError(f"matmul: the {self.name} backend does not support dtype {dt.name};"
                                f" cast with .astype(np.{_CASTS[dt.name]}) (values must fit) or use "
                                "backend='cpu' or 'cuda'")
            raise TypeError(f"matmul: the {self.name} backend does not support dtype {dt.name} "
                            f"(supported: {', '.join(sorted(self.gemm_dtypes))}); use backend='cpu'"
                            " or another dtype")
        if not sr.builtin and dt.name not in self.user_dtypes:
            alt = "'cpu' or 'cuda'" if dt.name in Backend.user_dtypes else "'cpu'"
            raise TypeError(f"matmul: the {self.name} backend cannot run the user-defined semiring "
                            f"{sr.name!r} on {dt.name}: {self._user_dtype_reason(dt)}; use "
                            f"backend={alt}")

    def _user_dtype_reason(self, dt: np.dtype) -> str:
        if dt.name == "bool":
            return ("its kernels have no bool element type (the builtin lor_land/lxor_land run as "
                    "packed bits)")
        return f"user-defined semirings run on {', '.join(sorted(self.user_dtypes))} here"

    def _check_operands(self, op: str, sr: Semiring, dt: np.dtype, operands: dict) -> None:
        """Raise if this backend cannot run ``op`` exactly on these (validated) operands."""

    def _check_out(self, out: Any, shape: tuple, dt: np.dtype) -> Any:
        """Validate ``out`` before any work; returns a numpy/cupy view of its memory."""
        if not (is_array(out) and (isinstance(out, np.ndarray) or _arrays.is_cupy(out)
                                   or _arrays.is_torch(out))):
            raise TypeError(f"matmul: out must be an array (numpy, cupy or torch) of shape {shape} "
                            f"and dtype {dt.name}, got {show(out)}")
        view = _arrays.writable_view(out, "matmul: out")
        if tuple(view.shape) != tuple(shape) or np.dtype(view.dtype) != dt:
            raise ValueError(f"matmul: out has shape {tuple(view.shape)} and dtype {view.dtype}, "
                             f"expected {shape} and {dt.name}")
        if isinstance(view, np.ndarray) and not view.flags.writeable:
            raise ValueError("matmul: out is read-only")
        return view

    def _write_out(self, out: Any, view: Any, d: Any) -> Any:
        """Copy the result once into ``out``'s memory (numpy, cupy or torch) and return ``out``.
        A torch ``out`` is filled by ``out.copy_`` on the caller's stream, after the result is
        handed over through DLPack (which orders torch's stream after our kernels)."""
        if _arrays.is_torch(out):
            out.copy_(_arrays.to_kind(d, (_arrays.TORCH, out.device)))
        else:
            view[...] = _arrays.to_cupy(d) if _arrays.is_cupy(view) else _arrays.to_numpy(d)
        return out

    # ---------------------------------------------------------------- packed boolean
    def pack_rows(self, a: Any) -> PackedRows:
        """Pack a bool (m, k) matrix along k, 32 per uint32 word; see :class:`PackedRows`."""
        A = self._bool2d(a, "pack_rows")
        return PackedRows._trusted(_arrays.to_kind(self._pack_checked(A), _arrays.kind_of(a)),
                                   A.shape[1])

    def pack_cols(self, b: Any) -> PackedCols:
        """Pack a bool (k, n) matrix along k (column-wise); see :class:`PackedCols`."""
        B = self._host(self._bool2d(b, "pack_cols"), "pack_cols transposes")
        return PackedCols._trusted(_arrays.to_kind(self._pack_checked(self.xp.ascontiguousarray(B.T)),
                                          _arrays.kind_of(b)), B.shape[0])

    def _pack_checked(self, bits: Any) -> Any:
        r, k = bits.shape
        if r == 0 or k == 0:
            return self.xp.zeros((r, (k + 31) // 32), np.uint32)
        return self._pack(self._contig(bits))

    def _bool2d(self, x: Any, where: str) -> Any:
        X = self.asnative(x, where)
        if X.ndim != 2:
            raise ValueError(f"{where}: expected a 2-D bool array, got shape {tuple(X.shape)}")
        if X.dtype != np.bool_:
            raise TypeError(f"{where}: expected dtype bool, got {X.dtype.name}")
        return X

    def andor_matmul(self, a: Any, b: Any) -> Any:
        """Boolean product (OR of ANDs) of bool arrays or packed handles; returns bool (m, n)."""
        if isinstance(a, PackedCols) or isinstance(b, PackedRows):
            raise TypeError(f"andor_matmul: a must be a bool array or PackedRows (pack_rows) and b a "
                            f"bool array or PackedCols (pack_cols); got {type(a).__name__} and "
                            f"{type(b).__name__} (swapped?)")
        kind = _arrays.kind_of(getattr(a, "words", a), getattr(b, "words", b))
        pa = a if isinstance(a, PackedRows) else self.pack_rows(a)
        pb = b if isinstance(b, PackedCols) else self.pack_cols(b)
        if pa.k != pb.k:
            raise ValueError(f"andor_matmul: shapes {pa.shape} and {pb.shape} are not aligned "
                             f"({pa.k} != {pb.k})")
        m, n = pa.shape[0], pb.shape[1]
        if m == 0 or n == 0 or pa.k == 0:
            res = self.xp.zeros((m, n), np.bool_)
        else:
            res = self._andor(self._contig(self.asnative(pa.words)),
                              self._contig(self.asnative(pb.words)))
        return _arrays.to_kind(res, kind)

    def _gemm_bool(self, a, b, sr, c):
        """lor_land / lxor_land through the packed kernels (one product per batch entry)."""
        xp = self.xp
        batch = max(a.shape[0], b.shape[0], 1 if c is None else c.shape[0])
        kern = self._andor if sr.add_op == "lor" else self._xorand
        pa = [self._pack(a[i]) for i in range(a.shape[0])]
        pb = [self._pack(xp.ascontiguousarray(b[i].T)) for i in range(b.shape[0])]
        d = xp.stack([kern(pa[i % len(pa)], pb[i % len(pb)]) for i in range(batch)])
        if c is not None:
            d = (d | c) if sr.add_op == "lor" else (d ^ c)
        return d

    # ---------------------------------------------------------------- ternary VSA
    def bind(self, a: TernaryVec, b: TernaryVec) -> TernaryVec:
        """Elementwise product of trits (batch dimensions broadcast)."""
        _check_tv(a, "bind", "a"), _check_tv(b, "bind", "b")
        _same_dim("bind", a, b)
        shape = _bshape("bind", a.batch_shape, b.batch_shape)
        ap, an = self._planes2d(a, shape)
        bp, bn = self._planes2d(b, shape)
        if a.words == 0 or ap.shape[0] == 0:
            z = self.xp.zeros((ap.shape[0], a.words), np.uint32)
            return self._tv_out(z, z.copy(), shape, a.dim, a, b)
        p, n = self._bind(ap, an, bp, bn)
        return self._tv_out(p, n, shape, a.dim, a, b)

    def unbind(self, a: TernaryVec, b: TernaryVec) -> TernaryVec:
        """Same as :meth:`bind`: trits are self-inverse on their support."""
        return self.bind(a, b)

    def bundle(self, *vectors: TernaryVec | Sequence[TernaryVec], threshold: int = 1) -> TernaryVec:
        """Per-element majority: sign(Σ v) where |Σ v| >= threshold, else 0 (exact).

        ``bundle(a, b, ...)`` (torchhd), ``bundle([a, b, ...])`` or ``bundle(batched)``."""
        vs = bundle_operands(vectors)
        threshold = _nonneg_int(threshold, "bundle", "threshold")
        if isinstance(vs, TernaryVec):
            if vs.pos.ndim < 2:
                raise ValueError("bundle: a single TernaryVec must be batched (leading dim = vectors)")
            dim, rest = vs.dim, vs.batch_shape[1:]
            nvec = vs.batch_shape[0]
            if nvec == 0:
                raise ValueError(f"bundle: the batched TernaryVec holds no vectors (batch shape "
                                 f"{vs.batch_shape}); nothing to bundle")
            p = self.asnative(vs.pos).reshape(nvec, int(np.prod(rest, dtype=np.int64)) * vs.words)
            n = self.asnative(vs.neg).reshape(nvec, int(np.prod(rest, dtype=np.int64)) * vs.words)
            srcs = (vs,)
        else:
            vs = list(vs)
            if not vs:
                raise ValueError("bundle: no vectors given")
            for i, v in enumerate(vs):
                _check_tv(v, "bundle", f"vs[{i}]")
                _same_dim("bundle", vs[0], v)
            dim = vs[0].dim
            rest = _bshape("bundle", *[v.batch_shape for v in vs])
            nvec = len(vs)
            planes = [self._planes2d(v, rest) for v in vs]
            why = "bundle of a list stacks on the host; pass one batched TernaryVec to stay resident"
            p = self.xp.stack([self._host(pl[0], why).reshape(-1) for pl in planes])
            n = self.xp.stack([self._host(pl[1], why).reshape(-1) for pl in planes])
            srcs = tuple(vs)
        if p.shape[1] == 0:
            z = self.xp.zeros(p.shape[1], np.uint32)
            return self._tv_out(z, z.copy(), rest, dim, *srcs)
        rp, rn = self._bundle(self._contig(p), self._contig(n), max(threshold, 1))
        return self._tv_out(rp, rn, rest, dim, *srcs)

    def multiset(self, batched: TernaryVec, *, threshold: int = 1) -> TernaryVec:
        """torchhd's name for bundling one batched TernaryVec along its leading dimension."""
        _check_tv(batched, "multiset", "batched")
        return self.bundle(batched, threshold=threshold)

    def dot(self, a: TernaryVec, b: TernaryVec) -> Any:
        """Exact integer dot product; batched: result shape a.batch_shape + b.batch_shape."""
        _check_tv(a, "dot", "a"), _check_tv(b, "dot", "b")
        _same_dim("dot", a, b)
        ap, an = self._flat(a)
        bp, bn = self._flat(b)
        if ap.shape[0] == 0 or bp.shape[0] == 0 or a.words == 0:
            r = self.xp.zeros((ap.shape[0], bp.shape[0]), np.int64)
        else:
            r = self._dot(ap, an, bp, bn)
        r = r.reshape(a.batch_shape + b.batch_shape)
        if r.ndim == 0:
            return int(r)
        return _arrays.to_kind(r, _arrays.kind_of(a.pos, b.pos))

    def cosine(self, a: TernaryVec, b: TernaryVec) -> Any:
        """dot / sqrt(nnz(a) nnz(b)); 0.0 where either vector is all zero."""
        d = self.dot(a, b)
        xp = self.xp
        na = self._nnz(*self._flat(a)).reshape(a.batch_shape).astype(np.float64)
        nb = self._nnz(*self._flat(b)).reshape(b.batch_shape).astype(np.float64)
        den = xp.sqrt(xp.multiply.outer(na, nb))
        dd = xp.asarray(self.asnative(d) if not isinstance(d, int) else d, dtype=np.float64)
        res = xp.where(den > 0, dd / xp.where(den > 0, den, 1.0), 0.0)
        if res.ndim == 0:
            return float(res)
        return _arrays.to_kind(res, _arrays.kind_of(a.pos, b.pos))

    def permute(self, a: TernaryVec, shifts: int = 1) -> TernaryVec:
        """Cyclic shift of the trits: element i moves to (i + shifts) mod dim (torch.roll)."""
        _check_tv(a, "permute", "a")
        s = int_arg(shifts, "permute", "shifts")
        s = s % a.dim if a.dim else 0
        p, n = self._flat(a)
        if s == 0 or p.shape[0] == 0:
            p, n = self._host(p), self._host(n)
            return self._tv_out(p.copy(), n.copy(), a.batch_shape, a.dim, a)
        rp, rn = self._permute(p, n, a.dim, s)
        return self._tv_out(rp, rn, a.batch_shape, a.dim, a)

    def search(self, query: TernaryVec, memory: TernaryVec, k: int = 1) -> tuple[Any, Any]:
        """The k rows of ``memory`` with the largest dot with ``query``: (indices, scores)."""
        _check_tv(query, "search", "query"), _check_tv(memory, "search", "memory")
        _same_dim("search", query, memory)
        if memory.pos.ndim != 2:
            raise ValueError(f"search: memory must be a batch of vectors (rows, words), got batch "
                             f"shape {memory.batch_shape}")
        k = int_arg(k, "search", "k")
        rows = memory.batch_shape[0]
        if not 1 <= k <= rows:
            raise ValueError(f"search: k={k} must be between 1 and the {rows} rows of memory")
        qp, qn = self._flat(query)
        mp, mn = self._flat(memory)
        if qp.shape[0] == 0:
            idx = self.xp.zeros((0, k), np.int64)
            vals = self.xp.zeros((0, k), np.int64)
        elif query.words == 0:  # dim 0: every score is 0, ties go to the smaller index
            idx, vals = self._topk(self.xp.zeros((qp.shape[0], rows), np.int64), k)
        else:
            idx, vals = self._search(qp, qn, mp, mn, k)
        shape = query.batch_shape + (k,)
        kind = _arrays.kind_of(query.pos, memory.pos)
        return (_arrays.to_kind(idx.reshape(shape), kind), _arrays.to_kind(vals.reshape(shape), kind))

    def soft_accumulate(self, soft: SoftTernaryVec, hard: TernaryVec) -> SoftTernaryVec:
        """s <- clamp(s + h) in place; returns ``soft``."""
        if not isinstance(soft, SoftTernaryVec):
            raise TypeError(f"accumulate: expected SoftTernaryVec, got {type(soft).__name__}")
        _check_tv(hard, "accumulate", "hard")
        _same_dim("accumulate", soft, hard)
        if _bshape("accumulate", soft.batch_shape, hard.batch_shape) != soft.batch_shape:
            raise ValueError(f"accumulate: batch shape {hard.batch_shape} does not broadcast to the "
                             f"counters' {soft.batch_shape}")
        rows = int(np.prod(soft.batch_shape, dtype=np.int64))
        sg = self.asnative(soft.sign).reshape(rows, soft.words)
        mg = self.asnative(soft.mag).reshape(soft.bits, rows, soft.words)
        hp, hn = self._planes2d(hard, soft.batch_shape)
        if rows and soft.words:
            sg, mg = self._accumulate(self.xp.ascontiguousarray(sg), self.xp.ascontiguousarray(mg),
                                      hp, hn)
        soft._store(sg.reshape(soft.sign.shape), mg.reshape(soft.mag.shape))
        return soft

    def soft_harden(self, soft: SoftTernaryVec, threshold: int = 1) -> TernaryVec:
        """sign(s) where |s| >= threshold else 0, as a TernaryVec."""
        if not isinstance(soft, SoftTernaryVec):
            raise TypeError(f"harden: expected SoftTernaryVec, got {type(soft).__name__}")
        t = max(_nonneg_int(threshold, "harden", "threshold"), 1)
        rows = int(np.prod(soft.batch_shape, dtype=np.int64))
        sg = self.xp.ascontiguousarray(self.asnative(soft.sign).reshape(rows, soft.words))
        mg = self.xp.ascontiguousarray(self.asnative(soft.mag).reshape(soft.bits, rows, soft.words))
        if t > 2 ** soft.bits - 1 or rows == 0 or soft.words == 0:
            z = self.xp.zeros_like(sg)
            return self._tv_out(z, z.copy(), soft.batch_shape, soft.dim, soft)
        p, n = self._harden(sg, mg, t)
        return self._tv_out(p, n, soft.batch_shape, soft.dim, soft)

    # ---------------------------------------------------------------- helpers
    def _flat(self, v: TernaryVec) -> tuple[Any, Any]:
        shape = (int(np.prod(v.batch_shape, dtype=np.int64)), v.words)  # not -1: dim 0 has 0 words
        return (self._contig(self.asnative(v.pos).reshape(shape)),
                self._contig(self.asnative(v.neg).reshape(shape)))

    def _planes2d(self, v: TernaryVec, shape: tuple) -> tuple[Any, Any]:
        xp = self.xp
        w = v.words
        out = []
        for plane in (v.pos, v.neg):
            x = self.asnative(plane)
            if tuple(x.shape[:-1]) != tuple(shape):
                x = xp.broadcast_to(self._host(x, "broadcasting a resident operand"),
                                    tuple(shape) + (w,))
            out.append(self._contig(x).reshape(int(np.prod(shape, dtype=np.int64)), w))
        return out[0], out[1]

    def _tv_out(self, p, n, shape, dim, *srcs) -> TernaryVec:
        kind = _arrays.kind_of(*[s.pos if isinstance(s, TernaryVec) else s.sign for s in srcs])
        w = (dim + 31) // 32
        shape = tuple(shape) + (w,)
        return TernaryVec._trusted(_arrays.to_kind(p.reshape(shape), kind),
                                   _arrays.to_kind(n.reshape(shape), kind), dim)

    # default kernels shared by every backend (overridable)
    def _nnz(self, p, n):
        xp = self.xp
        p, n = self._host(p), self._host(n)
        return xp.bitwise_count(p | n).sum(axis=-1, dtype=np.int64)

    def _search(self, qp, qn, mp, mn, k):
        return self._topk(self._dot(qp, qn, mp, mn), k)

    def _topk(self, scores, k):
        xp = self.xp
        order = xp.argsort(-scores, axis=-1, kind="stable")[:, :k]
        return order.astype(np.int64), xp.take_along_axis(scores, order, axis=-1)


def bundle_operands(vectors: tuple) -> TernaryVec | list:
    """The vectors of ``bundle(*vectors)``: one batched TernaryVec, or a list (from one sequence
    argument or several TernaryVec arguments)."""
    if len(vectors) == 1 and not isinstance(vectors[0], TernaryVec):
        if not isinstance(vectors[0], Sequence) or isinstance(vectors[0], (str, bytes)):
            raise TypeError("bundle: expected TernaryVecs, a list of them or one batched TernaryVec; "
                            f"got {show(vectors[0])}")
        vectors = tuple(vectors[0])
    elif len(vectors) == 1:
        return vectors[0]
    for i, v in enumerate(vectors):
        if not isinstance(v, TernaryVec):
            hint = (" (threshold is keyword-only: bundle(..., threshold=t))"
                    if isinstance(v, (int, float)) else "")
            raise TypeError(f"bundle: vectors[{i}] must be a TernaryVec, got {show(v)}{hint}")
    return list(vectors)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


__all__ = ["Backend", "ceil_div"]
