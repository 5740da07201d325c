"""The GEMM module a cuda call uses (``gemm_launch.spec``): kept per builtin semiring and dtype,
the same as ``kernels.gemm_spec`` builds, rebuilt when the tile table changes; a user semiring's
built each call. Host only (no GPU): the spec is code and names, not a compiled module."""

from __future__ import annotations

import numpy as np

import pytropical_gpu as tg
from pytropical_gpu.backends.cuda import gemm_launch, kernels
from pytropical_gpu.semirings import get_semiring

USER = tg.Semiring("user_min_plus_spec", np.minimum, np.add, np.inf, 0, dtypes=("float32",),
                   cuda_add="fminf(a, b)", cuda_mul="a + b", selective=True)


def test_a_builtin_semirings_module_is_built_once_and_equals_a_fresh_one():
    for name, dt in (("min_plus", np.float32), ("max_plus", np.int32), ("max_times", np.float64)):
        sr = get_semiring(name)
        first = gemm_launch.spec(sr, np.dtype(dt))
        assert gemm_launch.spec(sr, dt) is first
        fresh = kernels.gemm_spec(sr, np.dtype(dt))
        assert (first.key, first.names, first.code()) == (fresh.key, fresh.names, fresh.code())


def test_a_retuned_tile_table_gives_a_new_module(monkeypatch):
    sr = get_semiring("min_plus")
    before = gemm_launch.spec(sr, np.float32)
    monkeypatch.setitem(kernels.TILES, "small", (32, 32, 16, 4, 4, 1))
    after = gemm_launch.spec(sr, np.float32)
    assert after is not before
    assert after.names == kernels.gemm_spec(sr, np.dtype(np.float32)).names
    assert after.names != before.names


def test_a_user_semirings_module_is_built_each_call():
    a = gemm_launch.spec(USER, np.float32)
    assert gemm_launch.spec(USER, np.float32) is not a
    assert a.names == gemm_launch.spec(USER, np.float32).names


def test_sixteen_to_sixty_four_columns_with_short_k_take_the_mid_kernel():
    """sr_gemm_mid: 16 < n <= 64, n % 4 == 0, k <= 64, float32, no argmax; J = ceil(n / 16)
    groups of 4 columns a thread. Everything else keeps its kernel (skinny, wide, tiles; int32's
    DPX tiles measured faster than the mid kernel's guarded fold)."""
    for name, dt in (("min_plus", np.float32), ("max_min", np.float32), ("max_times", np.float32)):
        names = gemm_launch.spec(get_semiring(name), np.dtype(dt)).names
        for n, role in ((20, "mid2"), (32, "mid2"), (36, "mid3"), (48, "mid3"), (52, "mid4"), (64, "mid4")):
            p = gemm_launch.plan(65536, n, 64, 1, 4, False, True, 132, names)
            assert (p.kind, p.role) == ("mid", role), (name, n, p)
            assert gemm_launch.small_k_plan(7, n, 1, 4, False, names) == p
        for m, n, k, argmax in ((65536, 64, 64, True), (65536, 68, 64, False), (65536, 64, 65, False),
                                (65536, 37, 64, False)):
            assert gemm_launch.plan(m, n, k, 1, 4, argmax, True, 132, names).kind == "tile", (m, n, k)
        assert gemm_launch.plan(65536, 16, 64, 1, 4, False, True, 132, names).kind == "skinny"
    for name, dt in (("min_plus", np.float64), ("max_plus", np.int32), ("max_min", np.int32)):
        names = gemm_launch.spec(get_semiring(name), np.dtype(dt)).names
        assert not any(r.startswith("mid") for r in names)
        p = gemm_launch.plan(65536, 64, 64, 1, np.dtype(dt).itemsize, False, True, 132, names)
        assert p.kind == "tile", (name, dt)
