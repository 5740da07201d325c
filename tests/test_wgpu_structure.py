"""The wgpu wing, the CLI and the benchmark suites keep their shape: no import cycle inside
``backends/wgpu`` (function-level imports counted), modules of at most 300 lines, and the shader
variant list (a test helper) never imported by the package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "pytropical_gpu"
WGPU = PKG / "backends" / "wgpu"
CAPPED = sorted([*WGPU.glob("*.py"), PKG / "cli.py", PKG / "diagnostics.py", PKG / "known_answers.py",
                 *(PKG / "bench").glob("*.py")])


def _wgpu_imports(path: Path) -> set[str]:
    """Sibling modules of backends/wgpu that ``path`` imports anywhere (module level or lazily)."""
    mods = {p.stem for p in WGPU.glob("*.py")}
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
    return (out & mods) - {path.stem}


def test_no_import_cycle_in_the_wgpu_backend():
    graph = {p.stem: _wgpu_imports(p) for p in WGPU.glob("*.py")}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                cycle = path[path.index(n):] + [n]
                pytest.fail("import cycle in backends/wgpu: " + " -> ".join(cycle))
            if n not in state:
                visit(n, path + [n])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert "engine" not in graph["array"] and "array" not in graph["engine"]


@pytest.mark.parametrize("path", CAPPED, ids=lambda p: str(p.relative_to(PKG)))
def test_module_at_most_300_lines(path):
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= 300, f"{path.relative_to(PKG)} has {n} lines"


def test_package_never_imports_the_variant_list():
    for path in PKG.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "wgpu_variants" not in text and "import variants" not in text, path
