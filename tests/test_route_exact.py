"""A matmul "auto" sends to wgpu takes the lean routing path only where the flushing rule cannot
fire (SPEC: Exactness): every dtype on an adapter that keeps subnormals, the non-float ones on one
that flushes. A float call on a flushing adapter still goes through the full path, so a call whose
result a flushing adapter could change never runs there.

The expected decisions come from a flushing adapter simulated here in numpy (inputs, products and
sums of float32 with subnormals set to zero, as WGSL allows), not from the rule under test. Runs on
the wgpu backend (lavapipe, whose flag is set as in tests/test_wgpu_subnormals.py).
"""

from __future__ import annotations

import numpy as np
import pytest

import pytropical_gpu as tg
from conftest import require_backend
from pytropical_gpu import HybridContext, Semiring

TINY = np.finfo(np.float32).tiny
#: semiring -> (⊕ as a reduction over k, ⊗ elementwise), float32 throughout
OPS = {"min_plus": (np.min, np.add), "max_plus": (np.max, np.add),
       "min_times": (np.min, np.multiply), "max_times": (np.max, np.multiply),
       "min_max": (np.min, np.maximum), "max_min": (np.max, np.minimum)}


def _ftz(x: np.ndarray) -> np.ndarray:
    """Subnormal float32 values set to (signed) zero."""
    return np.where(np.abs(x) < TINY, np.float32(0) * np.sign(x), x).astype(np.float32)


def _flushed(a: np.ndarray, b: np.ndarray, sr: str) -> np.ndarray:
    """The semiring product as an adapter that flushes subnormals (operands and results) computes it."""
    add, mul = OPS[sr]
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        terms = _ftz(mul(_ftz(a)[:, :, None], _ftz(b)[None, :, :]).astype(np.float32))
        return _ftz(add(terms, axis=1))


def _float_data(rng, shape, sr: str = "min_max") -> np.ndarray:
    """float32 of every kind the rule separates: ordinary, tiny normals whose sums or products can
    be subnormal, subnormals, and the infinity ``sr`` takes without a NaN (none for ⊗ = times);
    most arrays hold only some of them."""
    kinds = rng.choice(3 if sr.endswith("times") else 4, size=rng.integers(1, 4), replace=False)
    pools = [rng.integers(-4, 5, shape).astype(np.float32),
             (rng.choice([-1, 1], shape) * rng.choice([2.0**-60, 2.0**-70, 2.0**-103, 2.0**-104,
                                                     1.5 * 2.0**-104], shape)).astype(np.float32),
             (rng.integers(1, 2**23, shape) * np.float32(2.0**-149)).astype(np.float32),
             np.full(shape, np.inf if sr.startswith("min") else -np.inf, np.float32)]
    pick = rng.integers(0, len(kinds), shape)
    return np.choose(pick, [pools[k] for k in kinds]).astype(np.float32)


@pytest.fixture
def ctx(monkeypatch):
    """A context routing every matmul to wgpu (as on a machine whose hardware adapter is this one),
    its lean state built, and the full path counted."""
    require_backend("wgpu")
    c = HybridContext(cpu_threshold=0)
    c._gpu = "wgpu"
    x = np.ones((2, 2), np.int32)
    assert c._be("matmul", (x, x, None), None, "min_plus").name == "wgpu"  # builds the lean state
    c.full = []
    real = c._backend_for
    monkeypatch.setattr(c, "_backend_for", lambda *a: c.full.append(a[0]) or real(*a))
    return c


def test_a_call_a_flushing_adapter_could_change_never_runs_there(ctx, flushing, rng):
    changed = lean = 0
    for _ in range(300):
        m, k, n = (int(v) for v in rng.integers(1, 6, 3))
        sr = str(rng.choice(list(OPS)))
        a, b = _float_data(rng, (m, k), sr), _float_data(rng, (k, n), sr)
        ctx.full.clear()
        got = ctx._be("matmul", (a, b, None), None, sr).name
        with np.errstate(invalid="ignore", over="ignore", under="ignore"):
            exact = tg.matmul(a, b, sr, backend="cpu")
        if flushing and not np.array_equal(_flushed(a, b, sr), exact, equal_nan=True):
            changed += 1
            assert got != "wgpu", (sr, a, b)
        if not flushing:
            assert got == "wgpu" and ctx.full == []  # keeps subnormals: lean, whatever the data
        else:
            assert ctx.full == ["matmul"]  # flushing, float: the full path decides
            lean += got == "wgpu"
    if flushing:
        assert changed > 20 and lean > 20  # the data reached both sides of the rule


@pytest.mark.parametrize("dtype", ["int32", "uint32", "uint64", "bool"])
def test_non_float_matmuls_are_lean_even_on_a_flushing_adapter(ctx, flushing, dtype):
    a = np.arange(12).reshape(3, 4).astype(dtype)
    for sr in (("lor_land",) if dtype == "bool" else ("min_plus", "max_plus", "max_min")):
        assert ctx._be("matmul", (a, a.T.copy(), None), None, sr).name == "wgpu"
    assert ctx.full == []


def test_lean_and_full_paths_decide_alike(ctx, flushing, rng):
    """Every plain host matmul: ``_be`` (lean where it may be) names the backend the full path
    names, with a user-defined float semiring (never exact on a flushing adapter) and float64
    (wgpu has none) among them."""
    user = Semiring("max_min_user_route", np.maximum, np.minimum, -np.inf, np.inf, dtypes=("float32",),
                    wgsl_add="max(a, b)", wgsl_mul="min(a, b)", selective=True)
    real = type(ctx)._backend_for
    for _ in range(100):
        m, k, n = (int(v) for v in rng.integers(1, 5, 3))
        dt = str(rng.choice(["float32", "float32", "int32", "float64"]))
        if dt == "int32":
            a, b = rng.integers(0, 9, (m, k)).astype(dt), rng.integers(0, 9, (k, n)).astype(dt)
        else:
            a, b = _float_data(rng, (m, k)).astype(dt), _float_data(rng, (k, n)).astype(dt)
        for sr in ("min_plus", "max_times", "max_min", user):
            want = real(ctx, "matmul", (a, b, None), None, sr).name
            assert ctx._be("matmul", (a, b, None), None, sr).name == want, (dt, sr, flushing)
            assert want == "wgpu" or flushing or dt == "float64"
