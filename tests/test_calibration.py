"""calibrate(): which backends it measures, the crossover rule, the cache file (round trip,
fingerprint, corruption) and the progress bar. Sweeps are cut to a few sizes so each test runs in
seconds; the crossover rule is checked on hand-made timings."""

from __future__ import annotations

import json
import logging
import math
import sys
import time
import types

import numpy as np
import pytest

import pytropical_gpu as tg
from pytropical_gpu import calibration, calibration_cases, thresholds
from pytropical_gpu.backends import probe
from pytropical_gpu.calibration import OPS, calibrate, crossover, usable_backends
from pytropical_gpu.thresholds import DEFAULTS, NEVER, Thresholds, load_thresholds


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Every test gets its own cache dir (never the user's)."""
    monkeypatch.setenv("PYTROPICAL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / thresholds.CACHE_FILE


def _software_wgpu() -> bool:
    return probe("wgpu")[0] and tg.get_backend("wgpu").describe()["software"]


# ---------------------------------------------------------------- the crossover rule
def test_crossover_gpu_wins_everywhere_is_zero():
    assert crossover([[10, 1.0], [100, 2.0]], [[10, 0.5], [100, 2.0]]) == 0  # a tie counts as a win


def test_crossover_gpu_never_wins_or_loses_at_the_end():
    assert crossover([[10, 1.0], [100, 2.0]], [[10, 3.0], [100, 2.5]]) == NEVER
    # wins in the middle do not count when the largest size is lost (noise, or a worse kernel there)
    assert crossover([[1, 1.0], [10, 1.0], [100, 1.0]], [[1, 2.0], [10, 0.5], [100, 1.5]]) == NEVER
    assert crossover([[10, 1.0]], []) == NEVER  # no common size
    assert crossover([], [[10, 1.0]]) == NEVER


def test_crossover_interpolates_between_the_losing_and_the_winning_size():
    # ratio gpu/cpu 2 at 100, 1/2 at 1000: log-log midpoint sqrt(100 * 1000) = 316.2 -> 317
    assert crossover([[100, 1.0], [1000, 10.0]], [[100, 2.0], [1000, 5.0]]) == 317
    # a lone early win before a loss is ignored: the crossing is after the last loss
    c = crossover([[1, 1.0], [10, 1.0], [100, 1.0], [1000, 1.0]],
                  [[1, 0.5], [10, 3.0], [100, 0.9], [1000, 0.1]])
    assert 10 < c <= 100
    # a win by a hair right after the loss: the crossing sits just below the winning size
    c = crossover([[10, 1.0], [100, 1.0]], [[10, 1e6], [100, 0.999]])
    assert 90 < c <= 100


def test_the_crossover_sends_every_measured_size_to_the_faster_side():
    rng = np.random.default_rng(0)
    for _ in range(200):
        sizes = np.cumprod(rng.integers(2, 9, 6)).tolist()
        cpu = [[s, float(t)] for s, t in zip(sizes, rng.random(6))]
        gpu = [[s, float(t)] for s, t in zip(sizes, rng.random(6))]
        c = crossover(cpu, gpu)
        for (s, tc), (_, tg_) in zip(cpu, gpu):
            if s >= c:  # routed to the GPU: it is at least as fast there
                assert tg_ <= tc, (cpu, gpu, c)
        if c == NEVER:
            assert gpu[-1][1] > cpu[-1][1]


def test_best_gpu_is_the_one_with_the_smaller_crossover():
    timings = {"bind": {"cpu": [[10, 1.0], [100, 1.0]], "cuda": [[10, 0.5], [100, 0.5]],
                        "wgpu": [[10, 2.0], [100, 0.5]]},
               "dot": {"cpu": [[10, 1.0]], "wgpu": [[10, 2.0]]}}
    cross, best = calibration._derive(timings, ["cuda", "wgpu"])
    assert (cross["bind"], best["bind"]) == (0, "cuda")
    assert (cross["dot"], best["dot"]) == (NEVER, None)


# ---------------------------------------------------------------- the Thresholds table
def test_defaults_match_hybridcontext_table():
    from pytropical_gpu.hybrid import DEFAULT_THRESHOLDS

    t = Thresholds.defaults()
    assert {k: t.threshold(k) for k in DEFAULT_THRESHOLDS} == DEFAULT_THRESHOLDS
    assert set(t.as_dict()) == set(DEFAULTS) == set(OPS)


def test_route_by_threshold_dtype_and_gpu():
    t = Thresholds(crossover={"matmul": 100, "matmul_int": 1000}, gpu={"matmul": "cuda",
                                                                     "matmul_int": "wgpu"})
    assert t.route("matmul", 99) == "cpu" and t.route("matmul", 100) == "cuda"
    assert t.route("matmul", 500, dtype=np.int32) == "cpu"
    assert t.route("matmul", 1000, dtype=np.dtype("int32")) == "wgpu"
    assert t.route("bind", DEFAULTS["bind"]) == "cpu"  # no GPU named and none given
    assert t.route("bind", DEFAULTS["bind"], default_gpu="cuda") == "cuda"
    with pytest.raises(ValueError, match="unknown op 'transpose'"):
        t.route("transpose", 1)


# ---------------------------------------------------------------- measuring
def test_sizes_are_in_hybridcontext_route_units(monkeypatch):
    """Each workload's size is exactly what HybridContext routes the same call by, on the full path
    (``_measure``) and on the lean one (``lean_size``, with its route key)."""
    from pytropical_gpu._route_lean import lean_size
    from pytropical_gpu._route_measure import _measure
    from pytropical_gpu.hybrid import OP_ALIASES, HybridContext

    seen = []
    monkeypatch.delenv("PYTROPICAL_BACKEND", raising=False)
    monkeypatch.setattr(HybridContext, "_be", lambda self, op, operands, backend, semiring=None:
                        seen.append((op, operands)) or tg.get_backend("cpu"))
    rng = np.random.default_rng(1)
    ctx = HybridContext()
    for op in OPS:
        p = calibration_cases.steps(op)[1]
        call, size = calibration_cases.build(op, p, rng, ctx=ctx)
        assert size == calibration_cases.build_size(op, p)
        seen.clear()
        call(None)
        assert len(seen) == 1, (op, seen)
        routed_op, operands = seen[0]
        assert OP_ALIASES.get(routed_op, routed_op) == op or (op == "matmul_int" and routed_op == "matmul")
        assert _measure(routed_op, operands)[0] == size, op
        assert lean_size(routed_op, operands) == (op, size), op  # numpy operands: the lean path


def test_cases_call_the_context_current_at_call_time():
    """A case looks its verb up when called, so a context switched between calls (bench_auto's
    calibrated and defaults-only ones) routes each call itself (bind/dot/cosine once bound the
    context current when the case was built: both columns then timed one context)."""
    seen = []

    class Verbs:
        def __init__(self, name):
            self.name = name

        def __getattr__(self, verb):
            return lambda *a, **k: seen.append((self.name, verb))

    class Switch:
        ctx: object = Verbs("at build")

        def __getattr__(self, verb):
            return getattr(self.ctx, verb)

    sw, rng = Switch(), np.random.default_rng(2)
    for op in OPS:
        sw.ctx = Verbs("at build")
        call, _ = calibration_cases.build(op, calibration_cases.steps(op)[0], rng, ctx=sw)
        sw.ctx = Verbs("at call")
        seen.clear()
        call(None)
        assert [who for who, _ in seen] == ["at call"], (op, seen)


def test_cpu_only_calibration_round_trip(cache):
    t = calibrate(["cpu"], ["bind", "pack"], progress=False, max_steps=2, repeats=1)
    assert set(t.timings) == {"bind", "pack"} and set(t.timings["bind"]) == {"cpu"}
    sizes = [s for s, _ in t.timings["bind"]["cpu"]]
    assert len(sizes) == 2 and sizes[0] < sizes[1]
    assert all(sec > 0 and math.isfinite(sec) for _, sec in t.timings["bind"]["cpu"])
    assert t.crossover["bind"] == NEVER and t.gpu["bind"] is None  # no GPU: everything on cpu
    assert t.crossover["matmul"] == DEFAULTS["matmul"]  # not measured: the default
    assert cache.exists()
    back = load_thresholds(["cpu"])
    assert back is not None and back.source == "calibrated"
    assert (back.crossover, back.gpu, back.timings, back.devices, back.fingerprint) == \
        (t.crossover, t.gpu, t.timings, t.devices, t.fingerprint)


def test_nothing_saved_without_save(cache):
    calibrate(["cpu"], ["dot"], progress=False, save=False, max_steps=1, repeats=1)
    assert not cache.exists() and load_thresholds(["cpu"]) is None


def test_budget_stops_the_sweep():
    t = calibrate(["cpu"], ["bind"], progress=False, save=False, repeats=1, budget_s=1e-9)
    assert len(t.timings["bind"]["cpu"]) == 1  # the first call already ran over


def test_default_backends_never_include_a_software_adapter():
    names = usable_backends()
    assert names[0] == "cpu"
    for n in names[1:]:
        assert not thresholds.describe_backend(n)["software"], n
    if _software_wgpu():
        assert "wgpu" not in names and "wgpu" in usable_backends(include_software=True)
        t = calibrate(None, ["permute"], progress=False, save=False, max_steps=1, repeats=1)
        assert "wgpu" not in t.timings.get("permute", {}) and "wgpu" not in t.devices


def test_software_adapter_measured_when_asked_and_recorded(caplog):
    if not _software_wgpu():
        pytest.skip("needs a software wgpu adapter (lavapipe)")
    with caplog.at_level(logging.INFO, logger="pytropical_gpu"):
        t = calibrate(["wgpu"], ["bind", "matmul"], progress=False, max_steps=2, repeats=1)
    assert t.devices["wgpu"]["software"] is True and t.devices["cpu"]["software"] is False
    assert len(t.timings["bind"]["wgpu"]) == len(t.timings["bind"]["cpu"]) == 2
    assert any("software" in r.getMessage() for r in caplog.records)
    # its table is kept under its own fingerprint: the default (hardware-only) lookup does not see it
    assert load_thresholds(["cpu", "wgpu"]) is not None
    assert load_thresholds(["cpu"]) is None


def test_every_backend_is_measured(backend):
    """A short sweep on each usable backend (cuda and a hardware adapter on the GPU machine)."""
    t = calibrate([backend], ["matmul", "bind", "search"], progress=False, save=False, max_steps=2,
                  repeats=1)
    want = {"cpu", backend}
    for op in ("matmul", "bind", "search"):
        assert set(t.timings[op]) == want and all(len(v) == 2 for v in t.timings[op].values()), op
        c = t.crossover[op]
        assert isinstance(c, int) and c >= 0
        assert (t.gpu[op] is None) == (c == NEVER) and t.gpu[op] in (None, backend if backend != "cpu"
                                                                     else None)
    assert t.devices[backend]["software"] == (backend == "wgpu" and _software_wgpu())
    assert t.errors == []


def test_default_with_no_gpu_measures_nothing(monkeypatch):
    monkeypatch.setattr(calibration, "usable_backends", lambda include_software=False: ["cpu"])
    t0 = time.perf_counter()
    t = calibrate(progress=False)
    assert time.perf_counter() - t0 < 5
    assert t.timings == {} and t.as_dict() == DEFAULTS and t.route("matmul", 10**15) == "cpu"
    assert load_thresholds(["cpu"]) is not None  # saved: the next context need not ask again


@pytest.mark.parametrize("kw, match", [
    ({"ops": ["bind", "fft"]}, "unknown ops"), ({"ops": []}, "unknown ops"),
    ({"repeats": 0}, "repeats"), ({"budget_s": 0}, "budget_s"), ({"budget_s": "1"}, "budget_s"),
    ({"max_steps": 0}, "max_steps"), ({"backends": ["tpu"]}, "unknown backend 'tpu'"),
])
def test_bad_arguments_raise_before_measuring(kw, match):
    kw = {"backends": ["cpu"], "progress": False, "save": False, **kw}
    with pytest.raises(ValueError, match=match):
        calibrate(**kw)


def test_unavailable_backend_raises():
    if probe("cuda")[0]:
        pytest.skip("cuda is available here")
    with pytest.raises(tg.BackendUnavailableError):
        calibrate(["cuda"], ["bind"], progress=False, save=False)


# ---------------------------------------------------------------- the cache file
def test_fingerprint_mismatch_is_ignored(monkeypatch):
    calibrate(["cpu"], ["dot"], progress=False, max_steps=1, repeats=1)
    assert load_thresholds(["cpu"]) is not None
    version = thresholds.library_version
    monkeypatch.setattr(thresholds, "library_version", lambda: "999.0")  # a new release
    assert load_thresholds(["cpu"]) is None
    monkeypatch.setattr(thresholds, "library_version", version)
    assert load_thresholds(["cpu"]) is not None
    real = thresholds.describe_backend
    monkeypatch.setattr(thresholds, "describe_backend",
                        lambda n: {**real(n), "device": "another CPU"})  # another machine
    assert load_thresholds(["cpu"]) is None


def test_entries_of_other_machines_are_kept(cache):
    cache.parent.mkdir(parents=True)
    other = Thresholds(crossover={"bind": 5}, fingerprint="other-machine")
    cache.write_text(json.dumps({"format": thresholds.FORMAT, "entries": {"other-machine": other.to_json()}}))
    t = calibrate(["cpu"], ["dot"], progress=False, max_steps=1, repeats=1)
    entries = json.loads(cache.read_text())["entries"]
    assert set(entries) == {"other-machine", t.fingerprint}


@pytest.mark.parametrize("text", [
    "{not json", "[1, 2]", json.dumps({"format": 0, "entries": {}}), "\x00\xff",
])
def test_corrupt_file_is_logged_and_ignored(cache, caplog, text):
    cache.parent.mkdir(parents=True)
    cache.write_text(text, encoding="latin-1")
    with caplog.at_level(logging.WARNING, logger="pytropical_gpu"):
        assert load_thresholds(["cpu"]) is None
    assert any(r.levelno == logging.WARNING and str(cache) in r.getMessage() for r in caplog.records)
    calibrate(["cpu"], ["dot"], progress=False, max_steps=1, repeats=1)  # overwrites it
    assert load_thresholds(["cpu"]) is not None


@pytest.mark.parametrize("bad", [{"crossover": {"bind": -1}}, {"crossover": {"fft": 1}},
                                 {"crossover": {"bind": "big"}}, {"crossover": 3}, "entry",
                                 {"crossover": {}, "gpu": []}, {"crossover": {}, "surprise": 1}])
def test_corrupt_entry_is_logged_and_ignored(cache, caplog, bad):
    t = calibrate(["cpu"], ["dot"], progress=False, max_steps=1, repeats=1)
    data = json.loads(cache.read_text())
    data["entries"][t.fingerprint] = bad
    cache.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING, logger="pytropical_gpu"):
        got = load_thresholds(["cpu"])
    if bad == {"crossover": {}, "surprise": 1}:  # an unknown key from a newer layout: ignored
        assert got is not None and got.crossover == {}
        return
    assert got is None
    assert any(r.levelno == logging.WARNING for r in caplog.records)


def test_unwritable_cache_dir_logs_and_still_returns(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("PYTROPICAL_CACHE_DIR", str(blocker / "sub"))  # a file where a dir should be
    with caplog.at_level(logging.WARNING, logger="pytropical_gpu"):
        t = calibrate(["cpu"], ["dot"], progress=False, max_steps=1, repeats=1)
    assert t.timings["dot"]["cpu"]
    assert any("cannot write" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- progress
def test_progress_off_writes_nothing(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    calibrate(["cpu"], ["dot"], progress=False, save=False, max_steps=1, repeats=1)
    assert capsys.readouterr().err == ""


def test_progress_plain_lines_without_tqdm(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm fails
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    calibrate(["cpu"], ["dot", "bind"], progress=True, save=False, max_steps=1, repeats=1)
    err = capsys.readouterr().err
    assert "calibrate: 0/2 ops done; dot on cpu" in err and "calibrate: 2/2 ops done" in err


def test_progress_uses_tqdm_when_installed(capsys, monkeypatch):
    bars = []

    class FakeBar:
        def __init__(self, total, **kw):
            self.total, self.n, self.notes, self.closed = total, 0, [], False
            bars.append(self)

        def update(self, k):
            self.n += k

        def set_postfix_str(self, s):
            self.notes.append(s)

        def close(self):
            self.closed = True

    auto = types.ModuleType("tqdm.auto")
    auto.tqdm = FakeBar
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", auto)
    calibrate(["cpu"], ["dot", "bind", "pack"], progress=True, save=False, max_steps=2, repeats=1)
    (bar,) = bars
    assert (bar.total, bar.n, bar.closed) == (3, 3, True)
    assert any(n.startswith("pack on cpu") for n in bar.notes)
    assert capsys.readouterr().err == ""  # tqdm draws; no plain lines besides it


def test_the_next_context_routes_by_the_saved_calibration(cache, monkeypatch):
    """calibrate() saves; a new context on the same machine loads it the first time "auto" routes
    to a GPU (the GPU is faked so this runs on a machine without one), and an explicit
    cpu_threshold still wins."""
    from pytropical_gpu import HybridContext, routing, thresholds

    monkeypatch.setattr(routing, "usable_backends", lambda include_software=False: ["cpu"])
    t = calibrate(["cpu"], ["bind"], progress=False, max_steps=2, repeats=1)
    assert t.crossover["bind"] == NEVER
    ctx = HybridContext()
    monkeypatch.setattr(ctx, "_gpu", "cuda")  # pretend "auto" has a GPU to route to
    big = 10 * DEFAULTS["bind"]
    assert ctx.route("bind", big) == "cpu"  # the measured crossover: the GPU never won bind
    assert ctx.thresholds["bind"] == NEVER
    assert ctx.route("matmul", 10 * DEFAULTS["matmul"]) == "cuda"  # not measured: the default
    pinned = HybridContext(cpu_threshold=5)
    monkeypatch.setattr(pinned, "_gpu", "cuda")
    assert pinned.route("bind", big) == "cuda"
    monkeypatch.setattr(thresholds, "cache_dir", lambda: cache.parent / "elsewhere")
    fresh = HybridContext()
    monkeypatch.setattr(fresh, "_gpu", "cuda")
    assert fresh.route("bind", big) == "cuda"  # nothing saved there: the defaults
