"""The benchmark scripts' helpers: the package's harness (:mod:`pytropical_gpu.bench.harness`:
timing, checks, tables, JSON) plus what belongs to this checkout: ``results/`` and the scripts'
command line.

The suites ``python -m pytropical_gpu bench`` runs live in the package (``pytropical_gpu.bench``,
shipped in the wheel); ``cpu.py``, ``bench_wgpu.py`` and ``bench_cuda.py`` here run the same suites
as scripts. A script module starts with::

    try:                     # imported as benchmarks.<name> or run as a script
        from . import _harness as h
    except ImportError:
        import _harness as h
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def use_checkout() -> None:
    """Make ``import pytropical_gpu`` find this checkout when a script runs without an install."""
    try:
        import pytropical_gpu  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(RESULTS_DIR.parent.parent))


use_checkout()

from pytropical_gpu.bench.harness import (  # noqa: E402
    CheckFailed,
    Result,
    Timing,
    check,
    compare,
    cpu_name,
    format_table,
    git_commit,
    git_dirty,
    host_tag,
    median_time,
    write_json,
)


def print_table(rows: Iterable[Result | Mapping[str, Any]], file=None) -> None:
    print(format_table(rows), file=file or sys.stdout)


def stderr_progress(prefix: str) -> Callable[[str], None]:
    """A progress callback printing ``[prefix] text`` lines to stderr."""
    def progress(text: str) -> None:
        print(f"[{prefix}] {text}", file=sys.stderr, flush=True)
    return progress


def default_json_path(prefix: str) -> Path:
    """``benchmarks/results/<prefix>_<host>.json``."""
    return RESULTS_DIR / f"{prefix}_{host_tag()}.json"


def bench_main(name: str, run: Callable[..., list[Result]], argv: Sequence[str] | None = None,
               device: str | None = None) -> int:
    """Command line of a benchmark script: ``[--quick] [--json PATH | --no-json]``.

    Runs ``run(quick=..., progress=...)``, prints the table and writes JSON (default
    ``benchmarks/results/<name>_<host>.json``). Returns 1 when a correctness check fails.
    """
    p = argparse.ArgumentParser(description=f"pytropical_gpu {name} benchmarks")
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    p.add_argument("--json", metavar="PATH", help="where to write the JSON results")
    p.add_argument("--no-json", action="store_true", help="do not write JSON")
    args = p.parse_args(argv)
    try:
        rows = run(quick=args.quick, progress=stderr_progress(name))
    except CheckFailed as e:
        print(f"{name}: correctness check FAILED: {e}", file=sys.stderr)
        return 1
    print_table(rows)
    if not args.no_json:
        dev = device or (rows[0].device if rows and isinstance(rows[0], Result) else name)
        path = write_json(args.json or default_json_path(name), rows, dev, quick=args.quick)
        print(f"wrote {path}")
    return 0


__all__ = ["RESULTS_DIR", "CheckFailed", "Result", "Timing", "bench_main", "check", "compare",
           "cpu_name", "default_json_path", "format_table", "git_commit", "git_dirty", "host_tag",
           "median_time", "print_table", "stderr_progress", "use_checkout", "write_json"]
