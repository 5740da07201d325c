"""Stream-k launch of the ``big3`` tile (``sr_gemm_sk`` in ``cuda/semiring_gemm_sk.cu``) for
min_plus / max_plus float32 without argmax: one launch of ``3 x SMs`` persistent blocks, the whole
waves of output tiles as plain tiles and the last partial wave's k-iterations shared out evenly, the
split tiles folded exactly with ⊕ (min / max is associative and commutative).

:func:`split` is pure (tests and benchmarks ask it); :func:`wanted` is the shape rule the backend
uses (only where the H200 measured it faster: benchmarks/results/gemm_cuda_notes.md, session 5
stream-k). The workspace (partial tiles) and the per-tile counters are kept per (device, stream):
the kernel leaves every counter at 0, so a buffer is zeroed only when it is allocated.
"""

from __future__ import annotations

import threading

import numpy as np

from ...shaders import load_source
from ..base import ceil_div
from . import kernels
from .gemm_launch import _NULL, _i64

ROLE = "sk_big3"
#: the semirings (float32) it is compiled for: min / max ⊕ over a guard-free ⊗ (float plus)
SEMIRINGS = {"min_plus": "ptg::MinPlus<float>", "max_plus": "ptg::MaxPlus<float>"}
#: its modules, apart from the default GEMM modules (no compile time for callers that never use
#: it); ``backends.cuda.module_specs`` adds them for the nvcc compile test
SPECS = tuple(kernels.ModuleSpec(
    f"gemm_sk:{name}:float32", "semiring_gemm_sk.cu",
    {ROLE: f"ptg::sr_gemm_sk<{functor}, {', '.join(map(str, kernels.TILES['big3']))}>"},
    head=load_source("cuda", "semiring_gemm.cu")) for name, functor in SEMIRINGS.items())
#: blocks of the big3 tile resident on one SM (its min blocks per SM)
PER_SM = kernels.TILES["big3"][5]
#: the shapes (m, n, k) where the stream-k launch is the default: none until measured faster
DEFAULT_SHAPES: frozenset[tuple[int, int, int]] = frozenset()

_lock = threading.Lock()
_buffers: dict[tuple[int, int], tuple[object, object]] = {}


def split(m: int, n: int, k: int, slots: int) -> tuple[int, int, int]:
    """(dp_tiles, sk_tiles, maxc) for an (m, k) x (k, n) product over ``slots`` blocks: whole
    tiles, tiles whose k-iterations are shared out, and the most blocks that share one tile."""
    bm, bn, bk = kernels.TILES["big3"][:3]
    tiles = ceil_div(m, bm) * ceil_div(n, bn)
    ki = ceil_div(k, bk)
    sk = tiles % slots
    if sk == 0 or ki == 0:  # k = 0: every tile whole (c or the zero), no iteration to share
        return tiles, 0, 1
    return tiles - sk, sk, ceil_div(ki * slots, sk * ki) + 1


def spec(name: str) -> kernels.ModuleSpec:
    """The module of semiring ``name`` (a key of :data:`SEMIRINGS`)."""
    return SPECS[list(SEMIRINGS).index(name)]


def wanted(name: str, dtype, m: int, n: int, k: int, batch: int, argmax: bool) -> bool:
    """The backend's rule: stream-k for a single product without argmax of a measured shape
    (``DEFAULT_SHAPES``) on a semiring and dtype it is compiled for."""
    # the shape first: with no measured shape (now) every cuda GEMM leaves at one set lookup,
    # before the dtype conversion
    return ((m, n, k) in DEFAULT_SHAPES and not argmax and batch == 1 and name in SEMIRINGS
            and np.dtype(dtype) == np.float32)


def _buffers_for(cp, ws_elems: int, tiles: int):
    key = (cp.cuda.Device().id, cp.cuda.get_current_stream().ptr)
    with _lock:
        ws, cnt = _buffers.get(key, (None, None))
        if ws is None or ws.size < ws_elems:
            ws = cp.empty(max(ws_elems, 1), np.float32)
        if cnt is None or cnt.size < tiles:
            cnt = cp.zeros(max(tiles, 1), np.int32)
        _buffers[key] = (ws, cnt)
        return ws, cnt


def run(be, spec, a, b, c, slots: int | None = None, whole_first: bool = False):
    """D = C ⊕ A ⊗ B for (1, m, k) a, (1, k, n) b and c (1, m, n) or None on ``slots`` blocks
    (default: 3 per SM), each taking its stream-k share first (``whole_first``: its whole tiles
    first); returns d (1, m, n)."""
    cp = be._cp
    _, m, k = a.shape
    n = b.shape[2]
    bm, bn, _, tm, tn, _ = kernels.TILES["big3"]
    slots = slots or PER_SM * be._sm_count()
    dp, sk, maxc = split(m, n, k, slots)
    d = cp.empty((1, m, n), np.float32)
    ws, cnt = _buffers_for(cp, sk * maxc * bm * bn, sk)
    vec = int(k % 4 == 0 and n % 4 == 0 and a.data.ptr % 16 == 0 and b.data.ptr % 16 == 0)
    kernels.function(spec, ROLE)((slots,), ((bm // tm) * (bn // tn),), (
        a, b, _NULL if c is None else c, d, ws, cnt, _i64(m), _i64(n), _i64(k), np.int32(vec),
        np.int32(dp), np.int32(sk), np.int32(maxc), np.int32(whole_first)))
    return d


__all__ = ["ROLE", "SEMIRINGS", "SPECS", "spec", "split", "wanted", "run", "DEFAULT_SHAPES"]
