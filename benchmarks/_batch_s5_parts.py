"""``bench_batch_s5.py``'s machinery: a whole batch split as ``bench_batch_s4.py`` splits it, with
optional GPU timestamps (``_gpu_timestamps.py``); replays of a batch's commands; a no-op dependent
chain; the small-GEMM tile sweep."""

from __future__ import annotations

import gc
import statistics
import time

try:  # imported as benchmarks.<name> or run as a script
    from . import _gpu_timestamps as ts
    from . import _harness as h
    from . import bench_batch as bb
    from . import bench_batch_s4 as s4
except ImportError:
    import _gpu_timestamps as ts
    import _harness as h
    import bench_batch as bb
    import bench_batch_s4 as s4

from pytropical_gpu.backends.wgpu.runtime import Binding, Dispatch

NOOP = """@group(0) @binding(1) var<storage, read_write> X: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    if (lid == 0u) { X[wg.x * 64u] = X[wg.x * 64u] + 1u; }
}
"""


def batch(ctx, eng, chain, ops, mode=None, stamps=None, gc_off=False, keep=None):
    """One whole batch split by s4's hooks; with ``mode`` its big submit is timestamped; ``keep``
    (a list) gets that submit's command list."""
    rt = eng.rt
    clock = s4._Clock()
    if mode or keep is not None:
        plain = rt.submit

        def sub(cmds):
            if len(cmds) >= ops:  # the batch's own commands (not the facts read's copy)
                if keep is not None:
                    keep.append(cmds)
                if mode:
                    return ts.submit(rt, cmds, stamps, mode)
            return plain(cmds)
        rt.submit = sub  # (s4._hooked wraps it; its undo deletes both)
    gc.callbacks.append(clock.gc_cb)
    undo = s4._hooked(eng, clock)
    if gc_off:
        gc.disable()
    try:
        wall = time.time()
        t0 = time.perf_counter()
        with ctx.batch():
            t1 = time.perf_counter()
            chain(ops)
            t2 = time.perf_counter()
        t3 = time.perf_counter()
    finally:
        if gc_off:
            gc.enable()
        undo()
        if "submit" in rt.__dict__:
            del rt.submit
        gc.callbacks.remove(clock.gc_cb)
    t = dict(clock.t)
    t["in_block"] = t2 - t1
    t["checks"] = (t3 - t2) - t["submit"] - t["wait"] - t["facts_read"]
    t["whole"], t["wall"] = t3 - t0, wall
    return t


def rows(runs, ops, gpu=None) -> dict:
    out = {f"{k}_us_per_op": statistics.median(r[k] for r in runs) / ops * 1e6
           for k in s4.PARTS + ("whole",)}
    out["min_whole_us_per_op"] = min(r["whole"] for r in runs) / ops * 1e6
    out["whole_us_per_op_each"] = [round(r["whole"] / ops * 1e6, 2) for r in runs]
    out["wait_us_per_op_each"] = [round(r["wait"] / ops * 1e6, 2) for r in runs]
    out["wall_start"] = runs[0]["wall"]
    if gpu:
        out["gpu"] = gpu
        out["gpu_span_us_per_op_each"] = [round(g["gpu_span_us"] / ops, 2) for g in gpu if g]
    return out


def variant(ctx, eng, chain, ops, repeats, mode=None, stamps=None, gc_off=False):
    runs, gpu = [], []
    for i in range(repeats + 1):
        if stamps is not None:
            stamps.reset()
        t = batch(ctx, eng, chain, ops, mode, stamps, gc_off)
        if i:
            runs.append(t)
            if mode:
                got = stamps.read()
                gpu.append(ts.summary(got[0], mode) if got else {})
    return rows(runs, ops, gpu)


def replay(eng, cmds, stamps, mode, repeats, submits=1, idle=0.0):
    """The recorded commands submitted again (``submits`` times back to back), one sync."""
    rt = eng.rt
    out = []
    for _ in range(repeats):
        stamps.reset()
        if idle:
            time.sleep(idle)
        t0 = time.perf_counter()
        for _ in range(submits):
            ts.submit(rt, cmds, stamps, mode)
        t1 = time.perf_counter()
        rt.sync()
        t2 = time.perf_counter()
        out.append({"submit_s": t1 - t0, "wait_s": t2 - t1,
                    "gpu": [ts.summary(x, mode) for x in stamps.read()]})
    return out


