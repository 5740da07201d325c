"""Is "auto" within 10% of the fastest backend for every operation and size? (issue 13)

    python benchmarks/bench_auto.py [--json PATH] [--ops OP ...] [--budget S] [--cell S]

For each operation and the calibration's own size sweep (``calibration_cases``: numpy in, numpy
out, wall clock, transfers included), plus the sizes issue 13 named (dot of 2^22 trits), every
backend that runs here is timed (cpu, cuda, wgpu; a software wgpu adapter too, for information),
and so is ``auto`` twice: a context that loads, as a user's does, the calibration ``calibrate()``
saved at the start of this run (into a cache dir of its own, ``PYTROPICAL_CACHE_DIR``: the user's
cache is left alone), and a context routed by the built-in defaults only.
Every backend's result is checked against cpu's (exact; cosine to 1e-9) before it is timed.

Each size (a cell, ``--cell`` seconds) is timed in two phases (``_auto_timing``):

1. *survey* (40 % of the cell): every eligible backend and both autos interleaved, a new shuffled
   order each round: which backend is fastest, and the defaults column.
2. *pairs* (60 %): calibrated auto against the survey's fastest backend (and against the backend
   auto routes to, if another), in a shuffled order each round, every timed call preceded by the
   same kind of call (a call on the fastest backend, then its own untimed warm-up). The row's ratio
   is auto's median over the fastest's in this phase; its 95 % interval is the distribution-free
   interval of the median of the per-round ratios (an interval that holds 1.10 gets one more
   cell of pairs, pooled); ``spread`` is the fastest backend's own quartiles over its median.

The ratio that counts is over the fastest *eligible* backend: what "auto" may route to (cpu, cuda,
a hardware wgpu adapter; never a software one, SPEC). A row's verdict: "within" when the whole
interval is at or under 1.10, "over" when all of it is above, "noise" when it holds 1.10. A
backend predicted (linear in size from its last size) to take more than ``--budget`` seconds per
call is skipped at that size, and the operation's sweep ends when every backend would be. JSON:
devices, calibration, route tables, one row per size.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from benchmarks import _auto_timing as timing  # noqa: E402
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


class _Bench:
    """The two auto contexts, the backends, and one size's measurement (:meth:`cell`)."""

    def __init__(self, here: list[str], eligible: list[str], cal: Any, repeats: int, cell_s: float):
        self.here, self.eligible, self.repeats, self.cell_s = here, eligible, repeats, cell_s
        # calibrated: a fresh context that loads what calibrate() saved (cal None), as a user's
        self.ctx = {"auto": HybridContext(), "auto_defaults": HybridContext()}
        if cal is not None:
            self.ctx["auto"].use_calibration(cal)
        self.ctx["auto_defaults"].use_calibration(None)
        self.sw = _Switch(self.ctx["auto"])
        self.cells = 0

    def cell(self, op: str, p: int, run_here: list[str], progress: bool) -> dict:
        """Check every backend's result against the first's, survey every variant, then time auto
        against the fastest backend in pairs."""
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
        # every variant sets the switch (the same wrapper cost); a backend's call ignores routing
        variants = {b: (lambda b=b: (setattr(sw, "ctx", self.ctx["auto"]), call(b)))
                    for b in run_here if b in eligible}
        for name, ctx in self.ctx.items():
            if routes[name] in run_here:
                variants[name] = lambda ctx=ctx: (setattr(sw, "ctx", ctx), call(None))
        after: dict = {}
        self.cells += 1
        seed = (op, p, self.cells)
        on_gpu = frozenset(k for k in variants if routes.get(k, k) not in ("cpu",))
        med, host = timing.survey(variants, self.repeats, 0.4 * self.cell_s, seed, on_gpu, after)
        for b in run_here:  # a software adapter alone: its threads would slow the next call
            if b not in eligible:
                med.update(timing.survey({b: lambda b=b: call(b)}, self.repeats, self.cell_s)[0])
        elig = {b: med[b] for b in run_here if b in eligible}
        best = min(elig, key=elig.get) if elig else None
        row = {"op": op, "step": p, "size": size, "median_s": med, "routes": routes,
               "median_after_host_s": host, "after": after, "fastest_survey": best,
               "fastest_any": min(run_here, key=med.get), "agree": agree}
        row["ratio_auto_defaults"] = (med["auto_defaults"] / elig[best]
                                      if "auto_defaults" in med and best else None)
        row.update(self._pairs(variants, routes["auto"], best, seed) if "auto" in variants and best
                   else {"ratio_auto": None, "verdict": None, "fastest_eligible": best})
        row["flag"] = (row["ratio_auto"] or 0) > LIMIT
        sw.ctx = self.ctx["auto"]
        return row

    def _pairs(self, variants: dict, route: str, best: str, seed: Any) -> dict:
        """Phase 2: auto against the survey's fastest backend (and its own route, if another)."""
        names = ["auto", best] + ([route] if route != best and route in variants else [])
        runs_on = {k: (route if k == "auto" else k) for k in names}
        calls = {k: variants[k] for k in names}
        t = timing.paired(calls, runs_on, best, 0.6 * self.cell_s, seed)
        r = [a / b for a, b in zip(t["auto"], t[best])]
        if timing.verdict(*timing.median_ci(r)[:2], LIMIT) == "noise":  # undecided: one more cell
            more = timing.paired(calls, runs_on, best, self.cell_s, (seed, "more"))
            t = {k: v + more[k] for k, v in t.items()}
        med = {k: statistics.median(v) for k, v in t.items()}
        fast = min((k for k in names if k != "auto"), key=med.get)

        def ratio(x: str, y: str) -> dict:
            r = [a / b for a, b in zip(t[x], t[y])]
            lo, hi, cover = timing.median_ci(r)
            return {"ratio": med[x] / med[y], "ratio_median": statistics.median(r),
                    "ci": [lo, hi], "ci_level": cover, "verdict": timing.verdict(lo, hi, LIMIT)}

        out = {"pairs": {"n": len(t["auto"]), "median_s": med, "fastest": fast,
                         "spread_fastest": timing.spread(t[fast]), "auto_vs_fastest": ratio("auto", fast)},
               "fastest_eligible": fast}
        if route != fast and route in t:  # a route that is not the fastest: a loss, or a tie?
            out["pairs"]["route_vs_fastest"] = ratio(route, fast)
            out["pairs"]["auto_vs_route"] = ratio("auto", route)
        main = out["pairs"]["auto_vs_fastest"]
        out.update(ratio_auto=main["ratio"], ratio_auto_ci=main["ci"], verdict=main["verdict"])
        return out


