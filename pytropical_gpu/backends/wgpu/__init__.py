"""WGSL backend through wgpu-py (placeholder until the WGSL backend lands)."""


def probe():
    return False, "the wgpu backend is not implemented yet"


def hardware_available():
    return False, "the wgpu backend is not implemented yet"


def create():  # pragma: no cover
    raise NotImplementedError
