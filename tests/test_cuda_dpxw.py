"""int32 min_plus / max_plus on cuda with no zero and every |x| < 2^30 (issue 14): the "dpxw_" DPX
tiles (no sentinel mapping; max(a + b, acc) cannot wrap, so it is the saturating guarded sum) are
chosen exactly then: from the operands' facts where learned, else from the range pass the DPX
path already runs, never in a batch. Host part (no GPU): the roles compiled and the facts
decision. Device part: every path against an int64 reference written here (saturating sums, the
zero absorbing, first k of the best, -1 for no path or c not improved on), bit for bit, on odd
shapes, ±(2^30 - 1), ties, split k, c holding the zero, broadcast batches; the spy says which tiles
ran."""

from __future__ import annotations

import numpy as np
import pytest
from ref_int_plus import I32, W, _zero, ref_plus, wide_operands

import pytropical_gpu as tg
from conftest import require_backend
from pytropical_gpu.backends.cuda import gemm_launch, kernels
from pytropical_gpu.backends.cuda.backend import CudaBackend
from pytropical_gpu.facts import Facts
from pytropical_gpu.hybrid import HybridContext

NAMES = ["max_plus", "min_plus"]


# ------------------------------------------------------------------------------ host
@pytest.mark.parametrize("name", NAMES)
def test_dpxw_roles_compiled_for_int32_plus_only(name):
    names = kernels.gemm_spec(tg.get_semiring(name), np.dtype(np.int32)).names
    functor = "MaxPlusDpxW" if name == "max_plus" else "MinPlusDpxW"
    assert {r for r in names if r.startswith("dpxw_")} == {"dpxw_big3", "dpxw_small", "dpxw_small_arg"}
    assert all(functor + "," in names[r] for r in ("dpxw_big3", "dpxw_small"))
    assert functor[:-1] + "RE," in names["dpxw_small_arg"]  # the running best, grouped search
    assert "true>" in names["dpxw_small_arg"] and "false>" in names["dpxw_big3"]
    assert kernels.tile_of("dpxw_big3") == kernels.TILES["big3"]
    assert kernels.tile_of("dpxw_small_arg") == kernels.TILES["small_arg"]
    for other, dt in ((name, np.float32), ("max_min", np.int32), ("max_times", np.int32)):
        spec = kernels.gemm_spec(tg.get_semiring(other), np.dtype(dt))
        assert not any(r.startswith("dpxw_") for r in spec.names)
    big = gemm_launch.plan(4096, 4096, 512, 1, 4, False, True, 132, names)
    assert gemm_launch.variant_plan(big, names, "dpxw_").role == "big3"
    arg = gemm_launch.plan(64, 64, 4096, 1, 4, True, True, 132, names)
    assert gemm_launch.variant_plan(arg, names, "dpxw_") == arg and arg.ks > 1
    assert gemm_launch.variant_plan(arg, names, "dpx_") is None