def _load_as_user(progress: bool, ops: list[str]) -> tuple[Any, dict]:
    """calibrate() saved into a cache dir of this run's own (unless PYTROPICAL_CACHE_DIR is set),
    then loaded by a fresh context as a user's next context loads it. Returns (None: the fresh
    context loads it itself, or the calibration when nothing could be saved, info)."""
    if not os.environ.get("PYTROPICAL_CACHE_DIR"):
        os.environ["PYTROPICAL_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_auto_cache_")
    t0 = time.perf_counter()
    cal = calibrate(ops=ops, progress=progress, save=True)  # the ops benched (default all)
    info = {"calibrate_s": time.perf_counter() - t0, "cache_dir": os.environ["PYTROPICAL_CACHE_DIR"],
            "calibration": cal.to_json()}
    probe = HybridContext()
    if probe.gpu is None:
        info["calibration_source"] = "no eligible GPU: every call on cpu"
        return None, info
    probe._routes()  # loads the saved calibration, as the first auto call of a user's context does
    loaded = probe._calibration
    if loaded is None or loaded.to_json() != cal.to_json():
        info["calibration_source"] = "not loaded from the cache: routed by the returned calibration"
        return Thresholds.from_json(cal.to_json()), info
    info["calibration_source"] = "loaded from the cache by a new context"
    return None, info


