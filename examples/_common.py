"""Small helpers shared by the examples: the common command-line flags, "which backend ran this",
progress lines and the optional matplotlib import. Nothing here is needed to use the library."""

from __future__ import annotations

import argparse
import sys
import time

import pytropical_gpu as tg
from pytropical_gpu.routing import requested


def make_parser(description: str, *, plot: bool = False) -> argparse.ArgumentParser:
    """An ArgumentParser with ``--backend``, ``--seed`` (and ``--plot`` when the example draws)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--backend", choices=["cpu", "wgpu", "cuda"], default=None,
                   help="run every call on this backend (default: automatic, by problem size)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    if plot:
        p.add_argument("--plot", metavar="PNG", nargs="?", const="", default=None,
                       help="save a picture (needs matplotlib); optional file name")
    return p


def ran_on(backend: str | None, op: str, size: int) -> str:
    """The backend that ``op`` on ``size`` work items runs on, as the module functions decide
    (:mod:`pytropical_gpu.routing`: ``backend=``, then ``PYTROPICAL_BACKEND``, then by size)."""
    return requested(backend) or tg.default_context().route(op, size)


def check_backend(backend: str | None) -> str | None:
    """None when usable, else the reason (``--backend wgpu`` on a machine without it)."""
    if backend is None:
        return None
    try:
        tg.get_backend(backend)
    except tg.BackendUnavailableError as e:
        return str(e)
    return None


class Progress:
    """Prints ``label: i/total`` lines to stderr at most every ``every`` seconds (quiet in tests)."""

    def __init__(self, label: str, total: int | None = None, every: float = 1.0, quiet: bool = False):
        self.label, self.total, self.every, self.quiet = label, total, every, quiet
        self.t0 = self.last = time.perf_counter()

    def update(self, i: int, note: str = "") -> None:
        now = time.perf_counter()
        if self.quiet or now - self.last < self.every:
            return
        self.last = now
        tot = f"/{self.total}" if self.total else ""
        print(f"  {self.label}: {i}{tot} {note} ({now - self.t0:.1f} s)", file=sys.stderr, flush=True)


def pyplot():
    """matplotlib.pyplot with a file-only backend, imported only when ``--plot`` is given."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("--plot needs matplotlib: pip install matplotlib") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def report(ok: bool, what: str) -> int:
    """Print the verdict of an example's built-in check and return the exit code."""
    print(("CHECK PASSED: " if ok else "CHECK FAILED: ") + what)
    return 0 if ok else 1
