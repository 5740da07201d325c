"""A queued small op on wgpu (issue 13's ≤ 30 µs row): where a batch's time goes, per op.

Chains of dependent calls on resident operands inside ``with ctx.batch():`` (``bench_batch.py``'s
chains: ``bind`` of 1,024 trits, a 64 x 64 x 64 ``min_plus`` f32). Checks first (every variant's
chain equals numpy's / the eager one bit for bit, else nothing is timed), then, per op and
variant, the median of ``--repeats`` whole batches (entering the block to its end) / ops:

* ``fused``: the fast path, the result's facts computed in the GEMM's epilogue (one dispatch),
  through a plan per call signature; ``records``: the same without plans (the path before them);
* ``separate``: the fast path with the separate facts dispatch; ``generic``: the fast path off;
* ``flush<F>``: ``fused`` with the recorded commands submitted every F ops inside the block (the GPU
  runs while Python records the next ones; not what a batch does now: measured to size it).

Each whole batch is split by hooks on the runtime and the batch's end, so the parts add up to it:
``in_block`` (recording), ``submit`` (the runtime turns the recorded list into one command buffer),
``wait`` (the sync: the GPU finishing it), ``facts_read`` (one read of every result's facts words),
``checks`` (the deferred checks and the rest of the block's end), ``gc`` (the cyclic collector,
anywhere in the batch). ``stub_<variant>`` rows: the same batches on a runtime whose submit, sync
and read do nothing (Python alone; a read gives a finite f32 result's facts words, |x| max 60,
smallest 1, as this chain's). ``parts_<variant>``: ``_batch_breakdown._parts`` as run before.

    python benchmarks/bench_batch_s4.py [--ops 1000] [--repeats 7] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time

import numpy as np

try:  # imported as benchmarks.<name> or run as a script
    from . import _batch_breakdown as bd
    from . import _harness as h
    from . import bench_batch as bb
except ImportError:
    import _batch_breakdown as bd
    import _harness as h
    import bench_batch as bb

import pytropical_gpu as tg
from pytropical_gpu.backends import get_backend, probe
from pytropical_gpu.backends.wgpu import fastgemm, fastpath, stats

PARTS = ("in_block", "submit", "wait", "facts_read", "checks", "gc")


def _variant(name: str) -> None:
    fastpath.ENABLED = name != "generic"
    fastpath.FUSED_FACTS_GROUPS = 0 if name == "separate" else 64
    fastgemm.PLANS = name != "records"


class _Clock:
    """Per-batch time of the hooked pieces (s)."""

    def __init__(self):
        self.t = dict.fromkeys(PARTS, 0.0)
        self._gc0 = 0.0

    def gc_cb(self, phase, info):
        if phase == "start":
            self._gc0 = time.perf_counter()
        else:
            self.t["gc"] += time.perf_counter() - self._gc0


def _hooked(eng, clock: _Clock):
    """Wrap the runtime's submit/sync and the facts read; returns an undo function."""
    rt = eng.rt
    sub, syn, rm = rt.submit, rt.sync, stats.Reader.read_many
    state = {"reading": False}

    def submit(cmds):
        t0 = time.perf_counter()
        try:
            return sub(cmds)
        finally:
            if not state["reading"]:
                clock.t["submit"] += time.perf_counter() - t0

    def sync():
        t0 = time.perf_counter()
        try:
            return syn()
        finally:
            clock.t["wait"] += time.perf_counter() - t0

    def read_many(readers):
        t0 = time.perf_counter()
        state["reading"] = True
        try:
            return rm(readers)
        finally:
            state["reading"] = False
            clock.t["facts_read"] += time.perf_counter() - t0

    rt.submit, rt.sync, stats.Reader.read_many = submit, sync, staticmethod(read_many)

    def undo():
        del rt.submit, rt.sync
        stats.Reader.read_many = staticmethod(rm)
    return undo


