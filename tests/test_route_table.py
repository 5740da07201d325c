"""Route tables (which backend runs each size of each op) and the router built on them: decisions
from synthetic calibrations, from the committed H200 calibration, and from the defaults alone.
Expected choices come from the timings themselves (the fastest backend at a size), never from the
code under test; no GPU is needed (the router's GPU and backends are faked where it matters)."""

from __future__ import annotations

import json
import math
import types
from pathlib import Path

import numpy as np
import pytest

import pytropical_gpu as tg
from pytropical_gpu import HybridContext, _route_decide, _route_exact, calibration, calibration_cases, routing
from pytropical_gpu import route_table as rt
from pytropical_gpu.thresholds import DEFAULTS, NEVER, Thresholds

H200 = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "calibrate_h200.json"
ALL = ["cpu", "cuda", "wgpu"]


def _ctx(monkeypatch, cal, gpu="cuda", usable=ALL) -> HybridContext:
    """An auto context routing by ``cal`` (None: defaults) as on a machine whose GPU is ``gpu``."""
    monkeypatch.setattr(routing, "usable_backends", lambda include_software=False: list(usable))
    ctx = HybridContext()
    ctx._gpu = gpu
    ctx.use_calibration(cal)
    return ctx


def _fastest(per: dict, size: int, among=ALL) -> tuple[str, float]:
    times = {b: dict((int(s), t) for s, t in per[b])[size] for b in among
             if b in per and size in dict((int(s), t) for s, t in per[b])}
    b = min(times, key=times.get)
    return b, times[b]


# ---------------------------------------------------------------- building a table
def test_three_segments_with_boundaries_at_the_crossings():
    # cpu 1 ms/step-size, cuda flat 4 ms then linear, wgpu flat 10 ms and half cuda's slope
    per = {"cpu": [[10, 1e-3], [100, 1e-2], [1000, 1e-1], [10000, 1.0]],
           "cuda": [[10, 4e-3], [100, 4e-3], [1000, 2e-2], [10000, 0.2]],
           "wgpu": [[10, 1e-2], [100, 1e-2], [1000, 1.5e-2], [10000, 0.1]]}
    starts, names = rt.from_timings(per, ALL)
    assert names == ("cpu", "cuda", "wgpu")
    # cpu/cuda: ratio cpu/cuda 1/4 at 10, 2.5 at 100, linear in log size: cuda takes over where
    # cpu is (1 + TIE) times slower (cpu keeps near ties), at 10 * 10**((log 4 + log 1.03) / log 10)
    x = 10 * 10 ** ((math.log(4) + math.log(1 + rt.TIE)) / (math.log(4) + math.log(2.5)))
    assert starts[1] == math.ceil(x) or abs(starts[1] - x) < 1e-6
    assert 100 < starts[2] <= 1000  # wgpu takes over between 100 (cuda) and 1000 (wgpu)
    for s, want in ((10, "cpu"), (100, "cuda"), (1000, "wgpu"), (10 ** 9, "wgpu")):
        assert rt.lookup((starts, names), s) == want == _fastest(per, min(s, 10000))[0]


def test_near_ties_go_to_cpu_then_cuda():
    per = {"cpu": [[1, 1.02]], "cuda": [[1, 1.0]], "wgpu": [[1, 0.995]]}
    assert rt.from_timings(per, ALL) == ((0,), ("cpu",))  # within TIE of the fastest: cpu keeps it
    per["cpu"] = [[1, 2.0]]
    assert rt.from_timings(per, ALL) == ((0,), ("cuda",))
    per["wgpu"] = [[1, 0.9]]
    assert rt.from_timings(per, ALL) == ((0,), ("wgpu",))


def test_ineligible_backends_are_never_chosen():
    per = {"cpu": [[1, 1.0], [2, 2.0]], "wgpu": [[1, 0.1], [2, 0.1]]}  # e.g. a software adapter
    assert rt.from_timings(per, ["cpu"]) == rt.CPU_ONLY
    assert rt.from_timings(per, ["cpu", "wgpu"]) == ((0,), ("wgpu",))
    assert rt.from_timings({}, ALL) == rt.CPU_ONLY


