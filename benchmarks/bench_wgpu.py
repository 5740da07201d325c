"""The wgpu suite (:mod:`pytropical_gpu.bench.wgpu`) as a script: correctness first, then
device-resident timings beside a baseline (cuBLAS SGEMM when CuPy sees a CUDA device, a
one-byte-per-bool AndOr kernel, a WebGPU device-to-device copy).

    python benchmarks/bench_wgpu.py [--quick] [--json PATH]
"""

from __future__ import annotations

import os
import sys

try:  # imported as benchmarks.bench_wgpu (python -m) or run as a script
    from . import _harness as h
except ImportError:  # pragma: no cover
    import _harness as h

from pytropical_gpu.bench.wgpu import run


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(description="pytropical_gpu wgpu benchmarks")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    try:
        rows = run(quick=args.quick, progress=h.stderr_progress("wgpu"))
    except h.CheckFailed as e:
        print(f"wgpu: correctness check FAILED: {e}", file=sys.stderr)
        return 1
    h.print_table(rows)
    dev = rows[0].device if rows else "wgpu"
    path = h.write_json(args.json or h.default_json_path("wgpu"), rows, dev, quick=args.quick,
                        **getattr(run, "extra", {}))
    print(f"wrote {path}")
    return 1 if getattr(run, "extra", {}).get("failures") else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTROPICAL_WEBGPU", "wgpu")
    sys.exit(main())
