"""``gemm_launch.run`` launches the instantiation its ``prefix`` names ("" the plain role, "nz_",
"dpx_", "dpxw_": the names ``variant_plan`` checks), on the host: a numpy stand-in for CuPy and a
recording ``kernels.function``, so the launch's kernel name is seen without a GPU."""

from __future__ import annotations

import types

import numpy as np
import pytest

from pytropical_gpu.backends.cuda import gemm_launch, kernels


@pytest.mark.parametrize("prefix", ["", "nz_", "dpx_", "dpxw_"])
def test_run_launches_the_prefixed_role(monkeypatch, prefix):
    seen, launched = [], []

    def function(spec, role):
        seen.append((spec, role))
        return lambda grid, block, args, shared_mem=0: launched.append((grid, block))

    monkeypatch.setattr(kernels, "function", function)
    be = types.SimpleNamespace(_cp=types.SimpleNamespace(empty=np.empty))
    a, b = np.zeros((1, 2, 3), np.float32), np.zeros((1, 3, 8), np.float32)
    d, idx = gemm_launch.run(be, "spec", a, b, None, False, gemm_launch.Plan("wide", "wide"), prefix=prefix)
    assert seen == [("spec", prefix + "wide")] and len(launched) == 1
    assert d.shape == (1, 2, 8) and idx is None


def test_run_plain_by_default(monkeypatch):
    seen = []
    monkeypatch.setattr(kernels, "function", lambda spec, role: seen.append(role) or (lambda *a, **k: None))
    be = types.SimpleNamespace(_cp=types.SimpleNamespace(empty=np.empty))
    a, b = np.zeros((1, 2, 3), np.float32), np.zeros((1, 3, 8), np.float32)
    gemm_launch.run(be, "spec", a, b, None, True, gemm_launch.Plan("wide", "wide4"))
    assert seen == ["wide4"]