def test_a_backend_that_left_the_sweep_is_extrapolated_linearly():
    # cpu stopped at 100 (over budget); at 1000 it would take 10 s against cuda's 5 s
    per = {"cpu": [[10, 0.1], [100, 1.0]], "cuda": [[10, 2.0], [100, 3.0], [1000, 5.0]]}
    assert rt.lookup(rt.from_timings(per, ALL), 1000) == "cuda"
    per["cuda"][-1] = [1000, 20.0]  # slower than cpu's extrapolated 10 s: cpu keeps it
    assert rt.from_timings(per, ALL) == rt.CPU_ONLY


def test_every_measured_size_goes_to_a_backend_near_the_fastest():
    rng = np.random.default_rng(0)
    for _ in range(300):
        sizes = np.cumprod(rng.integers(2, 9, 6)).tolist()
        per = {b: [[s, float(t)] for s, t in zip(sizes, rng.random(6) + 1e-3)] for b in ALL}
        seg = rt.from_timings(per, ALL)
        assert seg[0][0] == 0 and list(seg[0]) == sorted(set(seg[0]))
        for s in sizes:
            best, t = _fastest(per, s)
            got = dict((int(x), y) for x, y in per[rt.lookup(seg, s)])[s]
            assert got <= t * (1 + rt.TIE) + 1e-15, (per, seg, s)


def test_crossover_from_a_single_threshold():
    assert rt.from_crossover(0, "cuda") == ((0,), ("cuda",))
    assert rt.from_crossover(NEVER, "cuda") == rt.from_crossover(5, None) == rt.CPU_ONLY
    assert rt.from_crossover(5, "wgpu") == ((0, 5), ("cpu", "wgpu"))
    assert rt.first_gpu(((0, 5, 9), ("cpu", "cuda", "wgpu"))) == (5, "cuda")
    assert rt.first_gpu(rt.CPU_ONLY) == (NEVER, None)
    assert rt.describe(((0, 5), ("cpu", "cuda"))) == "cpu < 5 <= cuda"


# ---------------------------------------------------------------- the router
def _synthetic() -> Thresholds:
    per = {"cpu": [[10, 1e-3], [100, 1e-2], [1000, 1e-1]], "cuda": [[10, 4e-3], [100, 4e-3],
                                                                      [1000, 2e-2]],
           "wgpu": [[10, 1e-2], [100, 1e-2], [1000, 1e-2]]}
    return Thresholds(crossover=dict(DEFAULTS), timings={"dot": per, "matmul_int": {
        "cpu": [[10, 1.0]], "wgpu": [[10, 0.5]]}}, source="calibrated")


def test_router_follows_a_synthetic_calibration(monkeypatch):
    ctx = _ctx(monkeypatch, _synthetic())
    assert [ctx.route("dot", s) for s in (10, 100, 1000, 10 ** 9)] == ["cpu", "cuda", "wgpu", "wgpu"]
    assert ctx.route("dot_similarity", 100) == "cuda"  # an alias routes by its op
    assert ctx.route("matmul_int", 1) == "wgpu"
    # an op the calibration did not measure: the calibration's crossover, the context's GPU
    assert ctx.route("bind", DEFAULTS["bind"] - 1) == "cpu" and ctx.route("bind", DEFAULTS["bind"]) == "cuda"
    th = ctx.thresholds
    assert th["dot"] == rt.from_timings(_synthetic().timings["dot"], ALL)[0][1] and th["matmul_int"] == 0
    pinned = _ctx(monkeypatch, _synthetic())
    pinned._fixed = 7  # what cpu_threshold=7 sets: one crossover for every op, the context's GPU
    pinned._table = None
    assert pinned.route("dot", 6) == "cpu" and pinned.route("dot", 10 ** 9) == "cuda"


