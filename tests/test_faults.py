"""Faults and sizes: failed calls release what they took and the next call works, forked children get
a clear error (never a hang), rows beyond one binding are tiled, soft counters of 31 bits, the
pipeline cache stays bounded. References are numpy on the trits / integers, not the library."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os

import numpy as np
import pytest

from conftest import require_backend
from pytropical_gpu import SoftTernaryVec, TernaryVec
from pytropical_gpu.backends import get_backend, probe
from pytropical_gpu.errors import BackendUnavailableError

FORK_TIMEOUT = 120  # seconds a forked child may take before the test calls it a hang


@pytest.fixture(scope="module")
def wgpu_backend():
    require_backend("wgpu")
    return get_backend("wgpu")


@pytest.fixture
def cuda_backend():
    """The cuda backend (device suite: PYTROPICAL_REQUIRE=wgpu,cuda makes its absence a failure)."""
    require_backend("cuda")
    return get_backend("cuda")


def _engine_backend(limit: int | None = None, wg: int | None = None):
    """A wgpu backend on its own engine (own pool and pipeline cache; the process's device), with
    smaller limits when given, so tiling beyond one binding runs at test sizes."""
    from pytropical_gpu.backends.wgpu.backend import WgpuBackend
    from pytropical_gpu.backends.wgpu.device import get_engine
    from pytropical_gpu.backends.wgpu.engine import Engine

    eng = Engine(get_engine().rt)
    changes = {}
    if limit is not None:
        changes["max_storage_binding"] = limit
    if wg is not None:
        changes["max_workgroups_per_dim"] = wg
    eng.limits = dataclasses.replace(eng.limits, **changes)
    return WgpuBackend(engine=eng)


def _trits(rng, shape, density=0.6):
    t = rng.integers(-1, 2, shape).astype(np.int8)
    return np.where(rng.random(shape) < density, t, 0).astype(np.int8)


# ---------------------------------------------------------------------------- sizes
@pytest.mark.parametrize("resident", [False, True], ids=["numpy", "resident"])
def test_rows_beyond_one_binding_are_tiled(wgpu_backend, rng, resident):
    """dot, cosine, nnz, search and permute on rows longer than one binding (1 KiB here, 128 MiB by
    default: a TernaryVec of 2^30+64 trits) run in word ranges and stay exact."""
    be = _engine_backend(limit=1 << 10)
    words_per_binding = be.engine.max_binding // 4
    for dim in (20000, 32 * 700 + 13):
        assert -(-dim // 32) > words_per_binding
        qa = _trits(rng, (2, dim))
        ma = _trits(rng, (3, dim))
        ma[2] = ma[0]  # a tie for search: the smaller index first
        q, m = TernaryVec.from_array(qa), TernaryVec.from_array(ma)
        if resident:
            q, m = be.to_device(q), be.to_device(m)
        want = qa.astype(np.int64) @ ma.astype(np.int64).T
        np.testing.assert_array_equal(be.dot(q, m), want)
        nq, nm = (qa != 0).sum(1), (ma != 0).sum(1)
        np.testing.assert_allclose(be.cosine(q, m), want / np.sqrt(np.multiply.outer(nq, nm)),
                                   rtol=1e-12)
        for k in (1, 2, 3):
            idx, sc = be.search(q, m, k=k)
            order = np.argsort(-want, axis=-1, kind="stable")[:, :k]
            np.testing.assert_array_equal(idx, order)
            np.testing.assert_array_equal(sc, np.take_along_axis(want, order, axis=-1))
        for s in (1, 31, 32, 33, 6400, dim // 2 + 7, dim - 1, -5):
            got = be.permute(m, shifts=s).to_array()
            np.testing.assert_array_equal(got, np.roll(ma, s, axis=-1), err_msg=f"dim {dim} shift {s}")
    assert be.engine.pool.live_bytes == 0


def test_max_times_big_tile(wgpu_backend, rng):
    """1031 x 19 x 1030 max_times (it crashed the OpenGL fallback) against numpy."""
    a = rng.integers(-20, 20, (1031, 19)).astype(np.float32)
    b = rng.integers(-20, 20, (19, 1030)).astype(np.float32)
    want = (a[:, :, None] * b[None, :, :]).max(axis=1)
    np.testing.assert_array_equal(wgpu_backend.matmul(a, b, "max_times"), want)


def _planes(values: np.ndarray, bits: int):
    """sign and magnitude planes of int counters (LSB-first uint32 words), packed here with numpy."""
    def pack(bitsarr):
        dim = bitsarr.shape[-1]
        pad = (-dim) % 32
        b = np.concatenate([bitsarr, np.zeros(bitsarr.shape[:-1] + (pad,), bool)], axis=-1)
        return np.packbits(b, axis=-1, bitorder="little").view("<u4").astype(np.uint32)

    mag = np.abs(values.astype(np.int64))
    return pack(values < 0), np.stack([pack(((mag >> j) & 1).astype(bool)) for j in range(bits)])


@pytest.mark.parametrize("bits", [30, 31])
def test_soft_counters_of_31_bits(backend, rng, bits):
    """The widest counters: accumulate saturates at ±(2^bits − 1) and harden compares exactly."""
    dim, lim = 300, 2 ** bits - 1
    vals = rng.integers(-lim, lim + 1, (2, dim), dtype=np.int64)
    vals[0, :40] = lim
    vals[1, :40] = -lim
    vals[:, 40:50] = 0
    vals[:, 50:60] = rng.choice([-1, 1], (2, 10)) * (lim - 1)
    soft = SoftTernaryVec(dim, bits=bits, batch=(2,))
    soft.sign[...], soft.mag[...] = _planes(vals, bits)
    want = vals.copy()
    for _ in range(3):
        h = _trits(rng, (2, dim), density=0.8)
        h[:, :40] = np.where(rng.random((2, 40)) < 0.5, 1, -1)
        soft.accumulate(TernaryVec.from_array(h), backend=backend)
        want = np.clip(want + h, -lim, lim)
    sign, mag = _planes(want, bits)
    np.testing.assert_array_equal(np.asarray(soft.sign), sign)
    np.testing.assert_array_equal(np.asarray(soft.mag), mag)
    for t in (1, 2, lim // 2, lim - 1, lim):
        got = soft.harden(t, backend=backend).to_array()
        np.testing.assert_array_equal(got, np.where(want >= t, 1, np.where(want <= -t, -1, 0)))


def test_pipeline_cache_is_bounded(wgpu_backend, rng):
    """Many distinct skinny shapes: the cache keeps at most max_pipelines, the least recently used
    go, and a shape used again after eviction still answers correctly (it is compiled again)."""
    be = _engine_backend()
    eng = be.engine
    eng.max_pipelines = 6
    shapes = [(k, n) for k in range(1, 5) for n in range(1, 4)]  # 12 skinny pipelines
    a = {k: rng.integers(-9, 9, (50, k)).astype(np.float32) for k in range(1, 5)}
    for _ in range(2):
        for k, n in shapes:
            b = rng.integers(-9, 9, (k, n)).astype(np.float32)
            want = (a[k][:, :, None] + b[None]).min(axis=1)
            np.testing.assert_array_equal(be.matmul(a[k], b, "min_plus"), want)
            assert len(eng._pipelines) <= 6
    assert eng.stats["evictions"] >= 2 * len(shapes) - 6
    compiles = eng.stats["compiles"]
    b = np.ones((4, 3), np.float32)
    be.matmul(a[4], b, "min_plus")  # the most recent shape is still cached
    assert eng.stats["compiles"] == compiles
    from pytropical_gpu.backends.wgpu.engine import Engine

    assert 32 <= Engine.max_pipelines <= 1024  # the default bound is a real one


# ---------------------------------------------------------------------------- injected faults
class _FlakyRuntime:
    """Wraps the real runtime: ``create_buffer`` fails after ``alloc_ok`` successes (``alloc_fails``
    times), ``submit`` fails ``submit_fails`` times; everything else goes to the real one."""

    def __init__(self, rt, alloc_ok=0, alloc_fails=0, submit_fails=0):
        self._rt, self.alloc_ok, self.alloc_fails, self.submit_fails = rt, alloc_ok, alloc_fails, submit_fails

    def create_buffer(self, size, label=""):
        if self.alloc_ok <= 0 and self.alloc_fails > 0:
            self.alloc_fails -= 1
            raise MemoryError(f"injected: out of device memory for {size} bytes")
        self.alloc_ok -= 1
        return self._rt.create_buffer(size, label)

    def submit(self, commands):
        if self.submit_fails > 0:
            self.submit_fails -= 1
            raise RuntimeError("injected: the queue refused the submission")
        return self._rt.submit(commands)

    def __getattr__(self, name):
        return getattr(self._rt, name)


def _ops(rng):
    """(name, call(backend), numpy reference) for a spread of wgpu operations (gemm.py, boolean.py
    and vsa.py kernels, several buffers each)."""
    a = rng.integers(-9, 9, (70, 40)).astype(np.float32)
    b = rng.integers(-9, 9, (40, 30)).astype(np.float32)
    ta, tb = _trits(rng, (4, 500)), _trits(rng, (6, 500))
    x, y = TernaryVec.from_array(ta), TernaryVec.from_array(tb)
    ba, bb = rng.random((20, 70)) < 0.1, rng.random((70, 25)) < 0.1
    dots = ta.astype(np.int64) @ tb.astype(np.int64).T
    return [
        ("matmul", lambda be: be.matmul(a, b, "min_plus"), (a[:, :, None] + b[None]).min(axis=1)),
        ("bind", lambda be: be.bind(x, y[:4]).to_array(), ta * tb[:4]),
        ("search", lambda be: be.search(x, y, k=2)[0],
         np.argsort(-dots, axis=-1, kind="stable")[:, :2]),
        ("andor", lambda be: be.andor_matmul(ba, bb),
         (ba.astype(np.int64) @ bb.astype(np.int64)) > 0),
    ]


def test_failed_allocation_is_memory_error_and_releases(wgpu_backend, rng):
    """An allocation the device refuses mid-call: MemoryError, nothing stays allocated, and the next
    call answers correctly."""
    for name, call, want in _ops(rng):
        be = _engine_backend()
        eng = be.engine
        real = eng.rt
        flaky = _FlakyRuntime(real, alloc_ok=2, alloc_fails=10)
        eng.rt = eng.pool.rt = flaky
        with pytest.raises(MemoryError, match="out of device memory|could not allocate"):
            call(be)
        assert eng.pool.live_bytes == 0, f"{name}: a failed call left buffers live"
        eng.rt = eng.pool.rt = real
        np.testing.assert_array_equal(call(be), want, err_msg=name)
        assert eng.pool.live_bytes == 0


def test_allocation_retries_after_freeing_idle_buffers(wgpu_backend, rng):
    be = _engine_backend()
    eng = be.engine
    big = TernaryVec.from_array(_trits(rng, (64, 4000)))
    be.bind(big, big)  # leaves idle buffers in the pool
    assert eng.pool.free_bytes > 0
    real = eng.rt
    eng.rt = eng.pool.rt = _FlakyRuntime(real, alloc_ok=0, alloc_fails=1)
    x = _trits(rng, (3, 70))
    got = be.bind(TernaryVec.from_array(x), TernaryVec.from_array(x)).to_array()
    np.testing.assert_array_equal(got, x * x)
    assert eng.pool.live_bytes == 0
    eng.rt = eng.pool.rt = real


def test_failed_submit_releases_and_recovers(wgpu_backend, rng):
    """A dispatch the queue refuses: the error comes through, the pool holds nothing for that call
    and the same engine answers the next call (including ops in gemm.py, released by the engine)."""
    be = _engine_backend()
    eng = be.engine
    real = eng.rt
    for name, call, want in _ops(rng):
        np.testing.assert_array_equal(call(be), want, err_msg=name)  # warm: pipelines, pool
        before = eng.pool.total_bytes
        eng.rt = eng.pool.rt = _FlakyRuntime(real, submit_fails=1)
        with pytest.raises(RuntimeError, match="injected"):
            call(be)
        assert eng.pool.live_bytes == 0, f"{name}: a failed call left buffers live"
        assert eng.pool.total_bytes <= before + (1 << 20)
        np.testing.assert_array_equal(call(be), want, err_msg=name)
        eng.rt = eng.pool.rt = real


def test_cuda_out_of_memory_is_memory_error_and_recovers(cuda_backend, rng):
    """cuda (device suite): an allocation refused by the CuPy allocator, and a kernel whose launch
    reports CUDA_ERROR_OUT_OF_MEMORY, raise MemoryError; the pool's used bytes come back and the
    backend stays available (the probe is not poisoned)."""
    import cupy
    from cupy_backends.cuda.api.driver import CUDADriverError

    from pytropical_gpu.backends import available_backends
    from pytropical_gpu.backends.cuda import kernels

    be = cuda_backend
    a = rng.integers(-9, 9, (300, 200)).astype(np.float32)
    b = rng.integers(-9, 9, (200, 100)).astype(np.float32)
    want = (a[:, :, None] + b[None]).min(axis=1)
    np.testing.assert_array_equal(be.matmul(a, b, "min_plus"), want)
    pool = cupy.get_default_memory_pool()
    used = pool.used_bytes()

    def refuse(size):
        raise cupy.cuda.memory.OutOfMemoryError(size, used)

    cupy.cuda.set_allocator(refuse)
    try:
        with pytest.raises(MemoryError):
            be.matmul(a, b, "min_plus")
    finally:
        cupy.cuda.set_allocator(pool.malloc)
    assert pool.used_bytes() == used

    real_function = kernels.function

    def failing(*args, **kwargs):
        def launch(*a_, **k_):
            raise CUDADriverError(2)  # CUDA_ERROR_OUT_OF_MEMORY
        return launch

    kernels.function = failing
    try:
        with pytest.raises(MemoryError):
            be.dot(TernaryVec.from_array(_trits(rng, (2, 9000))),
                   TernaryVec.from_array(_trits(rng, (3, 9000))))
    finally:
        kernels.function = real_function
    assert probe("cuda")[0] and "cuda" in available_backends()
    np.testing.assert_array_equal(get_backend("cuda").matmul(a, b, "min_plus"), want)
    assert pool.used_bytes() == used


def test_cuda_dot_beyond_one_launch(cuda_backend, rng, monkeypatch):
    """cuda (device suite): dot/search over more pairs than one launch covers are split, exact."""
    be = cuda_backend
    for dim in (300, 70000):  # dot_warp (8 pairs a block) and dot_block (one pair a block)
        qa, ma = _trits(rng, (5, dim)), _trits(rng, (7, dim))
        want = qa.astype(np.int64) @ ma.astype(np.int64).T
        for limit in (3, 1):
            monkeypatch.setattr(type(be), "max_grid_x", limit)
            np.testing.assert_array_equal(
                be.dot(TernaryVec.from_array(qa), TernaryVec.from_array(ma)), want)
            idx, _ = be.search(TernaryVec.from_array(qa), TernaryVec.from_array(ma), k=3)
            np.testing.assert_array_equal(idx, np.argsort(-want, axis=-1, kind="stable")[:, :3])


# ---------------------------------------------------------------------------- probes
def test_transient_probe_answers_are_not_cached(monkeypatch):
    """A fault while probing (an earlier out-of-memory, a CUDA error) must not make a backend
    unavailable for the rest of the process; a definitive answer is cached."""
    import types

    from pytropical_gpu import backends
    from pytropical_gpu.backends._process import Transient

    answers = [Transient(False, "CUDA error while probing (injected)"), (True, "fake device")]
    calls = []

    def fake_probe():
        calls.append(1)
        return answers[min(len(calls), len(answers)) - 1]

    monkeypatch.setattr(backends, "_module", lambda name: types.SimpleNamespace(probe=fake_probe))
    monkeypatch.setattr(backends, "_probes", {})
    assert backends.probe("fake") == (False, "CUDA error while probing (injected)")
    assert backends.probe("fake") == (True, "fake device")
    assert backends.probe("fake") == (True, "fake device") and len(calls) == 2

    def raising():
        raise OSError("driver hiccup")

    monkeypatch.setattr(backends, "_module", lambda name: types.SimpleNamespace(probe=raising))
    assert backends.probe("other")[0] is False
    assert "other" not in backends._probes


@pytest.mark.parametrize("status, transient", [(2, True), (3, True), (100, False), (35, False)])
def test_cuda_probe_classifies_errors(monkeypatch, status, transient):
    """cudaErrorMemoryAllocation / InitializationError are faults of the moment (not cached);
    no device / no driver is the machine's answer. A stand-in cupy module, so this runs anywhere."""
    import sys
    import types

    from pytropical_gpu.backends import cuda as cuda_pkg
    from pytropical_gpu.backends._process import Transient

    class CUDARuntimeError(RuntimeError):
        def __init__(self, status):
            self.status = status
            super().__init__(f"status {status}")

    def count():
        raise CUDARuntimeError(status)

    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(
        getDeviceCount=count)))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(cuda_pkg, "_opened", cuda_pkg._opened)
    ok, reason = res = cuda_pkg.probe()
    assert ok is False and isinstance(res, Transient) is transient
    assert ("no CUDA device" in reason) is (not transient)


