"""min_times / max_times on float operands that hold the zero, on cuda (issue 14): the guarded
functor maps the zero to NaN as it enters shared memory (``TropTimes::load_map``), so every slab
runs the plain product with no per-slab test and no block vote. Host part (no GPU): float32 times
compile and plan the ``big3`` tile. Device part: the zero placed in chosen k-slabs (the first, the
last partial one, mid-range, every slab; in A, in B, in whole rows and columns), beside the other
infinity, ±0, subnormals, ties and chunks of 0 × inf, with and without argmax and ``c``, split k,
batches and odd shapes, float32 and float64, bit for bit against the independent reference; a spy
shows the guarded roles (not the NZ ones) run when the facts show the zero."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_matmul

import pytropical_gpu as tg
from pytropical_gpu.backends.cuda import gemm_launch, kernels

TIMES = ["max_times", "min_times"]
#: where the zero goes: k columns of A / k rows of B (the 16-wide slabs of the small tiles: 0 is
#: the first slab, k - 1 the last, partial when k % 16 != 0; None: every 16th k, i.e. every slab)
PLACES = {"first": (0,), "last": (-1,), "mid": (50,), "few": (1, 50, -2), "every": None}


def _zero(name, dt):
    return dt.type(-np.inf if name.startswith("max") else np.inf)


def _operands(rng, name, dt, shape_a, shape_b):
    """Quarter integers (ties), ±0, the other infinity, subnormals, and a row x column pair whose
    first 40 terms are 0 × inf (NaN products, which count as the zero); no zero of ⊕ yet."""
    dt = np.dtype(dt)
    a = (rng.integers(-20, 20, shape_a) / 4).astype(dt)
    b = (rng.integers(-20, 20, shape_b) / 4).astype(dt)
    other = -_zero(name, dt)
    tiny = dt.type(1e-39 if dt == np.float32 else 1e-310)
    k = shape_a[-1]
    for x in (a, b):
        flat = x.reshape(-1)
        for v, frac in ((-0.0, 0.05), (0.0, 0.05), (other, 0.2 / k), (tiny, 0.03), (-tiny, 0.03)):
            flat[rng.integers(0, flat.size, max(1, int(flat.size * frac)))] = v
    kk = min(40, k)
    if shape_a[-2] > 3 and shape_b[-1] > 2:
        a[..., 3, :kk], b[..., :kk, 2] = 0.0, other
    return a, b


def _place(rng, name, a, b, where, side):
    """The zero at the k positions of PLACES[where]: in A (a column of some rows, and one whole
    k column), in B (a row of some columns), or both."""
    k = a.shape[-1]
    z = _zero(name, a.dtype)
    ks = range(0, k, 16) if PLACES[where] is None else [p % k for p in PLACES[where]]
    for kk in ks:
        if side in ("a", "both"):
            rows = rng.integers(0, a.shape[-2], max(1, a.shape[-2] // 4))
            a[..., rows, kk] = z
        if side in ("b", "both"):
            cols = rng.integers(0, b.shape[-1], max(1, b.shape[-1] // 4))
            b[..., kk, cols] = z
    if side == "a":
        a[..., ks[0] if isinstance(ks, list) else 0] = z  # one whole k column: every row meets it
    if a.shape[-2] > 4:
        a[..., 4, :] = z  # a row of the zero alone: its outputs are the zero (or c), argmax -1


def _check(a, b, name, c, argmax):
    got = tg.matmul(a, b, name, c=c, return_argmax=argmax, backend="cuda")
    want, widx = ref_matmul(a, b, name, c)
    d, idx = got if argmax else (got, None)
    np.testing.assert_array_equal(d, want)
    if argmax:
        np.testing.assert_array_equal(idx, widx)


# ------------------------------------------------------------------------------ host
@pytest.mark.parametrize("name", TIMES)
def test_float32_times_plan_big3(name):
    names = kernels.gemm_spec(tg.get_semiring(name), np.dtype(np.float32)).names
    functor = "MaxTimes<float>" if name == "max_times" else "MinTimes<float>"
    assert f"{functor}, 64, 128, 8, 8, 8, 3, false>" in names["big3"]
    p = gemm_launch.plan(4096, 4096, 4096, 1, 4, False, True, 132, names, "big3")
    assert p.role == "big3"
    assert gemm_launch.plan(4096, 4096, 4096, 1, 4, True, True, 132, names, "big3").role == "small_arg"
    assert "big3" not in kernels.gemm_spec(tg.get_semiring(name), np.dtype(np.int32)).names


# ------------------------------------------------------------------------------ device
@pytest.mark.parametrize("name", TIMES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("where", list(PLACES))
@pytest.mark.parametrize("side", ["a", "b", "both"])
@pytest.mark.parametrize(("m", "k", "n"), [(67, 97, 83), (130, 260, 132), (17, 1300, 9)],
                         ids=["small", "tiles", "split_k"])
def test_zero_in_chosen_slabs(roles, rng, name, dtype, where, side, m, k, n):
    a, b = _operands(rng, name, dtype, (m, k), (k, n))
    _place(rng, name, a, b, where, side)
    c = (rng.integers(-20, 20, (m, n)) / 4).astype(dtype)
    c[0, :3] = _zero(name, np.dtype(dtype))
    c[5, :] = -_zero(name, np.dtype(dtype))  # the other infinity: nothing improves on it
    for argmax in (False, True):
        for cc in (None, c):
            _check(a, b, name, cc, argmax)
    assert roles and not any(r.startswith("nz_") for r in roles), roles


@pytest.mark.parametrize("name", TIMES)
@pytest.mark.parametrize("argmax", [False, True], ids=["value", "argmax"])
def test_batch_and_broadcast(roles, rng, name, argmax):
    a, b = _operands(rng, name, "float32", (3, 40, 90), (1, 90, 70))
    _place(rng, name, a, b, "few", "both")
    _check(a, b, name, None, argmax)
    _check(a[:1], np.repeat(b, 2, axis=0), name, None, argmax)


@pytest.mark.parametrize("name", TIMES)
@pytest.mark.parametrize("argmax", [False, True], ids=["value", "argmax"])
def test_big_tile_with_the_zero_takes_the_guarded_roles(roles, rng, name, argmax):
    m, k, n = 1536, 72, 1540  # >= 132 tiles of 128 x 128: "big", run as "big3" without argmax
    a, b = _operands(rng, name, "float32", (m, k), (k, n))
    _place(rng, name, a, b, "every", "both")
    got = tg.matmul(a, b, name, return_argmax=argmax, backend="cuda")
    d, idx = got if argmax else (got, None)
    rows = np.r_[0:6, rng.integers(6, m - 70, 24), m - 70:m]  # the last rows: a partial tile
    want, widx = ref_matmul(a[rows], b, name)
    np.testing.assert_array_equal(d[rows], want)
    if argmax:
        np.testing.assert_array_equal(idx[rows], widx)
    assert ("small_arg" if argmax else "big3") in roles, roles
    assert not any(r.startswith("nz_") or r == "big" for r in roles), roles
