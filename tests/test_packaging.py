"""The wheel: built from this checkout, installed into a fresh venv, used from outside the repo.

The venv reuses this interpreter's site-packages (numpy, wgpu, jinja2) through a ``.pth`` line, so
nothing is downloaded; pytropical_gpu itself must come from the wheel, and the kernel sources must be
found through the package's loader (``pytropical_gpu.shaders``), not through the checkout.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KINDS = {"wgsl": ".wgsl", "cuda": ".cu"}
#: what the wheel must ship of each kind: the sources and their shared headers (cuda/*.cuh).
SHIPPED = {"wgsl": (".wgsl",), "cuda": (".cu", ".cuh")}

pytestmark = pytest.mark.timeout(300) if importlib.util.find_spec("pytest_timeout") else []


def _run(cmd, cwd, env=None, timeout=240):
    r = subprocess.run([str(c) for c in cmd], cwd=str(cwd), env=env, capture_output=True, text=True,
                       timeout=timeout)
    return r


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTROPICAL_BACKEND", "PYTROPICAL_BENCHMARKS", "VIRTUAL_ENV")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Without hatchling here the build front end fetches it into an isolated env (needs network).
    offline = importlib.util.find_spec("hatchling") is not None
    if importlib.util.find_spec("build") is not None:
        cmd = [sys.executable, "-m", "build", "--wheel", *(["--no-isolation"] if offline else []),
               "--outdir", out, ROOT]
    else:
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps",
               *(["--no-build-isolation"] if offline else []), "-w", out, ROOT]
    r = _run(cmd, cwd=out, env=_clean_env())
    assert r.returncode == 0, f"wheel build failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    wheels = list(out.glob("pytropical_gpu-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed (--no-deps); returns its python."""
    env_dir = tmp_path_factory.mktemp("venv") / "v"
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    py = bindir / ("python.exe" if os.name == "nt" else "python")
    site = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                     cwd=env_dir).stdout.strip())
    # Reuse our dependencies without downloading them; the venv's own site-packages stays first.
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "zz_reuse_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    r = _run([sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "--no-index",
              wheel], cwd=env_dir, env=_clean_env())
    if r.returncode != 0:  # pip too old for --python: install with pip's --target into the site dir
        r = _run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", site,
                  wheel], cwd=env_dir, env=_clean_env())
    assert r.returncode == 0, f"pip install failed:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return py


def _repo_sources(kind: str) -> list[str]:
    d = ROOT / kind
    return sorted(p.name for p in d.iterdir() if p.suffix in SHIPPED[kind]) if d.is_dir() else []


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_wheel_ships_kernel_sources(wheel, kind):
    names = zipfile.ZipFile(wheel).namelist()
    prefix = f"pytropical_gpu/{kind}/"
    shipped = sorted(n[len(prefix):] for n in names if n.startswith(prefix) and n.endswith(SHIPPED[kind]))
    assert shipped, f"the wheel has no {prefix}*{KINDS[kind]} files (pyproject force-include of {kind}/)"
    missing = set(_repo_sources(kind)) - set(shipped)
    assert not missing, f"sources in {kind}/ missing from the wheel: {sorted(missing)}"


def test_wheel_has_no_tests_or_benchmarks(wheel):
    top = {n.split("/")[0] for n in zipfile.ZipFile(wheel).namelist()}
    assert top <= {"pytropical_gpu", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}, top


_PROBE = r"""
import json, sys
import pytropical_gpu as tg
from pytropical_gpu import shaders
out = {"file": tg.__file__, "version": tg.__version__, "sources": {}, "texts": {}}
for kind in ("wgsl", "cuda"):
    try:
        names = shaders.list_sources(kind)
    except FileNotFoundError as e:
        names = []
        out.setdefault("errors", {})[kind] = str(e)
    out["sources"][kind] = names
    out["dirs"] = out.get("dirs", {}) | {kind: str(shaders.source_dir(kind)) if names else None}
    if names:
        out["texts"][kind] = [names[0], shaders.load_source(kind, names[0])]
print(json.dumps(out))
"""


def test_installed_wheel_imports_and_loads_sources(installed, tmp_path):
    r = _run([installed, "-c", _PROBE], cwd=tmp_path, env=_clean_env())
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    venv_dir = installed.parent.parent.resolve()
    assert Path(got["file"]).resolve().is_relative_to(venv_dir), \
        f"imported {got['file']}, not the installed wheel under {venv_dir}"
    assert any(got["sources"].values()), f"no kernel source found through the loader: {got}"
    for kind, (name, text) in got["texts"].items():
        assert Path(got["dirs"][kind]).resolve().is_relative_to(venv_dir), got["dirs"][kind]
        assert text == (ROOT / kind / name).read_text(encoding="utf-8")


