"""Launches of the semiring GEMM kernels (``cuda/semiring_gemm.cu``) for ``CudaBackend._gemm``:
which kernel a shape gets (:func:`plan`, pure, so tests and benchmarks can ask it) and the launch.

* k <= ``SMALL_K`` with n <= 16: ``sr_gemm_skinny``, B in shared memory, a thread per row and 1
  or 4 columns; with 16 < n <= 64 (n % 4 == 0, float32, no argmax): ``sr_gemm_mid`` (A rows
  through shared memory by cp.async, ``sr_gemm_mid_cp``, where k % 4 == 0 and A is 16-byte
  aligned), a thread per 2 rows and 8-16 columns (benchmarks/results/gemm_cuda_notes.md, s12);
  k <= ``SMALL_K`` with m <= ``WIDE_M`` and n >= ``WIDE_N``: ``sr_gemm_wide``, A in shared memory,
  a thread per 1 or 4 columns of every row (the 4-row instantiation "wide*m4" when m <= 4).
  Both are bandwidth kernels (no tile padding).
* otherwise the tiled ``sr_gemm``: "big" when the output tiles fill the SMs, else "small"; when
  even those leave SMs idle and k is long, the k range is split into ``ks`` parts (builtin
  semirings only: their ⊕ is associative and commutative, so the result is the same bits), each
  part writing its own slice, then ``sr_combine`` folds the slices with ``c`` in k order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base import ceil_div
from . import kernels

_MAX_GRID_YZ = 65535
_NULL = np.uint64(0)  # a null pointer argument
#: builtin semirings' GEMM modules by (name, ops, dtype): building the names takes 50-80 µs, once
#: a call otherwise; a snapshot of ``kernels.TILES`` beside each (benchmarks retune it in place)
_SPECS: dict[tuple, tuple[dict, kernels.ModuleSpec]] = {}


def spec(sr, dtype: np.dtype) -> kernels.ModuleSpec:
    """``kernels.gemm_spec(sr, dtype)``, kept for builtin semirings (their module depends only on
    the name, the ops, the dtype and the tile table); a user semiring's is built each call."""
    if not sr.builtin:
        return kernels.gemm_spec(sr, dtype)
    key = (sr.name, sr.add_op, sr.mul_op, sr.selective, np.dtype(dtype).name)
    hit = _SPECS.get(key)
    if hit is None or hit[0] != kernels.TILES:
        hit = _SPECS[key] = (dict(kernels.TILES), kernels.gemm_spec(sr, dtype))
    return hit[1]


#: the wide kernel needs n this large (smaller n: the tiles or the skinny kernel)
WIDE_N = 1024
#: split k only into parts of at least this many terms
SPLIT_MIN_K = 256
#: at most this many k parts
SPLIT_MAX = 16


def _i64(x: int) -> np.int64:
    return np.int64(x)


#: sr_gemm_mid_cp's A buffers: 8 warps x 2 rounds x 16 rows x 68 floats
MID_CP_A_FLOATS = 8 * 2 * 16 * 68
_SHARED_SET: dict[int, int] = {}  # function pointer -> the dynamic shared memory it may use
_OPTIN: dict[int, int] = {}  # device -> sharedMemPerBlockOptin


def _shared_optin(cp) -> int:
    """The current device's largest dynamic shared memory a block may opt in to (bytes)."""
    dev = cp.cuda.Device().id
    if dev not in _OPTIN:
        _OPTIN[dev] = int(cp.cuda.runtime.getDeviceProperties(dev).get("sharedMemPerBlockOptin", 0))
    return _OPTIN[dev]


def _with_shared(fn, nbytes: int):
    """``fn`` allowed ``nbytes`` of dynamic shared memory (past the default 48 KiB: a function
    attribute, set once per size)."""
    if _SHARED_SET.get(fn.ptr, 0) < nbytes:
        from cupy.cuda import driver

        attr = getattr(driver, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8)
        driver.funcSetAttribute(fn.ptr, attr, nbytes)
        _SHARED_SET[fn.ptr] = nbytes
    return fn


@dataclass(frozen=True)
class Plan:
    """kind: "skinny" | "mid" | "wide" | "tile"; role: the kernels.gemm_spec role; ks, kc: k parts and the
    length of each (ks == 1: no split)."""

    kind: str
    role: str
    ks: int = 1
    kc: int = 0


