"""Semiring GEMM on every backend against the independent reference in reference.py."""

from __future__ import annotations

import numpy as np
import pytest
from reference import I32, SEMIRINGS, ref_bool, ref_matmul

import pytropical_gpu as tg
from conftest import supports_f64

SELECTIVE = [s for s in SEMIRINGS if s != "plus_times"]
SHAPES = [(1, 1, 1), (7, 13, 9), (65, 33, 129), (130, 70, 3), (3, 200, 5)]


def rand(rng, shape, dtype, special=True):
    """Random values with ±inf (floats) or INT_MIN/INT_MAX (int32) sprinkled in."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = rng.integers(-20, 20, shape).astype(dt) / dt.type(4)  # ties are likely
        if special and x.size:
            x.flat[rng.integers(0, x.size, max(1, x.size // 10))] = np.inf
            x.flat[rng.integers(0, x.size, max(1, x.size // 10))] = -np.inf
        return x
    x = rng.integers(-1000, 1000, shape).astype(dt)
    if special and x.size:
        x.flat[rng.integers(0, x.size, max(1, x.size // 10))] = I32.max
        x.flat[rng.integers(0, x.size, max(1, x.size // 10))] = I32.min
    return x


def check(got, want, dtype, name):
    if name == "plus_times" and np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    else:
        np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


@pytest.mark.parametrize("name", list(SEMIRINGS))
@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_matches_reference(backend, rng, name, dtype, shape):
    m, k, n = shape
    special = name != "plus_times"
    a, b = rand(rng, (m, k), dtype, special), rand(rng, (k, n), dtype, special)
    want, _ = ref_matmul(a, b, name)
    check(tg.matmul(a, b, name, backend=backend), want, dtype, name)


@pytest.mark.parametrize("name", SELECTIVE)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_argmax_picks_smallest_k_on_ties_and_minus_one_without_path(backend, rng, name, dtype):
    a, b = rand(rng, (37, 45), dtype), rand(rng, (45, 19), dtype)
    a[0, :] = tg.get_semiring(name).zero_for(dtype)  # a row with no path at all
    want, want_idx = ref_matmul(a, b, name)
    got, idx = tg.matmul(a, b, name, return_argmax=True, backend=backend)
    check(got, want, dtype, name)
    assert idx.dtype == np.int32
    np.testing.assert_array_equal(idx, want_idx)
    assert (idx[0] == -1).all()


@pytest.mark.parametrize("name", ["min_plus", "max_plus", "max_times"])
def test_epilogue_c_combines_and_argmax_marks_kept_cells(backend, rng, name):
    a, b = rand(rng, (20, 11), "float32"), rand(rng, (11, 17), "float32")
    c = rand(rng, (20, 17), "float32")
    want, want_idx = ref_matmul(a, b, name, c=c)
    got, idx = tg.matmul(a, b, name, c=c, return_argmax=True, backend=backend)
    check(got, want, "float32", name)
    np.testing.assert_array_equal(idx, want_idx)
    got2 = tg.matmul(a, b, name, c=c, backend=backend)
    check(got2, want, "float32", name)


def test_plus_times_epilogue(backend, rng):
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((9, 40), (40, 6), (9, 6)))
    np.testing.assert_allclose(tg.matmul(a, b, "plus_times", c=c, backend=backend),
                               a.astype(np.float64) @ b + c, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("sa,sb", [((3, 5, 7), (7, 4)), ((1, 5, 7), (3, 7, 4)), ((5, 7), (3, 7, 4)),
                                   ((3, 5, 7), (3, 7, 4)), ((3, 5, 7), (1, 7, 4))])
def test_batch_broadcasting(backend, rng, sa, sb):
    a, b = rand(rng, sa, "int32"), rand(rng, sb, "int32")
    want, want_idx = ref_matmul(a, b, "max_plus")
    got, idx = tg.matmul(a, b, "max_plus", return_argmax=True, backend=backend)
    assert got.shape == want.shape == (3, 5, 4)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(idx, want_idx)


def test_batched_c_broadcasts_over_batch(backend, rng):
    a, b = rand(rng, (2, 6, 5), "float32"), rand(rng, (5, 3), "float32")
    c = rand(rng, (6, 3), "float32")
    want, _ = ref_matmul(a, b, "min_plus", c=c)
    np.testing.assert_array_equal(tg.matmul(a, b, "min_plus", c=c, backend=backend), want)


@pytest.mark.parametrize("name", ["min_plus", "max_plus", "plus_times"])
def test_k_zero_gives_semiring_zero_or_c(backend, name):
    a, b = np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32)
    zero = {"min_plus": np.inf, "max_plus": -np.inf, "plus_times": 0.0}[name]
    np.testing.assert_array_equal(tg.matmul(a, b, name, backend=backend), np.full((3, 4), zero))
    c = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(tg.matmul(a, b, name, c=c, backend=backend), c)


def test_k_zero_int_zero_is_int_extreme(backend):
    a, b = np.zeros((2, 0), np.int32), np.zeros((0, 2), np.int32)
    assert (tg.matmul(a, b, "min_plus", backend=backend) == I32.max).all()
    d, idx = tg.matmul(a, b, "max_plus", return_argmax=True, backend=backend)
    assert (d == I32.min).all() and (idx == -1).all()


@pytest.mark.parametrize("sa,sb", [((0, 5), (5, 3)), ((4, 5), (5, 0)), ((0, 0), (0, 0))])
def test_empty_result(backend, sa, sb):
    d = tg.matmul(np.ones(sa, np.float32), np.ones(sb, np.float32), "min_plus", backend=backend)
    assert d.shape == (sa[0], sb[1]) and d.dtype == np.float32


def test_inf_is_absorbing_never_nan(backend):
    # every term pairs +inf with -inf: the semiring zero wins, the result is never NaN
    a = np.array([[np.inf, -np.inf]], np.float32)
    b = np.array([[-np.inf], [np.inf]], np.float32)
    assert tg.matmul(a, b, "min_plus", backend=backend)[0, 0] == np.inf
    assert tg.matmul(a, b, "max_plus", backend=backend)[0, 0] == -np.inf
    a = np.array([[np.inf, -np.inf, 1.0]], np.float32)
    b0 = np.array([[0.0], [0.0], [2.0]], np.float32)
    assert not np.isnan(tg.matmul(a, b0, "max_times", backend=backend)).any()


def test_int_extremes_absorb_and_saturate(backend):
    big = I32.max - 5
    a = np.array([[I32.min, big, -big]], np.int32)
    b = np.array([[7], [100], [-100]], np.int32)
    # max_plus: INT_MIN ⊗ 7 = INT_MIN; big + 100 saturates to INT_MAX; -big - 100 saturates to INT_MIN
    assert tg.matmul(a, b, "max_plus", backend=backend)[0, 0] == I32.max
    assert tg.matmul(a[:, 2:], b[2:], "max_plus", backend=backend)[0, 0] == I32.min
    assert tg.matmul(a[:, :1], b[:1], "max_plus", backend=backend)[0, 0] == I32.min
    # min_plus: INT_MAX ⊗ x = INT_MAX even with a very negative x
    a2 = np.array([[I32.max]], np.int32)
    b2 = np.array([[I32.min + 1]], np.int32)
    assert tg.matmul(a2, b2, "min_plus", backend=backend)[0, 0] == I32.max


def test_float64_on_backends_that_support_it(backend, rng):
    a, b = rand(rng, (9, 12), "float64"), rand(rng, (12, 5), "float64")
    if not supports_f64(backend):
        with pytest.raises(TypeError, match="float64"):
            tg.matmul(a, b, "min_plus", backend=backend)
        return
    want, want_idx = ref_matmul(a, b, "min_plus")
    got, idx = tg.matmul(a, b, "min_plus", return_argmax=True, backend=backend)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(idx, want_idx)


def test_non_contiguous_views_are_accepted(backend, rng):
    base_a = rand(rng, (40, 30), "float32")
    base_b = rand(rng, (30, 50), "float32")
    a, b = base_a[::2, 1:].T, base_b[1:, ::3].T  # (29, 20) and (17, 29)
    a2, b2 = b, a
    want, _ = ref_matmul(np.ascontiguousarray(a2), np.ascontiguousarray(b2), "min_plus")
    np.testing.assert_array_equal(tg.matmul(a2, b2, "min_plus", backend=backend), want)


def test_out_receives_the_result(backend, rng):
    a, b = rand(rng, (8, 9), "int32"), rand(rng, (9, 10), "int32")
    out = np.full((8, 10), 123, np.int32)
    res = tg.matmul(a, b, "min_plus", out=out, backend=backend)
    assert res is out
    np.testing.assert_array_equal(out, ref_matmul(a, b, "min_plus")[0])


def test_skinny_shape(backend, rng):
    a, b = rand(rng, (5001, 4), "float32"), rand(rng, (4, 4), "float32")
    want, want_idx = ref_matmul(a, b, "min_plus")
    got, idx = tg.matmul(a, b, "min_plus", return_argmax=True, backend=backend)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(idx, want_idx)


def test_aliases_resolve_to_the_same_semiring(backend, rng):
    a, b = rand(rng, (5, 6), "float32"), rand(rng, (6, 7), "float32")
    np.testing.assert_array_equal(tg.matmul(a, b, "tropical", backend=backend),
                                  tg.matmul(a, b, "max_plus", backend=backend))
    np.testing.assert_array_equal(tg.matmul(a, b, "tropical_min", backend=backend),
                                  ref_matmul(a, b, "min_plus")[0])


def test_user_defined_semiring_runs_everywhere(backend, rng):
    sr = tg.Semiring("max_min_user", np.maximum, np.minimum, -np.inf, np.inf,
                     dtypes=("float32",), wgsl_add="max(a, b)", wgsl_mul="min(a, b)",
                     cuda_add="fmaxf(a, b)", cuda_mul="fminf(a, b)", selective=True)
    a, b = rand(rng, (33, 17), "float32"), rand(rng, (17, 21), "float32")
    want, want_idx = ref_matmul(a, b, "max_min")
    if getattr(tg.get_backend(backend), "flushes_subnormals", False):
        # the spec: exact or TypeError; a flushing adapter cannot promise arbitrary float expressions
        with pytest.raises(TypeError, match="flushes subnormal"):
            tg.matmul(a, b, sr, return_argmax=True, backend=backend)
        return
    got, idx = tg.matmul(a, b, sr, return_argmax=True, backend=backend)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(idx, want_idx)


def test_user_defined_non_selective_semiring(backend, rng):
    # (+, max) over int32: a "sum of maxima" semiring, zero = 0 is not absorbing under max
    sr = tg.Semiring("plus_max_user", np.add, np.maximum, 0, -np.inf, dtypes=("int32",),
                     wgsl_add="a + b", wgsl_mul="max(a, b)", cuda_add="a + b", cuda_mul="max(a, b)")
    a, b = rng.integers(-50, 50, (6, 35)).astype(np.int32), rng.integers(-50, 50, (35, 4)).astype(np.int32)
    want = np.maximum(a[:, :, None], b[None]).sum(axis=1).astype(np.int32)
    np.testing.assert_array_equal(tg.matmul(a, b, sr, backend=backend), want)


@pytest.mark.parametrize("kind", ["lor_land", "lxor_land"])
@pytest.mark.parametrize("shape", [(5, 31, 4), (17, 33, 9), (40, 100, 70), (2, 1, 2)])
def test_boolean_semirings(backend, rng, kind, shape):
    m, k, n = shape
    a, b = rng.random((m, k)) < 0.1, rng.random((k, n)) < 0.1
    got = tg.matmul(a, b, kind, backend=backend)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, ref_bool(a, b, kind))


def test_boolean_batched_with_c(backend, rng):
    a, b = rng.random((3, 6, 40)) < 0.05, rng.random((40, 7)) < 0.05
    c = rng.random((6, 7)) < 0.3
    np.testing.assert_array_equal(tg.matmul(a, b, "lor_land", c=c, backend=backend),
                                  ref_bool(a, b, "lor_land") | c)
    np.testing.assert_array_equal(tg.matmul(a, b, "gf2", c=c, backend=backend),
                                  ref_bool(a, b, "lxor_land") ^ c)


@pytest.mark.parametrize("kind", ["bor_band", "bxor_band"])
@pytest.mark.parametrize("dtype", ["uint32", "uint64"])
def test_bitwise_lane_semirings(backend, rng, kind, dtype):
    info = np.iinfo(dtype)
    a = rng.integers(0, info.max, (13, 37), dtype=dtype, endpoint=True)
    b = rng.integers(0, info.max, (37, 11), dtype=dtype, endpoint=True)
    a &= rng.integers(0, info.max, a.shape, dtype=dtype, endpoint=True)  # sparser bits
    got = tg.matmul(a, b, kind, backend=backend)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, ref_bool(a, b, kind))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["min_plus", "max_plus"])
def test_larger_than_one_tile_in_every_direction(backend, rng, name):
    a, b = rand(rng, (300, 257), "float32"), rand(rng, (257, 270), "float32")
    want, want_idx = ref_matmul(a, b, name)
    got, idx = tg.matmul(a, b, name, return_argmax=True, backend=backend)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(idx, want_idx)
