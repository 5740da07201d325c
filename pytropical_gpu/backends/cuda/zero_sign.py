"""The cuda backend's zero-sign pass (``cuda/zero_sign.cu``): every zero output of a float GEMM whose
⊕ is min or max takes the ordered sign of :mod:`pytropical_gpu.zero_order` (-0 < +0). The GEMM
kernels fold with the hardware's min / max, which need not order zeros, and the argmax epilogues
store a matching term's bits; the argmax index is left as it is.

One cooperative launch on the current stream (the GEMM's) right after the GEMM, its split-k fold
and ``c``, in place on the output, no host wait, no memset: ``zero_pass`` reads the output, stores
the call's epoch in the stream's gate word where it holds a zero, and after a grid barrier returns
unless the gate is open; else it finds which rows and columns hold a -0 or a negative (one read of
A and B) and fixes the zero outputs, a grid barrier between the phases. A zero output whose row
and column flags show that no term can be -0 takes its sign from ``c`` (min) or is +0 (max) at
once; the others rescan their k terms, 4 a step, until one (or ``c``) has the sign that settles
them (max: +0, min: -0).
No pass at all where the operands' facts already show that no zero term can be -0
(:func:`~pytropical_gpu.zero_order.no_negative_zero`: e.g. min_plus whose A or B holds no -0).
Cost: one launch and one read of the output where no output is zero; an open gate adds one read
of A and B, plus the scans of the zero outputs whose flags allow a -0 term. (Setting the gate in
the GEMM's own epilogue, which would save the read, made the units kernel 1.5-2.4 % slower in
every form tried: ``benchmarks/bench_units_gate_s13.py``.) The small-k kernels (k <= 64) fold
zeros in order themselves (``refold_ord``): without argmax they get no pass (:func:`after_gemm`),
which would cost them more than their own time (a read of D and a launch against a
bandwidth-bound GEMM).
"""

from __future__ import annotations

import threading

import numpy as np

from ... import zero_order
from ..base import ceil_div
from . import gemm_launch, kernels
from .streams import stream_key

#: threads a block
THREADS = 256
_MUL = {"plus": 0, "times": 1, "min": 2, "max": 3}
_NULL = np.uint64(0)
#: rows of A a warp's chunk, rows of B a block's chunk (as RK, CK in cuda/zero_sign.cu)
RK, CK = 1024, 256


def role(add_op: str, mul_op: str, dtype) -> str:
    """The instantiation's role in :data:`SPEC`, e.g. "zero_sign_max_plus_float32"."""
    return f"zero_sign_{add_op}_{mul_op}_{np.dtype(dtype).name}"


_FLOATS = ("float32", "float64")
#: every (⊕, ⊗, dtype) the rule covers (``zero_order.applies``): its ``zero_pass``; one module
SPEC = kernels.ModuleSpec("zero_sign", "zero_sign.cu", {
    role(add, mul, dt): f"ptg::zero_pass<{kernels.CTYPES[dt]}, {str(add == 'max').lower()}, {code}>"
    for add in ("min", "max") for mul, code in _MUL.items() for dt in _FLOATS})


#: most blocks of the launch: 8 an SM on the H200's 132 SMs, grid-stride beyond, and never more
#: than can be resident at once (a cooperative launch: :func:`_resident`; 4 an SM at 57-64
#: registers, so 528 there)
MAX_BLOCKS = 1056
_gates: dict = {}  # stream key -> [(gate, barrier count, barrier generation) cupy uint32[3], epoch]
_resident_blocks: dict = {}  # (device, function pointer) -> blocks resident on the whole device
_lock = threading.Lock()


def _gate():
    """This stream's gate words (cupy uint32[3]: the gate, then the grid barrier's count and
    generation, left at 0 and n by every launch) and the call's epoch (1 .. 2^32 - 1). Kept for
    the stream's life (never freed, as ``gemm_units``' buffers): no memset a call."""
    import cupy as cp

    key = stream_key(cp)
    with _lock:
        entry = _gates.get(key)
        if entry is None:
            entry = _gates[key] = [cp.zeros(3, np.uint32), 0]
        entry[1] = entry[1] % 0xFFFFFFFF + 1
        return entry[0], np.uint32(entry[1])


