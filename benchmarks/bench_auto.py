"""Is "auto" within 10% of the fastest backend for every operation and size? (issue 13)

    python benchmarks/bench_auto.py [--json PATH] [--ops OP ...] [--budget S] [--repeats N]

For each operation and the calibration's own size sweep (``calibration_cases``: numpy in, numpy
out, wall clock, transfers included), plus the sizes issue 13 named (dot of 2^22 trits), every
backend that runs here is timed (cpu, cuda, wgpu; a software wgpu adapter too, for information),
and so is ``auto`` twice: routed by a ``calibrate()`` made at the start of this run (not saved:
the user's cache is left alone) and routed by the built-in defaults only. Calls are interleaved
(one call of each variant per round, in a new shuffled order each round, median of the rounds) so
a loaded machine slows all alike and no variant always follows the same one (each row's ``after``:
a variant's median by the variant before it); a software adapter is timed on its own afterwards
(its spinning threads would slow the next call).
Every backend's result is checked against cpu's (exact; cosine to 1e-9) before it is timed.

The ratio that counts is auto's median over the fastest *eligible* backend's: what "auto" may
route to (cpu, cuda, a hardware wgpu adapter; never a software one, SPEC). A row is flagged when
either auto is more than 1.10x that. Each call under 20 ms is preceded by an untimed one of the
same variant (see ``_time_round``). A backend predicted (linear in size from its last size) to
take more than ``--budget`` seconds per call is skipped at that size, and the operation's sweep
ends when every backend would be. A flagged size is measured once more (both kept): the flag
stands only if it repeats, as a loaded machine's noise does not. JSON: devices, calibration,
route tables, one row per size.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from pytropical_gpu import HybridContext  # noqa: E402
from pytropical_gpu import calibration_cases as cases  # noqa: E402
from pytropical_gpu import route_table as rt  # noqa: E402
from pytropical_gpu.bench.harness import git_commit, host_tag  # noqa: E402
from pytropical_gpu.calibration import OPS, calibrate  # noqa: E402
from pytropical_gpu.routing import usable_backends  # noqa: E402
from pytropical_gpu.thresholds import Thresholds, describe_backend  # noqa: E402

#: sizes issue 13 measured that the calibration sweep steps over (step units of calibration_cases)
EXTRA = {"dot": (1 << 17,)}  # 2^22 trits per vector
#: auto may be this much slower than the fastest eligible backend (issue 13)
LIMIT = 1.10
#: ops whose call changes its operands (each backend's check starts from a fresh copy)
MUTATES = ("accumulate",)


class _Switch:
    """The context the cases' calls use: ``ctx`` is switched between the calibrated and the
    defaults-only contexts, so all variants share one set of operands."""

    def __init__(self, ctx: HybridContext):
        self.ctx = ctx

    def __getattr__(self, name: str) -> Any:
        return getattr(self.ctx, name)


def _snap(x: Any) -> Any:
    """A host copy of a result, comparable with ``_same``."""
    if isinstance(x, tuple):
        return tuple(_snap(v) for v in x)
    for planes in (("pos", "neg"), ("sign", "mag"), ("words",)):
        if all(hasattr(x, p) for p in planes):
            return tuple(np.array(getattr(x, p)) for p in planes)
    return np.array(x)


def _same(a: Any, b: Any, op: str) -> bool:
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y, op) for x, y in zip(a, b))
    if op == "cosine":
        return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-9, atol=0))
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))


def _rng(op: str, p: int) -> np.random.Generator:
    return np.random.default_rng([OPS.index(op), p])


def _time_round(calls: dict[str, Any], repeats: int, cell_s: float, seed: Any = 0,
                gpu: frozenset = frozenset(), after: dict | None = None) -> tuple[dict, dict]:
    """Median wall time of each variant, interleaved round by round (each round in a new shuffled
    order, ``seed`` per cell) after a warm-up: at least 3 rounds, more (up to ``repeats``) while the
    cell has used less than ``cell_s``. A call under 20 ms is preceded by an untimed one of the
    same variant. Returns (medians, medians over the rounds whose previous variant ran on the host,
    i.e. is not in ``gpu``); ``after`` (if given) gets, per variant, its median by predecessor.

    Why: on the H200 a host call timed after a cuda or wgpu call ran 5-15 us slower, even after its
    own untimed call (auto_direct.py: cpu bind 512 trits 14 us after cpu, 28 after cuda or wgpu).
    A fixed order (run 1) or a rotated one (run 2: a rotated cycle keeps every predecessor) made
    auto follow wgpu in every round; one seed for every cell (route run 1) made auto follow a GPU
    in 11 of 15 rounds against 6 for auto_defaults. A seed per cell spreads predecessors at random,
    and the host-predecessor medians leave out what a GPU call leaves behind for the next one."""
    warm = {}
    for k, f in calls.items():
        t0 = time.perf_counter()
        f()
        warm[k] = time.perf_counter() - t0
    by_prev: dict[str, dict[str, list[float]]] = {k: {} for k in calls}
    t_end = time.perf_counter() + cell_s
    order, prev = list(calls), list(calls)[-1]
    shuffle = random.Random(repr(seed)).shuffle
    for r in range(repeats):
        shuffle(order)
        for k in order:
            f = calls[k]
            if warm[k] < 0.02:
                f()
            t0 = time.perf_counter()
            f()
            by_prev[k].setdefault(prev, []).append(time.perf_counter() - t0)
            prev = k
        if r >= 2 and time.perf_counter() > t_end:
            break
    if after is not None:
        for k, d in by_prev.items():
            after.setdefault(k, {}).update({p: statistics.median(v) for p, v in d.items()})
    med, host = {}, {}
    for k, d in by_prev.items():
        med[k] = statistics.median([t for v in d.values() for t in v])
        h = [t for p, v in d.items() if p not in gpu for t in v]
        host[k] = statistics.median(h) if h else med[k]
    return med, host


class _Bench:
    """The two auto contexts, the backends, and one size's measurement (:meth:`cell`)."""

    def __init__(self, here: list[str], eligible: list[str], cal: Any, repeats: int, cell_s: float):
        self.here, self.eligible, self.repeats, self.cell_s = here, eligible, repeats, cell_s
        self.ctx = {"auto": HybridContext(), "auto_defaults": HybridContext()}
        self.ctx["auto"].use_calibration(cal)
        self.ctx["auto_defaults"].use_calibration(None)
        self.sw = _Switch(self.ctx["auto"])
        self.cells = 0

    def cell(self, op: str, p: int, run_here: list[str], progress: bool) -> dict:
        """Check every backend's result against the first's, then time backends and both autos."""
        size, sw, eligible = cases.build_size(op, p), self.sw, self.eligible
        routes = {n: c.route(op, size) for n, c in self.ctx.items()}  # op: its own key (matmul_int)
        if progress:
            print(f"[auto] {op} size {size}: {', '.join(run_here)}; auto -> {routes['auto']}, "
                  f"defaults -> {routes['auto_defaults']}", file=sys.stderr, flush=True)
        call, _ = cases.build(op, p, _rng(op, p), ctx=sw)
        agree, ref = True, None
        for b in run_here:  # the check: every backend against the first (cpu when it ran)
            c = cases.build(op, p, _rng(op, p), ctx=sw)[0] if op in MUTATES else call
            got = _snap(c(b))
            if ref is None:
                ref = got
            elif not _same(got, ref, op):
                agree = False
                print(f"[auto] MISMATCH {op} size {size}: {b} != {run_here[0]}", file=sys.stderr)
        variants = {b: (lambda b=b: call(b)) for b in run_here if b in eligible}
        for name, ctx in self.ctx.items():
            if routes[name] in run_here:
                variants[name] = lambda ctx=ctx: (setattr(sw, "ctx", ctx), call(None))
        after: dict = {}
        self.cells += 1
        on_gpu = frozenset(k for k in variants if routes.get(k, k) not in ("cpu",))
        med, host = _time_round(variants, self.repeats, self.cell_s, (op, p, self.cells), on_gpu,
                                after)
        for b in run_here:  # a software adapter alone: its threads would slow the next call
            if b not in eligible:
                med.update(_time_round({b: lambda b=b: call(b)}, self.repeats, self.cell_s)[0])
        elig = {b: med[b] for b in run_here if b in eligible}
        best = min(elig, key=elig.get) if elig else None
        elig_h = {b: host[b] for b in run_here if b in eligible}
        best_h = min(elig_h, key=elig_h.get) if elig_h else None
        row = {"op": op, "step": p, "size": size, "median_s": med, "routes": routes,
               "median_after_host_s": host, "after": after, "fastest_eligible": best,
               "fastest_any": min(run_here, key=med.get), "agree": agree}
        for name in self.ctx:
            row[f"ratio_{name}"] = med[name] / elig[best] if name in med and best else None
            row[f"ratio_{name}_after_host"] = (host[name] / elig_h[best_h]
                                                if name in host and best_h else None)
        row["flag"] = any((row[f"ratio_{n}"] or 0) > LIMIT for n in self.ctx)
        return row


