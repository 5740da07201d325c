"""The search kernels' instantiations (``cuda/vsa_search*.cu``, ``cuda/vsa_topk.cu``): which
variants of each template the CUDA backend compiles, as ``kernels.ModuleSpec`` tables, and the
dynamic shared memory allowance the launches raise per kernel. Constants and one cache, no
switches: ``search_launch`` re-exports every name (the launch modules read them from there as
``sl.NAME``), and keeps the switches that pick among these variants.
"""

from __future__ import annotations

from ...shaders import load_source
from . import kernels

#: (NT, MT, WARPS, G) instantiations of search_mma: 8 NT queries a block, 16 MT rows a warp, WARPS
#: warps a block, G k-steps of 256 trits loaded while the previous G multiply.
REG_VARIANTS = ((8, 1, 8, 4), (8, 1, 8, 8), (8, 1, 16, 2), (4, 1, 8, 4), (2, 1, 8, 4), (1, 1, 8, 4))
#: ("cp", NT, WARPS, STAGES) instantiations of search_mma_cp (cuda/vsa_search_cp.cu): the memory
#: rows staged through shared memory by cp.async, STAGES groups of two k-steps a warp.
CP_VARIANTS = (("cp", 8, 8, 2), ("cp", 8, 16, 3), ("cp", 1, 8, 4))
MMA_VARIANTS = REG_VARIANTS + CP_VARIANTS
#: the variant used for each query-tile width NT (timed against the others by
#: benchmarks/bench_search_cuda.py).
MMA_PICK = {8: (8, 1, 8, 4), 4: (4, 1, 8, 4), 2: (2, 1, 8, 4), 1: (1, 1, 8, 4)}
#: 16-byte vectors a lane keeps in flight per plane in search_scan.
SCAN_U = (2, 4)
#: rows a warp of search_scan_cp has in flight (+1), instantiated.
SCAN_CP_STAGES = (3, 5)
#: top-k list lengths the top-k kernels are instantiated for (k above the largest: a sort); up to
#: 32 a warp's list lies across its lanes, 64 is one list a thread.
TOPK_K = (16, 32, 64)
#: list lengths of the fused kernels (search_mma for each MMA_PICK variant, search_scan_cp at
#: FUSED_SCAN_STAGES): k <= 32 is fused.
FUSED_K = (16, 32)
FUSED_SCAN_STAGES = (3,)

SEARCH = kernels.ModuleSpec("vsa_search", "vsa_search.cu", {
    **{"mma{}_{}_{}_{}".format(*v): "ptg::search_mma<{}, {}, {}, {}>".format(*v)
       for v in REG_VARIANTS},
    **{"mma{}_{}_{}_{}_k{}".format(*v, kk): "ptg::search_mma<{}, {}, {}, {}, {}>".format(*v, kk)
       for v in dict.fromkeys(MMA_PICK.values()) for kk in FUSED_K},
    **{"mma{}_{}_{}_{}_s16".format(*v): "ptg::search_mma<{}, {}, {}, {}, 0, short>".format(*v)
       for v in REG_VARIANTS},
    **{f"scan{u}{g}": f"ptg::search_scan<{u}, {'false' if g else 'true'}>" for u in SCAN_U
       for g in ("", "g")},
    "popc": "ptg::search_popc"}, extra=load_source("cuda", "vsa_topk.cu"))
SEARCH_CP = kernels.ModuleSpec("vsa_search_cp", "vsa_search_cp.cu", {
    **{"cp{}_{}_{}".format(*v[1:]): "ptg::search_mma_cp<{}, {}, {}>".format(*v[1:])
       for v in CP_VARIANTS},
    **{f"scan_cp{st}": f"ptg::search_scan_cp<{st}>" for st in SCAN_CP_STAGES},
    **{f"scan_cp{st}_k{kk}": f"ptg::search_scan_cp<{st}, {kk}>" for st in FUSED_SCAN_STAGES
       for kk in FUSED_K}}, extra=load_source("cuda", "vsa_search.cu") + load_source("cuda", "vsa_topk.cu"),
    head=load_source("cuda", "vsa_scan_row.cuh"))
#: STAGES of search_scan_tma (cuda/vsa_search_tma.cu: rows by sm_90 bulk copies), each with K = 0
#: and the FUSED_K lists, with the query as words or as 4 shifted copies read 16 bytes at a time
#: ("v"); SCAN = "tma<STAGES>[v]" picks one where the device has compute 9.0+.
SCAN_TMA_STAGES = (3, 4, 6, 8)
SEARCH_TMA = kernels.ModuleSpec("vsa_search_tma", "vsa_search_tma.cu", {
    **{f"scan_tma{st}{v}_k{kk}": f"ptg::search_scan_tma<{st}, {kk}, {'true' if v else 'false'}>"
       for st in SCAN_TMA_STAGES for kk in (0, *FUSED_K) for v in ("", "v")},
    **{f"scan_tma{st}{v}_k{kk}f": f"ptg::search_scan_tma<{st}, {kk}, {'true' if v else 'false'}, true>"
       for st in (3, 4) for kk in FUSED_K for v in ("", "v")}}, extra=load_source("cuda", "vsa_topk.cu"),
    head=load_source("cuda", "vsa_scan_row.cuh"))
#: int16 top-k vectors in flight a lane (topk_one_v, 16-byte loads; search_two.TOPK_VEC picks).
TOPK_V = (4, 8)
TOPK = kernels.ModuleSpec("vsa_topk", "vsa_topk.cu", {
    **{f"topk{k}": f"ptg::topk_scores{'_w' if k <= 32 else ''}<{k}>" for k in TOPK_K},
    **{f"topk{k}_s16": f"ptg::topk_scores_w<{k}, short>" for k in FUSED_K},
    **{f"one{k}{sfx}": f"ptg::topk_one_w<{k}{', short' if sfx else ''}>" for k in FUSED_K
       for sfx in ("", "_s16")},
    **{f"one{k}_s16_v{v}{m}": f"ptg::topk_one_v<{k}, {v}, {'true' if m else 'false'}>"
       for k in FUSED_K for v in TOPK_V for m in ("", "m")},
    **{f"merge{k}": f"ptg::topk_merge{'_w' if k <= 32 else ''}<{k}>" for k in TOPK_K}})
#: every module of this file (``backends.cuda.module_specs`` adds them for the nvcc compile test).
SPECS = (SEARCH, SEARCH_CP, SEARCH_TMA, TOPK)

_smem_allowed: dict[int, int] = {}


def _allow_smem(fn, nbytes: int) -> None:
    """Raise the kernel's dynamic shared memory limit to ``nbytes`` (beyond the default 48 KiB)."""
    if nbytes <= 48 * 1024 or _smem_allowed.get(fn.ptr, 0) >= nbytes:
        return
    from cupy.cuda import driver

    driver.funcSetAttribute(fn.ptr, 8, nbytes)  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    _smem_allowed[fn.ptr] = nbytes



__all__ = ["CP_VARIANTS", "FUSED_K", "FUSED_SCAN_STAGES", "MMA_PICK", "MMA_VARIANTS", "REG_VARIANTS",
           "SCAN_CP_STAGES", "SCAN_TMA_STAGES", "SCAN_U", "SEARCH", "SEARCH_CP", "SEARCH_TMA", "SPECS",
           "TOPK", "TOPK_K", "TOPK_V"]
