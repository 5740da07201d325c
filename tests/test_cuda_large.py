"""cuda only: operands with more than 2^31 elements index correctly (64-bit offsets in every kernel),
and device arrays stay on the device (cupy in, cupy out; torch CUDA tensors zero-copy)."""

from __future__ import annotations

import numpy as np
import pytest

import pytropical_gpu as tg
from conftest import require_backend

BIG = 2**31


@pytest.fixture
def cp():
    require_backend("cuda")
    import cupy

    return cupy


def _free_bytes(cp) -> int:
    return cp.cuda.runtime.memGetInfo()[0]


def _ref_rows(a, b, name):
    red = np.min if name == "min_plus" else np.max
    s = a[:, :, None].astype(np.float64) + b[None].astype(np.float64)
    return red(s, axis=1).astype(a.dtype), (np.argmin if name == "min_plus" else np.argmax)(s, axis=1)


@pytest.mark.device
@pytest.mark.slow
def test_skinny_matmul_beyond_2_31_elements(cp):
    m, k, n = BIG // 4 + 1000, 4, 2  # a has 2^31 + 4000 elements
    if _free_bytes(cp) < 5 * m * k * 4:
        pytest.skip("not enough device memory for a > 2^31-element operand")
    rs = cp.random.default_rng(7)
    a = rs.integers(-100, 100, (m, k), dtype=cp.int32).astype(cp.float32)
    b = cp.asarray(np.arange(k * n, dtype=np.float32).reshape(k, n) - 3)
    d, idx = tg.matmul(a, b, "min_plus", return_argmax=True, backend="cuda")
    assert isinstance(d, cp.ndarray) and d.shape == (m, n)
    for rows in (slice(0, 64), slice(m - 64, m), slice(BIG // 8, BIG // 8 + 64)):
        ha, hb = a[rows].get(), b.get()
        want, want_idx = _ref_rows(ha, hb, "min_plus")
        np.testing.assert_array_equal(d[rows].get(), want)
        np.testing.assert_array_equal(idx[rows].get(), want_idx)


@pytest.mark.device
@pytest.mark.slow
def test_tiled_matmul_beyond_2_31_elements(cp):
    m, k, n = BIG // 68 + 300, 68, 5  # k > 64 and n > 4: the tiled kernel; a has > 2^31 elements
    if _free_bytes(cp) < 3 * m * k * 4:
        pytest.skip("not enough device memory for a > 2^31-element operand")
    rs = cp.random.default_rng(8)
    a = rs.integers(-1000, 1000, (m, k), dtype=cp.int32)
    assert a.size > BIG
    b = rs.integers(-1000, 1000, (k, n), dtype=cp.int32)
    d = tg.matmul(a, b, "max_plus", backend="cuda")
    for rows in (slice(0, 32), slice(m - 32, m)):
        want, _ = _ref_rows(a[rows].get().astype(np.int64), b.get().astype(np.int64), "max_plus")
        np.testing.assert_array_equal(d[rows].get(), want.astype(np.int32))


@pytest.mark.device
@pytest.mark.slow
def test_andor_output_beyond_2_31_elements(cp):
    m, k, n = 2**16 + 3, 40, 2**15 + 5  # > 2^31 outputs
    if _free_bytes(cp) < 3 * m * n:
        pytest.skip("not enough device memory")
    rs = cp.random.default_rng(9)
    a = rs.random((m, k), dtype=cp.float32) < 0.05
    b = rs.random((k, n), dtype=cp.float32) < 0.05
    d = tg.andor_matmul(a, b, backend="cuda")
    assert d.size > BIG and isinstance(d, cp.ndarray)
    for rows in (slice(0, 16), slice(m - 16, m)):
        want = (a[rows].astype(cp.float32) @ b.astype(cp.float32)) > 0
        np.testing.assert_array_equal(d[rows].get(), want.get())


def test_cupy_in_cupy_out_and_numpy_in_numpy_out(cp):
    rng = np.random.default_rng(1)
    a = rng.integers(-9, 9, (33, 20)).astype(np.float32)
    b = rng.integers(-9, 9, (20, 17)).astype(np.float32)
    want = tg.matmul(a, b, "max_plus", backend="cpu")
    got_np = tg.matmul(a, b, "max_plus", backend="cuda")
    assert isinstance(got_np, np.ndarray)
    got_cp = tg.matmul(cp.asarray(a), cp.asarray(b), "max_plus", backend="cuda")
    assert isinstance(got_cp, cp.ndarray)
    np.testing.assert_array_equal(got_cp.get(), want)
    np.testing.assert_array_equal(got_np, want)
    # non-contiguous device views are taken without the caller copying
    c = rng.integers(-9, 9, (33, 6)).astype(np.float32)
    got_t = tg.matmul(cp.asarray(a).T, cp.asarray(c), "min_plus", backend="cuda")
    np.testing.assert_array_equal(got_t.get(), tg.matmul(a.T.copy(), c, "min_plus", backend="cpu"))


def test_torch_cuda_tensors_are_taken_zero_copy(cp):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    a = torch.randint(-9, 9, (16, 24), device="cuda", dtype=torch.int32)
    b = torch.randint(-9, 9, (24, 8), device="cuda", dtype=torch.int32)
    d = tg.matmul(a, b, "min_plus", backend="cuda")
    assert isinstance(d, torch.Tensor) and d.is_cuda
    want = tg.matmul(a.cpu().numpy(), b.cpu().numpy(), "min_plus", backend="cpu")
    np.testing.assert_array_equal(d.cpu().numpy(), want)