def run(ops: list[str], budget: float, repeats: int, cell_s: float, progress: bool,
        max_s: float = float("inf")) -> dict:
    here = usable_backends(include_software=True)  # everything that runs here
    eligible = usable_backends()  # what auto may route to
    t0 = time.perf_counter()
    env = os.environ.get("PYTROPICAL_CACHE_DIR")
    try:
        return _run(ops, budget, repeats, cell_s, progress, max_s, here, eligible, t0)
    finally:  # this run's own cache dir was for this run only
        if env is None:
            os.environ.pop("PYTROPICAL_CACHE_DIR", None)


def _run(ops: list[str], budget: float, repeats: int, cell_s: float, progress: bool, max_s: float,
         here: list[str], eligible: list[str], t0: float) -> dict:
    cal, info = _load_as_user(progress, ops)
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
            row["skipped"] = {b: f"predicted {pred[b]:.2f} s" for b in here if b not in run_here}
            for b in run_here:
                last[b] = (max(size, 1), row["median_s"][b])
            rows.append(row)
    devices = {b: describe_backend(b) for b in here}
    return {"device": ", ".join(f"{b}: {d.get('device')}{' (software)' if d['software'] else ''}"
                                for b, d in devices.items()),
            "devices": devices, "eligible": eligible, "not_measured": left, "limit": LIMIT,
            "budget_s": budget, "cell_s": cell_s,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "git_commit": git_commit(), **info,
            "routes": {"auto": {op: rt.describe(s) for op, s in ctx_cal._routes().items()}
                       if ctx_cal.gpu else "cpu (no eligible GPU)",
                       "auto_defaults": {op: rt.describe(s) for op, s in ctx_def._routes().items()}
                       if ctx_def.gpu else "cpu (no eligible GPU)"},
            "rows": rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", metavar="PATH", help="default benchmarks/results/auto_<host>.json")
    p.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS))
    p.add_argument("--budget", type=float, default=0.5, help="skip calls predicted longer (s)")
    p.add_argument("--repeats", type=int, default=15, help="survey rounds per size (at most)")
    p.add_argument("--cell", type=float, default=0.5,
                   help="seconds per size: 40%% survey, 60%% pairs (each at least its minimum rounds)")
    p.add_argument("--max-seconds", type=float, default=float("inf"),
                   help="start no new size after this long (the JSON lists what was left)")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    t0 = time.perf_counter()
    doc = run(a.ops, a.budget, a.repeats, a.cell, not a.quiet, a.max_seconds)
    doc["seconds"] = time.perf_counter() - t0
    print(timing.table(doc, LIMIT))
    rows = [r for r in doc["rows"] if r["ratio_auto"] is not None]
    bad = [r for r in doc["rows"] if not r["agree"]]
    verdicts = {v: sum(r["verdict"] == v for r in rows) for v in ("within", "noise", "over")}
    right = sum(r["routes"]["auto"] == r["fastest_eligible"] for r in rows)
    med = statistics.median(r["ratio_auto"] for r in rows) if rows else float("nan")
    print(f"{len(doc['rows'])} rows in {doc['seconds']:.0f} s (calibrate {doc['calibrate_s']:.1f} s; "
          f"{doc['calibration_source']}); {len(bad)} with results that disagree; calibrated auto "
          f"routes to the fastest at {right} of {len(rows)}; auto/fastest median {med:.3f}, "
          f"> {LIMIT:.2f}x at {sum(r['flag'] for r in rows)}; by the 95% interval: {verdicts}")
    if doc["not_measured"]:
        print(f"out of time (--max-seconds): {len(doc['not_measured'])} sizes not measured")
    for r in rows:
        if r["flag"] or r["verdict"] != "within":
            print(f"  {r['verdict'].upper()} {r['op']} size {r['size']}: auto/fastest "
                  f"{r['ratio_auto']:.3f} [{r['ratio_auto_ci'][0]:.3f}, {r['ratio_auto_ci'][1]:.3f}] "
                  f"n={r['pairs']['n']} (route {r['routes']['auto']}, fastest {r['fastest_eligible']})")
    path = Path(a.json) if a.json else Path(__file__).parent / "results" / f"auto_{host_tag()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    print(f"wrote {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
