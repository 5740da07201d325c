"""The one-query scan with rows in contiguous runs a warp, G rows a bulk copy
(``search_scan_tmag``, cuda/vsa_search_tmag.cu; issue 15, session 5): one copy a plane and one
mbarrier wait serve G adjacent rows, and their reductions run interleaved, so the fixed chain a row
that bounds ``search_scan_tma`` at 16 warps a SM is paid once per G rows. Picked by
``search_launch.SCAN = "tmag<G>s<STAGES>[x][t]"`` (fused lists, k <= 32, sm_90); other paths (the
unfused scores, older devices) take what ``"tma3"`` takes there.
"""

from __future__ import annotations

from ...shaders import load_source
from . import kernels

#: (G rows a copy, STAGES) instantiated, each for both fused list lengths (16, 32), both row
#: orders (an "x" in SCAN: the groups dealt to the warps in turn, else a run a warp) and both
#: merges (a trailing "t": the last block's merge from the tighter floor, merge_keys_f<K, true>).
GROUPS = ((1, 3), (2, 2), (2, 3), (3, 2), (3, 3), (4, 2), (5, 2))
_B = {"": "false", "t": "true", "x": "true"}

SPEC = kernels.ModuleSpec("vsa_search_tmag", "vsa_search_tmag.cu", {
    f"scan_tmag{g}s{st}{x}{t}_k{kk}": f"ptg::search_scan_tmag<{st}, {g}, {kk}, {_B[t]}, {_B[x]}>"
    for g, st in GROUPS for kk in (16, 32) for t in ("", "t") for x in ("", "x")},
    extra=load_source("cuda", "vsa_topk.cu"),
    head=load_source("cuda", "vsa_scan_row.cuh") + load_source("cuda", "vsa_search_tma.cu"))


def parse(scan) -> tuple[int, int, str] | None:
    """(G, STAGES, suffix) of a SCAN value "tmag<G>s<STAGES>[x][t]" that is instantiated, else
    None."""
    if not (isinstance(scan, str) and scan.startswith("tmag")):
        return None
    body = scan[4:]
    sfx = ""
    for c in ("t", "x"):  # the suffix letters, last first
        if body.endswith(c):
            body, sfx = body[:-1], c + sfx
    g, _, st = body.partition("s")
    try:
        gs = (int(g), int(st))
    except ValueError:
        return None
    return (*gs, sfx) if gs in GROUPS else None


def scan(be, sl, w: int, kb: int):
    """(fn, shared memory, blocks, span) of search_scan_tmag for lists of kb keys when sl.SCAN
    names one (parse), the device has compute 9.0+ and a block fits, else None. Blocks: sl.TMA_BLOCKS
    a SM where that many fit (else as many as fit, at most 4); span: 16-byte vectors a plane a stage."""
    gs = parse(sl.SCAN)
    if gs is None or kb not in (16, 32) or int(be._cp.cuda.Device().compute_capability) < 90:
        return None
    g, stages, sfx = gs
    span = -(-g * w // 4) + 1
    smem = 64 * stages + 16 * (-(-2 * w // 4)) + 8 * stages * 2 * span * 16
    if smem > 227 * 1024:
        return None
    fn = kernels.function(SPEC, f"scan_tmag{g}s{stages}{sfx}_k{kb}")
    sl._allow_smem(fn, smem)
    fit = max(1, min(4, (228 * 1024) // (smem + 1024)))
    per_sm = min(sl.TMA_BLOCKS or fit, fit)
    return fn, smem, be._sm_count() * per_sm, span


__all__ = ["GROUPS", "SPEC", "parse", "scan"]
