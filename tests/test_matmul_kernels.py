"""Semiring GEMM on shapes that cross each kernel family's choice in the WGSL and CUDA backends
(skinny rows read/written as vec4 or not, the wide kernel for few rows and n a multiple of 4 or not,
the big tile with partial tiles, CUDA's int32 plus slab bodies), with ``c`` and batches, against the
independent reference; every backend runs them (on cpu they are simply more shapes)."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_matmul
from test_matmul import check, rand

import pytropical_gpu as tg

SHAPES = [
    (5001, 4, 8),  # skinny, k and n multiples of 4 (vec4 rows of A and D)
    (1037, 5, 3),  # skinny, scalar rows
    (3, 7, 1000),  # wide: m and k small, n a multiple of 4
    (16, 16, 68),  # wide at its largest m and k
    (4, 4, 1001),  # wide excluded (n not a multiple of 4): tiled
    (3, 5, 2048),  # cuda's wide kernel (n >= 1024) with 4 accumulator rows (m <= 4)
    (9, 6, 1028),  # cuda's wide kernel with 16 rows
    (4, 3, 1030),  # cuda's 4-row wide kernel, one column a thread (n not a multiple of 4)
]

def check_argmax(a, b, name, c, backend):
    """Values and argmax of ``matmul(..., return_argmax=True)`` without and with ``c``, each equal
    to the independent reference's (smallest k on ties, -1 where ``c`` wins)."""
    for cc in (None, c):
        got, idx = tg.matmul(a, b, name, c=cc, return_argmax=True, backend=backend)
        want, want_idx = ref_matmul(a, b, name, cc)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(idx, want_idx)


