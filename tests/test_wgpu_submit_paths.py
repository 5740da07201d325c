"""wgpu-py submits through wgpu-native's C API on the release line it was checked on and through
wgpu-py's object API elsewhere: both paths give the same bits (the object path is what any other
wgpu-py version runs, so it is pinned here rather than trusted)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import require_backend
from pytropical_gpu import TernaryVec, bind, matmul
from pytropical_gpu.backends import get_backend


@pytest.fixture
def object_api(monkeypatch):
    require_backend("wgpu")
    be = get_backend("wgpu")
    if type(be.engine.rt).__module__.rsplit(".", 1)[-1] != "runtime_wgpupy":
        pytest.skip("the C-API path is wgpu-py's only")
    from pytropical_gpu.backends.wgpu import runtime_wgpupy

    monkeypatch.setattr(runtime_wgpupy, "_raw", lambda: None)


def test_object_api_submit_matches_numpy(object_api):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((37, 29)).astype(np.float32)
    b = rng.standard_normal((29, 41)).astype(np.float32)
    a[3, :] = np.inf
    want = (a[:, :, None] + b[None, :, :]).min(axis=1)
    np.testing.assert_array_equal(matmul(a, b, semiring="min_plus", backend="wgpu"), want)
    x, y = TernaryVec.random(1000, seed=1), TernaryVec.random(1000, seed=2)
    got = bind(x, y, backend="wgpu").to_array()
    np.testing.assert_array_equal(got, x.to_array() * y.to_array())


def test_raw_path_only_on_the_checked_release_line():
    require_backend("wgpu")
    import wgpu

    from pytropical_gpu.backends.wgpu import runtime_wgpupy

    assert (runtime_wgpupy._raw() is not None) == wgpu.__version__.startswith("0.32.")
