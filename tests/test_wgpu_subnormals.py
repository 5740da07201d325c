"""The known-answer check on the adapter in use, subnormal flushing and its rule (SPEC: Exactness).

The flag the check records must match what the raw kernels do (run here through the private path
``selfcheck.run_gemm``, with no operand checks): an adapter that says it keeps subnormals must give
numpy's answer bit for bit on subnormal data. A flushing adapter is simulated on lavapipe by setting
the engine's flag: then every float call that could meet a subnormal raises SubnormalFlushError
(naming the operation, the operand, the count, the adapter and the fix) before any upload, and
"auto" sends it to an exact backend instead.
"""

from __future__ import annotations

import numpy as np
import pytest

import pytropical_gpu as tg
from conftest import require_backend
from pytropical_gpu import HybridContext, Semiring, SubnormalFlushError

FLOAT_SEMIRINGS = ["min_plus", "max_plus", "min_times", "max_times", "min_max", "max_min"]
SUB = np.float32(2.0**-130)
TINY = np.finfo(np.float32).tiny


@pytest.fixture
def engine():
    require_backend("wgpu")
    from pytropical_gpu.backends.wgpu.device import get_engine

    return get_engine()


@pytest.fixture
def flushing(engine, monkeypatch):
    """The adapter in use, as if its known-answer check had found it flushing subnormals."""
    monkeypatch.setattr(engine, "flushes_subnormals", True)
    return engine


def _subnormal_data(rng, shape, frac=0.3):
    """Floats of mixed magnitude: subnormals (both signs), tiny normals, ±inf, ordinary values."""
    x = rng.integers(-4, 5, shape).astype(np.float32)
    pick = rng.random(shape)
    sub = (rng.integers(1, 2**23, shape) * np.float32(2.0**-149)).astype(np.float32)
    x = np.where(pick < frac, sub * rng.choice([-1, 1], shape), x).astype(np.float32)
    x = np.where((pick > 0.9) & (pick < 0.95), np.float32(2.0**-100), x).astype(np.float32)
    x[pick > 0.98] = np.inf
    return x


def _bits_equal(x, y):
    """Equal values (a subnormal is not 0; inf is inf). The sign of a zero result is not compared:
    max(-0, +0) is either in WGSL, as in numpy's ordering of its arguments."""
    x, y = np.asarray(x), np.asarray(y)
    return x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y)


# ---------------------------------------------------------------------------- the check itself
def test_check_passed_and_is_reported(engine):
    chk = engine.selfcheck
    assert chk is not None and chk.ok
    assert {"min_plus f32 with inf", "max_plus int32", "bor_band uint32"} <= set(chk.cases)
    d = tg.get_backend("wgpu").describe()
    assert d["flushes_subnormals"] is tg.get_backend("wgpu").flushes_subnormals
    assert d["flushes_subnormals"] == engine.flushes_subnormals
    assert any("subnormal" in k for k in d["self_check"])


@pytest.mark.parametrize("shape", [(1, 1, 1), (5, 7, 3), (33, 40, 70)], ids=str)
@pytest.mark.parametrize("sr", FLOAT_SEMIRINGS)
def test_flag_matches_what_the_raw_kernels_do(engine, rng, sr, shape):
    """Subnormal operands and results through the kernels with no rule in front of them: on an
    adapter that says it keeps subnormals, numpy's answer exactly; on one that says it flushes,
    the flag must be true (some subnormal result comes back as zero)."""
    from pytropical_gpu.backends.wgpu.selfcheck import run_gemm

    m, k, n = shape
    a, b = _subnormal_data(rng, (m, k)), _subnormal_data(rng, (k, n))
    a.flat[0], b.flat[0] = SUB, np.float32(-1)  # a min_max/max_min cell that is subnormal
    want = tg.matmul(a, b, sr, backend="cpu")
    got = run_gemm(engine, sr, a, b)
    if not engine.flushes_subnormals:
        assert _bits_equal(got, want), f"{sr} {shape}: adapter keeps subnormals but got {got} != {want}"
    else:
        sub = (want != 0) & (np.abs(want) < TINY)
        assert not np.array_equal(got[sub], want[sub]) or not sub.any()


# ---------------------------------------------------------------------------- the rule
@pytest.mark.parametrize("sr", FLOAT_SEMIRINGS + ["plus_times"])
def test_subnormal_operand_raises_on_a_flushing_adapter(flushing, sr):
    a = np.ones((3, 4), np.float32)
    a[0, 1] = a[2, 3] = SUB
    a[1, 1] = -SUB
    b = np.ones((4, 2), np.float32)
    before = a.copy()
    with pytest.raises(SubnormalFlushError) as ei:
        tg.matmul(a, b, sr, backend="wgpu")
    msg = str(ei.value)
    assert isinstance(ei.value, ValueError)
    assert "matmul" in msg and "a holds 3 subnormal values" in msg
    assert flushing.rt.info.name in msg and "backend='cuda'" in msg and "backend='cpu'" in msg
    assert _bits_equal(a, before)
    for name, kw in (("b", dict(a=b.T.copy(), b=a.T.copy())),
                     ("c", dict(a=b.T.copy(), b=b, c=np.full((2, 2), SUB, np.float32)))):
        with pytest.raises(SubnormalFlushError, match=rf"{name} holds \d+ subnormal"):
            tg.matmul(kw["a"], kw["b"], sr, c=kw.get("c"), backend="wgpu")


