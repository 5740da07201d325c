"""Sphinx configuration: the API reference is built from the public names (``__all__``) only, so
it follows the package without naming its internal modules (see _ext/pytropical_docs.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

import pytropical_gpu  # noqa: E402  (the installed package; the docs never name its submodules)

project = "pytropical_gpu"
author = "pytropical_gpu contributors"
copyright = "pytropical_gpu contributors (MIT)"
release = version = pytropical_gpu.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon", "pytropical_docs"]
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path: list[str] = []

# numpydoc docstrings through napoleon; "Shapes:" becomes a section of its own (pytropical_docs)
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_custom_sections = ["Shapes"]
napoleon_use_param = False  # "a, b : array_like" stays one entry
napoleon_use_rtype = False  # "D or (D, argmax)" reads as the name of what is returned
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc Parameters give the types; ArrayLike expands unreadably
autosummary_generate = False  # one page per module (api.rst, dask.rst), no stub files