@pytest.mark.parametrize("name", NAMES)
def test_dpx_facts_choose_dpxw_exactly_without_zero_below_2_30(rng, name):
    sr, dt = tg.get_semiring(name), np.dtype(np.int32)
    ask = CudaBackend._dpx_facts

    def facts(a, b, learned=True):
        make = Facts.of_host if learned else Facts
        return {"a": make(a), "b": make(b), "c": None}

    a, b = wide_operands(rng, 9, 50, 7)
    assert ask(sr, dt, facts(a, b)) == ("dpxw_",)
    assert ask(sr, dt, facts(a, b), want_dpx=False) == ("dpxw_",)
    small_a, small_b = (a // 8, b // 8)  # |x| < 2^27: both variants, the faster "dpxw_" first
    assert ask(sr, dt, facts(small_a, small_b)) == ("dpxw_", "dpx_")
    for where in ("a", "b"):
        for v in (W, -W, I32.max, I32.min, _zero(name)):  # 2^30 exactly, beyond, the zero
            x, y = a.copy(), b.copy()
            (x if where == "a" else y)[-1, -1] = v
            assert ask(sr, dt, facts(x, y)) in ((), None), (where, v)
            assert ask(sr, dt, facts(x, y), want_dpx=False) == (), (where, v)
        x, y = small_a.copy(), small_b.copy()  # the zero with small values: the sentinel DPX only
        (x if where == "a" else y)[0, 0] = _zero(name)  # its absmax is the zero's: the pass decides
        assert ask(sr, dt, facts(x, y)) is None
        assert ask(sr, dt, facts(x, y), want_dpx=False) == ()
    assert ask(sr, dt, facts(a, b, learned=False)) is None  # not learned: the range pass decides
    assert ask(sr, dt, {"a": Facts.of_host(a)}) is None
    assert ask(sr, dt, None) is None


# ------------------------------------------------------------------------------ device
def _check(got, want, argmax):
    d, idx = got if argmax else (got, None)
    np.testing.assert_array_equal(np.asarray(d), want[0])
    if argmax:
        np.testing.assert_array_equal(np.asarray(idx), want[1])


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(("m", "k", "n"), [(67, 97, 83), (130, 260, 132), (17, 1300, 9), (17, 1300, 12),
                                          (5, 70, 3)],
                         ids=["small", "small2", "split_k", "split_k_vec", "tiny"])
@pytest.mark.parametrize("argmax", [False, True], ids=["value", "argmax"])
@pytest.mark.parametrize("with_c", [False, True], ids=["", "c"])
@pytest.mark.parametrize("ties", [False, True], ids=["", "ties"])
def test_dpxw_exact(roles, rng, name, m, k, n, argmax, with_c, ties):
    a, b = wide_operands(rng, m, k, n, ties=ties)
    c = None
    if with_c:
        c = rng.integers(-(2**31) + 1, 2**31 - 1, (m, n), dtype=np.int64).astype(np.int32)
        c[0, :] = _zero(name)
        c[-1, :2] = -_zero(name) - (name == "max_plus")  # the other extreme: nothing improves on it
    got = tg.matmul(a, b, name, c=c, return_argmax=argmax, backend="cuda")
    _check(got, ref_plus(a, b, name, c), argmax)
    assert any(r.startswith("dpxw_small") for r in roles), roles


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("argmax", [False, True], ids=["value", "argmax"])
def test_dpxw_big_tile_sampled_rows(roles, rng, name, argmax):
    m, k, n = 1536, 72, 1540  # >= 132 tiles of 128 x 128: "big", run as "dpxw_big3" without argmax
    a, b = wide_operands(rng, m, k, n)
    got = tg.matmul(a, b, name, return_argmax=argmax, backend="cuda")
    d, idx = got if argmax else (got, None)
    rows = np.r_[0:4, rng.integers(4, m - 70, 24), m - 70:m]  # the last rows: a partial tile
    want = ref_plus(a[rows], b, name)
    _check((d[rows], idx[rows]) if argmax else d[rows], want, argmax)
    assert ("dpxw_small_arg" if argmax else "dpxw_big3") in roles, roles


@pytest.mark.parametrize("name", NAMES)
def test_dpxw_broadcast_batch(roles, rng, name):
    a, b = wide_operands(rng, 3 * 21, 40, 19)
    a3 = a.reshape(3, 21, 40)
    got = tg.matmul(a3, b, name, backend="cuda")
    for i in range(3):
        np.testing.assert_array_equal(got[i], ref_plus(a3[i], b, name)[0])
    assert "dpxw_small" in roles, roles


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("case", ["2^30", "-2^30", "zero_a", "zero_b", "int_extreme"])
@pytest.mark.parametrize("argmax", [False, True], ids=["value", "argmax"])
def test_not_dpxw_takes_other_tiles_exactly(roles, rng, name, case, argmax):
    """|x| = 2^30 exactly, one zero, the other extreme: never "dpxw_" (and the answer stays exact:
    saturated sums, the zero absorbing)."""
    a, b = wide_operands(rng, 67, 97, 83)
    if case == "2^30":
        b[50, 40] = W
    elif case == "-2^30":
        a[3, 7] = -W
    elif case == "zero_a":
        a[10, 20] = _zero(name)
    elif case == "zero_b":
        b[20, 10] = _zero(name)
    else:
        a[5, :] = -_zero(name) - (name == "max_plus")  # saturates against b's ±(2^30 - 1)
    got = tg.matmul(a, b, name, return_argmax=argmax, backend="cuda")
    _check(got, ref_plus(a, b, name), argmax)
    assert roles and not any(r.startswith("dpxw_") for r in roles), roles


@pytest.mark.parametrize("name", NAMES)
def test_in_a_batch_keeps_the_guarded_tiles(roles, rng, name):
    a, b = wide_operands(rng, 67, 97, 83)
    ctx = HybridContext(backend="cuda")
    with ctx.batch():
        d = ctx.matmul(a, b, name)
    np.testing.assert_array_equal(ctx.to_host(d), ref_plus(a, b, name)[0])
    assert roles and not any(r.startswith("dpx") for r in roles), roles


@pytest.mark.parametrize("name", NAMES)
def test_k0_gives_the_zero_or_c(rng, name):
    require_backend("cuda")
    a, b = np.zeros((4, 0), np.int32), np.zeros((0, 5), np.int32)
    np.testing.assert_array_equal(tg.matmul(a, b, name, backend="cuda"), np.full((4, 5), _zero(name)))
    c = rng.integers(-W + 1, W, (4, 5), dtype=np.int32)
    d, idx = tg.matmul(a, b, name, c=c, return_argmax=True, backend="cuda")
    np.testing.assert_array_equal(d, c)
    np.testing.assert_array_equal(idx, np.full((4, 5), -1))


@pytest.mark.parametrize("name", NAMES)
def test_small_values_prefer_dpxw_and_the_zero_takes_dpx(roles, rng, name):
    """|x| < 2^28: "dpxw_" without the zero (measured faster), the sentinel "dpx_" with it."""
    a, b = wide_operands(rng, 67, 97, 83, lim=2**28 - 1)
    np.testing.assert_array_equal(tg.matmul(a, b, name, backend="cuda"), ref_plus(a, b, name)[0])
    assert "dpxw_small" in roles and "dpx_small" not in roles, roles
    roles.clear()
    a[7, 9] = _zero(name)
    np.testing.assert_array_equal(tg.matmul(a, b, name, backend="cuda"), ref_plus(a, b, name)[0])
    assert "dpx_small" in roles and "dpxw_small" not in roles, roles
