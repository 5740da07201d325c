"""A batch's end on wgpu, per queued op: the facts words read as arrays (``stats.Words``, the
deferred checks screened from them) against one dict decoded per result (``stats.WORDS = False``,
the path before), in one run.

The batch is ``bench_batch_s4``'s chain of 1,000 dependent queued ``min_plus`` 64³ f32 on resident
operands (the fast path, facts fused into the GEMM). Checks first: on the real runtime each variant's
chain equals numpy's bit for bit, and a NaN made in the batch is refused at its end with the same
message. Then, on ``bench_batch_s4``'s stub runtime (Python alone: submit, sync and read do
nothing, a read gives a finite result's words, here made once per size) the variants alternate
batch by batch, ``--rounds`` times, with the flushing rule forced on (as on the H200's adapter) and
off; per variant the median per op of ``facts_read`` (the one read and its decode), ``checks`` (the
deferred checks) and their sum ``end``. The cyclic collector is off while a batch is timed (its
share is measured elsewhere). ``micro_*``: the decode and checks alone (:func:`_micro`: one read of
500 results' words and their group of checks, no batch around them, nothing freed while timed),
alternating the same way, 3 x ``--rounds`` times (a round takes milliseconds).

    python benchmarks/bench_batch_end.py [--ops 1000] [--rounds 11] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time

import numpy as np

try:  # imported as benchmarks.<name> or run as a script
    from . import _harness as h
    from . import bench_batch as bb
    from . import bench_batch_s4 as bs
except ImportError:
    import _harness as h
    import bench_batch as bb
    import bench_batch_s4 as bs

import pytropical_gpu as tg
from pytropical_gpu.backends import get_backend, probe
from pytropical_gpu.backends.wgpu import stats

VARIANTS = ("dicts", "words")


class _Stub(bs._Stub):
    """``bench_batch_s4``'s runtime that does nothing, its read's bytes made once per size
    (``np.resize`` per read took 8 us per 1,000 bytes here: more than the decode measured)."""

    def __init__(self, rt):
        super().__init__(rt)
        self._bytes: dict = {}

    def read(self, handle, offset, size):
        got = self._bytes.get(size)
        if got is None:
            got = self._bytes[size] = super().read(handle, offset, size)
        return got


def _checks(ctx, chain, ref) -> None:
    """Each variant: the chain equals numpy's, and a NaN made in the batch raises the same."""
    want = ref(20)
    a = np.ones((40, 40), np.float32)
    a[3, 0] = np.inf
    A, Z = ctx.to_device(a), ctx.to_device(np.eye(40, dtype=np.float32))
    msgs = []
    for v in VARIANTS:
        stats.WORDS = v == "words"
        with ctx.batch():
            got = chain(20)
        h.check(f"wgpu min_plus {v}: batch chain vs reference", bb._host(ctx, got), want)
        try:
            with ctx.batch():
                ctx.matmul(Z, ctx.matmul(A, Z, "plus_times"), "min_plus")
            msgs.append(None)
        except ValueError as e:
            msgs.append(str(e))
    if msgs[0] != "matmul: b contains NaN" or len(set(msgs)) != 1:
        raise h.CheckFailed(f"a NaN made in the batch: {msgs}")


