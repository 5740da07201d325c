"""Replay routing rules on a saved calibration: where each rule sends every measured size, and how
much slower that is than the fastest backend measured there (the calibration's best-of-N times).

    python benchmarks/auto_replay.py [benchmarks/results/calibrate_h200.json] [--all]

Rules compared (cuda is the GPU "auto" has, as on the H200):
  old defaults   the table before the route tables (matmul 2^21, andor_matmul 2^24, pack 2^22,
                 VSA 2^20 work items), cuda above it;
  old calibrated the single crossover calibrate() saved (cpu below, its one GPU above);
  new defaults   thresholds.DEFAULTS now (the H200's cuda-vs-cpu crossovers);
  new calibrated the route table built from the calibration's timings (route_table.from_timings).
Prints the rows where any rule is more than 10% slower than the fastest (``--all``: every row).
No device is needed: this is arithmetic on measured times, not a new measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from pytropical_gpu import route_table as rt  # noqa: E402
from pytropical_gpu.thresholds import DEFAULTS  # noqa: E402

OLD_DEFAULTS = {"matmul": 1 << 21, "matmul_int": 1 << 21, "andor_matmul": 1 << 24, "pack": 1 << 22}
LIMIT = 1.10


def replay(cal: dict) -> list[dict]:
    rows = []
    for op, per in cal["timings"].items():
        curves = {b: {int(s): t for s, t in v} for b, v in per.items()}
        rules = {
            "old defaults": rt.from_crossover(OLD_DEFAULTS.get(op, 1 << 20), "cuda"),
            "old calibrated": rt.from_crossover(cal["crossover"][op], cal["gpu"].get(op)),
            "new defaults": rt.from_crossover(DEFAULTS[op], "cuda"),
            "new calibrated": rt.from_timings(per, [b for b in per if not
                                                    cal["devices"].get(b, {}).get("software")]),
        }
        for size in sorted({s for c in curves.values() for s in c}):
            here = {b: c[size] for b, c in curves.items() if size in c}
            best = min(here, key=here.get)
            row = {"op": op, "size": size, "best": best, "best_ms": here[best] * 1e3}
            for name, seg in rules.items():
                b = rt.lookup(seg, size)
                row[name] = (b, here[b] / here[best] if b in here else None)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path", nargs="?", default=str(Path(__file__).parent / "results" /
                                                  "calibrate_h200.json"))
    p.add_argument("--all", action="store_true", help="every row, not only the slow ones")
    a = p.parse_args(argv)
    rows = replay(json.loads(Path(a.path).read_text()))
    names = ("old defaults", "old calibrated", "new defaults", "new calibrated")
    print("| op | size | fastest (ms) | " + " | ".join(names) + " |")
    print("|---|---:|---|" + "---|" * len(names))

    def cell(v):
        b, r = v
        return f"{b} {r:.2f}" + (" **slow**" if r > LIMIT else "") if r is not None else f"{b} -"

    for r in rows:
        if a.all or any((r[n][1] or 0) > LIMIT for n in names):
            print(f"| {r['op']} | {r['size']} | {r['best']} {r['best_ms']:.3f} | " +
                  " | ".join(cell(r[n]) for n in names) + " |")
    for n in names:
        slow = [r for r in rows if (r[n][1] or 0) > LIMIT]
        worst = max((r[n][1] or 0) for r in rows)
        print(f"{n}: {len(slow)} of {len(rows)} sizes over {LIMIT:.2f}x the fastest (worst {worst:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
