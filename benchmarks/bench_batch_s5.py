"""Where a queued 64³ min_plus's GPU wait goes (issue 13's ≤ 30 µs row; session 5).

``bench_batch_s4.py``'s chains (1,000 dependent calls on resident operands inside ``ctx.batch()``:
``min_plus`` 64 x 64 x 64 f32, ``bind`` of 1,024 trits), checked against numpy first (also through
the timestamped submit), then per variant ``--repeats`` whole batches split as s4 splits them
(in block / submit / wait / facts read / checks / gc) and, where the variant says so, the GPU's
own timestamps (``_gpu_timestamps.py``):

* ``s4``: the path as it is (the same-run baseline), ``s4_again`` last in the run;
* ``ts_pass`` / ``ts_each``: the same batches with timestamps at the pass's ends / after every
  dispatch (per-dispatch gaps: median, spread, and by tenth of the batch: a clock ramp shows as
  later tenths running faster); ``ts_each_3000``: a 3,000-op batch;
* ``gc_off``: the collector disabled during each batch (what it costs inside a real batch);
* ``replay_*``: the commands one batch submitted, submitted again alone: after 20 ms idle (as
  after recording), at once after the previous sync, twice back to back (the second on a busy
  GPU), four times back to back;
* ``noop_*``: 1,000 dependent dispatches of a kernel that adds 1 to one word (1 or 4 workgroups):
  the queue's floor per dispatch (barrier + launch) on this adapter;
* ``stub_*``: Python alone (s4's stub runtime), with the collector on, off, and frozen.

An ``nvidia-smi`` sampler (SM clock, P-state, power) runs beside it when there is one; each
variant's wall-clock start is logged to match its rows.

    python benchmarks/bench_batch_s5.py [--ops 1000] [--repeats 7] [--json PATH] [--smi PATH]
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import subprocess
import sys
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

import pytropical_gpu as tg
from pytropical_gpu.backends import get_backend, probe
from pytropical_gpu.backends.wgpu.runtime import Binding, Dispatch

NOOP = """@group(0) @binding(1) var<storage, read_write> X: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    if (lid == 0u) { X[wg.x * 64u] = X[wg.x * 64u] + 1u; }
}
"""


def _batch(ctx, eng, chain, ops, mode=None, stamps=None, gc_off=False, keep=None):
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


def _rows(runs, ops, gpu=None) -> dict:
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


def _variant(ctx, eng, chain, ops, repeats, mode=None, stamps=None, gc_off=False):
    runs, gpu = [], []
    for i in range(repeats + 1):
        if stamps is not None:
            stamps.reset()
        t = _batch(ctx, eng, chain, ops, mode, stamps, gc_off)
        if i:
            runs.append(t)
            if mode:
                got = stamps.read()
                gpu.append(ts.summary(got[0], mode) if got else {})
    return _rows(runs, ops, gpu)


def _replay(eng, cmds, stamps, mode, repeats, submits=1, idle=0.0):
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


def _noop_cmds(eng, groups, n):
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
         "t32x16_bk16": {"BM": 32, "BN": 16, "BK": 16, "TM": 4, "TN": 4, "PF": 0}}


def _tiles(ctx, eng, ref_chain, ops, repeats, stamps, modes, add) -> None:
    """Each of :data:`TILES` as the small-GEMM tile: checked against numpy, then timed."""
    from pytropical_gpu.backends.wgpu import fastpath
    from pytropical_gpu.backends.wgpu import gemm as wgemm

    ref, chain = ref_chain
    want = ref(20)
    was = wgemm.TILE_TINY
    mode = "each" if "each" in modes else None
    try:
        for name, tile in TILES.items():
            wgemm.TILE_TINY = tile
            fastpath.records(eng).clear()
            with ctx.batch():
                got = chain(20)
            h.check(f"wgpu min_plus tile {name}: batch chain vs numpy", bb._host(ctx, got), want)
            add("min_plus", f"tile_{name}", dict(_variant(ctx, eng, chain, ops, repeats, mode,
                                                          stamps), tile=tile))
    finally:
        wgemm.TILE_TINY = was
        fastpath.records(eng).clear()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--smi", metavar="PATH", help="nvidia-smi samples (CSV) here")
    args = p.parse_args(argv)
    progress = h.stderr_progress("batch_s5")
    smi = None
    if args.smi and shutil.which("nvidia-smi"):
        smi = subprocess.Popen(
            ["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,pstate,power.draw,"
             "utilization.gpu,clocks_event_reasons.active", "--format=csv", "-lms", "25"],
            stdout=open(args.smi, "w"), stderr=subprocess.STDOUT)
    try:
        return _main(args, progress)
    finally:
        if smi is not None:
            smi.terminate()
            smi.wait(5)


def _main(args, progress) -> int:
    ts.enable_inside_passes()  # before the runtime makes its device
    ok, why = probe("wgpu")
    if not ok:
        print(f"bench_batch_s5: wgpu unavailable ({why})", file=sys.stderr)
        return 1
    ctx = tg.HybridContext(backend="wgpu")
    be = get_backend("wgpu")
    eng = be.engine
    dev = be.describe()
    feats = ts.features(eng.rt)
    modes = [m for m, f in (("pass", "timestamp-query"), ("each", "timestamp-query-inside-passes"))
             if f in feats]
    stamps = ts.Stamps(eng.rt) if modes else None
    progress(f"device {dev.get('device')}; timestamp modes {modes}; period {stamps and stamps.period}")
    rows, ops, R = [], args.ops, args.repeats

    def add(op, variant, r):
        rows.append({"op": op, "variant": variant, "ops": ops, **r})
        w = r.get("whole_us_per_op")
        g = r.get("gpu") or [{}]
        progress(f"{op} {variant}: " + (f"whole {w:.1f} (min {r['min_whole_us_per_op']:.1f}) = " +
                 " + ".join(f"{k} {r[k + '_us_per_op']:.1f}" for k in s4.PARTS) if w else "") +
                 (f"; gpu {g[0]}" if g and g[0] else ""))

    try:
        s4._variant("fused")
        chains = {op: (ref, chain) for op, _size, _res, ref, chain in s4._chains(ctx)}
        # ---- checks first: the path as it is and through each timestamped submit, vs numpy
        for op, (ref, chain) in chains.items():
            want = ref(20)
            for mode in [None] + modes:
                if mode:
                    stamps.reset()
                    eng.rt.submit = lambda c, m=mode: ts.submit(eng.rt, c, stamps, m)
                try:
                    with ctx.batch():
                        got = chain(20)
                finally:
                    eng.rt.__dict__.pop("submit", None)
                h.check(f"wgpu {op} fused, timestamps {mode}: batch chain vs numpy",
                        bb._host(ctx, got), want)
        progress("checks passed")
        mm = chains["min_plus"][1]
        add("min_plus", "s4", _variant(ctx, eng, mm, ops, R))
        for mode in modes:
            add("min_plus", f"ts_{mode}", _variant(ctx, eng, mm, ops, R, mode, stamps))
        if "each" in modes:
            add("min_plus", "ts_each_3000", dict(_variant(ctx, eng, mm, 3 * ops, 3, "each", stamps),
                                                 ops_in_batch=3 * ops))
        add("min_plus", "gc_off", _variant(ctx, eng, mm, ops, R, gc_off=True))
        # ---- the commands of one batch, submitted again alone
        if modes:
            mode = modes[-1]
            keep = []
            _batch(ctx, eng, mm, ops, keep=keep)
            cmds = keep[0]
            for name, kw in (("replay_idle20", {"idle": 0.02}), ("replay_now", {}),
                             ("replay_pair", {"submits": 2}), ("replay_x4", {"submits": 4})):
                got = _replay(eng, cmds, stamps, mode, R if "x" not in name else 3, **kw)
                r = {"submit_us_per_op": statistics.median(x["submit_s"] for x in got) / ops * 1e6,
                     "wait_us_per_op": statistics.median(x["wait_s"] for x in got) / ops * 1e6,
                     "gpu": [x["gpu"] for x in got], "timestamps": mode}
                add("min_plus", name, r)
            del keep, cmds
            for g in (1, 4):
                cmds, buf = _noop_cmds(eng, g, ops)
                for m in modes:
                    got = _replay(eng, cmds, stamps, m, R, idle=0.02)
                    add("noop", f"noop_{g}wg_{m}", {
                        "wait_us_per_op": statistics.median(x["wait_s"] for x in got) / ops * 1e6,
                        "gpu": [x["gpu"] for x in got]})
                del cmds
                eng.rt.destroy_buffer(buf)
        # ---- Python alone
        real = eng.rt
        eng.rt = s4._Stub(real)
        try:
            for op, (_ref, chain) in chains.items():
                add(op, "stub", _variant(ctx, eng, chain, ops, R))
                add(op, "stub_gc_off", _variant(ctx, eng, chain, ops, R, gc_off=True))
                gc.collect()
                gc.freeze()
                try:
                    add(op, "stub_gc_frozen", _variant(ctx, eng, chain, ops, R))
                finally:
                    gc.unfreeze()
        finally:
            eng.rt = real
        bind = chains["bind"][1]
        add("bind", "s4", _variant(ctx, eng, bind, ops, R))
        if "each" in modes:
            add("bind", "ts_each", _variant(ctx, eng, bind, ops, R, "each", stamps))
        _tiles(ctx, eng, chains["min_plus"], ops, R, stamps, modes, add)
        add("min_plus", "s4_again", _variant(ctx, eng, mm, ops, R))
    except h.CheckFailed as e:
        print(f"bench_batch_s5: correctness check FAILED: {e}", file=sys.stderr)
        return 1
    path = h.write_json(args.json or h.default_json_path("batch_s5"), rows,
                        f"wgpu: {dev.get('device')}", ops=ops, timestamp_modes=modes,
                        timestamp_period=stamps and stamps.period,
                        flushes_subnormals=dev.get("flushes_subnormals"))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
