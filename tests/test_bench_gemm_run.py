"""What the CUDA GEMM benches set up before their checks (``benchmarks/_gemm_run.py``), on the
host: the run's record and the JSON it writes (the committed results' format), the timed compile
and the split-k plan a tile role is checked with, against the arithmetic written out here."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import _gemm_run  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch, kernels  # noqa: E402


def test_run_record_writes_failed_as_sorted_lists(tmp_path):
    be = types.SimpleNamespace(describe=lambda: {"name": "fake"})
    path = tmp_path / "x.json"
    timer, out, rows, failed, save = _gemm_run.run_record(types.SimpleNamespace(), be, str(path))
    assert list(out) == ["device", "rows", "checks", "failed"] and rows is out["rows"]
    rows.append({"op": "r", "s": 0.5})
    failed.update({("min_plus", "s5c_b"), ("max_plus", "big")})
    save()
    got = json.loads(path.read_text())
    assert got == {"device": {"name": "fake"}, "rows": [{"op": "r", "s": 0.5}], "checks": [],
                   "failed": [["max_plus", "big"], ["min_plus", "s5c_b"]]}
    assert callable(timer)


def test_compile_all_records_wall_then_cpu(monkeypatch):
    seen = []
    monkeypatch.setattr(_gemm_run, "precompile", lambda specs, workers: seen.append((specs, workers)) or 7.5)
    out, logged = {}, []
    _gemm_run.compile_all(out, ["a", "b"], 3, logged.append)
    assert seen == [(["a", "b"], 3)]
    assert list(out["compile"]) == ["wall_s", "cpu_s"] and out["compile"]["cpu_s"] == 7.5
    assert out["compile"]["wall_s"] >= 0 and logged == [f"compiled {out['compile']}"]


@pytest.mark.parametrize(("k", "ks", "bk", "parts", "kc"), [
    (97, 1, 16, 1, 112),     # one part: k padded to whole slabs
    (600, 3, 8, 3, 200),     # 200 each, already whole slabs
    (1000, 3, 8, 3, 336),    # ceil(1000 / 3) = 334 -> 336
    (130, 4, 16, 3, 48),     # ceil(130 / 4) = 33 -> 48: three parts cover k
    (1024, 2, 16, 2, 512),
])
def test_split_plan(monkeypatch, k, ks, bk, parts, kc):
    monkeypatch.setitem(kernels.TILES, "t_test", (64, 64, bk, 4, 4, 2))
    assert _gemm_run.split_plan("t_test", k, ks) == gemm_launch.Plan("tile", "t_test", parts, kc)


def test_tile_specs_one_module_per_case_and_tile(monkeypatch):
    monkeypatch.setattr(kernels, "TILES", dict(kernels.TILES))
    cases = {"mp": ("min_plus", "ptg::MinPlus<float>", True, [((64, 64, 16, 4, 4, 2), True),
                                                                  ((64, 128, 8, 8, 8, 3), False)])}
    sp = _gemm_run.tile_specs("tst", cases, "// extra")
    assert list(sp) == [("mp", "tst_64_64_16_4_4_2_arg"), ("mp", "tst_64_128_8_8_8_3")]
    assert kernels.TILES["tst_64_128_8_8_8_3"] == (64, 128, 8, 8, 8, 3)
    s = sp[("mp", "tst_64_64_16_4_4_2_arg")]
    assert s.names == {"tst_64_64_16_4_4_2_arg":
                       "ptg::sr_gemm<ptg::MinPlus<float>, 64, 64, 16, 4, 4, 2, true>",
                       "combine": "ptg::sr_combine<ptg::MinPlus<float>, false>",
                       "combine_arg": "ptg::sr_combine<ptg::MinPlus<float>, true>"}
    assert s.code().endswith("// extra") and s.source == "semiring_gemm.cu"
    assert s.key == "tst:mp:tst_64_64_16_4_4_2_arg"
    assert sp[("mp", "tst_64_128_8_8_8_3")].names["tst_64_128_8_8_8_3"].endswith("8, 8, 8, 3, false>")
    assert _gemm_run.tile_name("tst", (1, 2, 3, 4, 5, 6), False) == "tst_1_2_3_4_5_6"


def test_tile_specs_ak_is_the_last_template_argument(monkeypatch):
    monkeypatch.setattr(kernels, "TILES", dict(kernels.TILES))
    cases = {"mx": ("max_plus", "ptg::MaxPlusDpxR", [((64, 64, 16, 4, 4, 2), True)])}
    sp = _gemm_run.tile_specs("t32", cases, ak=32)
    assert sp[("mx", "t32_64_64_16_4_4_2_arg")].names["t32_64_64_16_4_4_2_arg"] == (
        "ptg::sr_gemm<ptg::MaxPlusDpxR, 64, 64, 16, 4, 4, 2, true, 32>")
    assert _gemm_run.tile_specs("t0", cases)[("mx", "t0_64_64_16_4_4_2_arg")].names[
        "t0_64_64_16_4_4_2_arg"].endswith("4, 4, 2, true>")