def run(ops: list[str], budget: float, repeats: int, cell_s: float, progress: bool,
        max_s: float = float("inf")) -> dict:
    here = usable_backends(include_software=True)  # everything that runs here
    eligible = usable_backends()  # what auto may route to
    t0 = time.perf_counter()
    # through JSON, as the next context loads a saved calibration from the cache
    cal = Thresholds.from_json(calibrate(progress=progress, save=False).to_json())
    cal_s = time.perf_counter() - t0
    bench = _Bench(here, eligible, cal, repeats, cell_s)
    ctx_cal, ctx_def = bench.ctx["auto"], bench.ctx["auto_defaults"]
    rows, left = [], []
    for op in ops:
        last: dict[str, tuple[int, float]] = {}
        for p in sorted(set(cases.steps(op)) | set(EXTRA.get(op, ()))):
            size = cases.build_size(op, p)
            if time.perf_counter() - t0 > max_s:  # out of time: say what was not measured
                left.append(f"{op} size {size}")
                continue
            pred = {b: last[b][1] * size / last[b][0] for b in last}
            run_here = [b for b in here if pred.get(b, 0.0) <= budget]
            if not run_here:
                break
            row = bench.cell(op, p, run_here, progress)
            if row["flag"]:  # measured again once: a flag stands only if it repeats
                again = bench.cell(op, p, run_here, progress)
                keys = ("median_s", "median_after_host_s", "ratio_auto", "ratio_auto_defaults",
                        "ratio_auto_after_host", "ratio_auto_defaults_after_host")
                row = {**row, "first": {k: row[k] for k in keys}, **{k: again[k] for k in keys}}
                row["flag"] = again["flag"]
            row["skipped"] = {b: f"predicted {pred[b]:.2f} s" for b in here if b not in run_here}
            for b in run_here:
                last[b] = (max(size, 1), row["median_s"][b])
            rows.append(row)
    devices = {b: describe_backend(b) for b in here}
    return {"device": ", ".join(f"{b}: {d.get('device')}{' (software)' if d['software'] else ''}"
                                for b, d in devices.items()),
            "devices": devices, "eligible": eligible, "not_measured": left, "limit": LIMIT,
            "budget_s": budget,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "git_commit": git_commit(), "calibrate_s": cal_s, "calibration": cal.to_json(),
            "routes": {"auto": {op: rt.describe(s) for op, s in ctx_cal._routes().items()}
                       if ctx_cal.gpu else "cpu (no eligible GPU)",
                       "auto_defaults": {op: rt.describe(s) for op, s in ctx_def._routes().items()}
                       if ctx_def.gpu else "cpu (no eligible GPU)"},
            "rows": rows}


