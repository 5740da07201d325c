"""matmul follows numpy's habits: int64 (numpy's default integer), 1-D operands, any number of
broadcast batch dimensions, ``out=`` written in place. References are written here: np.matmul for
shapes and plus_times, explicit broadcasting for min_plus, Python integers for int64 extremes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pytropical_gpu as tg
from pytropical_gpu import HybridContext

I64 = np.iinfo(np.int64)

SHAPES = [
    ((4,), (4,)), ((4,), (4, 3)), ((2, 4), (4,)), ((5, 2, 4), (4,)), ((4,), (5, 4, 3)),
    ((2, 1, 3, 4), (5, 4, 2)), ((1, 3, 4), (2, 1, 4, 2)), ((2, 3, 2, 4), (2, 3, 4, 2)),
    ((3, 2, 4), (1, 4, 5)), ((0, 2, 4), (4, 3)), ((3, 0), (0, 2)), ((2, 1, 1, 3, 5), (4, 1, 5, 1)),
]


def _min_plus_ref(a, b):
    """numpy's matmul rules spelled out: promote 1-D, broadcast, min over k of a + b, drop axes."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    s = a2[..., :, :, None].astype(np.int64) + b2[..., None, :, :]
    if s.shape[-2] == 0:
        d = np.full(s.shape[:-2] + s.shape[-1:], np.iinfo(np.int32).max, np.int64)
    else:
        d = s.min(axis=-2)
    if b.ndim == 1:
        d = d[..., 0]
    if a.ndim == 1:
        d = d[..., 0, :] if b.ndim != 1 else d[..., 0]
    return d.astype(np.int32)


@pytest.mark.parametrize("sa,sb", SHAPES, ids=[f"{a}x{b}" for a, b in SHAPES])
def test_shapes_follow_numpy_matmul(backend, rng, sa, sb):
    a = rng.integers(-50, 50, sa).astype(np.int32)
    b = rng.integers(-50, 50, sb).astype(np.int32)
    want = np.matmul(a, b)
    got = tg.matmul(a, b, "plus_times", backend=backend)
    assert isinstance(got, np.ndarray) and got.shape == want.shape and got.dtype == np.int32
    np.testing.assert_array_equal(got, want)
    got = tg.matmul(a, b, "min_plus", backend=backend)
    np.testing.assert_array_equal(got, _min_plus_ref(a, b))


@pytest.mark.parametrize("sc", [(3,), (2, 3), (1, 1), (4, 2, 3), (4, 1, 3), ()])
def test_c_broadcasts_against_the_result(backend, rng, sc):
    a = rng.integers(-9, 9, (2, 5)).astype(np.int32)
    b = rng.integers(-9, 9, (5, 3)).astype(np.int32)
    c = rng.integers(-20, 20, sc).astype(np.int32)
    want = np.minimum(c, _min_plus_ref(a, b))
    got = tg.matmul(a, b, "min_plus", c=c, backend=backend)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_c_with_a_vector_operand(backend):
    a = np.array([1, 2], np.int32)
    b = np.array([[0, 5, 1], [3, 0, 0]], np.int32)
    c = np.array([[0, 9, 9], [9, 9, 9]], np.int32)  # (2, 3): a batch of 2 rows against (3,)
    want = np.minimum(c, _min_plus_ref(a, b))
    np.testing.assert_array_equal(tg.matmul(a, b, "min_plus", c=c, backend=backend), want)


def test_shape_errors_name_both_shapes(backend):
    with pytest.raises(ValueError, match=r"\(2, 3\) and \(4, 2\).*3 != 4"):
        tg.matmul(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32), backend=backend)
    with pytest.raises(ValueError, match=r"\(2, 2, 3\) and \(3, 3, 2\).*do not broadcast"):
        tg.matmul(np.ones((2, 2, 3), np.float32), np.ones((3, 3, 2), np.float32), backend=backend)
    with pytest.raises(ValueError, match="at least 1-D"):
        tg.matmul(np.float32(1), np.ones(3, np.float32), backend=backend)
    with pytest.raises(ValueError, match="c has shape"):
        tg.matmul(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32),
                  c=np.ones((3, 4), np.float32), backend=backend)


# ------------------------------------------------------------------------------------ int64
def _wrap(x: int) -> int:
    return (x + 2**63) % 2**64 - 2**63


def _sat(x: int) -> int:
    return max(I64.min, min(I64.max, x))


def _ref_int64(a, b, name):
    """Python-integer reference: guarded ⊗ (the zero absorbs), saturating plus, wrapping times."""
    add = {"min": min, "max": max}.get(name.split("_")[0])
    z = {"min": I64.max, "max": I64.min}.get(name.split("_")[0], 0)
    mul_op = name.split("_")[1]
    m, k = a.shape
    n = b.shape[1]
    d = np.empty((m, n), np.int64)
    for i, j in itertools.product(range(m), range(n)):
        acc = z
        for kk in range(k):
            x, y = int(a[i, kk]), int(b[kk, j])
            if name == "plus_times":
                acc = _wrap(acc + _wrap(x * y))
                continue
            if mul_op in ("plus", "times") and (x == z or y == z):
                p = z
            elif mul_op == "plus":
                p = _sat(x + y)
            elif mul_op == "times":
                p = _wrap(x * y)
            else:
                p = max(x, y) if mul_op == "max" else min(x, y)
            acc = add(acc, p)
        d[i, j] = acc
    return d


INT64_SEMIRINGS = ["min_plus", "max_plus", "min_times", "max_times", "min_max", "max_min",
                   "plus_times"]


