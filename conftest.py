"""Repository-level pytest setup: doctests of optional-extra modules are collected only where the
extra is installed (``pytropical_gpu.dask`` needs ``pip install 'pytropical_gpu[dask]'``), so a
missing extra skips them instead of hiding every module's import errors."""

import importlib.util

collect_ignore_glob = [] if importlib.util.find_spec("dask") else ["pytropical_gpu/dask/*"]
