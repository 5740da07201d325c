"""wgpu engine internals: buffer pool, tiling beyond one binding/dispatch, pipeline cache, adapter rule."""

from __future__ import annotations

import dataclasses
import resource

import numpy as np
import pytest

from conftest import require_backend
from pytropical_gpu.backends import get_backend
from pytropical_gpu.vsa import SoftTernaryVec, TernaryVec


@pytest.fixture(scope="module")
def wgpu_backend():
    require_backend("wgpu")
    return get_backend("wgpu")


@pytest.fixture(scope="module")
def cpu():
    return get_backend("cpu")


def test_pool_does_not_grow_over_10000_calls(wgpu_backend):
    eng = wgpu_backend.engine
    a = TernaryVec.random(100, 0.5, seed=1)
    b = TernaryVec.random(100, 0.5, seed=2)
    want = get_backend("cpu").bind(a, b)
    for _ in range(20):  # warm up: pipelines and pool classes
        wgpu_backend.bind(a, b)
    created, total = eng.pool.created, eng.pool.total_bytes
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(10_000):
        r = wgpu_backend.bind(a, b)
    assert np.array_equal(r.pos, want.pos) and np.array_equal(r.neg, want.neg)
    assert eng.pool.created == created, "the pool allocated new buffers in steady state"
    assert eng.pool.total_bytes == total
    assert eng.pool.live_bytes == 0
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    assert grown_mib < 64, f"host memory grew by {grown_mib:.0f} MiB over 10,000 calls"


def test_gemm_beyond_one_binding(wgpu_backend, cpu):
    """An A of 8192 x 4200 f32 (> 128 MiB, the default binding limit) is tiled, never an error."""
    rng = np.random.default_rng(0)
    a = rng.integers(-50, 50, (8192, 4200)).astype(np.float32)
    b = rng.integers(-50, 50, (4200, 3)).astype(np.float32)
    assert a.nbytes > 128 * 2**20
    d = wgpu_backend.matmul(a, b, "min_plus")
    assert np.array_equal(d, cpu.matmul(a, b, "min_plus"))


def _small_engine(limit=1 << 16, wg=64):
    from pytropical_gpu.backends.wgpu.backend import WgpuBackend
    from pytropical_gpu.backends.wgpu.device import get_engine
    from pytropical_gpu.backends.wgpu.engine import Engine

    eng = Engine(get_engine().rt)
    eng.limits = dataclasses.replace(eng.limits, max_storage_binding=limit, max_workgroups_per_dim=wg)
    return WgpuBackend(engine=eng)


