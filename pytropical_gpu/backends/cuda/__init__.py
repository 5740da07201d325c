"""CUDA backend through CuPy (placeholder until the CUDA backend lands)."""


def probe():
    return False, "the cuda backend is not implemented yet"


def create():  # pragma: no cover
    raise NotImplementedError
