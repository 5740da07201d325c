"""The benchmark suites ``python -m pytropical_gpu bench`` runs, shipped in the wheel.

One module per backend (:mod:`.cpu`, :mod:`.wgpu`, :mod:`.cuda`), each with
``run(quick=False, progress=None) -> rows``: every result is checked against a baseline before it
is timed (:class:`.harness.CheckFailed` otherwise), and the baseline is timed in the same run. The
repository's ``benchmarks/`` scripts run the same suites and keep their results there.
"""

from __future__ import annotations

import importlib

#: backend name -> suite module in this package
SUITES = {"cpu": "cpu", "wgpu": "wgpu", "cuda": "cuda"}


def suite(backend: str):
    """The suite module of ``backend`` (imported on demand: the GPU suites need their libraries)."""
    if backend not in SUITES:
        raise ValueError(f"no benchmark suite for backend {backend!r}; known: {', '.join(SUITES)}")
    return importlib.import_module(f"{__name__}.{SUITES[backend]}")


__all__ = ["SUITES", "suite"]