def _whole(ctx, eng, chain, ops, repeats, flush_every=0) -> dict:
    """Median per-op seconds of whole batches and of their parts (median of each part); buffers the
    pool created and bind-group cache hits/misses over the timed batches."""
    runs = []
    groups = getattr(getattr(eng.rt, "rt", eng.rt), "_groups", None)
    created = hits = misses = 0
    for i in range(repeats + 1):
        clock = _Clock()
        gc.callbacks.append(clock.gc_cb)
        undo = _hooked(eng, clock)
        try:
            t0 = time.perf_counter()
            with ctx.batch():
                t1 = time.perf_counter()
                if flush_every:
                    x = None
                    for j in range(0, ops, flush_every):
                        x = chain(min(flush_every, ops - j), x)
                        eng.flush()
                else:
                    chain(ops)
                t2 = time.perf_counter()
                exit0 = (clock.t["submit"], clock.t["wait"], clock.t["facts_read"])
            t3 = time.perf_counter()
        finally:
            undo()
            gc.callbacks.remove(clock.gc_cb)
        if i == 0:  # warm-up (pipelines, pool, bind groups)
            created = eng.pool.created
            hits, misses = (groups.hits, groups.misses) if groups is not None else (0, 0)
            continue
        t = dict(clock.t)
        # flush<F> submits inside the block: those submits are counted in submit, not in_block
        t["in_block"] = (t2 - t1) - sum(exit0)
        t["checks"] = (t3 - t2) - sum(t[k] - v for k, v in zip(("submit", "wait", "facts_read"),
                                                                   exit0))
        t["whole"] = t3 - t0
        runs.append(t)
    out = {f"{k}_us_per_op": statistics.median(r[k] for r in runs) / ops * 1e6
           for k in PARTS + ("whole",)}
    out["min_whole_us_per_op"] = min(r["whole"] for r in runs) / ops * 1e6
    out["pool_created"] = eng.pool.created - created
    if groups is not None:
        out["bindgroup_hits"], out["bindgroup_misses"] = groups.hits - hits, groups.misses - misses
    out["parts_sum_us_per_op"] = statistics.median(
        sum(r[k] for k in PARTS if k != "gc") for r in runs) / ops * 1e6
    return out


_QUIET_WORDS = np.array([0, 0, 0, 0x42700000, 0x3F800000, 0, 0xFFFFFFFF, 0], np.uint32)


