"""benchmarks/bench_batch_s4.py end to end on a few calls: its checks pass, every variant is
measured, the hooked parts of each whole batch add up to it, and the stub rows touch no device."""

from __future__ import annotations

import json

import pytest

from conftest import require_backend


def test_bench_batch_s4_parts_add_up(tmp_path):
    require_backend("wgpu")
    from benchmarks import bench_batch_s4 as bs
    from pytropical_gpu.backends.wgpu import fastpath

    out = tmp_path / "s4.json"
    assert bs.main(["--ops", "12", "--repeats", "2", "--flush", "5", "--json", str(out)]) == 0
    from pytropical_gpu.backends.wgpu import fastgemm

    assert fastpath.ENABLED and fastpath.FUSED_FACTS_GROUPS == 64  # left as it found them
    assert fastgemm.PLANS
    rows = json.loads(out.read_text())["rows"]
    got = {(r["op"], r["variant"]) for r in rows}
    for op, variants in (("bind", ("fused", "generic")),
                         ("min_plus", ("fused", "records", "separate", "generic"))):
        for v in variants + ("flush5", "parts_fused", "fused_again"):
            assert (op, v) in got
        for v in variants:
            assert (op, f"stub_{v}") in got
    for r in rows:
        if "whole_us_per_op" in r:  # the parts (gc apart: it overlaps them) add up to the batch
            assert r["parts_sum_us_per_op"] == pytest.approx(r["whole_us_per_op"], rel=0.1)
            assert r["in_block_us_per_op"] > 0
        if "bindgroup_hits" in r:  # the stub runtime binds nothing; the real one finds its groups
            stub = r["variant"].startswith("stub_")
            assert (r["bindgroup_hits"] == r["bindgroup_misses"] == 0) == stub