def test_calibrated_backend_missing_here_is_not_used(monkeypatch):
    ctx = _ctx(monkeypatch, _synthetic(), gpu="cuda", usable=["cpu", "cuda"])
    assert ctx.route("dot", 10 ** 9) == "cuda"  # wgpu's segment is not eligible here
    assert _ctx(monkeypatch, _synthetic(), gpu=None, usable=["cpu"]).route("dot", 10 ** 9) == "cpu"


def test_backend_for_picks_the_dtype_key_and_the_exact_target(monkeypatch):
    made = {}

    def fake(name):
        gemm = ("float32", "int32") if name == "wgpu" else ("float32", "int32", "float64", "int64")
        return made.setdefault(name, types.SimpleNamespace(name=name, gemm_dtypes=gemm))

    for mod in (routing, _route_decide, _route_exact):  # each module that routing's code lives in
        monkeypatch.setattr(mod, "get_backend", fake)
        monkeypatch.setattr(mod, "probe", lambda n: (n == "cuda", ""))
    ctx = _ctx(monkeypatch, _synthetic())
    f = np.ones((10, 10, 10)[:2], np.float32)
    i = np.ones((10, 10), np.int32)
    # 10x10x10 = 1000 work items: float routes by "matmul" (defaults: cpu), int by "matmul_int"
    assert ctx.backend_for("matmul", f, f).name == "cpu"
    assert ctx.backend_for("matmul", i, i).name == "wgpu"
    # a dtype wgpu lacks goes to cuda (usable here), not to cpu
    assert ctx.backend_for("matmul", i.astype(np.int64), i.astype(np.int64)).name == "cuda"
    for mod in (routing, _route_decide, _route_exact):
        monkeypatch.setattr(mod, "probe", lambda n: (False, "no"))
    assert ctx.backend_for("matmul", i.astype(np.int64), i.astype(np.int64)).name == "cpu"
    a = tg.TernaryVec.random(32 * 50, seed=0)  # 50 words each: size 100 -> cuda
    assert ctx.backend_for("dot", a, a).name == "cuda"
    assert ctx.backend_for("dot", a, a, backend="cpu").name == "cpu"


# ---------------------------------------------------------------- defaults and the H200 data
@pytest.fixture(scope="module")
def h200() -> dict:
    return json.loads(H200.read_text())


@pytest.mark.parametrize("gpu", ["cuda", "wgpu"])
def test_defaults_are_sane(monkeypatch, gpu):
    ctx = _ctx(monkeypatch, None, gpu=gpu)
    for op in DEFAULTS:
        assert ctx.route(op, 0) == ctx.route(op, 1000) == "cpu", op  # tiny work never leaves cpu
    for op in ("matmul", "matmul_int", "andor_matmul", "dot", "search", "accumulate", "harden"):
        assert ctx.route(op, 10 ** 12) == gpu, op  # huge work always does
    assert rt.defaults(gpu) == ctx.thresholds


@pytest.mark.parametrize("gpu", ["cuda", "wgpu"])
def test_defaults_hold_on_the_h200_calibration(monkeypatch, h200, gpu):
    """The defaults were read off the H200 calibration (each GPU against cpu alone): on its own
    sizes they route within 10% of the faster of cpu and that GPU (best-of-3 times)."""
    ctx = _ctx(monkeypatch, None, gpu=gpu)
    for op, per in h200["timings"].items():
        for s, _ in per["cpu"]:
            if int(s) not in dict((int(x), y) for x, y in per[gpu]):
                continue
            _, best = _fastest(per, int(s), ["cpu", gpu])
            got = dict((int(x), y) for x, y in per[ctx.route(op, int(s))])[int(s)]
            assert got <= 1.10 * best, (op, s, ctx.route(op, int(s)))


