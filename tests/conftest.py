"""Shared fixtures: one test body runs on every backend; unavailable backends skip with their reason,
and ``PYTROPICAL_REQUIRE=wgpu[,cuda]`` turns those skips into failures (CI cannot pass by skipping)."""

from __future__ import annotations

import os
import random
import zlib

import numpy as np
import pytest

from pytropical_gpu.backends import probe

BACKENDS = ["cpu", "wgpu", "cuda"]
SEED = int(os.environ.get("PYTROPICAL_TEST_SEED", random.randrange(2**31)))
# pytest-xdist's workers start after this module loads in the controller: they inherit the seed
# the summary prints (else each drew its own, and the printed one replayed none of them)
os.environ.setdefault("PYTROPICAL_TEST_SEED", str(SEED))
REQUIRED = {s.strip() for s in os.environ.get("PYTROPICAL_REQUIRE", "").split(",") if s.strip()}


def pytest_report_header(config):
    return [f"pytropical_gpu test seed: PYTROPICAL_TEST_SEED={SEED}",
            "backends: " + ", ".join(f"{b}={'ok' if probe(b)[0] else 'unavailable'} ({probe(b)[1]})"
                                     for b in BACKENDS),
            _wgpu_header()]


def pytest_terminal_summary(terminalreporter):
    # the header is hidden under -q (the README's command): say it again at the end, with the seed
    # (a failure under a random seed must be reproducible from CI's log)
    terminalreporter.write_line(f"pytropical_gpu test seed: PYTROPICAL_TEST_SEED={SEED}")
    terminalreporter.write_line(_wgpu_header())


def _wgpu_header() -> str:
    """Which adapter the wgpu tests ran on (or why none): name, backend type, software or not,
    and whether it flushes subnormals (then float tests expect SubnormalFlushError)."""
    ok, reason = probe("wgpu")
    if not ok:
        return f"wgpu adapter: none, wgpu tests skip: {reason}"
    from pytropical_gpu.backends import get_backend

    d = get_backend("wgpu").describe()
    return (f"wgpu adapter: {d['device']} | {d['runtime']} | backend {d['backend']} | "
            f"{'software' if d['software'] else 'hardware'} | "
            f"{'FLUSHES subnormals' if d['flushes_subnormals'] else 'keeps subnormals'}")


def require_backend(name: str) -> str:
    ok, reason = probe(name)
    if not ok:
        if name in REQUIRED:
            pytest.fail(f"backend {name} is required (PYTROPICAL_REQUIRE) but unavailable: {reason}")
        pytest.skip(f"backend {name} unavailable: {reason}")
    return name


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    """Name of a usable backend (the suite runs once per backend)."""
    return require_backend(request.param)


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A generator seeded from the session seed and the test's name (reproducible per test: the
    name's crc32, not ``hash()``, which Python salts per process)."""
    return np.random.default_rng([SEED, zlib.crc32(request.node.name.encode())])


def supports_f64(backend: str) -> bool:
    return backend != "wgpu"


@pytest.fixture(params=[False, True], ids=["keeps", "flushes"])
def flushing(request, monkeypatch) -> bool:
    """The wgpu adapter in use taken as one that keeps subnormals, then as one that flushes them
    (its ``flushes_subnormals`` flag set); the value is the flag. test_wgpu_subnormals.py has a
    ``flushing`` of its own (always flushing, the engine as its value)."""
    require_backend("wgpu")
    from pytropical_gpu.backends.wgpu.device import get_engine

    monkeypatch.setattr(get_engine(), "flushes_subnormals", request.param)
    return request.param


@pytest.fixture
def roles(monkeypatch) -> list:
    """The cuda GEMM roles launched, in order (a spy on ``kernels.function``), without the operands'
    facts kernels (``operand_range``: not part of the product); skips without cuda."""
    require_backend("cuda")
    from pytropical_gpu.backends.cuda import kernels, operand_range

    seen = []
    real = kernels.function

    def spy(spec, role):
        if spec is not operand_range.SPEC:
            seen.append(role)
        return real(spec, role)

    monkeypatch.setattr(kernels, "function", spy)
    return seen
