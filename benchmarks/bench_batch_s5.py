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

``--plan compare`` (the second run): the submit as session 4 left it (``_s4_submit.py``) against
the path as it is, in alternating rounds (``s4_round<i>``, ``s5_round<i>``: a host's speed drifts
within a run), both with pass timestamps, and the small-GEMM tile with its k-tile prefetched.
``--plan tiles``: that tile against the prefetching ones in alternating rounds (the GPU's clock
drifts within a run too).

    python benchmarks/bench_batch_s5.py [--plan diagnose|compare|tiles] [--ops 1000] [--repeats 7]
        [--json PATH] [--smi PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import shutil
import statistics
import subprocess
import sys

try:  # imported as benchmarks.<name> or run as a script
    from . import _batch_s5_parts as P
    from . import _gpu_timestamps as ts
    from . import _harness as h
    from . import _s4_submit
    from . import bench_batch as bb
    from . import bench_batch_s4 as s4
except ImportError:
    import _batch_s5_parts as P
    import _gpu_timestamps as ts
    import _harness as h
    import _s4_submit
    import bench_batch as bb
    import bench_batch_s4 as s4

import pytropical_gpu as tg
from pytropical_gpu.backends import get_backend, probe


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--plan", choices=("diagnose", "compare", "tiles"), default="diagnose")
    p.add_argument("--ops", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--rounds", type=int, default=3, help="compare: alternating rounds")
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
    was = ts.enable_inside_passes()  # before the runtime makes its device
    try:
        ok, why = probe("wgpu")
        be = get_backend("wgpu") if ok else None
    finally:
        ts.restore(was)
    if not ok:
        print(f"bench_batch_s5: wgpu unavailable ({why})", file=sys.stderr)
        return 1
    ctx = tg.HybridContext(backend="wgpu")
    eng = be.engine
    dev = be.describe()
    feats = ts.features(eng.rt)
    modes = [m for m, f in (("pass", "timestamp-query"), ("each", "timestamp-query-inside-passes"))
             if f in feats]
    stamps = ts.Stamps(eng.rt) if modes else None
    progress(f"device {dev.get('device')}; timestamp modes {modes}; period {stamps and stamps.period}")
    rows = []

    def add(op, variant, r):
        rows.append({"op": op, "variant": variant, "ops": args.ops, **r})
        w = r.get("whole_us_per_op")
        g = r.get("gpu") or [{}]
        progress(f"{op} {variant}: " + (f"whole {w:.1f} (min {r['min_whole_us_per_op']:.1f}) = " +
                 " + ".join(f"{k} {r[k + '_us_per_op']:.1f}" for k in s4.PARTS) if w else "") +
                 (f"; gpu {g[0]}" if g and g[0] else ""))

    try:
        s4._variant("fused")
        chains = {op: (ref, chain) for op, _size, _res, ref, chain in s4._chains(ctx)}
        _checks(ctx, eng, chains, stamps, modes)
        progress("checks passed")
        plan = {"diagnose": _diagnose, "compare": _compare, "tiles": _tiles}[args.plan]
        plan(ctx, eng, chains, args, stamps, modes, add)
    except h.CheckFailed as e:
        print(f"bench_batch_s5: correctness check FAILED: {e}", file=sys.stderr)
        return 1
    path = h.write_json(args.json or h.default_json_path("batch_s5"), rows,
                        f"wgpu: {dev.get('device')}", ops=args.ops, plan=args.plan,
                        timestamp_modes=modes, timestamp_period=stamps and stamps.period,
                        flushes_subnormals=dev.get("flushes_subnormals"))
    print(f"wrote {path}")
    return 0


def _checks(ctx, eng, chains, stamps, modes) -> None:
    """Both ops' chains equal numpy's: the path as it is, through each timestamped submit, and
    through session 4's submit."""
    for op, (ref, chain) in chains.items():
        want = ref(20)
        for mode in [None, "s4"] + modes:
            if mode in modes:
                stamps.reset()
                eng.rt.submit = lambda c, m=mode: ts.submit(eng.rt, c, stamps, m)
            try:
                with _s4_submit.s4_submit() if mode == "s4" else contextlib.nullcontext():
                    with ctx.batch():
                        got = chain(20)
            finally:
                eng.rt.__dict__.pop("submit", None)
            h.check(f"wgpu {op} fused, {mode or 'as it is'}: batch chain vs numpy",
                    bb._host(ctx, got), want)


def _compare(ctx, eng, chains, args, stamps, modes, add) -> None:
    """Session 4's submit against the path as it is, alternating; then the prefetching tiles."""
    ops, R = args.ops, args.repeats
    for op in ("min_plus", "bind"):
        chain = chains[op][1]
        for rnd in range(args.rounds):
            for name in ("s4", "s5") if rnd % 2 == 0 else ("s5", "s4"):
                with _s4_submit.s4_submit() if name == "s4" else contextlib.nullcontext():
                    add(op, f"{name}_round{rnd}", P.variant(ctx, eng, chain, ops, R))
    mm = chains["min_plus"][1]
    if "pass" in modes:
        for name in ("s4", "s5"):
            with _s4_submit.s4_submit() if name == "s4" else contextlib.nullcontext():
                add("min_plus", f"{name}_ts_pass", P.variant(ctx, eng, mm, ops, R, "pass", stamps))
    P.tiles(ctx, eng, chains["min_plus"], ops, R, stamps, "pass" if "pass" in modes else None, add,
            names=("t32_bk8", "t32_bk8_pf1", "t32_bk16_pf1", "t32_bk8_pf2", "t32_bk16_pf2",
                   "t32_bk8"))
    real = eng.rt
    eng.rt = s4._Stub(real)
    try:
        for op, (_ref, chain) in chains.items():
            add(op, "stub_s5", P.variant(ctx, eng, chain, ops, R))
    finally:
        eng.rt = real
    for name in ("s4", "s5"):
        with _s4_submit.s4_submit() if name == "s4" else contextlib.nullcontext():
            add("min_plus", f"{name}_last", P.variant(ctx, eng, mm, ops, R))


def _tiles(ctx, eng, chains, args, stamps, modes, add) -> None:
    """The library's small-GEMM tile against its prefetching variants in alternating rounds, GPU
    time from pass timestamps (the second run's tile rows were confounded by the clock's fall)."""
    P.tiles(ctx, eng, chains["min_plus"], args.ops, args.repeats, stamps,
            "pass" if "pass" in modes else None, add,
            names=("t32_bk8", "t32_bk8_pf2", "t32_bk16_pf2", "t32_bk8_pf1", "t32_bk8_wa",
                   "t32_bk8_pf2_wa"), rounds=args.rounds)


def _diagnose(ctx, eng, chains, args, stamps, modes, add) -> None:
    """The first run (session 5): where the GPU wait goes."""
    ops, R = args.ops, args.repeats
    mm = chains["min_plus"][1]
    add("min_plus", "s4", P.variant(ctx, eng, mm, ops, R))
    for mode in modes:
        add("min_plus", f"ts_{mode}", P.variant(ctx, eng, mm, ops, R, mode, stamps))
    if "each" in modes:
        add("min_plus", "ts_each_3000", dict(P.variant(ctx, eng, mm, 3 * ops, 3, "each", stamps),
                                             ops_in_batch=3 * ops))
    add("min_plus", "gc_off", P.variant(ctx, eng, mm, ops, R, gc_off=True))
    # ---- the commands of one batch, submitted again alone
    if modes:
        mode = modes[-1]
        keep = []
        P.batch(ctx, eng, mm, ops, keep=keep)
        cmds = keep[0]
        for name, kw in (("replay_idle20", {"idle": 0.02}), ("replay_now", {}),
                         ("replay_pair", {"submits": 2}), ("replay_x4", {"submits": 4})):
            got = P.replay(eng, cmds, stamps, mode, R if "x" not in name else 3, **kw)
            r = {"submit_us_per_op": statistics.median(x["submit_s"] for x in got) / ops * 1e6,
                 "wait_us_per_op": statistics.median(x["wait_s"] for x in got) / ops * 1e6,
                 "gpu": [x["gpu"] for x in got], "timestamps": mode}
            add("min_plus", name, r)
        del keep, cmds
        for g in (1, 4):
            cmds, buf = P.noop_cmds(eng, g, ops)
            for m in modes:
                got = P.replay(eng, cmds, stamps, m, R, idle=0.02)
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
            add(op, "stub", P.variant(ctx, eng, chain, ops, R))
            add(op, "stub_gc_off", P.variant(ctx, eng, chain, ops, R, gc_off=True))
            gc.collect()
            gc.freeze()
            try:
                add(op, "stub_gc_frozen", P.variant(ctx, eng, chain, ops, R))
            finally:
                gc.unfreeze()
    finally:
        eng.rt = real
    bind = chains["bind"][1]
    add("bind", "s4", P.variant(ctx, eng, bind, ops, R))
    if "each" in modes:
        add("bind", "ts_each", P.variant(ctx, eng, bind, ops, R, "each", stamps))
    P.tiles(ctx, eng, chains["min_plus"], ops, R, stamps, "each" if "each" in modes else None, add)
    add("min_plus", "s4_again", P.variant(ctx, eng, mm, ops, R))


if __name__ == "__main__":
    sys.exit(main())
