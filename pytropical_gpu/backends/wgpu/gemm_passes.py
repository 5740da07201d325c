"""The tiled GEMM's extra passes: the argmax by k-tile's second pass and split-k.

``gemm_argfix`` finds each output's k inside its winning k-tile; with :data:`ARGFIX_BT` it reads
B transposed (one ``gemm_transpose`` pass first), so that the tile's BK values of B's column are
consecutive words, as A's row's are, instead of BK rows apart (one memory sector each); it takes
the outputs in column panels (:data:`ARGFIX_PW`), ``gemm_argfix_coop`` gives each output four
threads (:data:`ARGFIX_COOP`) and ``gemm_argfix_row`` does so row by row, a workgroup a row's
panel, so that A's row is read through L1 (:data:`ARGFIX_ROW`).
Split-k runs ``gemm_tiled`` with SK over S slices of k (a z layer of workgroups each, writing a
partial D) and ``gemm_splitk`` folds the layers with ⊕: for grids too small to fill the device.
:func:`argmax_pidx` is the rule for the first pass's packed k-tile indices (``PIDX``).
Measured on an H200: benchmarks/results/wgpu_gemm_notes.md.
"""

from __future__ import annotations

import math

from .engine import WG, Engine, pack_params

#: gemm_argfix reads B transposed (False: B's column in place, BK scattered rows)
ARGFIX_BT = True
#: gemm_argfix takes the outputs in panels of this many columns (0: row-major over all of n; H200
#: 4096^3: 0.563 ms against 0.598, PW 256-2048 within 1 %)
ARGFIX_PW = 512
#: gemm_argfix_coop (four threads an output, B transposed, k a multiple of 4, BK 16) instead of
#: gemm_argfix: 4x fewer cache lines a warp's load touches (H200 4096^3 second pass: 0.490 ms
#: against 0.606, whole argmax 7.576 against 7.692; slower on lavapipe, where it matters little)
ARGFIX_COOP = True
#: gemm_argfix_row instead of gemm_argfix_coop (same conditions): a workgroup loops over one output
#: row's panel of this many columns, so its A row stays in the SM's L1 (H200 4096^3 second pass:
#: 0.373 ms against coop's 0.493); None: off
ARGFIX_ROW: int | None = 1024
#: gemm_argfix_row's threads per workgroup (four an output)
ARGFIX_ROW_WG = WG
#: gemm_transpose's square tile, 16 or 32 (H200 4096^2: 0.041 ms against 16's 0.073)
TRANSPOSE_TS = 32
#: split-k: the tile, its workgroups resident at once (H200: 132 SMs x 2), most layers, least k
#: per layer (the rule: :func:`split_plan`); WA (s6, H200 1024^3, 4 layers and the fold: 0.101 ms,
#: flat 0.111)
SPLIT_TILE = {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "PF": 0, "WA": True}
SPLIT_SLOTS = 264
SPLIT_MAX = 8
SPLIT_MIN_K = 64
#: split-k's first pass writes its partial layers as vec4 where n is a multiple of 4 (DV; H200
#: 1024^3: 0.111 ms against scalar stores' 0.120, 512^3 0.022 against 0.030)
SPLIT_DV = True
#: pairs (m * n * k) below which a GEMM never splits (a second dispatch costs more than it saves)
SPLIT_MIN_WORK = 1 << 26


#: the big tile's argmax by k-tile keeps its k-tile indices packed two a ``u32`` (``PIDX`` in
#: ``wgsl/gemm_tiled.wgsl``: 32 registers for the 8x8 tile's 64 indices, not 64); the rule:
#: :func:`argmax_pidx`. s7, H200 4096^3 f32 min_plus / max_plus: first pass 6.824 / 6.775 ms against
#: 7.007 / 6.964 unpacked, whole argmax 0.861 / 0.867 of the same tile without argmax; 0: off
#: (the template renders 16 or 0 only: :func:`check_pidx`)
ARGMAX_PIDX = 16


