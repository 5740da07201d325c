"""The CUDA backend: CuPy arrays, kernels from ``cuda/*.cu`` compiled at run time (see kernels.py).

cupy in -> cupy out without a host round trip; numpy in -> numpy out; objects exposing
``__cuda_array_interface__`` / ``__dlpack__`` (a torch CUDA tensor) are taken zero-copy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _arrays
from ... import batch as _batch
from ...semirings import Semiring
from ...types import SoftTernaryVec
from .. import _process
from ..base import Backend, ceil_div
from . import gemm_launch, gemm_units, kernels, search_launch, vsa_launch, zero_sign
from .gemm_launch import _MAX_GRID_YZ, _i64
from .launch import wrap_errors


class CudaBackend(Backend):
    """Semiring GEMM, packed boolean products and bitsliced VSA on an NVIDIA GPU through CuPy."""

    name = "cuda"
    #: the big tile min_plus/max_plus on 4-byte types use ("big" or a key of kernels.BIG_VARIANTS;
    #: benchmarks/bench_cuda.py times each); "big3" where kernels.BIG3 compiled it, else "big"
    big_tile = "big3"

    #: the largest grid x dimension of one launch (CUDA's limit, 2^31 - 1); work beyond it is split
    max_grid_x = 2**31 - 1

    def __init__(self) -> None:
        import cupy

        self._cp = cupy
        self._sms: dict[int, int] = {}

    # ---------------------------------------------------------------- array kinds
    @property
    def xp(self):
        _process.check("cuda")
        return self._cp

    def asnative(self, x: Any, name: str = "array") -> Any:
        _process.check("cuda")
        if type(x) is self._cp.ndarray:  # resident planes on every call: no conversion look-up
            return x
        return _arrays.to_cupy(x, name)

    def _flat2d(self, v: Any) -> tuple[Any, Any] | None:
        """``v``'s planes untouched where both are C-contiguous 2-d cupy arrays (a resident
        search memory or (1, W) query, every call): what the general path would return, without
        its four conversion look-ups and contiguity calls (issue 15: ~1.6 us a search). Derived
        afresh each call from the planes themselves, so nothing can go stale."""
        p, n = v.pos, v.neg
        t = self._cp.ndarray
        if (type(p) is t and type(n) is t and p.ndim == 2 and n.ndim == 2
                and getattr(p, "_c_contiguous", False) and getattr(n, "_c_contiguous", False)):
            _process.check("cuda")
            return p, n
        return None

    def to_device(self, x: Any) -> Any:
        """As :meth:`Backend.to_device`; soft counters move too (cupy planes, updated in place)."""
        _process.check("cuda")
        if isinstance(x, SoftTernaryVec):
            return x.to_device()
        return super().to_device(x)

    def describe(self) -> dict:
        _process.check("cuda")
        cp = self._cp
        dev = cp.cuda.Device()
        props = cp.cuda.runtime.getDeviceProperties(dev.id)
        name = props["name"]
        return {"name": self.name, "device": name.decode() if isinstance(name, bytes) else str(name),
                "compute_capability": dev.compute_capability, "cupy": cp.__version__,
                "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
                "multiprocessors": props["multiProcessorCount"]}

    def _sm_count(self) -> int:
        cp = self._cp
        dev = cp.cuda.Device().id
        if dev not in self._sms:
            self._sms[dev] = int(cp.cuda.runtime.getDeviceProperties(dev)["multiProcessorCount"])
        return self._sms[dev]

    def _check_semiring(self, sr: Semiring, dt: np.dtype) -> None:
        super()._check_semiring(sr, dt)
        if not sr.builtin and not (sr.cuda_add and sr.cuda_mul):
            raise TypeError(f"matmul: semiring {sr.name!r} has no CUDA expressions (cuda_add/cuda_mul); "
                            "give them to Semiring(...) or use backend='cpu'")

    # ---------------------------------------------------------------- semiring GEMM
    def _gemm(self, a, b, sr: Semiring, c, argmax, facts):
        d, idx = self._gemm_kernels(a, b, sr, c, argmax, facts)
        zero_sign.after_gemm(d, a, b, sr, c, argmax, facts)  # zeros: the ordered sign (zero_order.py)
        return d, idx

    def _gemm_kernels(self, a, b, sr: Semiring, c, argmax, facts):
        cp = self._cp
        if sr.add_op in ("lor", "lxor"):
            return self._gemm_bool(a, b, sr, c), None
        dt = a.dtype
        batch = max(a.shape[0], b.shape[0], 1 if c is None else c.shape[0])
        m, k = a.shape[1:]
        n = b.shape[2]
        if sr.builtin and sr.name == "plus_times" and dt.kind == "f":  # cuBLAS
            d = cp.matmul(a, b)
            if d.shape[0] != batch:
                d = cp.ascontiguousarray(cp.broadcast_to(d, (batch, m, n)))
            return (d if c is None else d + c), None
        spec = gemm_launch.spec(sr, dt)
        p = gemm_launch.plan(m, n, k, batch, dt.itemsize, argmax, sr.builtin, self._sm_count(),
                             spec.names, self.big_tile)
        if sr.builtin and gemm_units.wanted(sr.name, dt, p.role, p.ks, k, batch, argmax):
            return gemm_units.run(self, gemm_units.spec(sr.name), a, b, c), None
        qs = {v: gemm_launch.variant_plan(p, spec.names, v) for v in ("dpx_", "dpxw_")}
        if qs["dpx_"] is not None or qs["dpxw_"] is not None:  # int32 min_plus / max_plus tiles
            for pre in self._dpx_variants(spec, sr, dt, a, b, facts, qs["dpx_"] is not None):
                if qs[pre] is not None:
                    return gemm_launch.run(self, spec, a, b, c, argmax, qs[pre], prefix=pre)
        q = gemm_launch.variant_plan(p, spec.names, "nz_")
        if q is not None and self._nz_ok(sr, dt, facts):
            return gemm_launch.run(self, spec, a, b, c, argmax, q, prefix="nz_")
        return gemm_launch.run(self, spec, a, b, c, argmax, p)

    @staticmethod
    def _nz_ok(sr, dt, facts) -> bool:
        """True when the facts already learned (the NaN check's range pass) say that neither operand
        holds the zero, so min_times / max_times need no per-slab zero test (the NZ kernels); never
        a pass of its own (facts not yet known, as in a batch: the guarded kernels, also exact)."""
        known = [facts.get(n) for n in ("a", "b")] if facts else []
        zero = sr.zero_for(dt)
        return len(known) == 2 and all(f is not None and f.computed and not f.contains(zero) for f in known)

    @staticmethod
    def _dpx_facts(sr, dt, facts, want_dpx: bool = True) -> tuple | None:
        """``_dpx_variants`` from the facts already learned, or None where they leave it open
        (not learned, or "dpx_" wanted and an operand holding the zero has |x| >= 2^28)."""
        zero = sr.zero_for(dt)
        known = [facts[n] for n in ("a", "b") if facts and facts.get(n) is not None]
        if len(known) < 2 or not all(f.computed for f in known):
            return None
        dpx = all(f.absmax < (1 << 28) for f in known)
        wide = all(f.absmax < (1 << 30) and not f.contains(zero) for f in known)
        if dpx or wide or not want_dpx or any(f.absmax >= (1 << 28) and not f.contains(zero)
                                              for f in known):
            return ("dpxw_",) * wide + ("dpx_",) * dpx
        return None  # "dpxw_" is out (the zero is there); "dpx_" needs the range pass

    def _dpx_variants(self, spec, sr, dt, a, b, facts, want_dpx: bool = True) -> tuple:
        """The exact DPX tiles of an int32 min_plus / max_plus product, by the operands' values,
        in order of preference: "dpxw_" when neither holds the zero and every |x| < 2^30 (no
        mapping: each sum is then the saturating guarded one; 3.7 % faster than "dpx_" on the
        same operands, and it has an argmax tile), "dpx_" when every operand other than the zero
        has |x| < 2^28 (the sentinel mapping); () for the guarded tiles (gemm_cuda_notes.md,
        session 6).

        Answered from the operands' facts when some layer has already learned them; else (when
        ``want_dpx`` or the facts leave "dpxw_" open) one pass of the range-check kernel over each
        operand, one read-back answering both, cheaper than learning the facts here; in a batch
        (no host wait) the guarded tiles, also exact."""
        got = self._dpx_facts(sr, dt, facts, want_dpx)
        if got is not None:
            return got
        if _batch.current() is not None:
            return ()
        cp = self._cp
        flag = cp.zeros(2, np.int32)
        fn = kernels.function(spec, "range_check")
        zero = np.int32(sr.zero_for(dt))
        for x in (a, b):
            blocks = max(1, min(ceil_div(x.size, 256), 4096))
            fn((blocks,), (256,), (x, _i64(x.size), zero, flag))
        f = flag.get()
        return ("dpxw_",) * (not f[1]) + ("dpx_",) * (not f[0])

    # ---------------------------------------------------------------- packed boolean
    def _pack(self, bits):
        cp = self._cp
        r, k = bits.shape
        w = ceil_div(k, 32)
        out = cp.empty((r, w), np.uint32)
        total = r * w
        if total:
            blocks = max(1, min(ceil_div(total, 256), 8 * 65536))
            kernels.function(kernels.BOOLEAN, "pack")((blocks,), (256,), (
                cp.ascontiguousarray(bits), out, _i64(r), _i64(k), _i64(w)))
        return out

    def _boolmm(self, aw, bw, role):
        cp = self._cp
        m, w = aw.shape
        n = bw.shape[0]
        d = cp.empty((m, n), np.bool_)
        gy = ceil_div(n, 64)
        if gy > _MAX_GRID_YZ:
            raise ValueError(f"andor_matmul: n = {n} is too large for one launch on cuda")
        kernels.function(kernels.BOOLEAN, role)((ceil_div(m, 64), gy), (256,),
                                                 (aw, bw, d, _i64(m), _i64(n), _i64(w)))
        return d

    def _andor(self, aw, bw):
        return self._boolmm(aw, bw, "or")

    def _xorand(self, aw, bw):
        return self._boolmm(aw, bw, "xor")

    # ---------------------------------------------------------------- ternary VSA
    def _bind(self, ap, an, bp, bn):
        return vsa_launch.bind(self, ap, an, bp, bn)

    def _bundle(self, p, n, threshold):
        cp = self._cp
        v, r = p.shape
        if threshold > v:  # |sum| <= v < threshold everywhere
            return cp.zeros(r, np.uint32), cp.zeros(r, np.uint32)
        return vsa_launch.bundle(self, p, n, threshold)

    def _dot(self, ap, an, bp, bn):
        """(q, m) int64 dots. One launch covers ``max_grid_x`` pairs (blocks of 8 pairs for short
        rows); beyond that the query rows (and, if one row of pairs is too many, the memory rows)
        are split over several launches."""
        cp = self._cp
        q, w = ap.shape
        m = bp.shape[0]
        block = w >= 2048
        per_launch = self.max_grid_x * (1 if block else 8)  # pairs one launch can cover
        out = cp.zeros((q, m), np.int64) if block else cp.empty((q, m), np.int64)
        mb = min(m, per_launch)
        qb = max(1, per_launch // max(mb, 1))
        for q0 in range(0, q, qb):
            q1 = min(q, q0 + qb)
            for m0 in range(0, m, max(mb, 1)):
                m1 = min(m, m0 + mb)
                whole = m0 == 0 and m1 == m
                dst = out[q0:q1] if whole else (
                    cp.zeros((q1 - q0, m1 - m0), np.int64) if block else
                    cp.empty((q1 - q0, m1 - m0), np.int64))
                self._dot_launch(ap[q0:q1], an[q0:q1], bp[m0:m1], bn[m0:m1], dst, block)
                if not whole:
                    out[q0:q1, m0:m1] = dst
        return out

    def _dot_launch(self, ap, an, bp, bn, out, block: bool) -> None:
        q, w = ap.shape
        m = bp.shape[0]
        pairs = q * m
        if pairs == 0:
            return
        if block:
            vsa_launch.dot_block(self, ap, an, bp, bn, out)
        else:
            kernels.function(kernels.VSA, "dot_warp")((ceil_div(pairs, 8),), (256,), (
                ap, an, bp, bn, out, _i64(pairs), _i64(m), _i64(w)))

    def _nnz(self, p, n):
        return kernels.elementwise("nnz")(p, n, axis=-1)

    def _permute(self, p, n, dim, shifts):
        cp = self._cp
        rows, w = p.shape
        op = cp.empty_like(p)
        on = cp.empty_like(n)
        total = rows * w
        blocks = max(1, min(ceil_div(total, 256), 8 * 65536))
        kernels.function(kernels.VSA, "permute")((blocks,), (256,), (
            p, n, op, on, _i64(rows), _i64(w), _i64(dim), _i64(shifts)))
        return op, on

    def _accumulate(self, sign, mag, hp, hn):
        return vsa_launch.accumulate(self, sign, mag, hp, hn)

    def _harden(self, sign, mag, threshold):
        return vsa_launch.harden(self, sign, mag, threshold)

    def _search(self, qp, qn, mp, mn, k):
        """Scores and top-k on the device (search_launch.py: tensor cores or popcount)."""
        return search_launch.search(self, qp, qn, mp, mn, k)

    def _topk(self, scores, k):
        cp = self._cp
        order = cp.argsort(-scores, axis=-1)[:, :k]  # CuPy's argsort is stable
        return order.astype(np.int64), cp.take_along_axis(scores, order, axis=-1)


wrap_errors(CudaBackend, ("_gemm", "_pack", "_boolmm", "_bind", "_bundle", "_dot", "_nnz", "_permute",
                          "_accumulate", "_harden", "_topk", "_dpx_variants", "_search"))

__all__ = ["CudaBackend"]
