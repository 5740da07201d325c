"""benchmarks/bench_batch_s5.py end to end on a few calls (both plans): its checks pass (the
timestamped submits and session 4's submit give numpy's bits), every row is there, the GPU
timestamps are read where the adapter has them, and session 4's functions are put back."""

from __future__ import annotations

import json

import pytest

from conftest import require_backend


def test_bench_batch_s5_both_plans(tmp_path):
    require_backend("wgpu")
    from benchmarks import bench_batch_s5 as b5
    from pytropical_gpu.backends.wgpu import bindgroups, runtime, runtime_wgpupy

    if runtime.implementation() != "wgpu":
        pytest.skip("the timestamped submit is wgpu-py's")
    if runtime_wgpupy._raw() is None:
        pytest.skip("the timestamped submit needs wgpu-py 0.32's raw API (another wgpu-py here)")
    for plan in ("diagnose", "compare", "tiles"):
        out = tmp_path / f"{plan}.json"
        assert b5.main(["--plan", plan, "--ops", "8", "--repeats", "1", "--rounds", "2",
                        "--json", str(out)]) == 0
        doc = json.loads(out.read_text())
        got = {(r["op"], r["variant"]): r for r in doc["rows"]}
        if plan == "diagnose":
            want = [("min_plus", v) for v in ("s4", "gc_off", "stub", "stub_gc_off", "s4_again",
                                              "tile_t32_bk8")] + [("bind", "s4")]
        elif plan == "tiles":
            want = [("min_plus", f"tile_{t}_r{i}") for t in ("t32_bk8", "t32_bk8_pf2")
                    for i in range(2)]
        else:
            want = [(op, f"{v}_round{i}") for op in ("min_plus", "bind") for v in ("s4", "s5")
                    for i in range(2)] + [("min_plus", "s5_last"), ("min_plus", "stub_s5")]
        for key in want:
            assert key in got, key
        if "pass" in doc["timestamp_modes"] and plan != "tiles":
            name = "ts_pass" if plan == "diagnose" else "s5_ts_pass"
            spans = got[("min_plus", name)]["gpu_span_us_per_op_each"]
            assert spans and all(s > 0 for s in spans)
    # the session-4 submit is swapped in only while its context is active
    assert runtime_wgpupy.pack_uniforms is runtime.pack_uniforms
    assert runtime_wgpupy.lookup is bindgroups.lookup
    assert runtime_wgpupy.uniform_keys is bindgroups.uniform_keys
    assert "timestamp-query-inside-passes" not in runtime_wgpupy._OPTIONAL_FEATURES
