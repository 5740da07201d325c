"""Every public name documents itself: numpydoc sections, a ``Shapes:`` block and a doctest (the
doctests run in the same suite through ``--doctest-modules``, on backend="cpu")."""

from __future__ import annotations

import inspect

import pytest

import pytropical_gpu as tg

# names without parameters document what they return instead
_NO_PARAMETERS = {"available_backends", "semiring_names", "default_context"}


@pytest.mark.parametrize("name", sorted(tg.__all__))
def test_public_name_has_numpydoc_shapes_and_a_doctest(name):
    obj = getattr(tg, name)
    doc = inspect.getdoc(obj) or ""
    assert "Shapes:" in doc, f"{name}: no 'Shapes:' block"
    assert ">>>" in doc, f"{name}: no doctest"
    if inspect.isclass(obj):
        assert "Parameters\n----------" in doc, f"{name}: no Parameters section"
        return
    if name not in _NO_PARAMETERS:
        assert "Parameters\n----------" in doc, f"{name}: no Parameters section"
    assert "Returns\n-------" in doc, f"{name}: no Returns section"


def test_doctests_pin_the_cpu_backend():
    """Doctests must pass on any machine: every call that can route names backend="cpu" (or runs
    on ``get_backend("cpu")``)."""
    for name in tg.__all__:
        doc = inspect.getdoc(getattr(tg, name)) or ""
        for line in doc.splitlines():
            line = line.strip()
            if line.startswith(">>> ") and any(f"{v}(" in line for v in (
                    "matmul", "bind", "bundle", "multiset", "dot", "cosine", "permute", "search",
                    "pack_rows", "pack_cols", "andor_matmul")) and "be." not in line:
                assert 'backend="cpu"' in line or "backend='cpu'" in line, f"{name}: {line}"
