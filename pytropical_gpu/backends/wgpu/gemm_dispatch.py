"""The dispatch of one GEMM block: its workgroup grid and uniform parameters (moved out of
:mod:`.gemm`, which re-exports it, to keep that module under the size cap)."""

from __future__ import annotations

from .engine import WG, Engine, pack_params
from .gemm_passes import check_pidx


def make_dispatch(eng: Engine, pipe, kname: str, kp: dict, binds, m: int, n: int, k: int,
                  nbat: int = 1, a_bs: int = 0, b_bs: int = 0, c_bs: int = 0):
    """The dispatch of one GEMM block (bindings: A, B, D[, I][, C]; batch strides in elements)."""
    if kname == "gemm_tiled":
        check_pidx(kp, k)  # a packed argmax index field too short for k: refused, never I = -2
        groups = (-(-n // kp["BN"]), -(-m // kp["BM"]), nbat)
        params = pack_params(m, n, k, a_bs, b_bs, c_bs, m * n, 0)
    else:
        per = kp.get("WG", WG) * kp.get("RPT", 1)
        count = {"gemm_skinny": m, "gemm_wide": n // 4}.get(kname, m * n)
        gx, gy, _ = eng.grid(-(-count // per))
        groups = (gx, gy, nbat)
        params = pack_params(m, n, k, a_bs, b_bs, c_bs, m * n, gx)
    return eng.dispatch(pipe, binds, groups, params)
