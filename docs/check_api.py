"""Check a built HTML reference against the package: every name in ``pytropical_gpu.__all__`` (and
``pytropical_gpu.dask.__all__``) has an entry on its page, and every docstring's ``Shapes:`` block is
rendered as a Shapes section, so the reference cannot silently miss a public name or drop the block.

Usage: ``python docs/check_api.py BUILD_DIR`` after ``python -m sphinx -b html docs BUILD_DIR``.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

PAGES = {"pytropical_gpu": "api.html", "pytropical_gpu.dask": "dask.html"}
SHAPES = re.compile(r'<p class="rubric">Shapes</p>')


def problems(build: Path) -> list[str]:
    found = []
    for modname, page in PAGES.items():
        html = (build / page).read_text(encoding="utf-8")
        module = importlib.import_module(modname)
        names = module.__all__
        starts = {}
        for name in names:
            m = re.search(rf'<dt class="sig sig-object py" id="{re.escape(f"{modname}.{name}")}">', html)
            if m is None:
                found.append(f"{page}: no entry for {modname}.{name}")
            else:
                starts[name] = m.start()
        bounds = sorted(starts.values()) + [len(html)]
        for name, start in starts.items():
            end = bounds[bounds.index(start) + 1]
            has_block = "\nShapes:\n" in "\n" + (inspect.getdoc(getattr(module, name)) or "") + "\n"
            if has_block and not SHAPES.search(html, start, end):
                found.append(f"{page}: {modname}.{name} has no rendered Shapes section")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    build = Path(argv[1])
    found = problems(build)
    for line in found:
        print(line, file=sys.stderr)
    total = sum(len(importlib.import_module(m).__all__) for m in PAGES)
    print(f"docs: {total} public names checked in {build}: "
          + ("all documented" if not found else f"{len(found)} problem(s)"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