def _micro(be, eng, n: int, flushing: bool, arena) -> float:
    """Seconds of the end's decode and checks alone for ``n`` results as the chain leaves them
    (fused facts, 4 workgroups each, in one arena; each the pending a of one product whose b is a
    resident operand): one ``read_many`` and the fast path's group of checks, objects made
    beforehand and kept (no deallocation timed), the collector off. ``arena``: the rounds' one
    facts arena (a new one per round made the pool create buffers while timed)."""
    from pytropical_gpu.backends.wgpu.fastgemm import _Group
    from pytropical_gpu.facts import Facts
    from pytropical_gpu.semirings import get_semiring

    dt = np.dtype(np.float32)
    readers = [stats.Reader(eng, None, "f32", 4, arena, 128 * i) for i in range(n)]
    fb = Facts.of_host(np.ones((64, 64), np.float32))
    g = _Group(be, get_semiring("min_plus"), dt, flushing)
    g.items = [(Facts.lazy(dt, 4096, r), fb, True, False) for r in readers]
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        stats.Reader.read_many(readers)
        g()
        return time.perf_counter() - t0
    finally:
        gc.enable()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=1000)
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    progress = h.stderr_progress("batch_end")
    ok, why = probe("wgpu")
    if not ok:
        print(f"bench_batch_end: wgpu unavailable ({why})", file=sys.stderr)
        return 1
    ctx = tg.HybridContext(backend="wgpu")
    be = get_backend("wgpu")
    eng = be.engine
    dev = be.describe()
    flag, real = eng.flushes_subnormals, eng.rt
    _op, size, _res, ref, chain = [c for c in bs._chains(ctx) if c[0] == "min_plus"][0]
    rows = []
    try:
        _checks(ctx, chain, ref)
        eng.rt = _Stub(real)
        for flushing in (True, False):
            eng.flushes_subnormals = flushing
            got = {v: [] for v in VARIANTS}
            for _ in range(args.rounds):
                for v in VARIANTS:
                    stats.WORDS = v == "words"
                    gc.collect()
                    gc.disable()
                    try:
                        r = bs._whole(ctx, eng, chain, args.ops, 1)
                    finally:
                        gc.enable()
                    got[v].append((r["facts_read_us_per_op"], r["checks_us_per_op"]))
            for v in VARIANTS:
                fr = statistics.median(x for x, _ in got[v])
                ch = statistics.median(y for _, y in got[v])
                end = statistics.median(x + y for x, y in got[v])
                rows.append({"backend": "wgpu", "device": dev.get("device"), "op": "min_plus",
                             "size": size, "variant": v, "flushing": flushing, "ops": args.ops,
                             "rounds": args.rounds, "facts_read_us_per_op": fr,
                             "checks_us_per_op": ch, "end_us_per_op": end})
                progress(f"flushing={flushing} {v}: end {end:.2f} us/op = facts_read {fr:.2f} + "
                         f"checks {ch:.2f}")
            ratio = rows[-1]["end_us_per_op"] / rows[-2]["end_us_per_op"]
            micro = {v: [] for v in VARIANTS}
            arena = stats.Arena(eng)  # (back to the pool when dropped below)
            for _ in range(3 * args.rounds):
                for v in VARIANTS:
                    stats.WORDS = v == "words"
                    micro[v].append(_micro(be, eng, min(args.ops, 500), flushing, arena) * 1e6
                                    / min(args.ops, 500))
            del arena
            med = {v: statistics.median(micro[v]) for v in VARIANTS}
            low = {v: min(micro[v]) for v in VARIANTS}  # (a loaded host: the least disturbed)
            rows.append({"variant": "ratio_words_over_dicts", "flushing": flushing,
                         "end_ratio": ratio, "micro_dicts_us_per_op": med["dicts"],
                         "micro_words_us_per_op": med["words"],
                         "micro_ratio": med["words"] / med["dicts"],
                         "micro_dicts_min_us_per_op": low["dicts"],
                         "micro_words_min_us_per_op": low["words"],
                         "micro_min_ratio": low["words"] / low["dicts"]})
            progress(f"flushing={flushing}: words / dicts = {ratio:.3f} (batch's end); decode and "
                     f"checks alone {med['words']:.2f} / {med['dicts']:.2f} us/op = "
                     f"{med['words'] / med['dicts']:.3f} (min {low['words']:.2f} / "
                     f"{low['dicts']:.2f} = {low['words'] / low['dicts']:.3f})")
    except h.CheckFailed as e:
        print(f"bench_batch_end: correctness check FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        stats.WORDS = True
        eng.rt, eng.flushes_subnormals = real, flag
    for r in rows:
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})
    path = h.write_json(args.json or h.default_json_path("batch_end"), rows,
                        f"wgpu: {dev.get('device')}", ops=args.ops, stub_runtime=True)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