@pytest.mark.parametrize("name", INT64_SEMIRINGS)
def test_int64_extremes(backend, rng, name):
    """INT64_MIN/MAX absorb, sums saturate, products wrap: exactly as the Python reference."""
    special = np.array([I64.min, I64.max, I64.min + 1, I64.max - 1, 2**62, -(2**62), 3**39, -1, 0,
                        1, 7], np.int64)
    a = rng.choice(special, (5, 7))
    b = rng.choice(special, (7, 6))
    a[0, :] = I64.min  # a whole row of max_plus zeros
    b[:, 1] = I64.max
    if backend == "wgpu":
        with pytest.raises(TypeError, match=r"int64.*astype\(np\.int32\)"):
            tg.matmul(a, b, name, backend=backend)
        return
    with np.errstate(over="ignore"):
        got = tg.matmul(a, b, name, backend=backend)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, _ref_int64(a, b, name))


def test_int64_argmax_and_epilogue(backend, rng):
    if backend == "wgpu":
        pytest.skip("wgpu has no int64 (TypeError tested above)")
    a = rng.integers(-(2**40), 2**40, (4, 9))
    b = rng.integers(-(2**40), 2**40, (9, 3))
    c = rng.integers(-(2**41), 2**41, (4, 3))
    d, idx = tg.matmul(a, b, "max_plus", c=c, return_argmax=True, backend=backend)
    s = a[:, :, None] + b[None, :, :]
    best = s.max(axis=1)
    np.testing.assert_array_equal(d, np.maximum(best, c))
    np.testing.assert_array_equal(idx, np.where(best > c, s.argmax(axis=1), -1))


def test_numpy_default_integers_work_without_naming_a_backend():
    """The numpy user's first line: default-int arrays, no dtype, no backend."""
    d = tg.matmul(np.array([[0, 1]]), np.array([[2], [0]]))
    assert d.dtype == np.int64 and d.tolist() == [[2]]


def test_auto_routes_int64_away_from_wgpu(monkeypatch):
    """A context whose GPU is wgpu sends int64/float64 away from it (to cuda where cuda runs, else
    cpu) and float32 to wgpu."""
    from pytropical_gpu.backends import get_backend, probe

    if not probe("wgpu")[0]:
        pytest.skip("wgpu unavailable")
    ctx = HybridContext(cpu_threshold=0)
    ctx._gpu = "wgpu"
    calls = []
    wide = "cuda" if probe("cuda")[0] else "cpu"
    for name in ("cpu", "wgpu") + (("cuda",) if wide == "cuda" else ()):
        be = get_backend(name)
        monkeypatch.setattr(be, "matmul", lambda *a, _n=name, _f=be.matmul, **k: (calls.append(_n),
                                                                                    _f(*a, **k))[1])
    ctx.matmul(np.ones((2, 2), np.int64), np.ones((2, 2), np.int64))
    ctx.matmul(np.ones((2, 2), np.float64), np.ones((2, 2), np.float64))
    ctx.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))
    assert calls == [wide, wide, "wgpu"]


# ------------------------------------------------------------------------------------ out=
@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((4,), (4, 5))])
def test_out_is_written_in_place(backend, rng, sa, sb):
    a = rng.integers(-9, 9, sa).astype(np.float32)
    b = rng.integers(-9, 9, sb).astype(np.float32)
    want = tg.matmul(a, b, "max_plus", backend="cpu")
    out = np.full(want.shape, np.nan, np.float32)
    ptr = out.ctypes.data
    got = tg.matmul(a, b, "max_plus", out=out, backend=backend)
    assert got is out and out.ctypes.data == ptr
    np.testing.assert_array_equal(out, want)


def test_out_may_be_a_strided_view(backend, rng):
    a = rng.integers(-9, 9, (3, 4)).astype(np.int32)
    b = rng.integers(-9, 9, (4, 2)).astype(np.int32)
    big = np.zeros((3, 4), np.int32)
    view = big[:, ::2]
    got = tg.matmul(a, b, "min_plus", out=view, backend=backend)
    assert got is view
    np.testing.assert_array_equal(big[:, ::2], _min_plus_ref(a, b))
    assert not big[:, 1::2].any()  # the other columns are untouched


def test_out_with_argmax_returns_out_and_indices(backend):
    a = np.array([[1, 5], [2, 0]], np.int32)
    b = np.array([[0, 1], [0, 0]], np.int32)
    out = np.empty((2, 2), np.int32)
    got, idx = tg.matmul(a, b, "max_plus", out=out, return_argmax=True, backend=backend)
    assert got is out
    np.testing.assert_array_equal(out, [[5, 5], [2, 3]])
    np.testing.assert_array_equal(idx, [[1, 1], [0, 0]])


def test_bad_out_is_refused_before_any_work(backend):
    a = np.ones((2, 3), np.float32)
    b = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match=r"out has shape \(4, 2\).*expected \(2, 4\)"):
        tg.matmul(a, b, out=np.empty((4, 2), np.float32), backend=backend)
    with pytest.raises(ValueError, match="out has shape.*float64"):
        tg.matmul(a, b, out=np.empty((2, 4), np.float64), backend=backend)
    with pytest.raises(TypeError, match=r"out must be an array \(numpy, cupy or torch\) of shape "
                                        r"\(2, 4\) and dtype float32, got a list"):
        tg.matmul(a, b, out=[[0.0] * 4] * 2, backend=backend)
    ro = np.zeros((2, 4), np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        tg.matmul(a, b, out=ro, backend=backend)
    assert not ro.any()


def test_inputs_are_not_modified(backend, rng):
    a = rng.integers(-9, 9, (2, 3, 4)).astype(np.int32)
    b = rng.integers(-9, 9, (4,)).astype(np.int32)
    a0, b0 = a.copy(), b.copy()
    tg.matmul(a, b, "max_plus", backend=backend)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
