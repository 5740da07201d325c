"""Where the APSP example's end-to-end time goes, phase by phase (issue 13: end-to-end <= 1.2 x the
sum of its kernel times).

Runs ``examples/apsp_resident.py``'s own ``square`` with its ``mark`` hook: after each phase (upload
of D, the first next-hop table, each squaring's GEMM call and its next-hop update, the batch's end,
the downloads of D and of the next-hop table) the host clock is read and, on cuda, a CUDA event is
recorded (nothing waits: the events are read after the run). Per phase: ``wall`` = host time spent
in it (Python, checks, launches, and any wait it does), ``gpu`` = GPU time between the events that
bracket it. Inside a batch the host runs ahead of the GPU: a squaring's wall time is then what its
calls cost the host (Python, checks, launches) and ``batch_end``'s wall is the wait for the queued
work; the gpu columns say where the GPU's time went (idle gaps included). Configurations: inside
``ctx.batch()`` or not, and on cuda large downloads through pinned memory
(``pytropical_gpu._pinned``, the default) or pageable (``MIN_BYTES = None``: plain ``x.get()``).
``kernel_sum`` is the example's denominator (its timed run: CUDA events around each squaring,
synchronised per step); ``ratio`` = median end-to-end / kernel_sum. On cuda it also times the
transfers alone (64 MiB up and down by each route, the pinned pool cold and warm) and the NaN check
of one 64 MiB operand.

Checks first (nothing is timed otherwise): a small graph's distances and routes against scipy's
Dijkstra in every configuration; at full size, every configuration's distances and next hops equal
the first one's bit for bit, and a few sources match scipy.

    python benchmarks/bench_apsp_breakdown.py [--backend cuda|cpu] [--n 4096] [--repeats 5]
        [--json PATH]      (cpu: use a small --n, e.g. 192; the product is cubic)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

try:  # imported as benchmarks.<name> or run as a script
    from . import _harness as h
except ImportError:
    import _harness as h

import pytropical_gpu as tg
from pytropical_gpu import _pinned, facts
from pytropical_gpu.backends import probe

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import apsp_resident as ap  # noqa: E402

PHASES = ("upload", "first_hops", "gemm", "next_hop", "batch_end", "download_d", "download_nxt")
MiB = 1 << 20


class Marks:
    """The ``mark`` hook: host clock and (cuda) an event per phase boundary; read after the run."""

    def __init__(self, cp):
        self.cp, self.points = cp, []

    def __call__(self, phase: str) -> None:
        ev = None
        if self.cp is not None:
            ev = self.cp.cuda.Event()
            ev.record()
        self.points.append((phase, time.perf_counter(), ev))

    def phases(self) -> list[tuple[str, float, float | None]]:
        """(phase, wall s, gpu s or None) per phase, in order (GEMM and next hop once per step)."""
        if self.cp is not None:
            self.points[-1][2].synchronize()
        out = []
        for (_, t0, e0), (name, t1, e1) in zip(self.points, self.points[1:]):
            gpu = None if e0 is None else self.cp.cuda.get_elapsed_time(e0, e1) / 1e3
            out.append((name, t1 - t0, gpu))
        return out


def _config(cp, pinned: bool):
    """Set the download route; returns the previous MIN_BYTES."""
    old = _pinned.MIN_BYTES
    _pinned.MIN_BYTES = (4 * MiB) if pinned else None
    return old


def run_once(ctx, d0, cp, batch: bool) -> tuple[float, list, np.ndarray, np.ndarray]:
    marks = Marks(cp)
    t0 = time.perf_counter()
    marks("start")
    dist, nxt, _ = ap.square(d0, None, ctx, batch=batch, mark=marks)
    total = time.perf_counter() - t0
    return total, marks.phases(), dist, nxt


def summarise(runs: list[tuple[float, list]], warmup: float) -> dict:
    """Medians over runs: end-to-end, each phase's total (GEMM / next hop summed over the
    squarings) and the per-squaring lists; ``warmup``: this configuration's untimed first run."""
    out = {"end_to_end_s": statistics.median(t for t, _ in runs), "warmup_run_s": warmup}
    has_gpu = runs[0][1][0][2] is not None
    for ph in PHASES:
        for what, i in (("wall", 1), ("gpu", 2)):
            out[f"{ph}_{what}_s"] = statistics.median(
                sum(p[i] for p in ps if p[0] == ph) for _, ps in runs) if what == "wall" or has_gpu \
                else None
    steps = [[p for p in ps if p[0] in ("gemm", "next_hop")] for _, ps in runs]
    for what, i in (("wall", 1), ("gpu", 2)):
        if what == "wall" or has_gpu:
            out[f"per_squaring_{what}_ms"] = [
                round(statistics.median(s[j][i] + s[j + 1][i] for s in steps) * 1e3, 3)
                for j in range(0, len(steps[0]), 2)]
    return out