def _flags(size: int):
    """``size`` uint32 words on the device (``zero_pass`` zeroes them where it runs)."""
    import cupy as cp

    return cp.empty(max(size, 1), np.uint32)


def _resident(fn) -> int:
    """The most blocks of ``fn`` (THREADS threads, no dynamic shared memory) resident on the current
    device at once: a cooperative launch's grid may not exceed it (its grid barrier waits for
    every block)."""
    import cupy as cp

    dev = cp.cuda.Device().id
    key = (dev, fn.ptr)
    if key not in _resident_blocks:
        per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, THREADS, 0)
        sms = cp.cuda.runtime.getDeviceProperties(dev)["multiProcessorCount"]
        _resident_blocks[key] = max(1, int(per_sm) * int(sms))
    return _resident_blocks[key]


def fix(d, a, b, sr, c) -> None:
    """Give every zero of ``d`` (batch, m, n), the result of ``c ⊕ a ⊗ b`` with ``a`` (batch or 1,
    m, k), ``b`` (batch or 1, k, n) and ``c`` (batch or 1, m, n) or None, all C-contiguous, its
    ordered sign, in place; nothing where ``zero_order.applies`` says the rule cannot matter."""
    dt = d.dtype
    if dt.kind != "f" or d.size == 0 or not zero_order.applies(sr, dt):
        return
    fn = kernels.function(SPEC, role(sr.add_op, sr.mul_op, dt))
    work, args = launch_args(d, a, b, c)
    fn((min(work, MAX_BLOCKS, _resident(fn)),), (THREADS,), args, enable_cooperative_groups=True)


def launch_args(d, a, b, c) -> tuple[int, tuple]:
    """``zero_pass``'s work items (blocks' worth) and arguments for :func:`fix`'s operands: the
    stream's gate words with this call's epoch and a fresh flags scratch (a word per row of A,
    then per column of B)."""
    batch, m, n = d.shape
    k = a.shape[2]
    i64 = np.int64
    ra, cb = a.shape[0] * m, b.shape[0] * n
    gate, epoch = _gate()
    work = max(ceil_div(batch * m * n, THREADS), ceil_div(ra * ceil_div(k, RK), 8)
               + b.shape[0] * ceil_div(n, 32) * ceil_div(k, CK))
    return work, (a, b, _NULL if c is None else c, d, i64(m), i64(n), i64(k),
                  i64(0 if a.shape[0] == 1 else m * k), i64(0 if b.shape[0] == 1 else k * n),
                  i64(0 if c is None or c.shape[0] == 1 else m * n), i64(batch), i64(ra), i64(cb),
                  _flags(ra + cb), gate, epoch)


def after_gemm(d, a, b, sr, c, argmax: bool, known: dict | None = None) -> None:
    """:func:`fix` after ``CudaBackend._gemm_kernels`` made ``d``, unless no pass is needed: the rule
    does not apply, the operands' facts already learned (``known``: the call's
    :class:`~pytropical_gpu.facts.Facts` of "a", "b", "c") show that no zero term can be -0
    (:func:`~pytropical_gpu.zero_order.no_negative_zero`), or a builtin semiring's product without
    argmax ran a small-k kernel, whose fold orders zeros itself (``refold_ord``,
    ``cuda/semiring_gemm.cu``)."""
    if not zero_order.applies(sr, d.dtype) or d.size == 0 or zero_order.no_negative_zero(sr, known):
        return
    if not argmax and sr.builtin and gemm_launch.small_k_plan(
            a.shape[1], b.shape[2], a.shape[2], d.dtype.itemsize, False,
            gemm_launch.spec(sr, d.dtype).names) is not None:
        return
    fix(d, a, b, sr, c)


__all__ = ["SPEC", "after_gemm", "fix", "launch_args", "role"]
