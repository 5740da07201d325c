"""The lean routing path (host operands on the cpu side of the table decided by one comparison): it
decides as the full path does, follows a new calibration at once, and leaves validation to the
operation (bad input raises what ``backend="cpu"`` raises). No GPU needed: the router's GPU and
its GPU backends are faked; the expected decisions come from the route tables' own segments."""

from __future__ import annotations

import types

import numpy as np
import pytest

import pytropical_gpu as tg
from pytropical_gpu import HybridContext, _route_decide, _route_exact, routing
from pytropical_gpu import route_table as rt
from pytropical_gpu.backends import get_backend
from pytropical_gpu.thresholds import DEFAULTS, Thresholds

CPU = get_backend("cpu")


def _fake_gpus(monkeypatch):
    """GPU backends as stand-ins (name and dtypes only); cpu stays the real one."""
    made = {}

    def fake(name):
        if name == "cpu":
            return CPU
        return made.setdefault(name, types.SimpleNamespace(
            name=name, gemm_dtypes=("float32", "int32", "float64", "int64", "uint32", "uint64")))

    for mod in (routing, _route_decide, _route_exact):  # each module that routing's code lives in
        monkeypatch.setattr(mod, "get_backend", fake)
        monkeypatch.setattr(mod, "probe", lambda n: (n == "cuda", ""))
    monkeypatch.setattr(routing, "usable_backends", lambda include_software=False: ["cpu", "cuda"])


def _ctx(monkeypatch, crossover: dict[str, int] | None, gpu="cuda") -> HybridContext:
    _fake_gpus(monkeypatch)
    ctx = HybridContext()
    ctx._gpu = gpu
    ctx.use_calibration(None if crossover is None else Thresholds(
        crossover={**DEFAULTS, **crossover}, gpu=dict.fromkeys(DEFAULTS, "cuda"), source="calibrated"))
    return ctx


def _tv(words: int, batch=(), seed=0) -> tg.TernaryVec:
    return tg.TernaryVec.random(32 * words, batch=batch, seed=seed) if batch else \
        tg.TernaryVec.random(32 * words, seed=seed)