def table(doc: dict) -> str:
    names = list(doc["devices"])
    head = ["op", "size"] + [f"{b} ms" for b in names] + ["auto ms", "auto/best", "dflt/best",
                                                          "host-pred", "best", "ok"]
    lines = [head]
    for r in doc["rows"]:
        m = r["median_s"]
        ms = [f"{m[k] * 1e3:.3f}" if k in m else "-" for k in names + ["auto"]]
        ratios = []
        for k in ("auto", "auto_defaults", "auto_after_host"):
            v = r.get(f"ratio_{k}")
            ratios.append("-" if v is None else f"{v:.2f}" + ("!" if v > LIMIT else ""))
        lines.append([r["op"], str(r["size"])] + ms + ratios +
                     [str(r["fastest_eligible"]), "yes" if r["agree"] else "NO"])
    w = [max(len(x[i]) for x in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w[i]) if i > 0 else c.ljust(w[i]) for i, c in enumerate(x))
                     for x in lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", metavar="PATH", help="default benchmarks/results/auto_<host>.json")
    p.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS))
    p.add_argument("--budget", type=float, default=0.5, help="skip calls predicted longer (s)")
    p.add_argument("--repeats", type=int, default=15, help="timed rounds per size (at most)")
    p.add_argument("--cell", type=float, default=0.5, help="stop rounds after 3 past this (s)")
    p.add_argument("--max-seconds", type=float, default=float("inf"),
                   help="start no new size after this long (the JSON lists what was left)")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    doc = run(a.ops, a.budget, a.repeats, a.cell, not a.quiet, a.max_seconds)
    doc["seconds"] = time.perf_counter() - t0
    print(table(doc))
    flagged = [r for r in doc["rows"] if r["flag"]]
    bad = [r for r in doc["rows"] if not r["agree"]]
    host = [r for r in doc["rows"] if (r["ratio_auto_after_host"] or 0) > LIMIT]
    print(f"{len(doc['rows'])} rows in {doc['seconds']:.0f} s (calibrate {doc['calibrate_s']:.1f} s);"
          f" {len(flagged)} with auto > {LIMIT:.2f}x the fastest eligible backend; "
          f"{len(bad)} with results that disagree; calibrated auto > {LIMIT:.2f}x over the rounds "
          f"after a host call: {len(host)}")
    if doc["not_measured"]:
        print(f"out of time (--max-seconds): {len(doc['not_measured'])} sizes not measured")
    for r in flagged:
        print(f"  FLAG {r['op']} size {r['size']}: auto {r['ratio_auto']} defaults "
              f"{r['ratio_auto_defaults']} (routes {r['routes']}, best {r['fastest_eligible']})")
    path = Path(a.json) if a.json else Path(__file__).parent / "results" / f"auto_{host_tag()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(f"wrote {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
