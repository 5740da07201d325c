"""benchmarks/bench_batch_end.py end to end on a few calls: its checks pass, both variants are
measured with the flushing rule on and off, and it leaves the words switch, the adapter's flag and
the pool as it found them."""

from __future__ import annotations

import gc
import json

from conftest import require_backend


def test_bench_batch_end_measures_both_variants(tmp_path):
    require_backend("wgpu")
    from benchmarks import bench_batch_end as bb
    from pytropical_gpu.backends import get_backend
    from pytropical_gpu.backends.wgpu import stats

    eng = get_backend("wgpu").engine
    flag, rt = eng.flushes_subnormals, eng.rt
    out = tmp_path / "end.json"
    assert bb.main(["--ops", "12", "--rounds", "2", "--json", str(out)]) == 0
    assert stats.WORDS and eng.flushes_subnormals == flag and eng.rt is rt
    gc.collect()  # nothing of its own kept (tests/test_wgpu_engine.py's pool test after it failed)
    assert eng.pool.live_bytes == sum(c for c, _ in eng.pool.returned)  # (given back, not drained)
    rows = json.loads(out.read_text())["rows"]
    got = {(r["variant"], r["flushing"]) for r in rows}
    for flushing in (True, False):
        for v in ("dicts", "words", "ratio_words_over_dicts"):
            assert (v, flushing) in got
    for r in rows:
        if "end_us_per_op" in r:
            assert r["end_us_per_op"] > 0 and r["facts_read_us_per_op"] > 0
        else:
            assert r["micro_ratio"] > 0 and r["end_ratio"] > 0
