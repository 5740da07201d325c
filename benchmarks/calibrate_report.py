"""Run ``calibrate()`` once on this machine and report: how long it took, the crossover per
operation with the GPU that won, and every raw timing (JSON). Nothing is compared here: this is the
measurement HybridContext's routing will read (issue 13, item 1).

    python benchmarks/calibrate_report.py [--software] [--json PATH]

``--software`` measures a software wgpu adapter too (lavapipe: an upper bound of the run time on a
machine without a GPU); by default calibrate() measures what "auto" may route to. The thresholds are
saved where ``load_thresholds()`` finds them unless ``PYTROPICAL_CACHE_DIR`` points elsewhere.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from pytropical_gpu.calibration import calibrate, usable_backends  # noqa: E402
from pytropical_gpu.thresholds import NEVER  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--software", action="store_true", help="measure a software wgpu adapter too")
    p.add_argument("--json", metavar="PATH", help="write the thresholds and timings here")
    args = p.parse_args(argv)
    backends = usable_backends(include_software=args.software)
    t0 = time.perf_counter()
    t = calibrate(backends)
    took = time.perf_counter() - t0
    print(f"calibrate({backends}) took {took:.1f} s")
    for name, d in t.devices.items():
        print(f"  {name}: {d.get('device')}{' (software)' if d.get('software') else ''}")
    print(f"{'op':<14}{'crossover':>14}  gpu     largest common size: cpu ms / best gpu ms")
    for op, c in t.crossover.items():
        per = t.timings.get(op, {})
        cpu = dict((int(s), x) for s, x in per.get("cpu", []))
        gpu = {}
        for g, rows in per.items():
            for s, x in rows:
                if g != "cpu" and int(s) in cpu and x < gpu.get(int(s), float("inf")):
                    gpu[int(s)] = x
        tail = ""
        if gpu:
            s = max(gpu)
            tail = f"size {s}: {cpu[s] * 1e3:.3f} / {gpu[s] * 1e3:.3f}"
        shown = "never" if c == NEVER else str(c)
        print(f"{op:<14}{shown:>14}  {str(t.gpu.get(op)):<7} {tail}")
    if args.json:
        out = {"seconds": took, **t.to_json()}
        Path(args.json).write_text(json.dumps(out, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
