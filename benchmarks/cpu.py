"""The cpu suite (:mod:`pytropical_gpu.bench.cpu`) as a script: the numpy backend beside the
broadcasting numpy a user would write, timed in one run; a failed check exits with status 1.

Run: ``python -m benchmarks.cpu [--quick] [--json PATH]`` from the repo root, or
``python -m pytropical_gpu bench --backend cpu``. JSON goes to ``benchmarks/results/cpu_<host>.json``.
"""

from __future__ import annotations

import sys

try:  # imported as benchmarks.cpu (python -m) or run as a script
    from . import _harness as h
except ImportError:  # pragma: no cover - python benchmarks/cpu.py from a checkout
    import _harness as h

from pytropical_gpu.bench.cpu import run


def main(argv=None) -> int:
    return h.bench_main("cpu", run, argv)


if __name__ == "__main__":
    sys.exit(main())
