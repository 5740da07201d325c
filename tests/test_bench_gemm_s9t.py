"""benchmarks/bench_gemm_cuda_s9t.py on the host, under a fake CuPy whose "kernels" return
tests/reference.py's answer (with faults planted where a test says): which variants it fails
and leaves untimed, what it records of the library kernel's own reference failures, and the
ratios in its summary, against the rules written out here. Two small check shapes instead of
eight (the checks' operands and references are the bench's own, check_inputs)."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from reference import ref_matmul

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import _gemm_run  # noqa: E402
import bench_gemm_cuda_s9t as bench  # noqa: E402

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu.backends.cuda import kernels  # noqa: E402


class Dev(np.ndarray):
    """A host array with CuPy's ``get``."""

    def get(self):
        return np.asarray(self)


def _fake_cupy():
    cp = types.ModuleType("cupy")
    cp.float32 = np.float32
    cp.asarray = lambda x: np.asarray(x).view(Dev)

    class RandomState:
        def __init__(self, seed):
            self.g = np.random.default_rng(seed)

        def standard_normal(self, shape, dtype):
            return self.g.standard_normal(shape, dtype=dtype).view(Dev)

    cp.random = types.SimpleNamespace(RandomState=RandomState)
    return cp


#: seconds a call of each form takes under the fake timer
TIMES = {"plain": 1.0, "lib": 1.25, "R": 1.3, "RM": 1.2, "M": 1.1}


def _run(monkeypatch, tmp_path, fault=lambda label, d, idx: None, argv=()):
    """main(--quick) under the fake; ``fault(label, d, idx)`` may change a check run's output in
    place. Returns (exit status, the JSON, the labels timed)."""
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy())
    monkeypatch.setattr(kernels, "TILES", dict(kernels.TILES))
    be = types.SimpleNamespace(describe=lambda: {"name": "fake"})
    monkeypatch.setattr(tg, "get_backend", lambda name: be)
    monkeypatch.setattr(bench, "compile_all", lambda out, specs, workers, log: None)
    monkeypatch.setattr(bench, "baselines", lambda *a: None)
    monkeypatch.setattr(bench, "SHAPES", [(9, 33, 130, 1), (20, 40, 36, 3)])
    timed = []

    def fake_timer(cp):
        def timer(fn, reps=5, warmup=1, inner=1):
            label, arg = fn.args[0], fn.args[1]
            fn()
            timed.append(label)
            form = "plain" if not arg else label.split()[-1] if label.split()[-1] in bench.FORMS else "lib"
            return TIMES[form]
        return timer

    monkeypatch.setattr(_gemm_run, "Timer", fake_timer)

    def fake_launch(be, spec, a, b, c, arg, plan):
        label = spec.key.split(":")[1]
        name = bench.CASES[label][0]
        a, b = np.asarray(a), np.asarray(b)
        if a.shape[-2] >= 1024:  # a timed size (m; a checked k reaches 1024): every kernel the same answer
            return np.zeros(a.shape, np.float32).view(Dev), np.zeros(a.shape, np.int32).view(Dev)
        d, idx = ref_matmul(a[0], b[0], name, None if c is None else np.asarray(c)[0])
        d, idx = d.copy(), (np.zeros(d.shape, np.int32) if idx is None else idx.copy())
        fault(label, d, idx)
        return d[None].view(Dev), idx[None].view(Dev)

    monkeypatch.setattr(bench.gemm_launch, "run", fake_launch)
    path = tmp_path / "s9t.json"
    rc = bench.main(["--quick", "--json", str(path), *argv])
    return rc, json.loads(path.read_text()), timed


def _negate_zero(d):
    """Flip the sign of the first ±0 of d (a reference failure seen only bit for bit)."""
    z = np.flatnonzero(d == 0)
    if z.size:
        d.flat[z[0]] = -d.flat[z[0]]


def test_all_pass(monkeypatch, tmp_path):
    rc, out, timed = _run(monkeypatch, tmp_path)
    assert rc == 0 and out["failed"] == [] and out["ref_failed"] == []
    # one check a kernel and case: 2 shapes x 2 (c or not) x kinds (8 with the zero placed, else 1)
    # x kernels (the library's and its variants: max_times zn 4, the others 2); then the 6 variants'
    # timed outputs at 1024^3
    checks = [c for c in out["checks"] if "against" not in c]
    assert len(checks) == 2 * 2 * (8 * 4 + 8 * 2 + 1 * 2 + 1 * 2)
    assert len(out["checks"]) - len(checks) == 6
    assert all(c["ok"] for c in out["checks"])
    for size in ("1024^3", "2048^3"):
        s = out["summary"][size]
        assert s["max_times zn"]["M"]["ratio_to_plain"] == pytest.approx(1 / 1.1)
        assert s["max_times zn"]["lib"]["ratio_to_plain"] == pytest.approx(0.8)
        assert set(s["max_times zn"]) == {"plain", "lib", "R", "RM", "M"}
        assert set(s["min_plus"]) == {"plain", "lib", "M"}
        assert all(len(f["rounds"]) == 2 for b in s.values() for f in b.values())


def test_variant_that_differs_is_not_timed(monkeypatch, tmp_path):
    def fault(label, d, idx):
        if label == "max_times zn RM" and d.shape[0] == 20:
            idx.flat[-1] += 1

    rc, out, timed = _run(monkeypatch, tmp_path, fault)
    assert rc == 1 and out["failed"] == [["max_times zn RM", bench.ARG_ROLE]]
    assert "max_times zn RM" not in timed and "max_times zn R" in timed and "max_times zn M" in timed
    bad = [c for c in out["checks"] if not c["ok"]]
    assert bad and all(c["case"] == "max_times zn RM" and c["same_as_lib"] is False for c in bad)
    rc, out, timed = _run(monkeypatch, tmp_path, fault, ["--time-failed"])
    assert rc == 1 and "max_times zn RM" in timed


def test_library_reference_failure_shared_by_variants_does_not_gate(monkeypatch, tmp_path):
    def fault(label, d, idx):  # every min_times zn kernel, library included, on the 9 x 33 x 130 shape
        if label.startswith("min_times zn") and d.shape == (9, 130):
            _negate_zero(d)

    rc, out, timed = _run(monkeypatch, tmp_path, fault)
    assert rc == 0 and out["failed"] == []
    assert out["ref_failed"] == [["min_times zn", bench.ARG_ROLE], ["min_times zn M", bench.ARG_ROLE]]
    assert "min_times zn M" in timed


def test_variant_value_fault_gates(monkeypatch, tmp_path):
    def fault(label, d, idx):  # one value of the variant alone, one ulp off
        if label == "min_plus M":
            f = np.flatnonzero(np.isfinite(d))[0]
            d.flat[f] = np.nextafter(d.flat[f], np.float32(np.inf))

    rc, out, timed = _run(monkeypatch, tmp_path, fault)
    assert rc == 1 and out["failed"] == [["min_plus M", bench.ARG_ROLE]] and "min_plus M" not in timed
