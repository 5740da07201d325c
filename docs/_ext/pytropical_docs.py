"""Sphinx helpers for pytropical_gpu's docs.

``.. public-api:: MODULE`` documents every name in ``MODULE.__all__`` (an overview table, then each
name resolved as ``MODULE.NAME``), so a new public name appears without editing the docs and no
internal module path is ever named. ``.. readme-table:: HEADING`` renders the Markdown table under
a README heading, so the backend and environment-variable tables are written once. The
``Shapes:`` block of the numpydoc docstrings becomes a napoleon section ("Shapes", a rubric).
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

README = Path(__file__).resolve().parents[2] / "README.md"


def _rst(lines: list[str], directive: SphinxDirective) -> list[nodes.Node]:
    node = nodes.section()
    node.document = directive.state.document
    directive.state.nested_parse(StringList(lines, source=directive.get_source_info()[0]),
                                 directive.content_offset, node, match_titles=True)
    return node.children


class PublicApi(SphinxDirective):
    """Document ``MODULE.__all__``: an autosummary table, then autodoc entries in that order."""

    required_arguments = 1
    option_spec = {"sort": directives.flag}

    def run(self) -> list[nodes.Node]:
        modname = self.arguments[0]
        module = importlib.import_module(modname)
        names = list(module.__all__)
        if "sort" in self.options:
            names.sort(key=lambda n: (not inspect.isclass(getattr(module, n)), n.lower()))
        lines = [f".. currentmodule:: {modname}", "", ".. autosummary::", ""]
        lines += [f"   {n}" for n in names]
        lines.append("")
        for n in names:
            obj = getattr(module, n)
            if inspect.isclass(obj) and issubclass(obj, BaseException):
                lines += [f".. autoexception:: {modname}.{n}", "   :show-inheritance:", ""]
            elif inspect.isclass(obj):
                lines += [f".. autoclass:: {modname}.{n}", "   :members:", "   :undoc-members:", ""]
            else:
                lines += [f".. autofunction:: {modname}.{n}", ""]
        return _rst(lines, self)


def _markdown_inline(text: str) -> str:
    """`code` -> ``code``; [text](url) -> text (README links point into the repository)."""
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text)
    return re.sub(r"`([^`]+)`", r"``\1``", text)


class ReadmeTable(SphinxDirective):
    """The first Markdown table under the README heading given as the argument, as a list-table."""

    required_arguments = 1
    final_argument_whitespace = True

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(README))
        heading = self.arguments[0]
        text = README.read_text(encoding="utf-8").splitlines()
        start = next((i for i, line in enumerate(text) if line.lstrip("#").strip() == heading
                      and line.startswith("#")), None)
        if start is None:
            raise self.error(f"readme-table: no heading {heading!r} in {README}")
        rows = []
        for line in text[start + 1:]:
            if line.startswith("#"):
                break
            if line.startswith("|"):
                rows.append([c.strip() for c in line.strip().strip("|").split("|")])
            elif rows:
                break
        rows = [r for r in rows if not all(set(c) <= set("-: ") for c in r)]
        if not rows:
            raise self.error(f"readme-table: no table under {heading!r} in {README}")
        lines = [".. list-table::", "   :header-rows: 1", ""]
        for row in rows:
            lines += [f"   {'*' if j == 0 else ' '} - {_markdown_inline(c)}" for j, c in enumerate(row)]
        return _rst(lines, self)


def _escape_stars(line: str) -> str:
    """``*batch`` is shape notation, not emphasis: escape ``*`` outside inline literals."""
    parts = line.split("``")
    return "``".join(p if i % 2 else p.replace("*", r"\*") for i, p in enumerate(parts))


def shapes_section(app, what, name, obj, options, lines: list[str]) -> None:
    """Rewrite the ``Shapes:`` block into a numpy-style "Shapes" section for napoleon."""
    for i, line in enumerate(lines):
        if line.rstrip() != "Shapes:":
            continue
        j = i + 1
        while j < len(lines) and (lines[j].startswith((" ", "\t")) or not lines[j].strip()):
            if not lines[j].strip() and (j + 1 >= len(lines) or not lines[j + 1].startswith(" ")):
                break
            j += 1
        body = [_escape_stars(line.strip()) for line in lines[i + 1:j]]
        lines[i:j] = ["Shapes", "------", *body]
        return


def skip_plain_attributes(app, what, name, obj, skip, options) -> bool | None:
    """Class members: methods and properties (documented or not: HybridContext's methods are the
    module functions); plain attributes (dataclass fields, slots) are the Parameters already."""
    if what in ("class", "exception") and not skip and not (
            inspect.isroutine(obj) or isinstance(obj, (property, classmethod, staticmethod))):
        return True
    return None


def setup(app):
    app.add_directive("public-api", PublicApi)
    app.add_directive("readme-table", ReadmeTable)
    # before napoleon (priority 500), which then sees a numpy section header
    app.connect("autodoc-process-docstring", shapes_section, priority=400)
    app.connect("autodoc-skip-member", skip_plain_attributes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
