"""``bench --plot``: the picture of a calibration (pytropical_gpu/plot.py) and its command line.

The expectations come from the calibration data itself (which ops have a crossover, which one
never left cpu), read here with plain json, not from the plotting code."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from pytropical_gpu import cli, plot  # noqa: E402
from pytropical_gpu.calibration import calibrate  # noqa: E402
from pytropical_gpu.thresholds import NEVER, Thresholds  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "benchmarks" / "results" / "calibrate_h200.json"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def h200() -> dict:
    return json.loads(H200.read_text())


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTROPICAL_CACHE_DIR", str(tmp_path / "cache"))


def _svg_text(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    return text


def test_tiny_cpu_calibration_png_and_svg(tmp_path):
    t = calibrate(["cpu"], ["bind", "dot"], progress=False, save=False, max_steps=2, repeats=1)
    png = plot.plot_thresholds(t, tmp_path / "cpu.png")
    assert png == tmp_path / "cpu.png" and png.read_bytes()[:8] == PNG_MAGIC
    svg = _svg_text(plot.plot_thresholds(t, tmp_path / "sub" / "cpu.svg"))  # parent created
    assert "bind" in svg and "dot" in svg and "matmul" not in svg  # only what was measured
    assert svg.count("never: cpu") == 2 and "routes to" not in svg


def test_h200_calibration_every_op_and_its_crossover(tmp_path, h200):
    t = plot.read_calibration(H200)
    routed = [op for op, c in h200["crossover"].items() if c != NEVER and h200["gpu"][op]]
    never = [op for op in h200["crossover"] if op not in routed]
    assert routed and never  # the committed run has both kinds (pack never left cpu)
    svg = _svg_text(plot.plot_thresholds(t, tmp_path / "h200.svg"))
    for op in h200["timings"]:
        assert f">{op}<" in svg, op
    assert svg.count("routes to cuda") == len(routed)
    assert svg.count("never: cpu") == len(never)
    assert "NVIDIA H200" in svg and "software" not in svg
    png = plot.plot_thresholds(t, tmp_path / "h200.PNG")
    assert png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 50_000


def test_crossover_line_sits_at_the_crossover(h200):
    from matplotlib.figure import Figure

    t = Thresholds.from_json(h200)
    for op in ("matmul", "bundle", "pack"):  # a crossover, 0 (GPU from the smallest size), NEVER
        ax = Figure().subplots()
        xmin = min(s for rows in h200["timings"][op].values() for s, _ in rows)
        ax.set_xscale("log")
        ax.set_xlim(xmin, 10 * max(s for s, _ in h200["timings"][op]["cpu"]))
        plot._mark_crossover(ax, t, op, xmin)
        texts = [x.get_text().strip() for x in ax.texts]
        c = h200["crossover"][op]
        if c == NEVER:
            assert not ax.lines and texts == ["never: cpu"]
        else:
            assert list(ax.lines[0].get_xdata()) == [max(c, xmin)] * 2
            assert texts == ["routes to cuda at every size" if c == 0 else "routes to cuda from here \u2192"]


def test_software_adapter_dashed_and_labelled(tmp_path, h200):
    soft = copy.deepcopy(h200)
    soft["devices"]["wgpu"]["software"] = True
    soft["devices"]["wgpu"]["device"] = "llvmpipe (LLVM 17.0.6, 256 bits)"
    a = _svg_text(plot.plot_thresholds(Thresholds.from_json(h200), tmp_path / "hw.svg"))
    b = _svg_text(plot.plot_thresholds(Thresholds.from_json(soft), tmp_path / "sw.svg"))
    assert "software adapter" in b and "llvmpipe" in b
    # one dashed wgpu line per panel, plus its legend entry
    assert b.count("stroke-dasharray") - a.count("stroke-dasharray") == len(h200["timings"]) + 1


def test_reads_the_cache_file_newest_entry(tmp_path, h200):
    old = {**copy.deepcopy(h200), "created": 1.0, "crossover": {**h200["crossover"], "bind": 7}}
    new = {**copy.deepcopy(h200), "created": 2.0}
    path = tmp_path / "thresholds.json"
    path.write_text(json.dumps({"format": 1, "entries": {"a": new, "b": old}}))
    assert plot.read_calibration(path).crossover["bind"] == h200["crossover"]["bind"] != 7


@pytest.mark.parametrize("content, words", [
    ("{", "not JSON"), ("[1, 2]", "not a calibration"), ('{"format": 1, "entries": {}}', "no entries"),
    ('{"crossover": {"bind": -1}}', "bad crossover"),
    ('{"crossover": {}, "timings": {"bind": {"cpu": [[1]]}}}', "[[size, seconds], ...]"),
    ('{"crossover": {}, "timings": {"bind": [1]}}', "table of backends"),
])
def test_bad_calibration_files(tmp_path, content, words):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match="bad.json") as e:
        plot.read_calibration(path)
    assert words in str(e.value)


def test_bad_plot_arguments(tmp_path, h200):
    t = Thresholds.from_json(h200)
    with pytest.raises(ValueError, match=r"\.png or \.svg.*x\.pdf"):
        plot.plot_thresholds(t, tmp_path / "x.pdf")
    with pytest.raises(ValueError, match="no timings"):
        plot.plot_thresholds(Thresholds.defaults(), tmp_path / "x.png")
    (tmp_path / "afile").write_text("")
    with pytest.raises(OSError):
        plot.plot_thresholds(t, tmp_path / "afile" / "x.png")


def test_missing_matplotlib(tmp_path, monkeypatch, capsys, h200):
    for name in ("matplotlib", "matplotlib.figure"):
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'pytropical_gpu\[plot\]'"):
        plot.plot_thresholds(Thresholds.from_json(h200), tmp_path / "x.png")
    rc = cli.main(["bench", "--plot", str(tmp_path / "x.png"), "--from-json", str(H200)])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "pip install 'pytropical_gpu[plot]'" in err
    assert not (tmp_path / "x.png").exists()


# ---------------------------------------------------------------- the command line
def _module(*args, cwd):
    env = {k: v for k, v in os.environ.items() if k != "PYTROPICAL_BACKEND"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "pytropical_gpu", *map(str, args)], cwd=str(cwd),
                          env=env, capture_output=True, text=True, timeout=300)


def test_cli_plots_the_committed_calibration(tmp_path, h200):
    r = _module("bench", "--plot", "out.svg", "--from-json", H200, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "wrote out.svg" and not r.stderr
    svg = _svg_text(tmp_path / "out.svg")
    assert svg.count("routes to cuda") == sum(c != NEVER for c in h200["crossover"].values())


def test_cli_calibrates_then_plots(tmp_path):
    """Without --from-json it runs calibrate() (progress on stderr, saved to the cache dir) and
    its --json is the layout --from-json reads back."""
    r = _module("bench", "--plot", "cpu.png", "--quick", "--backend", "cpu", "--json", "cal.json",
                cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "calibrate" in r.stderr and "wrote cpu.png" in r.stdout
    assert (tmp_path / "cpu.png").read_bytes()[:8] == PNG_MAGIC
    assert (tmp_path / "cache" / "thresholds.json").exists()
    t = plot.read_calibration(tmp_path / "cal.json")
    assert set(t.timings) == set(t.crossover) and all(c == NEVER for c in t.crossover.values())
    assert json.loads((tmp_path / "cal.json").read_text())["seconds"] > 0


@pytest.mark.parametrize("args, words", [
    (["--plot", "x.pdf", "--from-json", H200], ".png or .svg"),
    (["--plot", "x.png", "--from-json", "missing.json"], "missing.json"),
    (["--plot", "x.png", "--from-json", "bad.json"], "not JSON"),
    (["--plot", "afile/x.png", "--from-json", H200], "afile is not a directory"),
    (["--plot", "x.png", "--from-json", H200, "--json", "c.json"], "--json"),
    (["--from-json", H200], "needs --plot"),
])
def test_cli_errors_are_one_line(tmp_path, monkeypatch, capsys, args, words):
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "afile").write_text("")
    monkeypatch.chdir(tmp_path)
    rc = cli.main(["bench", *map(str, args)])
    out = capsys.readouterr()
    assert rc != 0 and not out.out
    assert out.err.count("\n") == 1 and words in out.err and "Traceback" not in out.err
    assert not (tmp_path / "x.png").exists()