def argmax_pidx(code, k: int, bk: int) -> int:
    """The first pass's ``PIDX`` (bits a packed k-tile index; 0: the unpacked ``i32`` indices).

    Packed only where the result is the unpacked kernel's bit for bit. (1) A builtin semiring
    whose ⊕ is min or max (``better4`` a strict ``<`` / ``>``; every builtin selective semiring:
    its zero, ±inf or the integer extreme, is ⊕'s identity in every dtype): the packed field has no
    "none" value, so "no k-tile improved" (I = -1) is read at the store from ``acc == zero()``,
    which holds exactly when no tile was strictly better (an improvement moves acc off the zero
    for good). A user-defined ⊕ (``better`` from its expression) promises no such order: never.
    (2) Every k-tile index fits the field: ceil(k / BK) <= 2^PIDX (k <= 2^20 at BK 16); beyond it
    the kernel writes I = -2, which :func:`check_pidx` keeps from ever being dispatched.
    """
    if not ARGMAX_PIDX or code is None or code.USER or code.ADD_OP not in ("min", "max"):
        return 0
    return ARGMAX_PIDX if -(-k // bk) <= 1 << ARGMAX_PIDX else 0


def check_pidx(kp: dict, k: int) -> None:
    """Refuse a first pass ``gemm_tiled`` cannot run exactly (called by every ``gemm_tiled``
    dispatch, before anything is queued): a ``PIDX`` other than 0 or 16 (:class:`ValueError`; the
    template renders no other since PIDX 8 was removed in session 8), or k-tiles that outnumber
    the field (:class:`RuntimeError`: it would write I = -2). :func:`argmax_pidx` never hands such
    parameters out; this is the guard against a caller that forces them."""
    px = kp.get("PIDX", 0)
    if type(px) is not int or px not in (0, 16):
        raise ValueError(f"gemm_tiled: kp['PIDX'] must be 0 or 16 (bits a packed k-tile index), "
                         f"got {px!r}")
    px = px if kp.get("AT") and kp.get("ARGMAX") else 0
    if px and -(-k // kp["BK"]) > 1 << px:
        raise RuntimeError(f"gemm_tiled: PIDX {px} holds {1 << px} k-tiles, k={k} has "
                           f"{-(-k // kp['BK'])} (argmax_pidx would not pack them)")


def argfix_dispatch(eng: Engine, code, kp: dict, binds, m: int, n: int, k: int, nbat: int = 1,
                    a_bs: int = 0, b_bs: int = 0, bt: bool = False):
    """The second pass of an AT argmax (bindings A, B or B transposed, D, I)."""
    vec = bt and k % 4 == 0 and kp["BK"] % 4 == 0
    pw = {"PW": ARGFIX_PW} if ARGFIX_PW and n > ARGFIX_PW else {}
    per = WG
    if ARGFIX_ROW and vec and kp["BK"] == 16:
        panels = -(-n // ARGFIX_ROW)
        pipe = eng.pipeline("gemm_argfix_row", **code.params(), WG=ARGFIX_ROW_WG, AV=True,
                            BV=True, PW=ARGFIX_ROW)
        gx, gy, _ = eng.grid(m * panels)
        return eng.dispatch(pipe, binds, (gx, gy, nbat),
                            pack_params(m, n, k, a_bs, b_bs, panels, m * n, gx))
    if ARGFIX_COOP and vec and kp["BK"] == 16:
        pipe = eng.pipeline("gemm_argfix_coop", **code.params(), WG=WG, AV=True, BV=True, **pw)
        per = WG // 4
    else:
        pipe = eng.pipeline("gemm_argfix", **code.params(), BK=kp["BK"], WG=WG, BT=bt, VEC=vec,
                            AV=vec, BV=vec, **pw)
    gx, gy, _ = eng.grid(-(-(m * n) // per))
    return eng.dispatch(pipe, binds, (gx, gy, nbat), pack_params(m, n, k, a_bs, b_bs, 0, m * n, gx))


def argfix_commands(eng: Engine, code, kp: dict, binds, m: int, n: int, k: int, nbat: int = 1,
                    a_bs: int = 0, b_bs: int = 0, bt: bool | None = None):
    """The second pass's commands (bindings A, B, D, I) and the temporaries to release after
    them; ``bt``: read B transposed (default :data:`ARGFIX_BT`; where the transpose's grid does
    not fit one dispatch, B is read in place)."""
    nb = nbat if b_bs else 1
    wmax = eng.limits.max_workgroups_per_dim
    ts = TRANSPOSE_TS
    if (ARGFIX_BT if bt is None else bt) and max(-(-n // ts), -(-k // ts), nb) <= wmax:
        tb = eng.alloc(nb * k * n * 4)
        pipe = eng.pipeline("gemm_transpose", T=code.T, **({"TS": ts} if ts != 16 else {}))
        tr = eng.dispatch(pipe, [binds[1], tb.binding()], (-(-n // ts), -(-k // ts), nb),
                          pack_params(k, n, b_bs, 0))
        fix = argfix_dispatch(eng, code, kp, [binds[0], tb.binding(), binds[2], binds[3]],
                              m, n, k, nbat, a_bs, b_bs, bt=True)
        return [tr, fix], [tb]
    return [argfix_dispatch(eng, code, kp, binds, m, n, k, nbat, a_bs, b_bs)], []


def split_plan(m: int, n: int, k: int, lim: int, item: int, tile: dict | None = None,
               layers: int | None = None) -> tuple[int, int]:
    """(layers, k per layer) of a split-k GEMM, or (1, k) where the grid is big enough, k too
    short or the partial layers beyond one binding; ``layers`` forces a count (benchmarks)."""
    t = SPLIT_TILE if tile is None else tile
    wgs = -(-m // t["BM"]) * -(-n // t["BN"])
    s = layers
    if s is None and (m * n * k < SPLIT_MIN_WORK or wgs >= 3 * SPLIT_SLOTS):
        s = 1  # too little work for a second dispatch, or waves enough that the last matters little
    if s is None:
        counts = [c for c in (1, 2, 4, 8) if c <= SPLIT_MAX and (c == 1 or k >= c * SPLIT_MIN_K)]
        if wgs < SPLIT_SLOTS // 2:  # under one workgroup an SM: as many layers as fit one wave
            s = max(c for c in counts if c == 1 or wgs * c <= 1.1 * SPLIT_SLOTS)
        else:  # the count whose last wave is fullest (more layers only where clearly fuller)
            s, best = 1, 0.0
            for c in counts:
                waves = wgs * c / SPLIT_SLOTS
                fill = waves / math.ceil(waves)
                if fill > best * 1.02:
                    s, best = c, fill
    while s > 1 and s * m * n * item > lim:
        s -= 1
    if s <= 1:
        return 1, k
    per = -(-k // s)
    ks = -(-per // t["BK"]) * t["BK"]  # whole k-tiles per layer
    return -(-k // ks), ks


def splitk_commands(eng: Engine, code, kp: dict, layers: int, ks: int, binds, m: int, n: int,
                    k: int, item: int):
    """Split-k's two passes (bindings A, B, D[, C]; ``kp`` a tile with SK) and the temporary."""
    part = eng.alloc(layers * m * n * item)
    if SPLIT_DV and n % 4 == 0:
        kp = dict(kp, DV=True)
    pipe = eng.pipeline("gemm_tiled", **code.params(), **kp, HAS_C=False)
    first = eng.dispatch(pipe, [binds[0], binds[1], part.binding()],
                         (-(-n // kp["BN"]), -(-m // kp["BM"]), layers),
                         pack_params(m, n, k, ks, ks * n, ks, m * n, 0))
    has_c = len(binds) > 3
    vec = (m * n) % 4 == 0
    count = m * n // 4 if vec else m * n
    red = eng.pipeline("gemm_splitk", **code.params(), S=layers, VEC=vec, HAS_C=has_c, WG=WG)
    gx, gy, _ = eng.grid(-(-count // WG))
    rb = [part.binding(), binds[2]] + ([binds[3]] if has_c else [])
    second = eng.dispatch(red, rb, (gx, gy, 1), pack_params(count, count, gx, 0))
    return [first, second], [part]