def test_every_op_tiles_under_small_limits(wgpu_backend, cpu):
    """64 KiB bindings and 64 workgroups per dimension: every op splits its work and stays exact."""
    be = _small_engine()
    rng = np.random.default_rng(1)
    a = rng.integers(-9, 9, (2, 300, 70)).astype(np.float32)
    b = rng.integers(-9, 9, (70, 90)).astype(np.float32)
    c = rng.integers(-9, 9, (300, 90)).astype(np.float32)
    for sr in ("min_plus", "max_times"):
        assert np.array_equal(be.matmul(a, b, sr, c=c), cpu.matmul(a, b, sr, c=c))
        d1, i1 = be.matmul(a, b, sr, return_argmax=True)
        d2, i2 = cpu.matmul(a, b, sr, return_argmax=True)
        assert np.array_equal(d1, d2) and np.array_equal(i1, i2)
    sk = rng.integers(-9, 9, (40000, 3)).astype(np.int32)
    sb = rng.integers(-9, 9, (3, 2)).astype(np.int32)
    assert np.array_equal(be.matmul(sk, sb, "max_plus"), cpu.matmul(sk, sb, "max_plus"))
    ba = rng.random((300, 900)) < 0.01
    bb = rng.random((900, 200)) < 0.01
    for sr in ("lor_land", "lxor_land"):
        assert np.array_equal(be.matmul(ba, bb, sr), cpu.matmul(ba, bb, sr))
    u = rng.integers(0, 2**32, (40, 300), dtype=np.uint64).astype(np.uint32)
    assert np.array_equal(be.matmul(u, u.T.copy(), "bor_band"), cpu.matmul(u, u.T.copy(), "bor_band"))
    dim = 20000
    x = TernaryVec.random(dim, 0.6, seed=3, batch=(5,))
    y = TernaryVec.random(dim, 0.6, seed=4, batch=(5,))
    for got, want in ((be.bind(x, y), cpu.bind(x, y)),
                      (be.bundle(x, threshold=2), cpu.bundle(x, threshold=2)),
                      (be.permute(x, 777), cpu.permute(x, 777))):
        assert np.array_equal(got.pos, want.pos) and np.array_equal(got.neg, want.neg)
    assert np.array_equal(be.dot(x, y), cpu.dot(x, y))
    s1, s2 = SoftTernaryVec(dim, bits=2, batch=(5,)), SoftTernaryVec(dim, bits=2, batch=(5,))
    for _ in range(3):
        be.soft_accumulate(s1, x)
        cpu.soft_accumulate(s2, x)
    assert np.array_equal(s1.sign, s2.sign) and np.array_equal(s1.mag, s2.mag)
    h1, h2 = be.soft_harden(s1, 2), cpu.soft_harden(s2, 2)
    assert np.array_equal(h1.pos, h2.pos) and np.array_equal(h1.neg, h2.neg)


def test_pipeline_cache_hits(wgpu_backend):
    eng = wgpu_backend.engine
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(8, dtype=np.float32).reshape(4, 2)
    wgpu_backend.matmul(a, b, "max_plus")
    compiles, hits = eng.stats["compiles"], eng.stats["hits"]
    for _ in range(5):
        wgpu_backend.matmul(a, b, "max_plus")
    assert eng.stats["compiles"] == compiles
    assert eng.stats["hits"] >= hits + 5


def test_float64_raises_type_error(wgpu_backend):
    a = np.ones((2, 2))
    with pytest.raises(TypeError, match="float64"):
        wgpu_backend.matmul(a, a, "min_plus")


def test_fallback_adapter_never_chosen_by_auto(monkeypatch):
    import pytropical_gpu.backends.wgpu as wmod
    import pytropical_gpu.hybrid as hybrid
    import pytropical_gpu.routing as routing
    from pytropical_gpu.backends.wgpu.runtime import AdapterInfo, software_adapter

    assert software_adapter("CPU", False) and software_adapter("DiscreteGPU", True)
    assert not software_adapter("DiscreteGPU", False)
    soft = [AdapterInfo("llvmpipe (LLVM 15)", "llvmpipe", "Vulkan", "CPU", False),
            AdapterInfo("SwiftShader", "Google", "Vulkan", "Unknown", True)]
    monkeypatch.setattr(wmod, "probe_runtime", lambda: (True, "test"))
    monkeypatch.setattr(wmod, "list_adapters", lambda: soft)
    monkeypatch.setattr(wmod, "_opens", lambda: (True, "opened, known-answer check passed"))
    assert wmod.hardware_available()[0] is False
    monkeypatch.setattr(routing, "probe", lambda name: (False, "no cuda in this test"))
    ctx = hybrid.HybridContext(backend="auto")
    assert ctx.gpu is None
    assert ctx.route("matmul", 10**12) == "cpu"
    hw = soft + [AdapterInfo("NVIDIA H200", "NVIDIA", "Vulkan", "DiscreteGPU", False)]
    monkeypatch.setattr(wmod, "list_adapters", lambda: hw)
    assert wmod.hardware_available()[0] is True
    assert hybrid.HybridContext(backend="auto").route("matmul", 10**12) == "wgpu"


def test_templates_are_strict():
    import jinja2

    from pytropical_gpu.backends.wgpu import templating

    with pytest.raises(jinja2.UndefinedError):
        templating.render("pack")  # WG missing
