"""wgpu item-memory search through the cached plan (issue 15, the 1-query row): every variant in one
run. Checks first (indices and scores equal to a reference: CuPy float32 scores when CUDA is there,
else numpy int64, lexicographic (-score, index)), then wall time of ``tg.search`` (host query in,
numpy out; also a resident query), GPU timestamps of the plan's passes, a host-side breakdown
(write / submit / map-read), and the CuPy float32 ``mem @ q`` + argsort baseline (wall and events).

    python benchmarks/bench_search_plan.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_search import random_vecs  # noqa: E402

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu.backends.wgpu import mapread, recorded  # noqa: E402
from pytropical_gpu.backends.wgpu import search_plan as sp  # noqa: E402
from pytropical_gpu.backends.wgpu import vsa_search as vs  # noqa: E402
from pytropical_gpu.backends.wgpu.runtime import Dispatch  # noqa: E402


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def wall(fn, n=30, warm=5, sync=None):
    for _ in range(warm):
        fn()
    if sync:
        sync()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        ts.append(time.perf_counter() - t0)
    q20, med, q80 = np.quantile(ts, [0.2, 0.5, 0.8])
    return {"median_ms": med * 1e3, "q20_ms": q20 * 1e3, "q80_ms": q80 * 1e3, "n": n}


def gpu_passes(eng, plan, reps=20):
    """GPU timestamps (ms per call) of the plan's dispatches: all passes, and pass one alone."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _wgpu_timing import _timestamps

    if "timestamp-query" not in getattr(eng.rt, "features", ()):
        return None
    disps = [c for c in plan.cmds if isinstance(c, Dispatch)]
    return {"all_passes_ms": _timestamps(eng, disps, reps, 5) * 1e3,
            "pass_one_ms": _timestamps(eng, disps[:1], reps, 5) * 1e3,
            "selection_ms": _timestamps(eng, disps[1:], reps, 5) * 1e3,
            "dispatches": len(disps)}


def breakdown(eng, fn, n=30):
    """Median µs per call of rt.write, rt.submit and the staging map-read inside ``fn``."""
    acc = {}
    rt = eng.rt
    orig = {"write": rt.write, "submit": rt.submit}
    st_read, rec_submit = mapread.Staging.read, recorded.Recorded.submit
    rec_write = recorded.Recorded.write

    def wrap(name, f):
        def g(*a, **kw):
            t0 = time.perf_counter()
            r = f(*a, **kw)
            acc.setdefault(name, []).append(time.perf_counter() - t0)
            return r
        return g

    rt.write, rt.submit = wrap("write", orig["write"]), wrap("submit", orig["submit"])
    mapread.Staging.read = wrap("map_read", st_read)
    recorded.Recorded.submit = wrap("recorded_submit", rec_submit)
    recorded.Recorded.write = wrap("recorded_write", rec_write)
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            acc.setdefault("total", []).append(time.perf_counter() - t0)
    finally:
        rt.write, rt.submit = orig["write"], orig["submit"]
        mapread.Staging.read, recorded.Recorded.submit = st_read, rec_submit
        recorded.Recorded.write = rec_write
    return {k: float(np.median(v)) * 1e6 for k, v in acc.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    rows, dim, k = (2_000, 1024, 10) if args.quick else (200_000, 10_000, 10)
    out = {"sizes": f"M={rows} dim={dim} k={k}", "rows": []}
    mem = random_vecs(rows, dim, 1)
    be = tg.get_backend("wgpu")
    eng = be.engine
    out["device"] = str(be.describe().get("device"))
    ctx = tg.HybridContext(backend="wgpu")
    md = ctx.to_device(mem)
    try:
        import cupy as cp

        cp.cuda.Device(0).compute_capability  # noqa: B018
        dense = cp.asarray(mem.to_array(), dtype=cp.float32)
    except Exception:  # noqa: BLE001
        cp = dense = None
    log(f"memory {out['sizes']} resident; cupy {'yes' if cp else 'no'}")
    for nq in (1, 64):
        q = random_vecs(nq, dim, 2 + nq)
        qa = q.to_array()
        if cp is not None:
            qd = cp.asarray(qa, dtype=cp.float32)
            want = cp.asnumpy(qd @ dense.T).astype(np.int64)
        else:
            want = qa.astype(np.int64) @ mem.to_array().astype(np.int64).T
        ids = np.arange(rows)
        order = np.stack([np.lexsort((ids, -r))[:k] for r in want])
        want_s = np.take_along_axis(want, order, axis=1)
        qres = ctx.to_device(q)
        # (name, plan on, SEARCH_ONE, query, recorded submit, SPIN_S)
        variants = [("generic L8R2 (before)", False, None, q, True, 0.0005),
                    ("plan", True, (32, 2), q, True, 0.0005),
                    ("plan, blocking wait", True, (32, 2), q, True, 0.0),
                    ("plan, rt.submit", True, (32, 2), q, False, 0.0005),
                    ("plan, resident query", True, (32, 2), qres, True, 0.0005)]
        if nq == 1:
            variants += [("plan L32R4", True, (32, 4), q, True, 0.0005),
                         ("plan L32R1", True, (32, 1), q, True, 0.0005)]
        for name, enabled, one, qq, rec, spin in variants:
            sp.ENABLED, vs.SEARCH_ONE, sp.RECORD, mapread.SPIN_S = enabled, one, rec, spin
            sp.clear(eng)

            def call(qq=qq):
                return tg.search(qq, md, k=k, backend="wgpu")

            idx, sc = call()
            ok = bool(np.array_equal(np.asarray(idx), order)
                      and np.array_equal(np.asarray(sc), want_s))
            row = {"Q": nq, "variant": name, "checked": ok}
            if not ok:
                log(f"Q={nq} {name}: WRONG RESULTS")
                out["rows"].append(row)
                continue
            row["wall"] = wall(call, n=100 if nq == 1 else 30)
            if enabled:
                plan = next(iter(sp.plans(eng).values()))
                try:
                    row["gpu"] = gpu_passes(eng, plan)
                except Exception as e:  # noqa: BLE001
                    row["gpu_error"] = f"{type(e).__name__}: {e}"
                row["host_us"] = breakdown(eng, call, n=100 if nq == 1 else 30)
            log(f"Q={nq} {name}: {json.dumps({x: row[x] for x in row if x != 'Q'})}")
            out["rows"].append(row)
        if cp is not None:
            def base(qd=qd):
                s = dense @ qd.T
                return cp.argsort(-s, axis=0)[:k].T

            sync = cp.cuda.Device().synchronize
            got = cp.asnumpy(base())
            row = {"Q": nq, "variant": "cupy float32 mem @ q + argsort",
                   "checked": bool(np.array_equal(got[:, 0], order[:, 0])),
                   "wall": wall(lambda: cp.asnumpy(base()), sync=sync)}
            from pytropical_gpu.bench.gputime import cupy_time
            row["events_ms"] = cupy_time(cp, base, 10).median * 1e3
            log(f"Q={nq} baseline: {row}")
            out["rows"].append(row)
    sp.ENABLED, vs.SEARCH_ONE, sp.RECORD, mapread.SPIN_S = True, (32, 2), True, 0.0005
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
