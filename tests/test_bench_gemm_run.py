"""What the CUDA GEMM benches set up before their checks (``benchmarks/_gemm_run.py``), on the
host: the run's record and the JSON it writes (the committed results' format), the timed compile
and the split-k plan a tile role is checked with, against the arithmetic written out here."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
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


class _Dev(np.ndarray):
    """A host array standing for a device one: ``get()`` is the copy back."""

    def get(self):
        return np.array(self)


def _dev(x):
    return np.asarray(x)[None].view(_Dev)


def _check(record, d, idx, want, widx, bits=False, failed=None):
    out, logged, failed = {"checks": []}, [], set() if failed is None else failed
    ok = _gemm_run.check_run(out, failed, logged.append, record, _dev(d), None if idx is None else _dev(idx),
                             want, widx, bits)
    return ok, out["checks"], logged, failed


REC = {"name": "max_plus", "role": "s8i_run16", "kind": "ties", "shape": [5, 70, 3], "ks": 2, "c": True}


def test_check_run_pass_appends_the_record_with_ok_last():
    want = np.array([[1, -2], [3, 4]], np.int32)
    ok, checks, logged, failed = _check(REC, want.copy(), np.array([[0, 5], [1, -1]], np.int32), want,
                                        np.array([[0, 5], [1, -1]], np.int32))
    assert ok is True and logged == [] and failed == set()
    assert checks == [{**REC, "ok": True}] and list(checks[0]) == [*REC, "ok"]


@pytest.mark.parametrize("what", ["value", "index"])
def test_check_run_failure_logs_the_line_and_the_variant(what):
    want, widx = np.array([[1, 2]], np.int32), np.array([[0, 3]], np.int32)
    d = want + np.array([[0, what == "value"]], np.int32)
    idx = widx + np.array([[what == "index", 0]], np.int32)
    rec = {"case": "max_times zn", "tag": "t", "kind": "late", "shape": [9, 33, 130], "ks": 1, "c": False}
    ok, checks, logged, failed = _check(rec, d, idx, want, widx, failed={("x", "y")})
    assert ok is False and checks == [{**rec, "ok": False}]
    assert logged == ["CHECK FAILED max_times zn t late 9x33x130 ks=1 c=False"]
    assert failed == {("x", "y"), ("max_times zn", "t")}


def test_check_run_without_widx_leaves_the_index_alone():
    want = np.array([[7]], np.int32)
    assert _check(REC, want, None, want, None)[0] is True
    assert _check(REC, want, np.array([[9]], np.int32), want, None)[0] is True


def test_check_run_bits_tells_signed_zeros_and_nan_payloads_apart():
    z, nz = np.array([[0.0]], np.float32), np.array([[-0.0]], np.float32)
    nan1 = np.array([[0x7FC00001]], np.uint32).view(np.float32)
    nan2 = np.array([[0x7FC00002]], np.uint32).view(np.float32)
    assert _check(REC, nz, None, z, None)[0] is True          # by value: -0 == +0
    assert _check(REC, nz, None, z, None, bits=True)[0] is False
    assert _check(REC, nan1, None, nan1, None)[0] is False    # by value NaN != NaN (as before)
    assert _check(REC, nan1, None, nan1.copy(), None, bits=True)[0] is True
    assert _check(REC, nan1, None, nan2, None, bits=True)[0] is False
    i64 = np.array([[-1]], np.int64)  # 8-byte types compare as 8-byte words
    assert _check(REC, i64, None, i64.copy(), None, bits=True)[0] is True
