"""min_times / max_times float32 on cuda when neither operand holds the zero (issue 14): the NZ
tiles (no per-slab zero test) are chosen from the operands' facts, and only then. Host part (no GPU):
the roles compiled, ``variant_plan`` (also the DPX tiles' "big3") and the facts decision. Device
part: the NZ kernels against the independent reference, bit for bit, on operands with the other
infinity, ±0, subnormals, ties and chunks of NaN products (0 × inf), through the small tile, split
k and the big tile (sampled rows), with and without argmax and ``c``; the zero in one element
sends the call to the guarded kernels."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_matmul

import pytropical_gpu as tg
from pytropical_gpu.backends.cuda import gemm_launch, kernels
from pytropical_gpu.backends.cuda.backend import CudaBackend
from pytropical_gpu.facts import Facts

TIMES = ["max_times", "min_times"]


def _zero(name):
    return np.float32(-np.inf if name.startswith("max") else np.inf)


def _operands(rng, name, m, k, n):
    """No zero of ⊕: quarter integers (ties), ±0, the other infinity (about one output in five
    meets it), subnormals, rows x columns whose first 40 terms are 0 × inf (NaN products)."""
    a = (rng.integers(-20, 20, (m, k)) / 4).astype(np.float32)
    b = (rng.integers(-20, 20, (k, n)) / 4).astype(np.float32)
    other = -_zero(name)
    for x in (a, b):
        for v, frac in ((-0.0, 0.05), (0.0, 0.05), (other, 0.2 / k), (1e-39, 0.03), (-1e-39, 0.03)):
            x.flat[rng.integers(0, x.size, max(1, int(x.size * frac)))] = v
    kk = min(40, k)
    a[3, :kk], b[:kk, 2] = 0.0, other
    a[2, :kk], b[:kk, 3] = other, -0.0
    return a, b


# ------------------------------------------------------------------------------ host
@pytest.mark.parametrize("name", TIMES)
def test_nz_roles_compiled_for_float32_times_only(name):
    names = kernels.gemm_spec(tg.get_semiring(name), np.dtype(np.float32)).names
    functor = "MaxTimesNZ" if name == "max_times" else "MinTimesNZ"
    assert {r for r in names if r.startswith("nz_")} == {"nz_big3", "nz_small", "nz_small_arg"}
    assert all(functor in names[r] for r in ("nz_big3", "nz_small", "nz_small_arg"))
    assert "true>" in names["nz_small_arg"] and "false>" in names["nz_big3"]
    assert kernels.tile_of("nz_small_arg") == kernels.TILES["small_arg"]
    for other, dt in ((name, np.int32), ("min_plus", np.float32), ("max_min", np.float32)):
        spec = kernels.gemm_spec(tg.get_semiring(other), np.dtype(dt))
        assert not any(r.startswith("nz_") for r in spec.names)


def test_nz_plan_maps_big_to_big3_and_keeps_the_rest():
    names = kernels.gemm_spec(tg.get_semiring("max_times"), np.dtype(np.float32)).names
    big = gemm_launch.plan(4096, 4096, 512, 1, 4, False, True, 132, names)
    assert big.role == "big"
    assert gemm_launch.variant_plan(big, names, "nz_") == gemm_launch.Plan("tile", "big3", big.ks, big.kc)
    split = gemm_launch.plan(64, 64, 4096, 1, 4, True, True, 132, names)
    assert split.role == "small_arg" and split.ks > 1
    assert gemm_launch.variant_plan(split, names, "nz_") == split
    skinny = gemm_launch.plan(5000, 8, 4, 1, 4, False, True, 132, names)
    assert skinny.kind == "skinny" and gemm_launch.variant_plan(skinny, names, "nz_") is None
    plain = kernels.gemm_spec(tg.get_semiring("min_plus"), np.dtype(np.float32)).names
    assert gemm_launch.variant_plan(gemm_launch.plan(4096, 4096, 512, 1, 4, False, True, 132, plain),
                                    plain, "nz_") is None


@pytest.mark.parametrize("name", ["max_plus", "min_plus"])
def test_dpx_big_runs_on_big3(name):
    names = kernels.gemm_spec(tg.get_semiring(name), np.dtype(np.int32)).names
    assert "Dpx, 64, 128, 8, 8, 8, 3, false>" in names["dpx_big3"]
    big = gemm_launch.plan(4096, 4096, 512, 1, 4, False, True, 132, names)
    assert big.role == "big"
    assert gemm_launch.variant_plan(big, names, "dpx_").role == "big3"
    small = gemm_launch.plan(256, 256, 512, 1, 4, False, True, 132, names)
    assert gemm_launch.variant_plan(small, names, "dpx_") == small
    assert gemm_launch.variant_plan(big, names, "nz_") is None


@pytest.mark.parametrize("name", TIMES)
def test_nz_ok_only_when_facts_say_no_zero(rng, name):
    sr, dt = tg.get_semiring(name), np.dtype(np.float32)
    a, b = _operands(rng, name, 9, 50, 7)
    ok = CudaBackend._nz_ok
    assert ok(sr, dt, {"a": Facts.of_host(a), "b": Facts.of_host(b)})
    for where in ("a", "b"):
        x = (a if where == "a" else b).copy()
        x[-1, -1] = _zero(name)
        f = {"a": Facts.of_host(a), "b": Facts.of_host(b), where: Facts.of_host(x)}
        assert not ok(sr, dt, f)
    assert not ok(sr, dt, {"a": Facts(a), "b": Facts(b)})  # not learned yet: no pass of its own
    assert not ok(sr, dt, {"a": Facts.of_host(a)})
    assert not ok(sr, dt, None)


# ------------------------------------------------------------------------------ device
@pytest.mark.parametrize("name", TIMES)
@pytest.mark.parametrize(("m", "k", "n"), [(67, 97, 83), (130, 260, 132), (17, 1300, 9)],
                         ids=["small", "small2", "split_k"])
@pytest.mark.parametrize("argmax", [False, True], ids=["value", "argmax"])
@pytest.mark.parametrize("with_c", [False, True], ids=["", "c"])
def test_nz_kernels_exact(roles, rng, name, m, k, n, argmax, with_c):
    a, b = _operands(rng, name, m, k, n)
    c = _operands(rng, name, m, 1, n)[0][:, :1] * np.ones((1, n), np.float32) if with_c else None
    if with_c:
        c[0, :3] = _zero(name)
    got = tg.matmul(a, b, name, c=c, return_argmax=argmax, backend="cuda")
    want, widx = ref_matmul(a, b, name, c)
    d, idx = got if argmax else (got, None)
    np.testing.assert_array_equal(d, want)
    if argmax:
        np.testing.assert_array_equal(idx, widx)
    assert any(r.startswith("nz_small") for r in roles), roles


@pytest.mark.parametrize("name", TIMES)
@pytest.mark.parametrize("argmax", [False, True], ids=["value", "argmax"])
def test_nz_big_tile_sampled_rows(roles, rng, name, argmax):
    m, k, n = 1536, 72, 1540  # >= 132 tiles of 128 x 128: "big", NZ "big3" without argmax
    a, b = _operands(rng, name, m, k, n)
    got = tg.matmul(a, b, name, return_argmax=argmax, backend="cuda")
    d, idx = got if argmax else (got, None)
    rows = np.r_[0:4, rng.integers(4, m - 70, 24), m - 70:m]  # the last rows: a partial tile
    want, widx = ref_matmul(a[rows], b, name)
    np.testing.assert_array_equal(d[rows], want)
    if argmax:
        np.testing.assert_array_equal(idx[rows], widx)
    assert ("nz_small_arg" if argmax else "nz_big3") in roles, roles


@pytest.mark.parametrize("name", TIMES)
@pytest.mark.parametrize("argmax", [False, True], ids=["value", "argmax"])
def test_one_zero_takes_the_guarded_kernels(roles, rng, name, argmax):
    a, b = _operands(rng, name, 67, 97, 83)
    b[50, 40] = _zero(name)
    got = tg.matmul(a, b, name, return_argmax=argmax, backend="cuda")
    want, widx = ref_matmul(a, b, name)
    d, idx = got if argmax else (got, None)
    np.testing.assert_array_equal(d, want)
    if argmax:
        np.testing.assert_array_equal(idx, widx)
    assert roles and not any(r.startswith("nz_") for r in roles), roles
