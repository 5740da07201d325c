"""The GEMM benches' shared same-run baselines (``bench_gemm_sweep.baselines``), run on a numpy
stand-in for CuPy with a fake timer: the rows every bench records, the copy rate it returns, and
that it draws the SGEMM operands from the caller's generator (the later draws depend on it)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_gemm_sweep  # noqa: E402


def test_baselines_record_copy_and_each_sgemm_size():
    fake_cp = types.SimpleNamespace(ones=np.ones, empty=np.empty, copyto=np.copyto,
                                    asarray=np.asarray, float32=np.float32)
    calls = []

    def timer(fn, reps, inner=1):
        fn()
        calls.append(inner)
        return 0.25

    rows, logged = [], []
    rng = np.random.default_rng(1)
    bw = bench_gemm_sweep.baselines(fake_cp, timer, rows, logged.append, (64, 32, 64), rng,
                                    nbytes=1 << 20)
    assert bw == 2 * (1 << 20) / 0.25
    assert [r["op"] for r in rows] == ["device copy", "cuBLAS SGEMM", "cuBLAS SGEMM"]
    assert [r["size"] for r in rows] == ["0.000976562 GiB", "32^3", "64^3"]
    assert rows[2]["TFLOPS"] == 2 * 64**3 / 0.25 / 1e12
    assert calls == [1, 10, 10] and len(logged) == 3
    want = np.random.default_rng(1)
    for s in (32, 64):
        want.standard_normal((s, s), dtype=np.float32)
        want.standard_normal((s, s), dtype=np.float32)
    assert rng.random() == want.random()