def _calls(rng):
    """(op as the verbs pass it, operands, route key, size) for plain host operands of random
    sizes; the size is worked out here from the shapes (route units, thresholds module doc)."""
    m, k, n = (int(v) for v in rng.integers(1, 40, 3))
    w1, w2 = (int(v) for v in rng.integers(1, 60, 2))
    f = rng.random((m, k)).astype(np.float32), rng.random((k, n)).astype(np.float32)
    i = rng.integers(0, 9, (m, k)).astype(np.int64), rng.integers(0, 9, (k, n)).astype(np.int64)
    bits = rng.random((m, 32 * w1)) < 0.5
    a, b = _tv(w1, seed=int(rng.integers(1 << 30))), _tv(w1, seed=int(rng.integers(1 << 30)))
    mem = _tv(w1, batch=(w2,), seed=3)
    soft = tg.SoftTernaryVec(32 * w1, bits=8)
    return [("matmul", (f[0], f[1], None), "matmul", m * k * n),
            ("matmul", (i[0], i[1], None), "matmul_int", m * k * n),
            ("andor_matmul", (bits, bits.T.copy()), "andor_matmul", m * m * (32 * w1) // 32),
            ("pack_rows", (bits,), "pack", bits.size), ("pack_cols", (bits,), "pack", bits.size),
            ("bind", (a, b), "bind", 2 * w1), ("dot", (a, b), "dot", 2 * w1),
            ("cosine", (a, b), "cosine", 2 * w1), ("search", (a, mem), "search", w1 + w1 * w2),
            ("bundle", (a, b, a), "bundle", 3 * w1), ("permute", (a,), "permute", w1),
            ("accumulate", (soft,), "accumulate", w1 * 8), ("harden", (soft,), "harden", w1 * 8)]


def test_lean_and_full_paths_decide_alike(monkeypatch):
    rng = np.random.default_rng(7)
    for trial in range(25):
        cross = {op: int(rng.integers(0, 3000)) for op in DEFAULTS}
        ctx = _ctx(monkeypatch, cross)
        for op, operands, key, size in _calls(rng):
            full = ctx._backend_for(op, operands, None, None).name  # also builds the lean state
            want = rt.lookup(rt.from_crossover(cross[key], "cuda"), size)
            assert full == want, (op, size, cross[key])
            assert ctx._be(op, operands, None).name == want, (trial, op, size, cross[key])


def test_small_host_calls_take_the_lean_path(monkeypatch):
    ctx = _ctx(monkeypatch, {"bind": 100})
    a, b = _tv(10), _tv(10, seed=1)  # 20 words < 100: cpu
    big = _tv(60), _tv(60, seed=1)  # 120 words >= 100: cuda
    want = CPU.bind(a, b).to_array()
    assert np.array_equal(ctx.bind(a, b).to_array(), want)  # first call: the full path builds the cuts

    def boom(*args):
        raise AssertionError("the full path ran")

    monkeypatch.setattr(ctx, "_backend_for", boom)
    assert ctx._be("bind", (a, b), None) is CPU
    assert np.array_equal(ctx.bind(a, b).to_array(), want)
    assert ctx._be("bind", big, None).name == "cuda"  # the GPU side of the table is lean too
    with pytest.raises(AssertionError, match="the full path ran"):
        ctx._be("bind", (a, b), "cpu")  # an explicit backend= is not routing


def test_a_gpu_matmul_is_lean_only_when_the_gpu_surely_takes_it(monkeypatch):
    """A matmul on the GPU side: lean when the GPU has the dtype and no data-dependent check;
    a dtype it lacks, or a backend with ``inexact_reason`` and no ``exact_dtypes`` naming the
    dtype (wgpu: floats on a flushing adapter, tests/test_route_exact.py), goes through the full
    path and its ``_exact`` (here: to cpu)."""
    ctx = _ctx(monkeypatch, {"matmul": 0, "matmul_int": 0})
    f32, f64 = np.ones((4, 4), np.float32), np.ones((4, 4))
    assert ctx._be("matmul", (f32, f32, None), None).name == "cuda"  # builds the lean state
    full = []
    real = ctx._backend_for
    monkeypatch.setattr(ctx, "_backend_for", lambda *a: full.append(a[0]) or real(*a))
    assert ctx._be("matmul", (f32, f32, None), None).name == "cuda" and full == []
    cuda = _route_decide.get_backend("cuda")
    monkeypatch.setattr(cuda, "gemm_dtypes", ("float32",))
    assert ctx._be("matmul", (f64, f64, None), None).name == "cpu" and full == ["matmul"]
    monkeypatch.setattr(cuda, "inexact_reason", lambda sr, dt, ops: "flushes subnormals",
                        raising=False)
    assert ctx._be("matmul", (f32, f32, None), None).name == "cpu" and full == ["matmul"] * 2


def test_a_new_calibration_changes_a_cached_decision(monkeypatch):
    ctx = _ctx(monkeypatch, {"bind": 100, "matmul": 10 ** 6})
    a, b = _tv(30), _tv(30, seed=1)  # 60 words
    x = np.ones((20, 20), np.float32)  # 8,000 work items
    for _ in range(3):  # the first call builds the lean state, the later ones use it
        assert ctx._be("bind", (a, b), None).name == "cpu"
        assert ctx._be("matmul", (x, x, None), None).name == "cpu"
    ctx.use_calibration(Thresholds(crossover={**DEFAULTS, "bind": 50, "matmul": 8000},
                                   gpu=dict.fromkeys(DEFAULTS, "cuda"), source="calibrated"))
    assert ctx._be("bind", (a, b), None).name == "cuda"
    assert ctx._be("matmul", (x, x, None), None).name == "cuda"
    ctx.use_calibration(None)  # back to the defaults (bind 1.1M words): cpu again
    assert ctx._be("bind", (a, b), None).name == "cpu"
    # calibrate() applies its result the same way (Router._apply)
    ctx._apply(Thresholds(crossover={**DEFAULTS, "bind": 0}, gpu={"bind": "cuda"}, source="calibrated"))
    assert ctx._be("bind", (a, b), None).name == "cuda"


def test_the_lean_state_follows_the_table_and_the_gpu(monkeypatch):
    ctx = _ctx(monkeypatch, {"dot": 10 ** 6})
    a, b = _tv(60), _tv(60, seed=1)  # 120 words
    assert ctx._be("dot", (a, b), None).name == ctx._be("dot", (a, b), None).name == "cpu"
    ctx._fixed, ctx._table = 5, None  # cpu_threshold=5: one crossover for every op
    assert ctx._be("dot", (a, b), None).name == "cuda"
    ctx._fixed, ctx._table = 10 ** 9, None
    assert ctx._be("dot", (a, b), None).name == ctx._be("dot", (a, b), None).name == "cpu"
    ctx._fixed, ctx._table = 5, None
    ctx._be("pack_rows", (np.ones((2, 2), bool),), None)  # another op rebuilds the state too
    assert ctx._be("dot", (a, b), None).name == "cuda"
    ctx._gpu, ctx._table = None, None  # no GPU: everything on cpu
    assert ctx._be("dot", (a, b), None).name == "cpu"


def test_resident_and_unusual_operands_take_the_full_path(monkeypatch):
    ctx = _ctx(monkeypatch, {"matmul": 10 ** 9, "bind": 10 ** 9})
    x = np.ones((4, 4), np.float32)
    ctx._be("matmul", (x, x, None), None)  # builds the lean state
    seen = []
    real = ctx._backend_for
    monkeypatch.setattr(ctx, "_backend_for", lambda *a: seen.append(a[0]) or real(*a))
    lst = [[1.0] * 4] * 4
    for operands in ((lst, x, None), (x, x[None], None), (x, x, lst), (x, x.T, None)):
        ctx._be("matmul", operands, None)
    assert seen == ["matmul"] * 3  # a list, a 3-D operand, a list c; x.T is still a plain ndarray
    seen.clear()
    ctx._be("bind", (x, x), None)  # not TernaryVecs: the operation raises, after the full path
    assert seen == ["bind"]


@pytest.mark.parametrize("case", ["dim", "type", "shape", "semiring"])
def test_bad_input_raises_what_cpu_raises(monkeypatch, case):
    ctx = _ctx(monkeypatch, {"matmul": 10 ** 9, "bind": 10 ** 9})
    a, b, c = _tv(2), _tv(3, seed=1), _tv(2, seed=2)
    ctx.bind(a, c)  # the lean state is built
    call = {"dim": lambda be: ctx.bind(a, b, backend=be),
            "type": lambda be: ctx.bind(a, np.ones(64, np.int8), backend=be),
            "shape": lambda be: ctx.matmul(np.ones((3, 4)), np.ones((5, 2)), backend=be),
            "semiring": lambda be: ctx.matmul(np.ones((3, 4)), np.ones((4, 2)), "nope", backend=be)}[case]
    with pytest.raises(Exception) as cpu:
        call("cpu")
    with pytest.raises(type(cpu.value)) as auto:
        call(None)
    assert str(auto.value) == str(cpu.value)


def test_the_environment_variable_is_read_on_every_call(monkeypatch):
    monkeypatch.delenv(routing.ENV, raising=False)
    assert routing.requested(None) is None and routing.requested("wgpu") == "wgpu"
    monkeypatch.setenv(routing.ENV, "cpu")
    assert routing.requested(None) == "cpu" and routing.requested("cuda") == "cuda"
    monkeypatch.setenv(routing.ENV, "")
    assert routing.requested(None) is None
    monkeypatch.setenv(routing.ENV, "nope")
    with pytest.raises(ValueError, match="nope"):
        tg.bind(_tv(1), _tv(1))


def test_exact_reads_dtype_names_once_per_dtype(monkeypatch):
    """``_exact`` (every matmul auto sends to a GPU) names the dtype through a per-dtype cache:
    the names are numpy's, byte order kept apart, other kinds (lists, torch) still named."""
    from pytropical_gpu import _route_measure as rm

    want = {np.dtype(np.float32): "float32", np.dtype(">f4"): ">f4", np.dtype(np.int32): "int32",
            np.dtype(np.uint64): "uint64", np.dtype(bool): "bool"}
    for dt, name in want.items():
        assert rm._dtype_name(np.zeros(2, dt)) == name
        assert rm._dtype_name(np.zeros((3, 1), dt)) == name  # from the cache this time
    assert rm._dtype_name([[1.0, 2.0]]) == "float64"
    torch = pytest.importorskip("torch")
    assert rm._dtype_name(torch.zeros(2, dtype=torch.int32)) == "int32"
    ctx = _ctx(monkeypatch, {"matmul": 0, "matmul_int": 0})
    f64 = np.zeros((4, 4))
    gpu = ctx._be("matmul", (f64, f64, None), None)
    assert gpu.name == "cuda"  # the fake cuda lists float64
    calls = []
    monkeypatch.setattr(rm.gemm_shapes, "dtype_name", lambda x: calls.append(x) or "float64")
    ctx._be("matmul", (f64, f64, None), None)
    assert calls == []  # float64's name came from the cache
