"""``bench_batch.py``'s wgpu breakdown: where a queued op's time goes (record / submit / wait), for
the generic path, the fast path with and without the bind-group cache, and with the old small-GEMM
tile, in one run (a helper module: run ``bench_batch.py``).

Its parts do not add up to a whole batch: they are timed outside the batch's own end, and the
previous batch's recorded commands stay alive while the next one records (the cyclic collector
then works ~4x as much; H200, batch_notes.md). ``bench_batch_s4.py`` splits whole batches by hooks
on the runtime, so its parts add up to the batch."""

from __future__ import annotations

import statistics
import time

try:  # imported as benchmarks.<name> or run as a script
    from . import _harness as h
except ImportError:
    import _harness as h

import pytropical_gpu as tg
from pytropical_gpu.backends import get_backend

#: breakdown variants: name -> (fast path on, bind-group cache on, small-GEMM tile on)
VARIANTS = {"batch_breakdown_generic": (False, True, True),
            "batch_breakdown_nocache": (True, False, True),
            "batch_breakdown_tile64": (True, True, False),
            "batch_breakdown": (True, True, True)}


def configure(eng, fast: bool, cache: bool, tiny: bool) -> None:
    from pytropical_gpu.backends.wgpu import bindgroups, fastpath
    from pytropical_gpu.backends.wgpu import gemm as wgemm

    fastpath.ENABLED, bindgroups.ENABLED = fast, cache
    if not hasattr(wgemm, "_BENCH_TINY"):
        wgemm._BENCH_TINY = wgemm.TILE_TINY
    want = wgemm._BENCH_TINY if tiny else None
    if wgemm.TILE_TINY is not want:
        wgemm.TILE_TINY = want
        fastpath.records(eng).clear()  # the compiled op records hold the kernel choice


def breakdown(chains, host, ops: int, repeats: int, progress, profile: str | None = None) -> list[dict]:
    """wgpu: where a batch's time goes per op: recording (Python, per call), submitting (the
    runtime records the command buffer) and the final wait; optionally a cProfile of recording.
    Measured in one run for each of :data:`VARIANTS`: the generic path (the compiled op records of
    ``backends/wgpu/fastpath.py`` off), the fast path without the bind-group cache
    (``backends/wgpu/bindgroups.py``: every dispatch makes its bind group, as a first batch on fresh
    buffers does), the fast path with the old 64 x 64 tile for small GEMMs (min_plus only), and
    everything on (``batch_breakdown``), after checking that all give the same bits."""
    ctx = tg.HybridContext(backend="wgpu")
    eng = get_backend("wgpu").engine
    rows = []
    try:
        for op, size, _, res_chain, _ in chains(ctx):
            names = [v for v in VARIANTS if op == "min_plus" or "tile" not in v]
            got = {}
            for v in names:
                configure(eng, *VARIANTS[v])
                with ctx.batch():
                    r = res_chain(20)
                got[v] = host(ctx, r)
                h.check(f"wgpu {op}: {v} vs generic path in a batch", got[v],
                        got["batch_breakdown_generic"])
            for v in names:
                configure(eng, *VARIANTS[v])
                g = eng.rt._groups
                before = (g.hits, g.misses) if g is not None else (0, 0)
                rows.append(_parts(ctx, eng, op, size, res_chain, ops, repeats, progress,
                                   profile and f"{profile}_{v}", v))
                g = eng.rt._groups
                if g is not None:  # over the warm-up batch and the timed ones
                    rows[-1]["bindgroup_hits"] = g.hits - before[0]
                    rows[-1]["bindgroup_misses"] = g.misses - before[1]
    finally:
        configure(eng, True, True, True)
    gen = {r["op"]: r for r in rows if r["variant"] == "batch_breakdown_generic"}
    for r in rows:
        r["total_us_per_op"] = sum(r[f"{k}_us_per_op"] for k in ("record", "submit", "sync"))
    for r in rows:
        if r["variant"] != "batch_breakdown_generic":
            g = gen[r["op"]]
            r["record_speedup_vs_generic"] = g["record_us_per_op"] / r["record_us_per_op"]
            progress(f"wgpu {r['op']} {r['variant']}: generic {g['total_us_per_op']:.1f} us/op -> "
                     f"{r['total_us_per_op']:.1f} us/op (record {g['record_us_per_op']:.1f} -> "
                     f"{r['record_us_per_op']:.1f})")
    return rows


def _parts(ctx, eng, op, size, res_chain, ops, repeats, progress, profile, variant) -> dict:
    parts = {"record": [], "submit": [], "sync": []}
    for i in range(repeats + 1):
        b = ctx.batch()
        b.__enter__()
        t0 = time.perf_counter()
        if profile and i == repeats:
            import cProfile
            import pstats

            pr = cProfile.Profile()
            pr.runcall(res_chain, ops)
            with open(f"{profile}_{op}.txt", "w") as f:
                pstats.Stats(pr, stream=f).sort_stats("cumulative").print_stats(60)
        else:
            res_chain(ops)
        t1 = time.perf_counter()
        cmds, eng.recording = eng.recording, []
        eng.rt.submit(cmds)
        t2 = time.perf_counter()
        eng.rt.sync()
        t3 = time.perf_counter()
        b.__exit__(None, None, None)
        if 0 < i < repeats + (0 if profile else 1):
            for k, v in zip(parts, (t1 - t0, t2 - t1, t3 - t2)):
                parts[k].append(v / ops * 1e6)
    med = {k: statistics.median(v) for k, v in parts.items()}
    progress(f"wgpu {op} {variant} us/op: " + ", ".join(f"{k} {v:.1f}" for k, v in med.items()))
    return {"backend": "wgpu", "op": op, "size": size, "variant": variant, "ops": ops,
            **{f"{k}_us_per_op": v for k, v in med.items()}}
