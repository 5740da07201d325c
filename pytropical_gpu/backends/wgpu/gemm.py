"""Semiring GEMM on WGSL: kernel selection, parameters, and tiling beyond one binding/dispatch.

Four templates: ``gemm_tiled`` (register-blocked, vec4 accumulators, unrolled k-tile: the
throughput path), ``gemm_skinny`` (m >> n, k <= 16: one thread per row, B in workgroup memory, no
padding to a big tile), its mirror ``gemm_wide`` (m, k <= 16, n >> m: four columns per thread, A
in workgroup memory) and ``gemm_simple`` (one thread per output; small argmax GEMMs);
``gemm_argfix`` is the second pass of the tiled argmax by k-tile, ``gemm_splitk`` split-k's fold
(both in :mod:`.gemm_passes`); ``gemm_zsign`` gives a float min/max GEMM's zeros their ordered
sign after them (:mod:`.zsign`).
Work larger than one storage binding
or one dispatch runs as several blocks (batch entries x row blocks x column blocks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import facts
from ...semirings import Semiring
from . import gemm_passes as passes
from . import stats, zsign
from .array import host
from .engine import WG, Engine
from .gemm_dispatch import make_dispatch
from .readback import finish, resident, upload_result
from .templating import WGSL_TYPES, literal

#: the big tile, WA: workgroup tiles as k rows of vec4, one bounds clamp per column instead of one
#: per read (min_plus f32 8192^3 on an H200 through Vulkan: 23.9 TOPS, 22.5 without WA, cuda big3
#: 25.0 in the same run; every variant measured: benchmarks/results/wgpu_gemm_notes.md)
TILE = {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "PF": 0, "WA": True}
#: the big tile's argmax by k-tile prefetches (one workgroup an SM fits its registers, none other
#: hides the loads; s4, no WA: 4096^3 first pass PF=2 7.08 ms, PF=0 8.50, PF=1 7.66). s6, whole
#: argmax 4096^3 on the H200, flat PF2 / WA PF2 / WA PF1: min_plus 7.36 / 7.40 / 7.38, max_plus
#: 7.39 / 7.47 / 7.34, max_min 10.94 / 10.56 / 10.52, min_max 10.62 / 10.61 / 10.63 ms: WA PF1
TILE_ARGMAX = {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "PF": 1, "WA": True}
#: a smaller tile for mid-sized problems (more workgroups; 1024^3: 14.3 TOPS, BK=8 13.0); WA (s6,
#: H200, 1024 x 8192 x 120: 0.716 ms, flat 0.771)
TILE_SMALL = {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "PF": 0, "WA": True}
#: small products (m, n <= TINY_MN): 32 x 32 tiles, so a 64^3 GEMM runs on 4 workgroups, not one
#: (latency-bound: a queued 64^3 min_plus waited ~48 us on the H200 for its single workgroup;
#: lavapipe 32^3-128^3: 1.5-1.8x faster; benchmarks/bench_small_gemm_tiles.py). None: off.
#: PF=2 (s6, H200, queued 64^3 min_plus: GPU time 0.85-0.88 of PF=0 in each of 4 rounds; WA: no
#: clear gain, not taken; benchmarks/results/batch_notes.md)
TILE_TINY = {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4, "PF": 2}
TINY_MN = 128
#: argmax by k-tile (AT): the tiled kernel folds each k-tile's plain ⊕ into the running best with the
#: tile's index, and ``gemm_argfix`` finds the k inside the winning tile; False: a compare and two
#: selects per pair (H200 4096^3, 64x64 tile: 9.83 ms against 14.73, no argmax 8.13; see
#: benchmarks/results/wgpu_gemm_notes.md)
ARGMAX_BY_TILE = True
#: skinny kernel: rows of A per thread (2,097,152 x 4 x 4 on an H200: 1 to 4 within 3 %)
SKINNY_RPT = 1
SKINNY_K = 16
SKINNY_N = 16
#: the wide kernel (m <= WIDE_M, k <= SKINNY_K, n a multiple of 4): the skinny kernel's mirror
WIDE_M = 16

_ADD = {"min": "min(a, b)", "max": "max(a, b)", "plus": "a + b", "bor": "a | b", "bxor": "a ^ b"}
_MUL = {"plus": "a + b", "times": "a * b", "max": "max(a, b)", "min": "min(a, b)", "band": "a & b"}


@dataclass(frozen=True)
class SemiringCode:
    """The template parameters of one (semiring, dtype, guard) combination."""

    T: str
    ZERO: str
    ONE: str
    ADD: str
    MUL: str
    GUARD: str
    USER: bool
    ADD_OP: str

    def params(self) -> dict:
        return dict(T=self.T, ZERO=self.ZERO, ONE=self.ONE, ADD=self.ADD, MUL=self.MUL,
                    GUARD=self.GUARD, USER=self.USER, ADD_OP=self.ADD_OP)


#: dtypes a user-defined semiring runs on in WGSL (its expressions are spliced in as they are).
USER_DTYPES = frozenset(WGSL_TYPES)


def supports(sr: Semiring) -> bool:
    return sr.builtin or (sr.wgsl_add is not None and sr.wgsl_mul is not None)


def user_dtype_reason(dt: np.dtype) -> str:
    """Why a user-defined semiring cannot run on ``dt`` here (for the backend's TypeError)."""
    if dt.name in ("uint64", "int64"):
        return ("WGSL has no 64-bit integers: uint64 runs on wgpu only for the builtin bitwise "
                "semirings (bor_band, bxor_band), whose ops act on each 32-bit lane independently")
    if dt.name == "bool":
        return "WGSL storage buffers have no bool element type"
    return f"user-defined semirings run on {', '.join(sorted(USER_DTYPES))} in WGSL"


_CODES: dict = {}


def semiring_code(sr: Semiring, dt: np.dtype, special: bool) -> SemiringCode:
    """``special``: operands contain the zero/inf (float) or may saturate (int): guard ⊗.
    A builtin semiring's code is made once per (dtype, guard) and remembered."""
    if sr.builtin:
        key = (sr.name, dt, special)
        code = _CODES.get(key)
        if code is None:
            code = _CODES[key] = _semiring_code(sr, dt, special)
        return code
    return _semiring_code(sr, dt, special)


def _semiring_code(sr: Semiring, dt: np.dtype, special: bool) -> SemiringCode:
    T = WGSL_TYPES[dt.name]
    zero = literal(sr.zero_for(dt), dt)
    one = literal(sr.one_for(dt), dt)
    if not sr.builtin:
        return SemiringCode(T, zero, one, sr.wgsl_add, sr.wgsl_mul, "none", True,
                            "user")
    guard = "none"
    if sr.guarded and special:
        if dt.kind == "f":
            guard = "float_plus" if sr.mul_op == "plus" else "float_times"
        else:
            guard = "int_plus" if sr.mul_op == "plus" else "int_times"
    return SemiringCode(T, zero, one, _ADD[sr.add_op], _MUL[sr.mul_op], guard, False, sr.add_op)


def tile_storage(kp: dict) -> int:
    """Workgroup memory (bytes) of a ``gemm_tiled`` configuration (PF=2 keeps two k-tiles)."""
    return (kp["BM"] + kp["BN"]) * kp["BK"] * 4 * (2 if kp["PF"] == 2 else 1)


def choose_kernel(m: int, n: int, k: int, argmax: bool, wg_storage: int = 16384,
                  by_tile: bool | None = None, code: SemiringCode | None = None) -> tuple[str, dict]:
    """Template and parameters for an (m, k) x (k, n) GEMM; ``wg_storage``: the device's workgroup
    memory limit (a tile that needs more prefetches into registers only, PF=1); ``by_tile``: the
    tiled argmax by k-tile (default :data:`ARGMAX_BY_TILE`); ``code``: the semiring's, for the big
    argmax tile's packed indices (:func:`.gemm_passes.argmax_pidx`; None: unpacked)."""
    if argmax:
        if k <= SKINNY_K and n <= SKINNY_N:
            return "gemm_simple", {"ARGMAX": True, "KCONST": k, "WG": WG}
        kp = dict(TILE_SMALL, ARGMAX=True, WA=False)  # WA on this argmax tile: not measured
        if ARGMAX_BY_TILE if by_tile is None else by_tile:  # the big tile where the plain GEMM
            if m * n > (1 << 20) and min(m, n) >= 128:     # takes it (H200 4096^3: 7.69 ms
                kp = dict(TILE_ARGMAX, ARGMAX=True)        # against 64x64's 9.83)
                if px := passes.argmax_pidx(code, k, kp["BK"]):
                    kp["PIDX"] = px
            kp["AT"] = True
    elif k <= SKINNY_K and n <= SKINNY_N:
        return "gemm_skinny", {"K": k, "N": n, "WG": WG, "RPT": SKINNY_RPT,
                               "AV": k % 4 == 0, "DV": n % 4 == 0}
    elif 1 <= m <= WIDE_M and 1 <= k <= SKINNY_K and n % 4 == 0:
        return "gemm_wide", {"MMAX": WIDE_M, "K": k, "WG": WG, "BV": True, "DV": True}
    elif TILE_TINY is not None and m <= TINY_MN and n <= TINY_MN:
        kp = dict(TILE_TINY, ARGMAX=False)
    elif m * n <= (1 << 20) or min(m, n) < 128:
        kp = dict(TILE_SMALL, ARGMAX=False)
    else:
        kp = dict(TILE, ARGMAX=False)
    if kp["PF"] == 2 and tile_storage(kp) > wg_storage:
        kp["PF"] = 1
    return "gemm_tiled", kp


def gemm(eng: Engine, a: np.ndarray, b: np.ndarray, sr: Semiring, c, argmax: bool,
         known: dict | None = None):
    """The backend's ``_gemm`` for numeric semirings on numpy or resident operands (see base.py).

    ``known``: the operands' facts ({"a": Facts, "b": Facts, ...}); the guard on ⊗ is chosen
    from them (without them, as for the known-answer check, they are learned here once)."""
    dt = a.dtype
    ba, m, k = a.shape
    bb, _, n = b.shape
    bc = 0 if c is None else c.shape[0]
    batch = max(ba, bb, bc)
    fa, fb = (known["a"], known["b"]) if known else (facts.of(a), facts.of(b))
    keep = resident(a, b, c)
    # inside a batch, facts of results not yet read are not waited for: the guarded ⊗ is exact
    # for every operand (and gives the same values where the guard is not needed)
    special = (sr.guarded and eng.recording is not None and not (fa.computed and fb.computed)) \
        or facts.guard_needed(sr, dt, fa, fb)
    code = semiring_code(sr, dt, special)
    kname, kp = choose_kernel(m, n, k, argmax, eng.limits.max_workgroup_storage, code=code)
    has_c = c is not None
    if kname == "gemm_tiled" and argmax and not has_c and n % 4 == 0:
        kp = dict(kp, DV=True)  # D and I as vec4 stores (H200 4096^3 first pass 6.98 ms, not 7.08)
    item = dt.itemsize
    lim = eng.max_binding
    split = (1, k)  # split-k (layers, k per layer): one GEMM whose big-tile grid is too small
    if kname == "gemm_tiled" and not argmax and batch == 1 and sr.builtin:
        split = passes.split_plan(m, n, k, lim, item)
        if split[0] > 1:
            kp = dict(passes.SPLIT_TILE, ARGMAX=False, SK=True)
    pipe = None if split[0] > 1 else eng.pipeline(
        kname, _key=(kname, code, tuple(kp.items()), has_c), **code.params(), **kp, HAS_C=has_c)
    wmax = eng.limits.max_workgroups_per_dim
    tiled = kname == "gemm_tiled"
    # batch entries per dispatch, rows and columns per block: every binding within the limit
    whole = max(ba * m * k, bb * k * n, batch * m * n) * item <= lim and batch <= wmax
    if tiled:
        whole = whole and -(-m // kp["BM"]) <= wmax and -(-n // kp["BN"]) <= wmax
    if whole:
        plans = [(0, batch, 0, m, 0, n)]
    else:
        nb = n
        tall = max(k, m) if kname == "gemm_wide" else k  # rows of a column block (wide: D's too)
        if tall * n * item > lim:
            nb = max(4, (lim // (tall * item)) // 4 * 4)
        if tiled:
            nb = min(nb, wmax * kp["BN"])
        mb = m if kname == "gemm_wide" else max(1, min(m, lim // max(k * item, nb * item)))
        if tiled:
            mb = min(mb, wmax * kp["BM"])
        else:
            mb = min(mb, max(1, (wmax * wmax * WG) // nb))
        plans = [(bi, bi + 1, m0, min(m, m0 + mb), n0, min(n, n0 + nb))
                 for bi in range(batch) for m0 in range(0, m, mb) for n0 in range(0, n, nb)]
        # blocks are strided sub-matrices: resident operands come to the host once for the tiling
        why = "GEMM beyond one binding is tiled on the host"
        a, b, c = host(a, why), host(b, why), host(c, why)
    if not (keep and whole):  # the result assembled on the host
        d = np.empty((batch, m, n), dt)
        idx = np.empty((batch, m, n), np.int32) if argmax else None
    for (b0, b1, m0, m1, n0, n1) in plans:
        nbat = b1 - b0
        if whole:
            ab, bbuf, cbk = a, b, c
        else:
            ab = np.ascontiguousarray(a[b0 % ba][None, m0:m1])
            bbuf = np.ascontiguousarray(b[b0 % bb][None, :, n0:n1])
            cbk = None if c is None else np.ascontiguousarray(c[b0 % bc][None, m0:m1, n0:n1])
        mm, nn = m1 - m0, n1 - n0
        bufs = [eng.upload(ab), eng.upload(bbuf)]
        dbuf = eng.alloc(nbat * mm * nn * item)
        binds = [bufs[0].binding(), bufs[1].binding(), dbuf.binding()]
        ibuf = None
        if argmax:
            ibuf = eng.alloc(nbat * mm * nn * 4)
            binds.append(ibuf.binding())
        if cbk is not None:
            bufs.append(eng.upload(cbk))
            binds.append(bufs[-1].binding())
        a_bs = mm * k if ab.shape[0] > 1 else 0
        b_bs = k * nn if bbuf.shape[0] > 1 else 0
        c_bs = mm * nn if (cbk is not None and cbk.shape[0] > 1) else 0
        if split[0] > 1:  # whole, one batch entry
            cmds, tmp = passes.splitk_commands(eng, code, kp, *split, binds, mm, nn, k, item)
        else:
            cmds = [make_dispatch(eng, pipe, kname, kp, binds, mm, nn, k, nbat, a_bs, b_bs, c_bs)]
            tmp = []
        if kp.get("AT"):  # the argmax by k-tile's second pass (same bindings A, B, D, I)
            more, tmp = passes.argfix_commands(eng, code, kp, binds[:4], mm, nn, k, nbat, a_bs,
                                               b_bs)
            cmds += more
        z, ztmp = zsign.commands(eng, sr, dt, binds, mm, nn, k, nbat, a_bs, b_bs, c_bs, argmax)
        cmds, bufs = cmds + z, bufs + tmp + ztmp  # (the gate's flags buffer among the temporaries)
        outs = [(dbuf, dt, (nbat, mm, nn))] + ([(ibuf, np.int32, (nbat, mm, nn))] if argmax else [])
        if keep and whole:  # the whole result in one block: it stays where the kernel wrote it,
            st = stats.record(eng, dbuf, dt, nbat * mm * nn)  # its facts computed beside it
            eng.submit(cmds + ([st[0]] if st else []))
            got = finish(eng, True, *outs)
            if st:
                got[0].stats = facts.Facts.lazy(dt, got[0].size, st[1])
            eng.release(*bufs)
            return got[0], (got[1] if argmax else None)
        eng.submit(cmds)
        got = finish(eng, False, *outs)
        d[b0:b1, m0:m1, n0:n1] = got[0]
        if argmax:
            idx[b0:b1, m0:m1, n0:n1] = got[1]
        eng.release(*bufs, dbuf, ibuf)
    return upload_result(eng, keep, d), (None if idx is None else upload_result(eng, keep, idx))


def argfix_dispatch(eng: Engine, code: SemiringCode, kp: dict, binds, m: int, n: int, k: int,
                    nbat: int = 1, a_bs: int = 0, b_bs: int = 0):
    """The second pass of an AT argmax reading B in place (bindings A, B, D, I); the backend
    uses :func:`.gemm_passes.argfix_commands` (B transposed first)."""
    return passes.argfix_dispatch(eng, code, kp, binds, m, n, k, nbat, a_bs, b_bs)


def gemm_u64(eng: Engine, a, b, sr, c):
    """uint64 bitwise semirings as two independent uint32 lanes (lo and hi words)."""
    if not (sr.builtin and sr.add_op in ("bor", "bxor") and sr.mul_op == "band"):
        raise TypeError(f"matmul: semiring {sr.name!r} on uint64 cannot run on wgpu: "
                        f"{user_dtype_reason(np.dtype(np.uint64))}; use backend='cpu' or 'cuda'")
    lanes = []
    for lane in (0, 1):
        al = np.ascontiguousarray(a.view(np.uint32)[..., lane::2])
        bl = np.ascontiguousarray(b.view(np.uint32)[..., lane::2])
        cl = None if c is None else np.ascontiguousarray(c.view(np.uint32)[..., lane::2])
        lanes.append(gemm(eng, al, bl, sr, cl, False)[0])
    out = np.empty(lanes[0].shape + (2,), np.uint32)
    out[..., 0], out[..., 1] = lanes
    return out.view(np.uint64).reshape(lanes[0].shape)