def test_results_that_could_be_subnormal(flushing):
    small = np.float32(2.0**-110)  # normal, below 2**-102
    a = np.array([[1, small]], np.float32)
    b = np.array([[2], [-small]], np.float32)
    for sr in ("min_plus", "max_plus"):
        with pytest.raises(SubnormalFlushError, match="sum can be subnormal"):
            tg.matmul(a, b, sr, backend="wgpu")
        # only one side that small: no sum can be subnormal; runs, exactly
        b_big = np.array([[2], [-1]], np.float32)
        assert _bits_equal(tg.matmul(a, b_big, sr, backend="wgpu"), tg.matmul(a, b_big, sr,
                                                                               backend="cpu"))
    x = np.array([[2.0**-70, 3]], np.float32)
    y = np.array([[2.0**-60], [1]], np.float32)
    for sr in ("min_times", "max_times"):
        with pytest.raises(SubnormalFlushError, match="product can be subnormal"):
            tg.matmul(x, y, sr, backend="wgpu")
        ok = np.array([[2.0**-60, 3]], np.float32)  # 2**-120: every product normal
        assert _bits_equal(tg.matmul(ok, y, sr, backend="wgpu"), tg.matmul(ok, y, sr, backend="cpu"))
    # min_max / max_min compute nothing, plus_times is a tolerance semiring: operand rule only
    for sr in ("min_max", "max_min", "plus_times"):
        tg.matmul(x, y, sr, backend="wgpu")
        tg.matmul(a, b, sr, backend="wgpu")
    # integers are never affected
    i = np.array([[1, 2]], np.int32)
    tg.matmul(i, i.T.copy(), "min_plus", backend="wgpu")


def test_user_float_semiring_refused_on_a_flushing_adapter(flushing):
    sr = Semiring("max_min_user", np.maximum, np.minimum, -np.inf, np.inf, dtypes=("float32",),
                  wgsl_add="max(a, b)", wgsl_mul="min(a, b)", selective=True)
    a = np.ones((2, 2), np.float32)
    with pytest.raises(TypeError, match="flushes subnormal.*cannot be guaranteed exact.*backend='cuda'"):
        tg.matmul(a, a, sr, backend="wgpu")


def test_resident_operand_facts_come_from_to_device(flushing, monkeypatch):
    from pytropical_gpu.backends.wgpu.array import WgpuArray

    be = tg.get_backend("wgpu")
    a = np.ones((4, 4), np.float32)
    a[1, 2] = SUB
    ra = be.to_device(a)
    assert ra.stats["subnormal"] == 1 and ra.stats["min_abs"] == float(SUB)
    monkeypatch.setattr(WgpuArray, "get", lambda self: pytest.fail("read the array back"))
    with pytest.raises(SubnormalFlushError, match="a holds 1 subnormal value "):
        be.matmul(ra, np.ones((4, 3), np.float32), "max_min")
    assert be.inexact_reason("max_min", None, {"a": ra, "b": None}) is not None
    assert be.inexact_reason("max_min", None, {"a": np.ones(3, np.float32)}) is None


def test_nothing_raised_on_an_adapter_that_keeps_subnormals(engine, monkeypatch):
    really_flushes = engine.flushes_subnormals
    monkeypatch.setattr(engine, "flushes_subnormals", False)
    a = np.array([[SUB, 1]], np.float32)
    b = np.array([[-1], [2]], np.float32)
    assert tg.get_backend("wgpu").inexact_reason("min_max", None, {"a": a, "b": b}) is None
    got = tg.matmul(a, b, "min_max", backend="wgpu")
    if not really_flushes:  # (on a really flushing adapter the flag was the only thing faked)
        assert _bits_equal(got, np.array([[SUB]], np.float32))


# ---------------------------------------------------------------------------- auto routing
def test_auto_routes_around_a_flushing_adapter(flushing, monkeypatch):
    """"auto" with wgpu as its GPU: a call that could meet subnormals runs on an exact backend
    (cuda if usable, else cpu) instead of raising; others still run on wgpu."""
    from pytropical_gpu import hybrid
    from pytropical_gpu.backends import probe
    from pytropical_gpu.backends.wgpu.backend import WgpuBackend

    ctx = HybridContext(cpu_threshold=0)
    ctx._gpu = "wgpu"  # as on a machine whose hardware adapter is this one
    calls = []
    real = WgpuBackend._gemm
    monkeypatch.setattr(WgpuBackend, "_gemm", lambda self, *a: calls.append(1) or real(self, *a))
    a = np.array([[SUB, 1], [2, 3]], np.float32)
    b = np.array([[-1, 0], [2, 1]], np.float32)
    want = tg.matmul(a, b, "min_max", backend="cpu")
    assert _bits_equal(ctx.matmul(a, b, "min_max"), want) and not calls
    if not probe("cuda")[0]:
        assert ctx._exact(tg.get_backend("wgpu"), "min_max", {"a": a, "b": b}).name == "cpu"
    # resident operands normally run where they live; these go to an exact backend too
    ra = ctx.to_device(a)
    assert _bits_equal(ctx.matmul(ra, b, "min_max"), want) and not calls
    # module-level functions use the default context
    monkeypatch.delenv("PYTROPICAL_BACKEND", raising=False)
    monkeypatch.setattr(hybrid, "_default", ctx)
    assert _bits_equal(tg.matmul(a, b, "min_max"), want) and not calls
    # nothing subnormal: wgpu runs it
    ok = np.array([[1, 2], [3, 4]], np.float32)
    ctx.matmul(ok, b, "min_max")
    assert calls
    # a pinned backend is what the caller asked for: it raises
    with pytest.raises(SubnormalFlushError):
        HybridContext("wgpu").matmul(a, b, "min_max")
    with pytest.raises(SubnormalFlushError):
        tg.matmul(a, b, "min_max", backend="wgpu")