def plan(m: int, n: int, k: int, batch: int, itemsize: int, argmax: bool, builtin: bool,
         sms: int, names, big_tile: str = "big") -> Plan:
    """The kernel for an (m, k) x (k, n) product of ``batch`` entries on a device with ``sms`` SMs;
    ``names`` are the roles compiled for the semiring (a role missing there is never chosen)."""
    sfx = "_arg" if argmax else ""
    small = small_k_plan(m, n, k, itemsize, argmax, names)
    if small is not None:
        return small
    bm, bn = kernels.TILES["big"][:2]
    tiles = ceil_div(m, bm) * ceil_div(n, bn) * batch
    role = "big" + sfx if "big" + sfx in names and tiles >= sms else "small" + sfx
    if not argmax and role == "big" and big_tile in names:  # "big3" where compiled (kernels.BIG3)
        role = big_tile
    bm, bn, bk = kernels.tile_of(role)[:3]
    tiles = ceil_div(m, bm) * ceil_div(n, bn) * batch
    ks = 1
    if builtin and tiles < sms and k >= 2 * SPLIT_MIN_K and "combine" + sfx in names:
        ks = min(SPLIT_MAX, k // SPLIT_MIN_K, ceil_div(2 * sms, tiles))
    kc = ceil_div(ceil_div(k, ks), bk) * bk
    return Plan("tile", role, ceil_div(k, kc), kc)


def small_k_plan(m: int, n: int, k: int, itemsize: int, argmax: bool, names) -> Plan | None:
    """The small-k kernel ("skinny", "mid" or "wide") that :func:`plan` picks for the shape, or None. Their
    fold orders zeros (``fma_ord`` in ``cuda/semiring_gemm.cu``): without argmax their float
    results need no zero-sign pass (``CudaBackend._gemm``)."""
    if k > kernels.SMALL_K:
        return None
    sfx = "_arg" if argmax else ""
    nv = 4 if itemsize == 4 and n % 4 == 0 else 1
    if n <= 16 and f"skinny{nv}{sfx}" in names:
        return Plan("skinny", f"skinny{nv}{sfx}")
    if 16 < n <= 64 and nv == 4 and not argmax and f"mid{ceil_div(n, 16)}" in names:
        return Plan("mid", f"mid{ceil_div(n, 16)}")
    if m <= kernels.WIDE_M and n >= WIDE_N:
        for role in (f"wide{nv}{'m4' if m <= kernels.WIDE_M4 else ''}{sfx}", f"wide{nv}{sfx}"):
            if role in names:
                return Plan("wide", role)
    return None


def variant_plan(p: Plan, names, prefix: str) -> Plan | None:
    """``p`` on the tiles of a variant ("dpx_": int32 plus through DPX; "dpxw_": the same without
    the sentinel, for no zero and |x| < 2^30; "nz_": min_times /
    max_times without the per-slab zero test, exact when neither operand holds the zero), or None
    where the variant has no such tile. "big" runs as the variant's "big3" where compiled (64x128x8
    at 3 blocks/SM, measured faster on the H200: NZ 25.4 TOPS against the guarded "big" 23.2, DPX
    29.6 against 28.4; gemm_cuda_notes.md, session 5)."""
    role = "big3" if p.role == "big" and prefix + "big3" in names else p.role
    return Plan(p.kind, role, p.ks, p.kc) if p.kind == "tile" and prefix + role in names else None


def run(be, spec, a, b, c, argmax: bool, p: Plan, prefix: str = ""):
    """Launch plan ``p`` for (B, m, k) a, (B, k, n) b (batch 1 broadcasts) and c (or None);
    returns (d, idx or None). ``prefix``: the variant's instantiation of the tile role ("dpx_",
    "dpxw_", "nz_"; "" the plain one), as ``variant_plan`` names it."""
    cp = be._cp
    dt = a.dtype
    batch = max(a.shape[0], b.shape[0], 1 if c is None else c.shape[0])
    m, k = a.shape[1:]
    n = b.shape[2]
    d = cp.empty((batch, m, n), dt)
    idx = cp.empty((batch, m, n), np.int32) if argmax else None
    fn = None if p.kind == "mid" else kernels.function(spec, prefix + p.role)  # mid: its variant
    sfx = "_arg" if argmax else ""
    per_launch = _MAX_GRID_YZ // p.ks
    for z0 in range(0, batch, per_launch):
        z1 = min(batch, z0 + per_launch)
        nz = z1 - z0
        pa = a if a.shape[0] == 1 else a[z0:z1]
        pb = b if b.shape[0] == 1 else b[z0:z1]
        pc = _NULL if c is None else (c if c.shape[0] == 1 else c[z0:z1])
        sa = 0 if a.shape[0] == 1 else m * k
        sb = 0 if b.shape[0] == 1 else k * n
        sc = 0 if c is None or c.shape[0] == 1 else m * n
        pd = d[z0:z1]
        pi = _NULL if idx is None else idx[z0:z1]
        if p.kind == "skinny":
            total = m * (n // (4 if p.role.startswith("skinny4") else 1))
            blocks = max(1, min(ceil_div(total, 256), 8 * 65536))
            veca = int(k % 4 == 0 and pa.data.ptr % 16 == 0)
            fn((blocks, nz), (256,), (pa, pb, pc, pd, pi, _i64(m), _i64(n), _i64(k), _i64(sa),
                                      _i64(sb), _i64(sc), np.int32(veca)),
               shared_mem=k * n * dt.itemsize)
        elif p.kind == "mid":
            cols = 16 * int(p.role[3:])  # Bs row stride
            blocks = max(1, min(ceil_div(m, 64 * kernels.MID_RM), 2 * be._sm_count()))
            args = (pa, pb, pc, pd, pi, _i64(m), _i64(n), _i64(k), _i64(sa), _i64(sb), _i64(sc))
            smem = (k * cols + MID_CP_A_FLOATS) * dt.itemsize
            if k % 4 == 0 and pa.data.ptr % 16 == 0 and smem <= _shared_optin(cp):  # sr_gemm_mid_cp
                _with_shared(kernels.function(spec, "midcp" + p.role[3:]), smem)(
                    (blocks, nz), (256,), args, shared_mem=smem)
            else:
                kernels.function(spec, p.role)((blocks, nz), (256,), (*args, np.int32(0)),
                                               shared_mem=k * cols * dt.itemsize)
        elif p.kind == "wide":
            groups = n // (4 if p.role.startswith("wide4") else 1)
            blocks = max(1, min(ceil_div(groups, 256), 8 * 65536))
            fn((blocks, nz), (256,), (pa, pb, pc, pd, pi, _i64(m), _i64(n), _i64(k), _i64(sa),
                                      _i64(sb), _i64(sc)), shared_mem=m * k * dt.itemsize)
        else:
            bm, bn, _, tm, tn, _ = kernels.tile_of(p.role)
            gy = ceil_div(n, bn)
            if gy > _MAX_GRID_YZ:
                raise ValueError(f"matmul: n = {n} is too large for one launch on cuda "
                                 f"(at most {_MAX_GRID_YZ * bn} columns)")
            vec = int(k % 4 == 0 and n % 4 == 0 and pa.data.ptr % 16 == 0 and pb.data.ptr % 16 == 0)
            grid = (ceil_div(m, bm), gy, nz * p.ks)
            args = (_i64(m), _i64(n), _i64(k), _i64(sa), _i64(sb), _i64(sc), np.int32(vec),
                    np.int32(p.ks), _i64(p.kc))
            if p.ks == 1:
                fn(grid, ((bm // tm) * (bn // tn),), (pa, pb, pc, pd, pi, *args))
                continue
            part = cp.empty((nz * p.ks, m, n), dt)
            pidx = cp.empty((nz * p.ks, m, n), np.int32) if argmax else None
            fn(grid, ((bm // tm) * (bn // tn),),
               (pa, pb, _NULL, part, _NULL if pidx is None else pidx, *args))
            total = nz * m * n
            blocks = max(1, min(ceil_div(total, 256), 8 * 65536))
            kernels.function(spec, "combine" + sfx)((blocks,), (256,), (
                part, _NULL if pidx is None else pidx, pc, pd, pi, _i64(m * n), _i64(nz),
                np.int32(p.ks), _i64(sc)))
    return d, idx


__all__ = ["Plan", "plan", "small_k_plan", "variant_plan", "run", "WIDE_N", "SPLIT_MIN_K"]