class _Stub:
    """A runtime whose commands do nothing (Python's share alone)."""

    def __init__(self, rt):
        self.rt = rt

    def submit(self, cmds):
        pass

    def sync(self):
        pass

    def write(self, *a, **k):
        pass

    def read(self, handle, offset, size):
        words = np.resize(_QUIET_WORDS, -(-size // 4))
        return memoryview(words.view(np.uint8)[:size].tobytes())

    def __getattr__(self, name):
        return getattr(self.rt, name)


def _chains(ctx):
    """(op, size label, bench_batch's resident chain, its reference, chain(n, x=None)): the same
    calls continuing from ``x`` (the flush<F> variant records a batch in pieces)."""
    out = []
    for op, size, _, res_chain, ref in bb._chains(ctx):
        start = res_chain(0)  # the first operand (resident); the chain's other one is the same
        if op == "bind":      # as in bench_batch: bind(r, U) with U from seed 2, matmul(x, A)
            other = ctx.to_device(tg.TernaryVec.random(1024, seed=2))

            def chain(n, x=None, s=start, o=other):
                x = s if x is None else x
                for _ in range(n):
                    x = ctx.bind(x, o)
                return x
        else:
            def chain(n, x=None, s=start):
                x = s if x is None else x
                for _ in range(n):
                    x = ctx.matmul(x, s, "min_plus")
                return x
        out.append((op, size, res_chain, ref, chain))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--flush", type=int, default=100, help="flush<F> variant's F (0: none)")
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    progress = h.stderr_progress("batch_s4")
    ok, why = probe("wgpu")
    if not ok:
        print(f"bench_batch_s4: wgpu unavailable ({why})", file=sys.stderr)
        return 1
    ctx = tg.HybridContext(backend="wgpu")
    be = get_backend("wgpu")
    eng = be.engine
    dev = be.describe()
    variants = {"bind": ["fused", "generic"],
                "min_plus": ["fused", "records", "separate", "generic"]}
    rows = []
    try:
        chains = _chains(ctx)
        # ---- checks first: every variant (and flush<F>) equals the reference bit for bit
        for op, _size, _res, ref, chain in chains:
            n = 20
            want = ref(n)
            for v in variants[op]:
                _variant(v)
                with ctx.batch():
                    got = chain(n)
                h.check(f"wgpu {op} {v}: batch chain vs reference", bb._host(ctx, got), want)
            _variant("fused")
            with ctx.batch():
                x = chain(7)
                eng.flush()
                x = chain(n - 7, x)
            h.check(f"wgpu {op} flushed batch vs reference", bb._host(ctx, x), want)
        # ---- timings
        for op, size, res_chain, _ref, chain in chains:
            for v in variants[op] + ([f"flush{args.flush}"] if args.flush else []):
                _variant("fused" if v.startswith("flush") else v)
                r = _whole(ctx, eng, chain, args.ops, args.repeats,
                           args.flush if v.startswith("flush") else 0)
                rows.append({"backend": "wgpu", "device": dev.get("device"), "op": op,
                             "size": size, "variant": v, "ops": args.ops, **r})
                progress(f"{op} {v}: whole {r['whole_us_per_op']:.1f} us/op (min "
                         f"{r['min_whole_us_per_op']:.1f}) = " + " + ".join(
                             f"{k} {r[k + '_us_per_op']:.1f}" for k in PARTS))
            # the old breakdown (timed outside the batch's own end) for the fast path as it is
            _variant("fused")
            clock = _Clock()
            gc.callbacks.append(clock.gc_cb)
            try:
                r = bd._parts(ctx, eng, op, size, res_chain, args.ops, args.repeats, progress,
                              None, "parts_fused")
            finally:
                gc.callbacks.remove(clock.gc_cb)
            r["gc_us_per_op_all_batches"] = clock.t["gc"] / (args.ops * (args.repeats + 1)) * 1e6
            rows.append(dict(r, variant="parts_fused"))
            # Python alone: the same batches on a runtime that does nothing
            real = eng.rt
            eng.rt = _Stub(real)
            try:
                for v in variants[op]:
                    _variant(v)
                    r = _whole(ctx, eng, chain, args.ops, args.repeats)
                    rows.append({"backend": "wgpu", "device": dev.get("device"), "op": op,
                                 "size": size, "variant": f"stub_{v}", "ops": args.ops, **r})
                    progress(f"{op} stub_{v}: whole {r['whole_us_per_op']:.1f} us/op (Python alone)")
            finally:
                eng.rt = real
            # the fast path as it is, again, last: does a row's place in the run change it?
            _variant("fused")
            r = _whole(ctx, eng, chain, args.ops, args.repeats)
            rows.append({"backend": "wgpu", "device": dev.get("device"), "op": op, "size": size,
                         "variant": "fused_again", "ops": args.ops, **r})
            progress(f"{op} fused_again: whole {r['whole_us_per_op']:.1f} us/op = " + " + ".join(
                f"{k} {r[k + '_us_per_op']:.1f}" for k in PARTS))
    except h.CheckFailed as e:
        print(f"bench_batch_s4: correctness check FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        _variant("fused")
    for r in rows:
        print({k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()})
    path = h.write_json(args.json or h.default_json_path("batch_s4"), rows,
                        f"wgpu: {dev.get('device')}", ops=args.ops,
                        flushes_subnormals=dev.get("flushes_subnormals"))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