def test_h200_calibration_routes_the_issue_rows(monkeypatch, h200):
    """Issue 13's rows on the H200: andor_matmul 256^3 left on cpu (defaults 2^24: 10x slower), dot
    of 2^22 trits, min_plus 2048^3; and every measured size within TIE of the fastest."""
    ctx = _ctx(monkeypatch, Thresholds.from_json(h200))
    assert ctx.route("andor_matmul", 256 ** 3 // 32) == "cuda"
    assert ctx.route("matmul", 2048 ** 3) == "cuda"
    dot = rt.from_timings(h200["timings"]["dot"], ALL)
    assert ctx.route("dot", 2 * (1 << 17)) == rt.lookup(dot, 2 * (1 << 17))
    for op, per in h200["timings"].items():
        for s, _ in per["cpu"]:
            _, best = _fastest(per, int(s))
            got = dict((int(x), y) for x, y in per[ctx.route(op, int(s))])[int(s)]
            assert got <= best * (1 + rt.TIE) + 1e-12, (op, s)
    # defaults alone sent andor_matmul 256^3 to cpu before (2^24); now to cuda
    assert _ctx(monkeypatch, None).route("andor_matmul", 256 ** 3 // 32) == "cuda"


# ---------------------------------------------------------------- the calibration sweep
def test_sweep_keeps_both_gpus_and_refines_the_crossovers(monkeypatch):
    """A model machine: cpu linear, cuda and wgpu a launch cost plus a slope (wgpu the smaller
    slope). cpu leaves once it has lost clearly twice, both GPUs go on, sizes are added where the
    winner changes, and the table built from it routes every size within 10% of the model's best."""
    model = {"cpu": lambda s: 1e-7 * s, "cuda": lambda s: 1e-4 + 1e-9 * s,
             "wgpu": lambda s: 4e-4 + 4e-10 * s}
    monkeypatch.setattr(calibration_cases, "build", lambda op, p, rng, ctx=None: (
        (lambda be: (be, calibration_cases.build_size(op, p))), calibration_cases.build_size(op, p)))
    monkeypatch.setattr(calibration, "_time", lambda call, repeats, budget: model[call()[0]](call()[1]))
    import pytropical_gpu.backends as backends

    monkeypatch.setattr(backends, "get_backend", lambda n: None)  # calibrate's "can it run" check
    monkeypatch.setattr(calibration, "describe_backend", lambda n: {"device": n, "software": False})
    t = calibration.calibrate(ALL, ["bind"], progress=False, save=False, budget_s=10.0)
    per = t.timings["bind"]
    sizes = {b: [int(s) for s, _ in per[b]] for b in per}
    assert max(sizes["cpu"]) < max(sizes["cuda"]) == max(sizes["wgpu"])  # cpu left, GPUs went on
    sweep = {calibration_cases.build_size("bind", p) for p in calibration_cases.steps("bind")}
    assert set(sizes["cuda"]) - sweep  # refinement sizes were added
    seg = rt.from_timings(per, ALL)
    assert seg[1] == ("cpu", "cuda", "wgpu")
    for s in np.geomspace(32, 3e7, 200).astype(int):
        best = min(f(s) for f in model.values())
        assert model[rt.lookup(seg, int(s))](s) <= 1.10 * best, (s, seg)


def test_bench_auto_runs_and_checks(tmp_path):
    """benchmarks/bench_auto.py end to end on one op with a tiny budget: rows with the ratios, every
    backend's result agreeing, and the JSON written."""
    from benchmarks import bench_auto

    out = tmp_path / "auto.json"
    assert bench_auto.main(["--ops", "dot", "--budget", "0.002", "--repeats", "3", "--cell", "0",
                            "--json", str(out), "--quiet"]) == 0
    doc = json.loads(out.read_text())
    assert doc["eligible"][0] == "cpu" and doc["rows"] and all(r["agree"] for r in doc["rows"])
    for r in doc["rows"]:
        assert r["fastest_eligible"] in doc["eligible"] and r["routes"]["auto"] in doc["eligible"]
        # auto is timed where its route ran at this size; a route the budget skipped has no ratio
        if r["routes"]["auto"] in r["skipped"]:
            assert r["ratio_auto"] is None and r["verdict"] is None
        else:
            assert r["ratio_auto"] > 0