def noop_cmds(eng, groups, n):
    rt = eng.rt
    pipe = rt.compile(NOOP, "noop")
    buf = rt.create_buffer(4 * 64 * 4, "noop")
    rt.write(buf, bytes(4 * 64 * 4))
    return [Dispatch(pipe, (Binding(buf, 0, 4 * 64 * 4),), (groups, 1, 1), None)] * n, buf



#: the small-GEMM tile (``gemm.TILE_TINY``, 64³ takes it) against k-tile depth and tile size
TILES = {"t32_bk8": {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4, "PF": 0},  # the library's
         "t32_bk16": {"BM": 32, "BN": 32, "BK": 16, "TM": 4, "TN": 4, "PF": 0},
         "t32_bk32": {"BM": 32, "BN": 32, "BK": 32, "TM": 4, "TN": 4, "PF": 0},
         "t32_bk64": {"BM": 32, "BN": 32, "BK": 64, "TM": 4, "TN": 4, "PF": 0},
         "t16_bk16": {"BM": 16, "BN": 16, "BK": 16, "TM": 4, "TN": 4, "PF": 0},
         "t32x16_bk16": {"BM": 32, "BN": 16, "BK": 16, "TM": 4, "TN": 4, "PF": 0},
         # the next k-tile prefetched into registers (PF 1) or a second buffer (PF 2): session 5's
         # second run, after the first found the k-loop's latency most of the GEMM's ~8 µs
         "t32_bk8_pf1": {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4, "PF": 1},
         "t32_bk16_pf1": {"BM": 32, "BN": 32, "BK": 16, "TM": 4, "TN": 4, "PF": 1},
         "t32_bk8_pf2": {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4, "PF": 2},
         "t32_bk16_pf2": {"BM": 32, "BN": 32, "BK": 16, "TM": 4, "TN": 4, "PF": 2},
         # session 6: the workgroup tiles as k rows of vec4 (WA, the big tile's layout since s5)
         "t32_bk8_wa": {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4, "PF": 0, "WA": True},
         "t32_bk8_pf2_wa": {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4, "PF": 2, "WA": True}}
RUN1_TILES = ("t32_bk8", "t32_bk16", "t32_bk32", "t32_bk64", "t16_bk16", "t32x16_bk16")


def tiles(ctx, eng, ref_chain, ops, repeats, stamps, mode, add, names=RUN1_TILES,
          rounds: int = 0) -> None:
    """Each of ``names`` (:data:`TILES`) as the small-GEMM tile: checked against numpy, then timed
    (with timestamps ``mode``, None: none). ``rounds`` > 0: that many rounds, the order reversed
    every other one, rows ``tile_<name>_r<i>`` (the SM clock drifts within a run: compare within
    a round)."""
    from pytropical_gpu.backends.wgpu import fastpath
    from pytropical_gpu.backends.wgpu import gemm as wgemm

    ref, chain = ref_chain
    want = ref(20)
    was = wgemm.TILE_TINY

    def use(name):
        wgemm.TILE_TINY = TILES[name]
        fastpath.records(eng).clear()

    try:
        for name in names:
            use(name)
            with ctx.batch():
                got = chain(20)
            h.check(f"wgpu min_plus tile {name}: batch chain vs numpy", bb._host(ctx, got), want)
            if not rounds:
                add("min_plus", f"tile_{name}", dict(variant(ctx, eng, chain, ops, repeats, mode,
                                                              stamps), tile=TILES[name]))
        for rnd in range(rounds):
            for name in names if rnd % 2 == 0 else names[::-1]:
                use(name)
                add("min_plus", f"tile_{name}_r{rnd}", dict(
                    variant(ctx, eng, chain, ops, repeats, mode, stamps), tile=TILES[name]))
    finally:
        wgemm.TILE_TINY = was
        fastpath.records(eng).clear()
