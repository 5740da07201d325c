"""Input kind = output kind: torch in, torch out (zero-copy through DLPack), objects that only
speak DLPack, torch tensors into TernaryVec, and a clear error for ``np.asarray(TernaryVec)``.
torch stays optional: the library never imports it, and these tests skip without it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import pytropical_gpu as tg
from pytropical_gpu import TernaryVec, _arrays


class DLPackOnly:
    """An array that offers nothing but the DLPack protocol (no __array__, no buffer)."""

    def __init__(self, a: np.ndarray):
        self._a = a

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def _ref_min_plus(a, b):
    return (a[:, :, None] + b[None, :, :]).min(axis=1)


def test_an_object_with_only_dlpack_is_accepted(backend, rng):
    a = rng.integers(-9, 9, (3, 5)).astype(np.float32)
    b = rng.integers(-9, 9, (5, 2)).astype(np.float32)
    got = tg.matmul(DLPackOnly(a), DLPackOnly(b), "min_plus", backend=backend)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(got, _ref_min_plus(a, b))


def test_dlpack_input_is_read_without_a_copy():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    view = _arrays.to_numpy(DLPackOnly(a))
    assert np.shares_memory(view, a)


def test_ternaryvec_from_a_dlpack_object():
    t = np.array([[1, 0, -1], [0, 1, 1]], np.int8)
    np.testing.assert_array_equal(TernaryVec.from_array(DLPackOnly(t)).to_array(), t)


def test_np_asarray_of_a_ternaryvec_is_a_clear_type_error():
    v = TernaryVec.from_array(np.array([1, -1, 0], np.int8))
    with pytest.raises(TypeError, match=r"\.to_array\(\)"):
        np.asarray(v)
    with pytest.raises(TypeError, match="to_array"):
        tg.matmul(v, v, backend="cpu")


def test_torch_is_never_imported_for_numpy_work():
    code = ("import sys, numpy as np, pytropical_gpu as tg\n"
            "tg.matmul(np.ones((2, 2)), np.ones((2, 2)), backend='cpu')\n"
            "v = tg.TernaryVec.random(64, seed=1, batch=3)\n"
            "tg.bundle(v, backend='cpu'); tg.dot(v, v, backend='cpu')\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------------------ torch (CPU)
@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_torch_cpu_in_torch_cpu_out(torch, backend, rng):
    a = rng.integers(-9, 9, (4, 6)).astype(np.float32)
    b = rng.integers(-9, 9, (6, 3)).astype(np.float32)
    got = tg.matmul(torch.from_numpy(a), torch.from_numpy(b), "min_plus", backend=backend)
    assert isinstance(got, torch.Tensor) and got.device.type == "cpu" and got.dtype == torch.float32
    np.testing.assert_array_equal(got.numpy(), _ref_min_plus(a, b))


def test_torch_views_grads_and_mixed_kinds(torch, backend, rng):
    a = rng.integers(-9, 9, (6, 4)).astype(np.float32)
    b = rng.integers(-9, 9, (6, 3)).astype(np.float32)
    ta = torch.from_numpy(a).requires_grad_(True)  # a tensor that requires grad is read as values
    got = tg.matmul(ta.T, b, "min_plus", backend=backend)  # a transposed view, numpy partner
    assert isinstance(got, torch.Tensor)
    np.testing.assert_array_equal(got.numpy(), _ref_min_plus(a.T, b))


def test_torch_default_dtypes_1d_and_batches(torch, backend):
    a = torch.tensor([0, 1, 2])  # torch's default integer: int64
    b = torch.tensor([[1, 0], [0, 5], [2, 2]])
    if backend == "wgpu":
        with pytest.raises(TypeError, match="astype"):
            tg.matmul(a, b, "max_plus", backend=backend)
        return
    got = tg.matmul(a, b, "max_plus", backend=backend)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.int64 and got.shape == (2,)
    assert got.tolist() == [4, 6]
    x = torch.ones((2, 3, 4), dtype=torch.float64)
    got = tg.matmul(x, torch.ones((4, 5), dtype=torch.float64), "plus_times", backend=backend)
    assert got.shape == (2, 3, 5) and bool((got == 4).all())


def test_torch_bool_semiring(torch, backend):
    a = torch.tensor([[True, False], [False, False]])
    b = torch.tensor([[False, True], [True, True]])
    got = tg.matmul(a, b, "lor_land", backend=backend)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.bool
    assert got.tolist() == [[False, True], [False, False]]


def test_torch_input_is_read_zero_copy_and_results_wrap_zero_copy(torch):
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    assert _arrays.to_numpy(t).ctypes.data == t.data_ptr()
    r = np.arange(6, dtype=np.int32).reshape(2, 3)
    back = _arrays.to_kind(r, _arrays.kind_of(t))
    assert isinstance(back, torch.Tensor) and back.data_ptr() == r.ctypes.data


def test_torch_out_is_written_in_place(torch, backend, rng):
    a = rng.integers(-9, 9, (3, 4)).astype(np.float32)
    b = rng.integers(-9, 9, (4, 2)).astype(np.float32)
    out = torch.full((3, 2), float("nan"))
    ptr = out.data_ptr()
    got = tg.matmul(torch.from_numpy(a), torch.from_numpy(b), "min_plus", out=out, backend=backend)
    assert got is out and out.data_ptr() == ptr
    np.testing.assert_array_equal(out.numpy(), _ref_min_plus(a, b))
    with pytest.raises(ValueError, match="out has shape"):
        tg.matmul(a, b, "min_plus", out=torch.empty((2, 3)), backend=backend)
    with pytest.raises(ValueError, match="requires grad"):
        tg.matmul(a, b, "min_plus", out=torch.empty((3, 2), requires_grad=True), backend=backend)


def test_ternaryvec_from_torch(torch, backend):
    t = torch.tensor([[1, 0, -1, 1], [0, -1, -1, 1]], dtype=torch.int8)
    v = TernaryVec.from_array(t)
    assert isinstance(v.pos, np.ndarray)  # host input, numpy planes
    np.testing.assert_array_equal(v.to_array(), t.numpy())
    assert tg.dot(v[0], v[1], backend=backend) == 0 + 0 + 1 + 1


def test_torch_cuda_in_torch_cuda_out(torch, backend, rng):
    """On the GPU machine: a CUDA tensor comes back as a CUDA tensor on every backend (cuda runs on
    it zero-copy; cpu/wgpu read a host copy and the result is moved back)."""
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    a = rng.integers(-9, 9, (5, 7)).astype(np.float32)
    b = rng.integers(-9, 9, (7, 3)).astype(np.float32)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):  # the caller's own stream: results ordered on it
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        got = tg.matmul(ta, tb, "min_plus", backend=backend)
        host = got.cpu()
    assert isinstance(got, torch.Tensor) and got.is_cuda
    np.testing.assert_array_equal(host.numpy(), _ref_min_plus(a, b))
    v = TernaryVec.from_array(torch.tensor([1, -1, 0], device="cuda", dtype=torch.int8))
    assert v.to_array().tolist() == [1, -1, 0]


def test_device_out_is_written_in_place(backend, rng):
    """On the GPU machine: a cupy ``out`` (and a torch CUDA one, where torch has CUDA) keeps its
    memory and is the object returned."""
    if backend != "cuda":
        pytest.skip("device out= needs the cuda backend")
    import cupy as cp

    a = rng.integers(-9, 9, (5, 6)).astype(np.int64)
    b = rng.integers(-9, 9, (6, 4)).astype(np.int64)
    out = cp.empty((5, 4), np.int64)
    ptr = out.data.ptr
    got = tg.matmul(cp.asarray(a), cp.asarray(b), "min_plus", out=out, backend=backend)
    assert got is out and out.data.ptr == ptr
    np.testing.assert_array_equal(out.get(), _ref_min_plus(a, b))
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        tout = torch.empty((5, 4), dtype=torch.int64, device="cuda")
        tptr = tout.data_ptr()
        got = tg.matmul(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda(), "min_plus",
                        out=tout, backend=backend)
        assert got is tout and tout.data_ptr() == tptr
        np.testing.assert_array_equal(tout.cpu().numpy(), _ref_min_plus(a, b))
