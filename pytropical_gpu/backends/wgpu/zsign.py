"""The zero-sign pass: a float GEMM whose ⊕ is min or max gives its zero results the ordered sign
(-0 < +0, :mod:`pytropical_gpu.zero_order`), as the cpu backend's :func:`~pytropical_gpu.zero_order.fix_host`.

The GEMM kernels fold with WGSL's ``min`` / ``max``, which may return either of two equal zeros;
``wgsl/gemm_zsign.wgsl`` runs after them in the same submit (after split-k's fold, the argmax's
second pass and c), in place on D, a thread per output (a capped grid strides over them), reading
the GEMM's own bindings.
Cost: one read of D; a zero output then reads c and scans its k terms (A's row, B's column) up to
the first that decides its sign (max: a +0 term, min: a -0 term), so all of k where none does (a
min semiring whose zero outputs have no -0 term, a max one whose have no +0 term). Only where
:func:`~pytropical_gpu.zero_order.applies` (float32 here, ⊕ min/max, ⊗ a named op): int32,
plus_times, the boolean semirings and user-defined semirings record no pass. The argmax index is
unchanged (+0 == -0), as are a result's facts (they never look at a zero's sign).

The gate (session 10): a dispatch of ``wgsl/gemm_zflags.wgsl`` just before the pass, in the same
submit (no host sync), writes a scratch buffer of u32 flags, one per row of A and per column of B
(each batch entry; a broadcast operand has one): bit 0, the row / column holds a -0 (or a negative
subnormal, what a flushing adapter reads as -0); bit 1, a value with the sign bit set. Whether a
term of output (i, j) can be -0 follows (IEEE, round to nearest): ⊗ plus, -0 + -0 only, so bit 0
of the row and of the column; times, a zero product is -0 only for operands of opposite signs
(underflow included), so bit 1 of either; min and max, the ordered min / max of zeros is -0 only
with a -0 operand, so bit 0 of either. Where no term can be -0 a zero output skips the scan (min:
+0 unless c is -0; max: +0 unless c is -0, when the scan still looks for a +0 term). That removes
the worst case that needs no -0 anywhere (min_times on nonnegative operands full of zeros: every
output +0, all of k scanned: 16x the GEMM at 4096^3 on the H200); a worst case remains where a -0
or negative sits in the row or column but decides nothing.

The gate's three dispatches (session 11), all in the GEMM's submit, after it, in this order:

1. ``wgsl/gemm_zany.wgsl`` reads D once, flat (``vec4<u32>`` words, a scalar tail of up to 3
   elements), and tells whether any output is a zero as the pass counts one (``bits & 0x7fffffff
   == 0``: ±0; the pass leaves subnormal outputs alone, so they are no zero here either). The
   runtimes record no buffer clears, and one dispatch has no grid-wide order, so no single word
   could be cleared and then set by it: a fixed grid of at most ``ZMAX`` (= 2 WG) workgroups
   strides over D, and each stores its answer, once, to a word of its own (every word written
   whatever the data: nothing to clear). It also clears the row / column flag words, which the
   next dispatch ORs into.
2. ``wgsl/gemm_zflags.wgsl``: every workgroup ORs the ``ZMAX`` words at most (two loads a thread,
   from L2) into the any word; workgroup 0 stores it for the pass (one word, stored once); no
   output zero (the common case), every workgroup returns at once (uniformly: the value goes
   through ``workgroupUniformLoad``). Else it writes the flags: k is cut into chunks (a warp a
   chunk of ``KA`` = 1024 of a row of A, a workgroup a chunk of ``KB`` = 32 R rows of 32 columns
   of B), ``U`` loads in flight a thread, one workgroup atomicOr a row / column and chunk into the
   cleared words: s10 gave a thread a whole row or column (128 workgroups for B's columns at
   4096^3, 512 dependent loads a thread: 0.2 ms, about 0.6 TB/s, on the H200 whatever D held).
3. ``wgsl/gemm_zsign.wgsl``: every thread returns at once when the any word is 0 (s10 read D);
   its grid is capped at ``ZCAP`` workgroups a batch entry, each thread striding over outputs, so
   that the shut pass is a small launch (s10: a workgroup per 256 outputs, 64 Ki at 4096^2).

So the common case (no zero output) costs one coalesced read of D (64 MiB at 4096^3: about 16 us
at the H200's 4.3 TB/s), a launch of the flags grid that reads 2 KiB a workgroup, and the pass's
launch; the flags, when some output is zero, read A and B once with k spread over the grid.

Scratch: the generic path (:mod:`.gemm`) takes a pool buffer per call, released after the submit
with the GEMM's temporaries; a fast-path record keeps one buffer of its own (:func:`scratch`).
"""

