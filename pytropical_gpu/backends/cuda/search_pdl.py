"""The one-query search's merge as a second kernel launched by programmatic dependent launch (sm_90:
``cuLaunchKernelEx`` with the programmatic stream serialization attribute): the scan
(search_scan_tma with PD, no last-block merge, no counter) lets the merge launch at once, and the
merge's block (topk_merge_pd) waits on the device for the scan's end (``griddepcontrol.wait``)
instead of every scan block's fence and atomic and the last block's merge behind its own tail
(issue 15: ~12 us after the lists). Off by default until measured (:data:`PDL_MERGE`).
"""

from __future__ import annotations

import ctypes

from ...shaders import load_source
from . import kernels, search_raw

#: the one-query fused search (tma3/tma4 scans, sm_90) merges in a dependent launch.
PDL_MERGE = False

_ATTR_PSS = 6  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION

SPEC = kernels.ModuleSpec("vsa_search_tma_pd", "vsa_search_tma.cu", {
    **{f"scan_tma{st}{v}_k{kk}p": f"ptg::search_scan_tma<{st}, {kk}, {'true' if v else 'false'}, false, true>"
       for st in (3, 4) for kk in (16, 32) for v in ("", "v")},
    **{f"pdmerge{kk}": f"ptg::topk_merge_pd<{kk}>" for kk in (16, 32)}},
    extra=load_source("cuda", "vsa_topk.cu"), head=load_source("cuda", "vsa_scan_row.cuh"))


class _Attr(ctypes.Structure):  # CUlaunchAttribute: id, padding to 8, a 64-byte value union
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_int),
                ("rest", ctypes.c_char * 60)]


class _Config(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("smem", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_Attr)),
                ("nattrs", ctypes.c_uint)]


_ex: list = []  # [cuLaunchKernelEx or None], looked up once
_plans: dict[int, tuple] = {}
_blocks: dict[int, tuple] = {}


def _launch_ex():
    if not _ex:
        try:
            f = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx
            f.argtypes = [ctypes.c_void_p] * 4
            f.restype = ctypes.c_int
        except (OSError, AttributeError):
            f = None
        _ex.append(f)
    return _ex[0]


def launch(be, sl, plan, kb: int, stream: int, v: tuple) -> bool:
    """Launch the one-query scan (lists only) and its merge as a dependent launch; ``plan`` is
    search_fused's one-query plan, v = (mp, mn, qp, qn, candidates, k, results, counter, q k) as
    search_fused._raw takes. False where this path does not apply (no tma3/tma4 scan, below sm_90,
    no ``cuLaunchKernelEx``): the caller launches as before."""
    pp = _plans.get(id(plan))
    if pp is None or pp[0] is not plan:
        pp = _plans[id(plan)] = (plan, _make(be, sl, plan, kb))
    made = pp[1]
    if made is None:
        return False
    scan, merge, cfg, gx, smem, w, span, m, _ = made
    launch_ex = _launch_ex()
    cand, k, out = v[4], v[5], v[6]
    if not search_raw.launch(be._cp, plan, scan, (gx, 1, 1), 256, smem, stream,
                             [v[0], v[1], v[2], v[3], 0, m, w, span, cand, k, 0, 0, 0]):
        return False
    blk = search_raw.param_block(_blocks, plan, 5, search_raw.KEEP)
    blk[0][:] = [cand, gx * kb, out, out + 8 * v[8], k]
    cfg.stream = stream
    err = launch_ex(ctypes.addressof(cfg), merge.ptr, blk[1], None)
    if err:
        raise RuntimeError(f"search: cuLaunchKernelEx of the dependent merge failed (CUresult {err})")
    return True


def _make(be, sl, plan, kb: int):
    scan = sl.SCAN
    if (not isinstance(scan, str) or scan.rstrip("v") not in ("tma3", "tma4") or _launch_ex() is None
            or int(be._cp.cuda.Device().compute_capability) < 90):
        return None
    smem, gx = plan[3], plan[1][0]
    pre, _, (w, span), _ = plan[4]
    stages, vq, w = int(scan[3]), scan.endswith("v"), int(w)
    if smem != 64 * stages + (128 * int(span) if vq else 16 * (-(-2 * w // 4))) + 256 * stages * int(span):
        return None  # the plan is not this scan's (its shared memory would not fit the kernel)
    fn = kernels.function(SPEC, f"scan_{scan}_k{kb}p")
    sl._allow_smem(fn, smem)
    attr = _Attr(id=_ATTR_PSS, value=1)
    cfg = _Config(grid=(1, 1, 1), block=(256, 1, 1), smem=0, nattrs=1)
    cfg.attrs = ctypes.pointer(attr)  # attr is kept alive by the tuple below
    return (fn, kernels.function(SPEC, f"pdmerge{kb}"), cfg, gx, smem, int(w), int(span),
            int(pre[0]), attr)


__all__ = ["PDL_MERGE", "SPEC", "launch"]
