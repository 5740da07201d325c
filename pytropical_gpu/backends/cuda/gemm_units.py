"""The ``big3`` tile over work units (``sr_gemm_units`` in ``cuda/semiring_gemm_units.cu``) for
min_plus / max_plus float32 without argmax: one launch, the whole waves of output tiles as whole
tiles and the last partial wave's k-iterations spread over every resident slot (3 blocks per SM),
the split tiles folded exactly with ⊕ (min / max is associative and commutative). One block a unit
(the hardware starts the split units as whole tiles finish); ``ticket=True`` runs ``slots``
persistent blocks taking units from an atomic counter instead (measured slower; for tests).

:func:`layout` is pure (tests and benchmarks ask it); :func:`wanted` is the shape rule the backend
uses: wherever the plan is a single ``big3`` launch (no split k) of one product with k >= ``MIN_K``,
measured faster at every such shape timed on the H200 (1536³ +34 %, 2048³ +4 %, 8192³ +2 %:
benchmarks/results/gemm_cuda_notes.md, session 6). The workspace (partial tiles) and the per-tile
counters are kept per (device, stream): the kernel leaves every counter at 0, so a buffer is zeroed
only when it is allocated.
"""

from __future__ import annotations

import threading

import numpy as np

from ...shaders import load_source
from ..base import ceil_div
from . import kernels
from .gemm_launch import _NULL, _i64
from .streams import stream_key

ROLE = "units_big3"
#: the semirings (float32) it is compiled for: min / max ⊕ over a guard-free ⊗ (float plus)
SEMIRINGS = {"min_plus": "ptg::MinPlus<float>", "max_plus": "ptg::MaxPlus<float>"}
#: its modules, apart from the default GEMM modules; ``backends.cuda.module_specs`` adds them for
#: the nvcc compile test
SPECS = tuple(kernels.ModuleSpec(
    f"gemm_units:{name}:float32", "semiring_gemm_units.cu",
    {ROLE: f"ptg::sr_gemm_units<{functor}, {', '.join(map(str, kernels.TILES['big3']))}>"},
    head=load_source("cuda", "semiring_gemm.cu")) for name, functor in SEMIRINGS.items())
#: blocks of the big3 tile resident on one SM (its min blocks per SM)
PER_SM = kernels.TILES["big3"][5]
#: the rule's shortest k (the H200 timings covered k = 1,024 to 8,192)
MIN_K = 1024

_lock = threading.Lock()
_buffers: dict[tuple[int, int, int], tuple[object, object]] = {}


def layout(m: int, n: int, k: int, slots: int) -> tuple[int, int, int]:
    """(W, U, maxc) for an (m, k) x (k, n) product (k > 0) on ``slots`` resident blocks: W whole
    tiles (the whole waves), U units sharing the other tiles' k-iterations (one a slot, at most one
    iteration each), and the most units that share one tile."""
    bm, bn, bk = kernels.TILES["big3"][:3]
    tiles = ceil_div(m, bm) * ceil_div(n, bn)
    whole = tiles // slots * slots
    if whole == tiles:
        return tiles, 0, 1
    units = min(slots, (tiles - whole) * ceil_div(k, bk))
    return whole, units, ceil_div(units, tiles - whole) + 1


def spec(name: str) -> kernels.ModuleSpec:
    """The module of semiring ``name`` (a key of :data:`SEMIRINGS`)."""
    return SPECS[list(SEMIRINGS).index(name)]


def wanted(name: str, dtype, role: str, ks: int, k: int, batch: int, argmax: bool) -> bool:
    """The backend's rule: the units launch where ``gemm_launch.plan`` chose one ``big3`` launch
    (``role``, ``ks`` parts) for a single product without argmax with k >= MIN_K, on a semiring
    and dtype it is compiled for (the shape and dtype only, KERNELS.md rule 3)."""
    return (role == "big3" and ks == 1 and k >= MIN_K and batch == 1 and not argmax
            and name in SEMIRINGS and np.dtype(dtype) == np.float32)


def _buffers_for(cp, ws_elems: int, counters: int):
    """This stream's workspace and counters (``streams.stream_key``), grown as needed. Kept for the
    stream's life as the searches keep theirs: one dropped while a launch queued on a per-thread
    default stream still reads it could be handed to another thread's allocation."""
    key = stream_key(cp)
    with _lock:
        ws, cnt = _buffers.get(key, (None, None))
        if ws is None or ws.size < ws_elems:
            ws = cp.empty(max(ws_elems, 1), np.float32)
        if cnt is None or cnt.size < counters:
            cnt = cp.zeros(counters, np.int32)
        _buffers[key] = (ws, cnt)
        return ws, cnt


def run(be, spec, a, b, c, slots: int | None = None, ticket: bool = False):
    """D = C ⊕ A ⊗ B for (1, m, k) a, (1, k, n) b (k > 0) and c (1, m, n) or None, laid out for
    ``slots`` resident blocks (default: 3 per SM; fewer only change the split, not the answer),
    one block a unit or (``ticket``) ``slots`` blocks taking units from a counter; returns d."""
    cp = be._cp
    _, m, k = a.shape
    n = b.shape[2]
    bm, bn, bk, tm, tn, _ = kernels.TILES["big3"]
    slots = slots or PER_SM * be._sm_count()
    w, u, maxc = layout(m, n, k, slots)
    split = ceil_div(m, bm) * ceil_div(n, bn) - w
    ki = ceil_div(k, bk)
    d = cp.empty((1, m, n), np.float32)
    # counters: the ticket, the blocks out (ticket mode), then one a split tile
    ws, cnt = _buffers_for(cp, split * maxc * bm * bn, split + 2)
    vec = int(k % 4 == 0 and n % 4 == 0 and a.data.ptr % 16 == 0 and b.data.ptr % 16 == 0)
    kernels.function(spec, ROLE)((slots if ticket else w + u,), ((bm // tm) * (bn // tn),), (
        a, b, _NULL if c is None else c, d, ws, cnt, _i64(m), _i64(n), _i64(k), np.int32(vec),
        np.int32(w), np.int32(u), np.int32(maxc), np.int32(ticket), _i64(ki), _i64(ceil_div(m, bm)),
        _i64(split * ki)))
    return d


__all__ = ["ROLE", "SEMIRINGS", "SPECS", "MIN_K", "spec", "layout", "wanted", "run"]