from __future__ import annotations

from ... import zero_order
from .engine import WG, Engine, pack_params
from .runtime import Binding, Dispatch

#: loads in flight a thread (gemm_zany's vec4 words, gemm_zflags's words): straight-line code
U = 4
#: gemm_zany's workgroups at most: gemm_zflags reads their words with two loads a thread
ZMAX = 2 * WG
#: gemm_zsign's workgroups a batch entry at most (a thread then fixes outputs ZCAP * WG apart): where
#: no output is zero the pass is a launch, and 64 Ki workgroups (4096^2 outputs) are no small one
ZCAP = 2048
#: gemm_zflags's chunks of k: a row of A a warp (32 lanes x 32 words), B's columns a workgroup
KA, KB = 1024, 32 * (WG // 32)


def params(sr, dt, has_c: bool) -> dict | None:
    """The template parameters of ``sr``'s pass on ``dt`` (None: the rule does not apply)."""
    if not zero_order.applies(sr, dt):
        return None
    return {"T": "f32", "ADD_OP": sr.add_op, "MUL_OP": sr.mul_op, "HAS_C": has_c, "WG": WG}


def flags_params() -> dict:
    """The template parameters of the gate's flags dispatch (one variant: it knows no semiring)."""
    return {"T": "f32", "WG": WG, "KA": KA, "KB": KB, "U": U}


def any_params() -> dict:
    """The template parameters of the gate's any-zero dispatch (one variant)."""
    return {"WG": WG, "U": U}


class Pass:
    """A recorded gate and pass: the any-zero dispatch's (pipeline, groups, uniforms), the flags
    dispatch's, the pass's, ``vbytes`` (D's vec4 view), the flags buffer's bytes and its layout
    (``fz``: the any-zero words, ``fs``: the any word), and ``scratch``: a fast-path record's own
    flags buffer (else None)."""

    __slots__ = ("apipe", "agroups", "aparams", "fpipe", "fgroups", "fparams", "zpipe", "zgroups",
                 "zparams", "vbytes", "nbytes", "fz", "fs", "scratch")

    def dispatches(self, a: Binding, b: Binding, d: Binding, c: Binding | None = None,
                   fl: Binding | None = None) -> list:
        """[any zero, flags, pass] on the GEMM's A, B, D[, C] and the flags buffer (default:
        ``scratch``). D's vec4 view spans the whole vec4 words of D, or 16 bytes where D has
        fewer than 4 elements (then unread): D is a pool buffer, of 256 bytes at least."""
        fl = self.scratch if fl is None else fl
        zb = (a, b, d, fl) if c is None else (a, b, d, c, fl)
        return [Dispatch(self.apipe, (Binding(d.buffer, d.offset, self.vbytes), d, fl),
                         self.agroups, self.aparams),
                Dispatch(self.fpipe, (a, b, fl), self.fgroups, self.fparams),
                Dispatch(self.zpipe, zb, self.zgroups, self.zparams)]


def record(eng: Engine, sr, dt, m: int, n: int, k: int, nbat: int = 1, a_bs: int = 0,
           b_bs: int = 0, c_bs: int = 0, has_c: bool = False) -> Pass | None:
    """The gate and pass over a (nbat, m, n) result, or None (no pass)."""
    p = params(sr, dt, has_c)
    if p is None or m * n * nbat == 0:
        return None
    rec = Pass()
    rows = m * (nbat if a_bs else 1)  # A's rows in FL, then B's columns, the any-zero words, any
    nb = nbat if b_bs else 1
    rec.fz = rows + n * nb
    size = nbat * m * n
    nvec = size // 4
    ng = min(ZMAX, max(1, -(-nvec // (WG * U))))  # U vec4 words a thread at least, where D has them
    rec.fs = rec.fz + ng
    rec.nbytes = 4 * (rec.fs + 1)
    rec.vbytes = 16 * max(nvec, 1)
    rec.apipe = eng.pipeline("gemm_zany", _key=("gemm_zany",), **any_params())
    ax, ay, _ = eng.grid(ng)
    rec.agroups = (ax, ay, 1)
    rec.aparams = pack_params(nvec, size % 4, ng, ax, rec.fz, rec.fz)
    rec.zpipe = eng.pipeline("gemm_zsign", _key=("gemm_zsign", sr.add_op, sr.mul_op, has_c), **p)
    gx, gy, _ = eng.grid(min(-(-(m * n) // WG), ZCAP))
    rec.zgroups = (gx, gy, nbat)
    rec.zparams = pack_params(m, n, k, a_bs, b_bs, c_bs, m * n, gx, m if a_bs else 0, rows,
                              n if b_bs else 0, rec.fs, gx * gy * WG)
    rec.fpipe = eng.pipeline("gemm_zflags", _key=("gemm_zflags",), **flags_params())
    ca, cb = max(1, -(-k // KA)), max(1, -(-k // KB))
    rgroups, ctiles = -(-(rows * ca) // (WG // 32)), -(-n // 32)
    total = rgroups + ctiles * nb * cb
    fx, fy, _ = eng.grid(total)
    rec.fgroups = (fx, fy, 1)
    rec.fparams = pack_params(m, n, k, a_bs, b_bs, rows, rgroups, ctiles, total, fx, ca, cb, ng,
                              rec.fz, rec.fs)
    rec.scratch = None
    return rec


def scratch(eng: Engine, rec: Pass | None) -> Pass | None:
    """``rec`` with a flags buffer of its own (a fast-path record's, made once and reused by every
    call of the record: the one queue runs submissions in order, and inside one submit WebGPU
    orders a dispatch's storage writes after the reads of the dispatches recorded before it, so a
    later call's flags never overwrite what an earlier call's pass still reads). A plain runtime
    buffer outside the pool: it goes with the record (released when collected)."""
    if rec is not None:
        h = eng.rt.create_buffer(rec.nbytes, label="zsign flags")
        rec.scratch = Binding(h, 0, rec.nbytes)
    return rec


def commands(eng: Engine, sr, dt, binds, m: int, n: int, k: int, nbat: int = 1, a_bs: int = 0,
             b_bs: int = 0, c_bs: int = 0, argmax: bool = False) -> tuple[list, list]:
    """(the gate's and the pass's dispatches, the pool buffers to release after the submit) on a
    GEMM's bindings A, B, D[, I][, C] (``argmax``: I is there and is skipped); ([], []) where the
    rule does not apply."""
    binds = list(binds[:3]) + list(binds[3 + bool(argmax):])
    rec = record(eng, sr, dt, m, n, k, nbat, a_bs, b_bs, c_bs, len(binds) > 3)
    if rec is None:
        return [], []
    fl = eng.alloc(rec.nbytes)
    return rec.dispatches(*binds[:3], c=binds[3] if len(binds) > 3 else None,
                          fl=fl.binding()), [fl]


__all__ = ["KA", "KB", "U", "ZCAP", "ZMAX", "Pass", "any_params", "commands", "flags_params", "params",
           "record", "scratch"]
