"""The sign of a zero result is the same on every backend: zeros are ordered, -0 < +0 (IEEE
754-2019 maximum / minimum; see pytropical_gpu/zero_order.py). Compared as bits, so +0 and -0
differ; the reference (tests/reference.py) states the rule on its own."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_matmul

import pytropical_gpu as pt

SELECTIVE = ["min_plus", "max_plus", "min_times", "max_times", "min_max", "max_min"]
# zeros of both signs dominate; 1e-30 underflows to a signed zero under times (1e-60) on every
# adapter (no subnormal operand or product, so flushing adapters give the same bits)
VALUES = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, 2.0, -0.5, 1e-30, -1e-30, np.inf, -np.inf])
SHAPES = [(1, 1, 1), (5, 7, 6), (33, 130, 45), (70, 67, 129), (9, 1030, 11)]


def keeps_subnormals(backend: str) -> bool:
    """False on a wgpu adapter that flushes subnormals (the H200's): there a times product of
    1e-30 and 1e-30 could be subnormal, so the library refuses it (SubnormalFlushError)."""
    if backend != "wgpu":
        return True
    from pytropical_gpu.backends.wgpu.device import get_engine

    return not get_engine().flushes_subnormals


def _draw(rng, shape, dtype, zeros_only=False, tiny=True):
    vals = VALUES[:4] if zeros_only else VALUES if tiny else VALUES[np.abs(VALUES) != 1e-30]
    return rng.choice(vals, size=shape).astype(dtype)


def _bits(x):
    x = np.asarray(x)
    return x.view(np.int64 if x.dtype.itemsize == 8 else np.int32)


def _dtypes(backend):
    return [np.float32] + ([np.float64] if backend != "wgpu" else [])


def _assert_bits(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    bad = _bits(got) != _bits(want)
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {bad.size} outputs differ in bits, first at "
                           f"{np.argwhere(bad)[0].tolist()}: got {got[bad][0]!r}, want {want[bad][0]!r}")


@pytest.mark.parametrize("name", SELECTIVE)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_zero_results_take_the_ordered_sign(backend, rng, name, shape):
    m, k, n = shape
    for dt in _dtypes(backend):
        tiny = keeps_subnormals(backend)
        for zeros_only in (True, False):
            a = _draw(rng, (m, k), dt, zeros_only, tiny)
            b = _draw(rng, (k, n), dt, zeros_only, tiny)
            got = pt.matmul(a, b, semiring=name, backend=backend)
            want, _ = ref_matmul(a, b, name)
            _assert_bits(got, want, f"{name} {dt.__name__} {shape} zeros_only={zeros_only}")


@pytest.mark.parametrize("name", SELECTIVE)
def test_zero_sign_with_c_and_argmax(backend, rng, name):
    m, k, n = 17, 40, 13
    for dt in _dtypes(backend):
        a, b = _draw(rng, (m, k), dt, True), _draw(rng, (k, n), dt, True)
        a[3] = _draw(rng, k, dt, False, keeps_subnormals(backend))  # one row with other values too
        c = _draw(rng, (m, n), dt, True)
        want, widx = ref_matmul(a, b, name, c)
        d, idx = pt.matmul(a, b, semiring=name, c=c, return_argmax=True, backend=backend)
        _assert_bits(d, want, f"{name} {dt.__name__} c, argmax")
        np.testing.assert_array_equal(idx, widx)
        d0, idx0 = pt.matmul(a, b, semiring=name, return_argmax=True, backend=backend)
        want0, widx0 = ref_matmul(a, b, name)
        _assert_bits(d0, want0, f"{name} {dt.__name__} argmax")
        np.testing.assert_array_equal(idx0, widx0)


@pytest.mark.parametrize("name", ["max_plus", "min_times", "max_min"])
def test_zero_sign_batched_and_broadcast(backend, rng, name):
    a = _draw(rng, (3, 9, 21), np.float32, True)
    b = _draw(rng, (1, 21, 10), np.float32, True)
    got = pt.matmul(a, b, semiring=name, backend=backend)
    want, _ = ref_matmul(a, b, name)
    _assert_bits(got, want, f"{name} batched")


@pytest.mark.parametrize("name", SELECTIVE)
def test_zero_sign_does_not_depend_on_k_order(backend, rng, name):
    """Reversing k permutes the terms only; an ordered rule gives the same bits."""
    a = _draw(rng, (11, 50), np.float32, True)
    b = _draw(rng, (50, 12), np.float32, True)
    fwd = pt.matmul(a, b, semiring=name, backend=backend)
    rev = pt.matmul(a[:, ::-1].copy(), b[::-1].copy(), semiring=name, backend=backend)
    _assert_bits(rev, fwd, f"{name} reversed k")


def test_reference_orders_zeros():
    """The reference's rule on the smallest cases, stated by hand."""
    pz, nz = np.float32(0.0), np.float32(-0.0)
    a = np.array([[pz, nz]], np.float32)
    b = np.array([[nz], [nz]], np.float32)
    # max_plus: terms +0 + -0 = +0 and -0 + -0 = -0; max orders them: +0
    assert not np.signbit(ref_matmul(a, b, "max_plus")[0][0, 0])
    # min_plus over the same terms: -0
    assert np.signbit(ref_matmul(a, b, "min_plus")[0][0, 0])
    # max_min: terms min(+0, -0) = -0 and min(-0, -0) = -0: -0
    assert np.signbit(ref_matmul(a, b, "max_min")[0][0, 0])
    # min_max: terms max(+0, -0) = +0 and max(-0, -0) = -0: min is -0
    assert np.signbit(ref_matmul(a, b, "min_max")[0][0, 0])
