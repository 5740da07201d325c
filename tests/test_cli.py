"""``python -m pytropical_gpu info`` / ``bench``, the diagnostics behind info, the benchmark harness."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytropical_gpu import cli, diagnostics

ROOT = Path(__file__).resolve().parent.parent


def _env():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTROPICAL_BACKEND", "PYTROPICAL_BENCHMARKS")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _module(*args, cwd):
    return subprocess.run([sys.executable, "-m", "pytropical_gpu", *args], cwd=str(cwd), env=_env(),
                          capture_output=True, text=True, timeout=180)


def test_info_text(tmp_path):
    r = _module("info", "--backend", "cpu", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert any(ln.split()[:2] == ["cpu", "PASS"] for ln in lines), r.stdout
    for section in ("versions", "wgpu adapters", "cuda devices (cupy)",
                    "backends (probe, known-answer check)"):
        assert section in lines, section
    assert "numpy" in r.stdout and "jinja2" in r.stdout


def test_info_json(tmp_path):
    """Full report: parseable; exit status 0 exactly when no available backend fails its check."""
    r = _module("info", "--json", cwd=tmp_path)
    d = json.loads(r.stdout)
    assert set(d["backends"]) == {"cpu", "wgpu", "cuda"}
    assert d["backends"]["cpu"]["ok"] is True
    assert d["backends"]["cpu"]["check"]["status"] == "PASS"
    statuses = {n: b["check"]["status"] for n, b in d["backends"].items()}
    for name, b in d["backends"].items():
        assert statuses[name] in (("PASS", "FAIL") if b["ok"] else ("SKIP",)), (name, b)
        assert isinstance(b["reason"], str) and b["reason"]
    assert r.returncode == (1 if "FAIL" in statuses.values() else 0), r.stderr
    assert "runtimes" in d["wgpu"] or "error" in d["wgpu"]
    for r in d["wgpu"].get("runtimes", {}).values():
        for a in r["adapters"]:
            assert {"device", "backend_type", "adapter_type", "software", "refused"} <= set(a)
    assert d["versions"]["numpy"]


def test_info_lists_both_webgpu_runtimes(monkeypatch):
    """``info`` names every WebGPU runtime (wgpu-py and Dawn) with its probe and adapters, and
    marks the one ``PYTROPICAL_WEBGPU`` selects."""
    monkeypatch.setenv("PYTROPICAL_WEBGPU", "dawn")
    d = diagnostics.webgpu()
    assert d["implementation"] == "dawn"
    assert set(d["runtimes"]) == {"wgpu", "dawn"}
    assert d["runtimes"]["dawn"]["selected"] and not d["runtimes"]["wgpu"]["selected"]
    for r in d["runtimes"].values():
        assert isinstance(r["reason"], str) and r["reason"]
        for a in r["adapters"]:
            assert {"device", "backend_type", "adapter_type", "software"} <= set(a)
            assert a["software"] == (a["is_fallback_adapter"] or a["adapter_type"].upper() == "CPU")
    text = cli.info_text({"versions": {}, "wgpu": d, "cuda": {"devices": []}, "backends": {},
                          "auto_gpu": None})
    assert " *dawn (" in text and "  wgpu (" in text


def test_info_lists_each_adapter_once():
    """Each adapter appears once per runtime that sees it, under that runtime (the adapter list and
    the runtime survey used to repeat each other)."""
    d = diagnostics.info_dict(["cpu"])
    text = cli.info_text(d)
    listed = [f"{a['device']}  backend={a['backend_type']}  type={a['adapter_type']}"
              for r in d["wgpu"].get("runtimes", {}).values() for a in r["adapters"]]
    for line in set(listed):
        assert text.count(line) == listed.count(line), (line, text)


def test_info_every_available_backend_passes(tmp_path):
    """``python -m pytropical_gpu info`` exits 0 on this machine: each usable backend is correct."""
    r = _module("info", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert any(ln.split()[:2] == ["cpu", "PASS"] for ln in r.stdout.splitlines()), r.stdout


def test_info_in_process_matches_probe(capsys):
    from pytropical_gpu.backends import probe

    assert cli.main(["info", "--json", "--backend", "cpu"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert list(d["backends"]) == ["cpu"]
    assert (d["backends"]["cpu"]["ok"], d["backends"]["cpu"]["reason"]) == probe("cpu")


def test_known_answer_failure_is_reported(monkeypatch):
    def broken(be):
        raise AssertionError("min_plus 2x2: got [[9]], expected [[0]]\nsecond line")

    monkeypatch.setitem(diagnostics.KNOWN_ANSWERS, "broken", broken)
    res = diagnostics.check_backend("cpu")
    assert res["check"]["status"] == "FAIL" and "expected" in res["check"]["reason"]
    assert res["check"]["cases"]["min_plus f32 with inf"] == "PASS"
    text = cli.info_text({"versions": {}, "wgpu": {"adapters": []}, "cuda": {"devices": []},
                          "backends": {"cpu": res}, "auto_gpu": None})
    lines = text.splitlines()
    assert any(ln.split()[:2] == ["cpu", "FAIL"] for ln in lines), text
    assert any(ln.strip().startswith("broken: FAIL: AssertionError") for ln in lines), text
    assert "second line" not in text  # one line per case in the text; the rest is in --json


def test_bench_cpu_quick(tmp_path):
    out = tmp_path / "bench.json"
    r = _module("bench", "--backend", "cpu", "--quick", "--json", out, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[bench cpu]" in r.stderr  # progress
    assert "min_plus float32" in r.stdout and "ratio" in r.stdout
    d = json.loads(out.read_text())
    assert {"device", "date", "git_commit", "rows"} <= set(d)
    ops = {row["op"] for row in d["rows"]}
    assert {"min_plus float32", "max_plus int32", "andor_matmul bool", "bind", "dot", "bundle"} <= ops
    for row in d["rows"]:
        assert row["median_s"] > 0 and row["baseline_median_s"] > 0
        assert row["ratio"] == pytest.approx(row["baseline_median_s"] / row["median_s"])


def test_known_answers_share_the_wgpu_adapter_table():
    """``info`` checks every backend with the same hand-computed GEMM table the wgpu backend checks
    each adapter with (one table), plus packed boolean and VSA cases."""
    from pytropical_gpu import known_answers
    from pytropical_gpu.backends.wgpu import selfcheck

    assert selfcheck.EXACT is known_answers.GEMM
    assert [name for name, *_ in known_answers.GEMM] + ["andor", "bind", "dot"] == \
        list(diagnostics.KNOWN_ANSWERS)


def test_bench_suites_live_in_the_package():
    """``bench`` needs no checkout: its suites are modules of the package (the wheel test runs them
    from an installed wheel)."""
    from pytropical_gpu import bench

    for name in ("cpu", "wgpu", "cuda"):
        mod = bench.suite(name)
        assert mod.__name__ == f"pytropical_gpu.bench.{name}" and callable(mod.run)
    with pytest.raises(ValueError, match="known: cpu, wgpu, cuda"):
        bench.suite("tpu")


def test_harness_helpers(tmp_path):
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import _harness as h
    finally:
        sys.path.remove(str(ROOT))
    t = h.median_time(lambda: None, repeats=5, warmup=0)
    assert t.n == 5 and 0 <= t.q20 <= t.median <= t.q80
    r = h.compare("op", "cpu", "dev", "1x1", lambda: None, lambda: sum(range(1000)), work=10,
                  baseline="base", repeats=3)
    assert r.ratio == pytest.approx(r.baseline_median_s / r.median_s)
    table = h.format_table([r, {"op": "dict row", "backend": "x", "median_s": 1e-3}])
    assert "dict row" in table and table.splitlines()[0].startswith("op")
    p = h.write_json(tmp_path / "r.json", [r], "dev")
    assert json.loads(p.read_text())["rows"][0]["op"] == "op"
    with pytest.raises(h.CheckFailed):
        h.check("x", [1, 2], [1, 3])