@pytest.mark.parametrize("name", ["min_plus", "max_times", "plus_times"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_kernel_families_match_reference(backend, rng, name, dtype, shape):
    m, k, n = shape
    special = name != "plus_times"
    a, b = rand(rng, (m, k), dtype, special), rand(rng, (k, n), dtype, special)
    c = rand(rng, (m, n), dtype, special)
    check(tg.matmul(a, b, name, backend=backend), ref_matmul(a, b, name)[0], dtype, name)
    check(tg.matmul(a, b, name, c=c, backend=backend), ref_matmul(a, b, name, c)[0], dtype, name)


def test_big_tile_with_partial_tiles(backend, rng):
    a, b = rand(rng, (1030, 20), "float32"), rand(rng, (20, 1029), "float32")  # m * n > 2^20
    c = rand(rng, (1030, 1029), "float32")
    np.testing.assert_array_equal(tg.matmul(a, b, "min_plus", c=c, backend=backend),
                                  ref_matmul(a, b, "min_plus", c)[0])


@pytest.mark.parametrize(("name", "dtype"), [("min_plus", "float32"), ("max_plus", "int32")])
def test_big_tile_argmax(backend, rng, name, dtype):
    """The argmax by k-tile on the big tile (wgpu: m * n > 2^20), partial tiles, k cut inside
    its last k-tile, ``c``, the zero and extremes."""
    a, b = rand(rng, (1030, 36), dtype), rand(rng, (36, 1029), dtype)
    c = rand(rng, (1030, 1029), dtype)
    check_argmax(a, b, name, c, backend)


@pytest.mark.parametrize("shape", [(3, 7, 1000), (5001, 4, 8)], ids=["wide", "skinny"])
def test_kernel_families_batched(backend, rng, shape):
    m, k, n = shape
    a, b = rand(rng, (2, m, k), "float32"), rand(rng, (k, n), "float32")
    c = rand(rng, (2, m, n), "float32")
    np.testing.assert_array_equal(tg.matmul(a, b, "min_plus", c=c, backend=backend),
                                  ref_matmul(a, b, "min_plus", c)[0])
    b2 = rand(rng, (2, k, n), "float32")
    np.testing.assert_array_equal(tg.matmul(a[:1], b2, "max_plus", backend=backend),
                                  ref_matmul(a[:1], b2, "max_plus")[0])


@pytest.mark.parametrize("by_tile", [True, False], ids=["by_k_tile", "per_pair"])
@pytest.mark.parametrize("name", ["min_plus", "max_min"])  # test_matmul.py: every selective one
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_tiled_argmax_matches_reference(backend, rng, monkeypatch, by_tile, name, dtype):
    """Both tiled argmax kernels (wgpu's ``gemm.ARGMAX_BY_TILE``: a plain ⊕ per k-tile then a second
    pass inside the winning tile, or a compare and two selects per pair): values, smallest k on
    ties, -1 where ``c`` wins, batches."""
    if backend == "wgpu":
        from pytropical_gpu.backends.wgpu import gemm

        monkeypatch.setattr(gemm, "ARGMAX_BY_TILE", by_tile)
    elif not by_tile:
        pytest.skip("one kernel choice outside wgpu")
    for lead, m, k, n in (((), 70, 100, 67), ((2,), 33, 17, 40), ((), 5, 33, 130)):
        a, b = rand(rng, lead + (m, k), dtype), rand(rng, (k, n), dtype)
        c = rand(rng, lead + (m, n), dtype)
        check_argmax(a, b, name, c, backend)


@pytest.mark.parametrize("bt", [True, False], ids=["b_transposed", "b_in_place"])
@pytest.mark.parametrize("name", ["min_plus", "max_plus"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_argmax_by_tile_second_pass(backend, rng, monkeypatch, bt, name, dtype):
    """The argmax by k-tile's second pass reading B transposed (vec4 where k is a multiple of 4,
    scalar otherwise) or in place: smallest k on ties inside the winning tile, a tile cut by k's
    end, -1 where ``c`` wins, B batched or broadcast."""
    if backend == "wgpu":
        from pytropical_gpu.backends.wgpu import gemm, gemm_passes

        monkeypatch.setattr(gemm, "ARGMAX_BY_TILE", True)
        monkeypatch.setattr(gemm_passes, "ARGFIX_BT", bt)
    elif not bt:
        pytest.skip("one kernel choice outside wgpu")
    for alead, blead, m, k, n in (((), (), 67, 100, 70), ((2,), (2,), 33, 36, 41),
                                  ((2,), (), 9, 19, 130)):
        a, b = rand(rng, alead + (m, k), dtype), rand(rng, blead + (k, n), dtype)
        c = rand(rng, alead + (m, n), dtype)
        check_argmax(a, b, name, c, backend)


@pytest.mark.parametrize(("ts", "coop", "row"),
                         [(16, False, False), (32, False, False), (32, True, False), (32, True, True)])
@pytest.mark.parametrize(("name", "dtype"), [("min_plus", "float32"), ("max_plus", "int32")])
def test_argmax_second_pass_in_column_panels(backend, rng, monkeypatch, ts, coop, row, name,
                                             dtype):
    """n beyond wgpu's second-pass panel (``gemm_passes.ARGFIX_PW``, 512) and not a multiple of
    it: the outputs taken panel by panel, the last one narrower; B transposed through a 16- or
    32-wide tile (``TRANSPOSE_TS``), one or four threads an output (``ARGFIX_COOP``: k a multiple
    of 4), or four threads an output row by row in panels of ``ARGFIX_ROW`` columns (1024: n
    beyond it and not a multiple of it, or within one panel), k a multiple of 4 or odd, batches,
    with and without ``c`` (D and I then stored as vec4 where n is a multiple of 4), ties."""
    if backend == "wgpu":
        from pytropical_gpu.backends.wgpu import gemm, gemm_passes

        monkeypatch.setattr(gemm, "ARGMAX_BY_TILE", True)
        monkeypatch.setattr(gemm_passes, "TRANSPOSE_TS", ts)
        monkeypatch.setattr(gemm_passes, "ARGFIX_COOP", coop)
        if not row:
            monkeypatch.setattr(gemm_passes, "ARGFIX_ROW", None)
        assert gemm_passes.ARGFIX_PW and 1100 > gemm_passes.ARGFIX_PW
        assert not row or 1100 > gemm_passes.ARGFIX_ROW > 513
    elif ts == 32 or row:
        pytest.skip("one kernel choice outside wgpu")
    for lead, m, k, n in (((), 9, 40, 1100), ((2,), 5, 37, 1030), ((), 3, 100, 513),
                          ((), 7, 36, 300)):  # k cut inside its last k-tile; n within a panel
        a, b = rand(rng, lead + (m, k), dtype), rand(rng, (k, n), dtype)
        a[..., ::3], b[::3] = a[..., :1], b[:1]  # equal products in many k-tiles: smallest k wins
        check_argmax(a, b, name, rand(rng, lead + (m, n), dtype), backend)


@pytest.mark.parametrize("name", ["min_plus", "max_min", "plus_times"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("shape", [(130, 1000, 200), (37, 70, 129), (8, 300, 12)],
                         ids=lambda s: "x".join(map(str, s)))
def test_split_k(backend, rng, monkeypatch, name, dtype, shape):
    """Grids too small for the device split k over layers of workgroups folded by ⊕ (wgpu's
    gemm_passes; a last layer shorter than the rest, ±inf / integer extremes, ``c``): the same
    result as one pass."""
    m, k, n = shape
    if backend == "wgpu":
        from pytropical_gpu.backends.wgpu import gemm_passes

        monkeypatch.setattr(gemm_passes, "SPLIT_MIN_K", 16)  # k = 70 in 3 layers, 300 in 7
        monkeypatch.setattr(gemm_passes, "SPLIT_MIN_WORK", 0)
        assert gemm_passes.split_plan(m, n, k, 1 << 30, 4)[0] > 1
    special = name != "plus_times"
    a, b = rand(rng, (m, k), dtype, special), rand(rng, (k, n), dtype, special)
    c = rand(rng, (m, n), dtype, special)
    check(tg.matmul(a, b, name, backend=backend), ref_matmul(a, b, name)[0], dtype, name)
    check(tg.matmul(a, b, name, c=c, backend=backend), ref_matmul(a, b, name, c)[0], dtype, name)


I32 = np.iinfo(np.int32)


@pytest.mark.parametrize("wild", [False, True], ids=["zero_or_2^30", "wild_slabs"])
@pytest.mark.parametrize("name", ["max_plus", "min_plus"])
def test_int32_plus_zero_in_every_k_slab(backend, rng, name, wild):
    """int32 plus with the semiring zero in every k-slab and the other operands up to 2^30 - 1 in
    magnitude, beyond the DPX kernel's 2^28 (cuda: the masked slab body; ``wild``: some slabs also
    hold INT_MIN + 1, INT_MAX - 1 or +-2^30, which take the guarded body), sums at both ends of the
    int32 range, a row with no term at all; values, argmax (smallest k on ties) and ``c``."""
    zero = I32.min if name == "max_plus" else I32.max
    m, k, n = 150, 140, 133
    pool = np.array([2**30 - 1, -(2**30 - 1), 2**29, -(2**29), 2**28 + 5, 7, -7, 0], np.int64)
    a = rng.choice(pool, (m, k)).astype(np.int32)
    b = rng.choice(pool, (k, n)).astype(np.int32)
    a[:, ::7] = zero
    a[rng.random((m, k)) < 0.05] = zero
    b[rng.random((k, n)) < 0.08] = zero
    a[1] = zero
    if wild:
        a[2, 9], a[3, 50], b[70, 4], b[130, 5] = I32.min + 1, I32.max - 1, 2**30, -(2**30)
    c = rng.choice(pool, (m, n)).astype(np.int32)
    c[rng.random((m, n)) < 0.1] = zero
    check_argmax(a, b, name, c, backend)
    for cc in (None, c):
        np.testing.assert_array_equal(tg.matmul(a, b, name, c=cc, backend=backend),
                                      ref_matmul(a, b, name, cc)[0])
