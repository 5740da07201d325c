"""The public surface: signatures agree, backends are chosen as the spec says."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import pytropical_gpu as tg
from pytropical_gpu import HybridContext
from pytropical_gpu.backends import get_backend

OPS = ["matmul", "pack_rows", "pack_cols", "andor_matmul", "bind", "unbind", "bundle", "dot",
       "cosine", "permute", "search"]


def _params(f, drop=("self", "backend")):
    return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()
            if p.name not in drop]


@pytest.mark.parametrize("op", OPS)
def test_module_backend_and_context_share_one_signature(op):
    module = _params(getattr(tg, op))
    assert module == _params(getattr(get_backend("cpu"), op))
    assert module == _params(getattr(HybridContext, op))
    assert "backend" in inspect.signature(getattr(tg, op)).parameters


def test_torchhd_aliases():
    assert tg.dot_similarity is tg.dot and tg.cosine_similarity is tg.cosine


def test_available_backends_lists_cpu_first():
    names = tg.available_backends()
    assert names[0] == "cpu" and set(names) <= {"cpu", "wgpu", "cuda"}


def test_env_var_forces_a_backend(monkeypatch):
    monkeypatch.setenv("PYTROPICAL_BACKEND", "cpu")
    a = np.ones((2, 2), np.float32)
    np.testing.assert_array_equal(tg.matmul(a, a, "min_plus"), np.full((2, 2), 2.0))
    monkeypatch.setenv("PYTROPICAL_BACKEND", "no_such_backend")
    with pytest.raises(ValueError, match="no_such_backend"):
        tg.matmul(a, a, "min_plus")


def test_small_work_routes_to_cpu_and_auto_never_picks_a_software_adapter():
    ctx = HybridContext()
    assert ctx.route("matmul", 8) == "cpu"
    assert ctx.route("bind", 1) == "cpu"
    from pytropical_gpu.backends import probe
    from pytropical_gpu.backends.wgpu import hardware_available

    if not probe("cuda")[0] and not hardware_available()[0]:
        assert ctx.route("matmul", 10**12) == "cpu"
    if ctx.gpu == "wgpu":
        assert hardware_available()[0]


def test_threshold_moves_the_crossover():
    ctx = HybridContext(cpu_threshold=100)
    if ctx.gpu is None:
        assert ctx.route("matmul", 10**6) == "cpu"
    else:
        assert ctx.route("matmul", 10**6) == ctx.gpu and ctx.route("matmul", 99) == "cpu"


def test_pinned_context_runs_everything_on_its_backend():
    ctx = HybridContext(backend="cpu")
    assert ctx.route("matmul", 10**12) == "cpu"
    v = tg.TernaryVec.random(64, seed=0)
    assert ctx.dot(v, v) == int((v.to_array() != 0).sum())


def test_context_rejects_unknown_backend():
    with pytest.raises(ValueError, match="auto, cpu, wgpu or cuda"):
        HybridContext(backend="metal")


def test_to_device_round_trip_keeps_values():
    ctx = HybridContext()
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(ctx.to_host(ctx.to_device(a)), a)
    v = tg.TernaryVec.random(40, seed=1)
    np.testing.assert_array_equal(ctx.to_host(ctx.to_device(v)).to_array(), v.to_array())


def test_semiring_registry():
    assert tg.get_semiring("gf2") is tg.get_semiring("lxor_land")
    assert tg.get_semiring("bitwise").name == "bor_band"
    assert tg.get_semiring("min_plus").zero_for(np.int32) == np.iinfo(np.int32).max
    assert tg.get_semiring("max_plus").zero_for(np.float32) == -np.inf
    assert "tropical" in tg.semiring_names()