def test_installed_cli(installed, tmp_path):
    env = _clean_env()
    r = _run([installed, "-m", "pytropical_gpu", "info", "--json", "--backend", "cpu"], cwd=tmp_path,
             env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(r.stdout)
    assert d["backends"]["cpu"]["check"]["status"] == "PASS"
    script = installed.parent / ("pytropical-gpu.exe" if os.name == "nt" else "pytropical-gpu")
    assert script.exists(), "console script pytropical-gpu was not installed"
    r = _run([script, "info", "--backend", "cpu"], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stdout + r.stderr


def test_installed_bench(installed, tmp_path):
    """``bench --quick --json`` runs from the installed wheel (its suites ship in the package; no
    checkout, no benchmarks/ folder): every available backend's rows, each checked before timing."""
    out = tmp_path / "bench.json"
    r = _run([installed, "-m", "pytropical_gpu", "bench", "--quick", "--json", out], cwd=tmp_path,
             env=_clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "[bench cpu] done" in r.stderr
    d = json.loads(out.read_text())
    ops = {row["op"] for row in d["rows"]}
    assert {"min_plus float32", "max_plus int32", "bind", "dot", "bundle"} <= ops, ops
    assert all(row["median_s"] > 0 for row in d["rows"])


_WGPU_GEMM = r"""
import json
from pytropical_gpu import diagnostics
from pytropical_gpu.backends import get_backend, probe
ok, reason = probe("wgpu")
if ok:
    diagnostics.KNOWN_ANSWERS["min_plus f32 with inf"](get_backend("wgpu"))  # renders, compiles WGSL
print(json.dumps({"ok": ok, "reason": reason}))
"""


def test_installed_wheel_runs_a_wgsl_kernel(installed, tmp_path):
    """The shaders the wheel carries compile and give the known answer (on lavapipe in CI)."""
    r = _run([installed, "-c", _WGPU_GEMM], cwd=tmp_path, env=_clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    got = json.loads(r.stdout.strip().splitlines()[-1])
    if not got["ok"]:
        if "wgpu" in os.environ.get("PYTROPICAL_REQUIRE", ""):
            pytest.fail(f"wgpu required but unavailable: {got['reason']}")
        pytest.skip(f"wgpu unavailable: {got['reason']}")


# ------------------------------------------------------------------------------ metadata
def _metadata(wheel: Path) -> list[tuple[str, str]]:
    z = zipfile.ZipFile(wheel)
    name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
    head = z.read(name).decode().split("\n\n", 1)[0]
    return [tuple(line.split(": ", 1)) for line in head.splitlines() if ": " in line]


def test_wheel_carries_the_mit_license(wheel):
    z = zipfile.ZipFile(wheel)
    lic = [n for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    assert lic, "LICENSE is not in the wheel's dist-info"
    text = z.read(lic[0]).decode()
    assert text.startswith("MIT License") and "2026 pytropical_gpu contributors" in text
    assert text == (ROOT / "LICENSE").read_text()
    meta = dict(_metadata(wheel))
    assert meta.get("License-Expression") == "MIT"


def test_one_version_source(wheel):
    """pyproject has no version of its own: the wheel's is the package's ``__version__``."""
    import re

    pyproject = (ROOT / "pyproject.toml").read_text()
    assert not re.search(r"(?m)^version\s*=", pyproject), "a second version literal in pyproject"
    assert re.search(r'(?m)^dynamic\s*=\s*\[[^]]*"version"', pyproject)
    init = (ROOT / "pytropical_gpu" / "__init__.py").read_text()
    version = re.search(r'(?m)^__version__\s*=\s*"([^"]+)"', init).group(1)
    assert dict(_metadata(wheel))["Version"] == version
    assert wheel.name.split("-")[1] == version


def test_classifiers_dependencies_and_extras(wheel):
    meta = _metadata(wheel)
    classifiers = {v for k, v in meta if k == "Classifier"}
    for minor in (10, 11, 12, 13):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert "Typing :: Typed" in classifiers
    assert any(k == "Project-URL" for k, _ in meta)
    requires = [v for k, v in meta if k == "Requires-Dist"]
    plain = {r.split(";")[0].split(">")[0].split("=")[0].split("<")[0].strip() for r in requires
             if "extra ==" not in r}
    assert {"numpy", "jinja2", "wgpu", "platformdirs"} <= plain, plain
    assert not any(r.startswith("rich") for r in requires), "rich is declared but nothing imports it"
    # torch only as an extra, pinned to the one build CI has locally (never a bare 'torch')
    torch_reqs = [r for r in requires if r.startswith("torch")]
    assert torch_reqs and all("==2.13.0" in r and "extra == 'torch'" in r for r in torch_reqs), \
        torch_reqs


def test_nothing_imports_rich_and_platformdirs_is_declared():
    """Declared dependencies follow the imports: platformdirs (hybrid.py) yes, rich no."""
    sources = "\n".join(p.read_text() for p in (ROOT / "pytropical_gpu").rglob("*.py"))
    sources += "\n".join(p.read_text() for p in (ROOT / "benchmarks").glob("*.py"))
    assert "import rich" not in sources and "from rich" not in sources
    assert "import platformdirs" in sources
