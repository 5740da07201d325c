"""Kernel sources as package data: one cached loader for ``wgsl/*.wgsl`` and ``cuda/*.cu``.

In a source checkout the sources live in the top-level ``wgsl/`` and ``cuda/`` folders; an installed
wheel carries them as ``pytropical_gpu/wgsl`` and ``pytropical_gpu/cuda`` (pyproject's force-include).
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

_KINDS = {"wgsl": ".wgsl", "cuda": ".cu"}


@functools.lru_cache(maxsize=256)
def source_dir(kind: str) -> Path:
    """The folder holding the ``kind`` ("wgsl" or "cuda") sources, wheel or checkout."""
    if kind not in _KINDS:
        raise ValueError(f"unknown shader kind {kind!r}; known: {', '.join(_KINDS)}")
    packaged = resources.files("pytropical_gpu") / kind
    if packaged.is_dir():
        return Path(str(packaged))
    checkout = Path(__file__).resolve().parent.parent / kind
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"pytropical_gpu: the {kind} sources are missing (looked in {packaged} "
                            f"and {checkout}); reinstall the package")


@functools.lru_cache(maxsize=256)
def load_source(kind: str, name: str) -> str:
    """Text of ``<kind>/<name>`` (the suffix may be left out), e.g. ``load_source("cuda", "gemm")``."""
    suffix = _KINDS.get(kind, "")
    path = source_dir(kind) / name
    if not path.suffix and suffix:
        path = path.with_suffix(suffix)
    if not path.is_file():
        raise FileNotFoundError(f"pytropical_gpu: no {kind} source {path.name!r} in {source_dir(kind)}")
    return path.read_text(encoding="utf-8")


def list_sources(kind: str) -> list[str]:
    """File names of every ``kind`` source, sorted."""
    return sorted(p.name for p in source_dir(kind).iterdir() if p.suffix == _KINDS[kind])


__all__ = ["load_source", "source_dir", "list_sources"]