# ---------------------------------------------------------------------------- fork
def _in_forked_child(target, *args):
    """Run ``target(*args)`` in a child made by multiprocessing's 'fork'; its return value, or the
    test fails when the child hangs past FORK_TIMEOUT (it is killed, CI does not stall)."""
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()

    def run():
        try:
            q.put(("ok", target(*args)))
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            q.put(("raised", f"{type(e).__name__}: {e}"))

    p = ctx.Process(target=run, daemon=True)
    p.start()
    p.join(FORK_TIMEOUT)
    if p.is_alive():
        p.kill()
        p.join()
        pytest.fail(f"the forked child hung for {FORK_TIMEOUT} s")
    status, value = q.get(timeout=10)
    assert status == "ok", value
    return value


def _child_uses(name, a, b):
    """In the child: the backend's answer or its error, and whether cpu works there."""
    out = {}
    try:
        out["result"] = get_backend(name).matmul(a, b, "max_plus").tolist()
    except BackendUnavailableError as e:
        out["error"] = str(e)
    except RuntimeError as e:  # pragma: no cover - a RuntimeError of another kind is a failure
        out["other_error"] = f"{type(e).__name__}: {e}"
    out["cpu"] = get_backend("cpu").matmul(a, b, "max_plus").tolist()
    out["probe"] = probe(name)
    return out


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")
def test_forked_child_gets_a_clear_error_or_works(backend, rng):
    """After the parent used a GPU backend, a forked child's first call raises at once, naming the
    cause and the fix ('spawn'/'forkserver'), instead of hanging (wgpu) or failing inside CUDA; cpu
    keeps working in the child, and the parent's backend still works afterwards."""
    a = rng.integers(-9, 9, (5, 7)).astype(np.float32)
    b = rng.integers(-9, 9, (7, 3)).astype(np.float32)
    want = (a[:, :, None] + b[None]).max(axis=1)
    be = get_backend(backend)
    np.testing.assert_array_equal(be.matmul(a, b, "max_plus"), want)  # the parent opened it
    out = _in_forked_child(_child_uses, backend, a, b)
    np.testing.assert_array_equal(np.array(out["cpu"]), want)
    assert "other_error" not in out, out
    if backend == "cpu":
        np.testing.assert_array_equal(np.array(out["result"]), want)
    else:
        assert "fork" in out["error"] and "spawn" in out["error"], out["error"]
        assert out["probe"][0] is False and "spawn" in out["probe"][1]
    np.testing.assert_array_equal(be.matmul(a, b, "max_plus"), want)  # the parent is unaffected


def _child_uses_instance(be, a):
    """A backend object made in the parent, used in the child."""
    try:
        be.bind(a, a)
    except BackendUnavailableError as e:
        return str(e)
    return "worked"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")
def test_forked_child_using_a_parent_backend_object(backend, rng):
    if backend == "cpu":
        pytest.skip("cpu has no device state")
    be = get_backend(backend)
    x = TernaryVec.from_array(_trits(rng, (2, 100)))
    be.bind(x, x)
    msg = _in_forked_child(_child_uses_instance, be, x)
    assert "spawn" in msg, msg
