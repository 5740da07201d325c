"""The CUDA-event timer of the suites and benchmark scripts (``pytropical_gpu.bench.gputime``)
and what is built on it, run on a stand-in for CuPy whose events read a clock that each timed call
moves on by a known amount: which calls fall between the events, the division by ``inner``, the
statistics, ``cupy_time``, the GEMM benches' ``Timer``, and the cuda row that
``bench_wgpu_gemm_s5`` and ``bench_wgpu_vs_cuda_s6`` record (its keys and their order are the
recorded JSON's format)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_gemm_sweep  # noqa: E402

from pytropical_gpu.bench import gputime  # noqa: E402


def fake_cupy(durations_ms):
    """A CuPy stand-in: the clock (ms) moves on by the next of ``durations_ms`` at each call of the
    returned ``fn``; an event holds the clock at its ``record``; ``waits`` counts synchronize."""
    state = {"now": 0.0, "i": 0, "waits": 0, "device_waits": 0}

    class Event:
        def record(self):
            self.t = state["now"]

        def synchronize(self):
            state["waits"] += 1

    def fn():
        state["now"] += durations_ms[state["i"]]
        state["i"] += 1

    def device():
        return types.SimpleNamespace(synchronize=lambda: state.update(device_waits=state["device_waits"] + 1))

    cuda = types.SimpleNamespace(Event=Event, Device=device, get_elapsed_time=lambda e0, e1: e1.t - e0.t)
    return types.SimpleNamespace(cuda=cuda), fn, state


def test_event_times_leave_out_warmup_and_divide_by_inner():
    durations = [1000.0, 900.0] + [4.0, 8.0, 2.0, 6.0, 1.0, 1.0, 1.0, 5.0, 10.0, 20.0, 30.0, 40.0]
    cp, fn, state = fake_cupy(durations)
    ts = gputime.event_times(cp, fn, 3, warmup=2, inner=4)
    assert state["i"] == len(durations) and state["waits"] == 3
    assert ts == pytest.approx([20.0 / 4 / 1e3, 8.0 / 4 / 1e3, 100.0 / 4 / 1e3], rel=1e-12)


def test_event_times_call_before_outside_the_events():
    cp, fn, state = fake_cupy([50.0, 3.0, 7.0])
    calls = []

    def before():  # a spin the events must not see: the clock moves on before the first event
        calls.append(1)
        state["now"] += 1000.0

    assert gputime.event_times(cp, fn, 2, before=before) == pytest.approx([3e-3, 7e-3], rel=1e-12)
    assert len(calls) == 2 and state["i"] == 3


def test_event_times_defaults_one_warmup_one_call_a_rep():
    cp, fn, state = fake_cupy([50.0, 3.0, 7.0])
    assert gputime.event_times(cp, fn, 2) == pytest.approx([3e-3, 7e-3], rel=1e-12)
    assert state["i"] == 3


def test_median_quartiles_interpolate_between_order_statistics():
    # 7 values: the median is the 4th smallest, the quartiles halfway between the 2nd and 3rd,
    # the 5th and 6th (linear interpolation at rank 1.5 and 4.5 of 0..6)
    assert gputime.median_quartiles([5.0, 1.0, 4.0, 2.0, 3.0, 7.0, 6.0]) == (4.0, 2.5, 5.5)
    assert gputime.median_quartiles([2.0, 8.0]) == (5.0, 3.5, 6.5)


def test_cupy_time_waits_once_then_times_reps_calls_a_repeat():
    cp, fn, state = fake_cupy([100.0, 1.0, 3.0, 2.0, 2.0, 10.0, 20.0])
    t = gputime.cupy_time(cp, fn, 2, repeats=3)
    assert state["device_waits"] == 1 and state["waits"] == 3 and state["i"] == 7
    # per call 2, 2, 15 ms: the median 2, the 20 % quantile 2, the 80 % one 2 + 0.6 x 13
    assert t.n == 3
    assert [t.median, t.q20, t.q80] == pytest.approx([2e-3, 2e-3, 9.8e-3], rel=1e-12)


def test_gemm_timer_is_the_median_of_event_times():
    cp, fn, _ = fake_cupy([99.0, 3.0, 3.0, 9.0, 9.0, 1.0, 1.0])
    assert bench_gemm_sweep.Timer(cp)(fn, 3, inner=2) == pytest.approx(3e-3, rel=1e-12)


def test_cuda_row_keys_and_values(monkeypatch):
    import bench_wgpu_gemm_s5 as s5

    cp, fn, _ = fake_cupy([100.0, 5.0, 1.0, 4.0, 2.0, 3.0, 7.0, 6.0])
    monkeypatch.setitem(s5.OUT, "cuda", [])
    s5.cuda_row(cp, fn, 64, "cuda big3 min_plus (before)", True)
    (r,) = s5.OUT["cuda"]
    assert list(r) == ["label", "median_ms", "q1_ms", "q3_ms", "tops", "ok", "m"]
    assert r["label"] == "cuda big3 min_plus (before)" and r["ok"] is True and r["m"] == 64
    assert [r["median_ms"], r["q1_ms"], r["q3_ms"]] == pytest.approx([4.0, 2.5, 5.5], rel=1e-12)
    assert r["tops"] == pytest.approx(2 * 64**3 / 4.0 / 1e9, rel=1e-12)


def test_cuda_operands_seeded_and_sampled():
    import bench_wgpu_gemm_s5 as s5

    a, b, dev, rows = s5.cuda_operands(types.SimpleNamespace(asarray=np.asarray), 16)
    rng = np.random.default_rng(0)
    want_a = (rng.integers(-1000, 1000, (16, 16)) / 8).astype(np.float32)
    assert np.array_equal(a, want_a) and b.dtype == np.float32 and b.shape == (16, 16)
    assert dev[0].shape == (1, 16, 16) and np.array_equal(dev[1][0], b)
    assert len(rows) == 2 and len(set(rows.tolist())) == 2 and rows.max() < 16