def transfers(ctx, cp, n: int, repeats: int) -> dict:
    """64 MiB (n x n float32) up and down by each route, synchronised, median of ``repeats``."""
    host = np.random.default_rng(0).random((n, n), dtype=np.float32)
    dev = cp.asarray(host)
    sync = cp.cuda.get_current_stream().synchronize
    pool = cp.get_default_pinned_memory_pool()
    pinned_src = np.ndarray(host.shape, host.dtype, buffer=cp.cuda.alloc_pinned_memory(host.nbytes))
    pinned_src[...] = host
    out = {"transfer_mib": host.nbytes / MiB}

    def t(fn, cold=False):
        times = []
        for _ in range(repeats):
            if cold:
                pool.free_all_blocks()
            t0 = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def via(min_bytes):
        def f():
            old, _pinned.MIN_BYTES = _pinned.MIN_BYTES, min_bytes
            try:
                return ctx.to_host(dev)
            finally:
                _pinned.MIN_BYTES = old
        return f

    for name, fn in (("pinned_warm", via(4 * MiB)), ("pageable", via(None))):
        h.check(f"download {name}", fn(), host)
    out["up_cupy_asarray_s"] = t(lambda: cp.asarray(host))  # CuPy stages through its pinned pool
    out["up_from_pinned_s"] = t(lambda: dev.set(pinned_src))  # the DMA alone (the floor)
    stage = np.ndarray(host.shape, host.dtype, buffer=cp.cuda.alloc_pinned_memory(host.nbytes))
    rows = [slice(i, i + -(-n // 8)) for i in range(0, n, -(-n // 8))]
    with ThreadPoolExecutor(8) as ex:  # what a threaded staging copy would give (not in the library)
        def up_threaded():
            list(ex.map(lambda r: np.copyto(stage[r], host[r]), rows))  # numpy drops the GIL
            dev.set(stage)
        out["up_threaded_staging_s"] = t(up_threaded)
    h.check("upload threaded", dev.get(), host)
    out["down_pageable_get_s"] = t(via(None))
    out["down_pinned_warm_s"] = t(via(4 * MiB))
    out["down_pinned_cold_s"] = t(via(4 * MiB), cold=True)  # the pool empty: cudaHostAlloc too
    out["down_into_pinned_s"] = t(lambda: dev.get(out=pinned_src))  # the DMA alone
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    gpu = []
    for _ in range(repeats):  # one operand's NaN check (what each eager float GEMM waits for)
        e0.record()
        assert not facts.Facts(dev, cp).nan
        e1.record()
        e1.synchronize()
        gpu.append(cp.cuda.get_elapsed_time(e0, e1) / 1e3)
    out["nan_check_gpu_s"] = statistics.median(gpu)
    out["nan_check_wall_s"] = t(lambda: facts.Facts(dev, cp).nan)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=["cuda", "cpu"], default=None,
                   help="default: cuda when usable, else cpu")
    p.add_argument("--n", type=int, default=None, help="nodes (default 4096 on cuda, 192 on cpu)")
    p.add_argument("--check-n", type=int, default=160, help="nodes of the scipy check graph")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    name = args.backend or ("cuda" if probe("cuda")[0] else "cpu")
    ok, why = probe(name)
    if not ok:
        print(f"bench_apsp_breakdown: {name} unavailable: {why}", file=sys.stderr)
        return 2
    n = args.n or (4096 if name == "cuda" else 192)
    progress = h.stderr_progress("apsp")
    t_start = time.perf_counter()
    cp = None
    if name == "cuda":
        import cupy as cp
    ctx = tg.HybridContext(backend=name)
    configs = [(b, pin) for pin in ((True, False) if cp is not None else (None,))
               for b in (True, False)]
    old = _pinned.MIN_BYTES
    try:
        # ---- checks: a small graph against scipy, every configuration
        ws = ap.random_network(args.check_n, 6, 1)
        srcs = list(range(0, args.check_n, max(1, args.check_n // 24)))
        for b, pin in configs:
            _config(cp, bool(pin))
            dist, nxt, _ = ap.square(ap.start(ws)[0], None, ctx, batch=b)
            good, what = ap.check(ws, dist, nxt, srcs)
            if not good:
                raise h.CheckFailed(f"{args.check_n} nodes, batch={b}, pinned={pin}: {what}")
        progress(f"check: {args.check_n} nodes, {len(configs)} configurations match scipy")
        # ---- warm-up: kernels (the big graph's tiles) and pools, then the timed configurations
        w = ap.random_network(n, 6, 0)
        m = min(n, 256)
        ap.all_pairs(w[:m, :m], ctx)
        d0 = ap.start(w)[0]
        ref = None
        runs: dict = {c: [] for c in configs}
        warm: dict = {}
        for r in range(args.repeats + 1):  # round 0 is the warm-up at full size
            for c in configs[r % len(configs):] + configs[:r % len(configs)]:  # rotating order
                _config(cp, bool(c[1]))
                total, phases, dist, nxt = run_once(ctx, d0, cp, c[0])
                if ref is None:
                    good, what = ap.check(w, dist, nxt, list(range(0, n, max(1, n // 3)))[:3])
                    if not good:
                        raise h.CheckFailed(f"{n} nodes: {what}")
                    ref = (dist, nxt)
                else:
                    h.check(f"{n} nodes {c}: distances", dist, ref[0])
                    h.check(f"{n} nodes {c}: next hops", nxt, ref[1])
                if r:
                    runs[c].append((total, phases))
                else:
                    warm[c] = total
                del dist, nxt
        _pinned.MIN_BYTES = old
        sums = [sum(ap.square(d0, None, ctx, timed=True)[2]) for _ in range(3)]
        ksum = statistics.median(sums)
        extra = transfers(ctx, cp, n, args.repeats) if cp is not None else {}
    except h.CheckFailed as e:
        print(f"bench_apsp_breakdown: correctness check FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        _pinned.MIN_BYTES = old
    rows = []
    for (b, pin), rs in runs.items():
        s = summarise(rs, warm[(b, pin)])
        rows.append({"backend": name, "nodes": n, "batch": b, "pinned_downloads": pin,
                     "repeats": len(rs), "kernel_sum_s": ksum,
                     "ratio": s["end_to_end_s"] / ksum, **s})
    _print(rows, extra, ksum)
    desc = tg.get_backend(name).describe()
    path = h.write_json(args.json or h.default_json_path(f"apsp_breakdown_{name}"), rows,
                        desc.get("device", name), backend=desc, kernel_sum_runs_s=sums,
                        transfers=extra, check_nodes=args.check_n,
                        seconds=time.perf_counter() - t_start)
    print(f"wrote {path} ({time.perf_counter() - t_start:.1f} s)")
    return 0


def _print(rows: list[dict], extra: dict, ksum: float) -> None:
    ms = lambda x: "-" if x is None else f"{x * 1e3:9.2f}"  # noqa: E731
    print(f"kernel sum (the example's timed run): {ksum * 1e3:.2f} ms")
    head = f"{'batch':>5} {'pinned':>6} {'end2end':>9} {'warm-up':>9} {'ratio':>6}  " + \
        " ".join(f"{ph[:12]:>12}" for ph in PHASES)
    print(head + "   (phases: wall / gpu ms)")
    for r in rows:
        cells = [f"{ms(r[ph + '_wall_s']).strip()}/{ms(r[ph + '_gpu_s']).strip()}" for ph in PHASES]
        print(f"{r['batch']!s:>5} {r['pinned_downloads']!s:>6} {ms(r['end_to_end_s'])} "
              f"{ms(r['warmup_run_s'])} {r['ratio']:6.2f}  " + " ".join(f"{c:>12}" for c in cells))
    for r in rows[:1]:
        print("per squaring (GEMM call + next hop), wall ms:", r.get("per_squaring_wall_ms"))
        if "per_squaring_gpu_ms" in r:
            print("per squaring, gpu ms:", r["per_squaring_gpu_ms"])
    for k, v in extra.items():
        print(f"  {k}: {v * 1e3:.3f} ms" if k.endswith("_s") else f"  {k}: {v}")


if __name__ == "__main__":
    sys.exit(main())
