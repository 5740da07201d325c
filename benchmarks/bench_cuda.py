"""The cuda suite (:mod:`pytropical_gpu.bench.cuda`) as a script: the ``cuda`` backend beside
cuBLAS SGEMM, the CuPy broadcasting a user would write and a device-to-device copy, measured in the
same run; every result is checked before it is timed (a mismatch exits 1).

Run: ``python -m benchmarks.bench_cuda [--quick] [--json PATH]`` from the repo root.
"""

from __future__ import annotations

import sys

try:  # imported as benchmarks.bench_cuda (python -m) or run as a script
    from . import _harness as h
except ImportError:  # pragma: no cover
    import _harness as h

import pytropical_gpu as tg
from pytropical_gpu.bench.cuda import run


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(description="pytropical_gpu cuda benchmarks")
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    p.add_argument("--json", metavar="PATH", help="where to write the JSON results "
                   "(default benchmarks/results/cuda_<device>.json)")
    p.add_argument("--no-json", action="store_true")
    args = p.parse_args(argv)
    try:
        rows = run(quick=args.quick, progress=h.stderr_progress("cuda"))
    except h.CheckFailed as e:
        print(f"cuda: correctness check FAILED: {e}", file=sys.stderr)
        return 1
    h.print_table(rows)
    if not args.no_json:
        import cupy

        be = tg.get_backend("cuda")
        info = be.describe()
        tag = "".join(c if c.isalnum() else "_" for c in info["device"].replace("NVIDIA ", ""))
        path = args.json or h.RESULTS_DIR / f"cuda_{tag}.json"
        path = h.write_json(path, rows, info["device"], quick=args.quick, cupy=cupy.__version__,
                            backend=info)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
