"""Queued operations (``with ctx.batch():``) against eager calls, and the APSP example end to end.

Per GPU backend (wgpu, cuda: those usable here), two small operations chained so that each result is
the next call's operand: ``bind`` of 1,024 trits and a 64 x 64 x 64 ``min_plus`` GEMM. Variants:

* ``eager_host``: numpy operands, one call at a time (what a caller without residency pays: upload,
  launch, wait, read back on wgpu; numpy in and out on cuda);
* ``eager_resident``: resident operands, no batch (results stay on the device; on wgpu each call
  submits its own command buffer, on cuda a float GEMM waits for its NaN check); one sync at the end;
* ``batch``: the same chain inside ``with ctx.batch():`` (time from entering the block to its end,
  which synchronises); on wgpu also ``batch_nocache`` (the bind-group cache off) and, for the GEMM,
  ``batch_tile64`` (the 64 x 64 tile small GEMMs took before ``TILE_TINY``).

Per-op cost = median time of the chain / number of ops; ``ratio_to_eager`` = eager_host per-op /
this variant's per-op (same run). Checks first: the batch's results equal the eager ones bit for bit
(and the GEMM chain equals numpy's), otherwise nothing is timed.

APSP (``examples/apsp_resident.py``, ``--apsp N`` nodes): end-to-end time (numpy weights to numpy
distances and next hops) inside a batch and without one, beside the sum of per-squaring kernel times
(CUDA events on cuda, synchronised wall time on wgpu), and their ratios.

    python benchmarks/bench_batch.py [--ops 1000] [--repeats 7] [--apsp 4096] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

try:  # imported as benchmarks.<name> or run as a script
    from . import _batch_breakdown as bd
    from . import _harness as h
except ImportError:
    import _batch_breakdown as bd
    import _harness as h

import pytropical_gpu as tg
from pytropical_gpu.backends import get_backend, probe


def _sync_of(name: str):
    if name == "wgpu":
        return get_backend("wgpu").engine.sync
    import cupy

    return lambda: cupy.cuda.get_current_stream().synchronize()


def _chains(ctx: tg.HybridContext):
    """(op name, size label, host operands chain, resident chain) per operation: each chain(n)
    runs n dependent calls and returns the last result."""
    t, u = tg.TernaryVec.random(1024, seed=1), tg.TernaryVec.random(1024, seed=2)
    rng = np.random.default_rng(0)
    a = rng.integers(0, 100, (64, 64)).astype(np.float32)
    T, U, A = ctx.to_device(t), ctx.to_device(u), ctx.to_device(a)

    def bind_host(n):
        r = t
        for _ in range(n):
            r = ctx.bind(r, u)
        return r

    def bind_res(n):
        r = T
        for _ in range(n):
            r = ctx.bind(r, U)
        return r

    def mm_host(n):
        x = a
        for _ in range(n):
            x = ctx.matmul(x, a, "min_plus")
        return x

    def mm_res(n):
        x = A
        for _ in range(n):
            x = ctx.matmul(x, A, "min_plus")
        return x

    ref = {"bind": lambda n: bind_host(n).to_array(), "min_plus": None}
    return [("bind", "1024 trits", bind_host, bind_res, ref["bind"]),
            ("min_plus", "64x64x64 f32", mm_host, mm_res, lambda n: _numpy_chain(a, n))]


def _numpy_chain(a, n):
    x = a
    for _ in range(n):
        x = (x[:, :, None] + a[None, :, :]).min(axis=1)
    return x


def _host(ctx, x):
    x = ctx.to_host(x)
    return x.to_array() if isinstance(x, tg.TernaryVec) else np.asarray(x)


def run_backend(name: str, ops: int, repeats: int, progress) -> list[dict]:
    ctx = tg.HybridContext(backend=name)
    sync = _sync_of(name)
    rows = []
    dev = get_backend(name).describe()
    device = dev.get("device") or dev.get("name")
    for op, size, host_chain, res_chain, ref in _chains(ctx):
        # ---- checks first
        n_check = 20
        want = ref(n_check)
        h.check(f"{name} {op}: eager chain vs reference", _host(ctx, host_chain(n_check)), want)
        with ctx.batch():
            got = res_chain(n_check)
        h.check(f"{name} {op}: batch chain vs reference", _host(ctx, got), want)
        h.check(f"{name} {op}: eager resident chain vs reference", _host(ctx, res_chain(n_check)),
                want)
        # ---- timings (chains of dependent calls; one sync at the end of each)
        n_host = max(10, ops // 10) if name == "wgpu" else ops

        inside: list = []  # per batch: the time spent inside the block (recording the calls)

        def batched(n=ops, chain=res_chain, inside=inside):
            with ctx.batch():
                t0 = time.perf_counter()
                chain(n)
                inside.append(time.perf_counter() - t0)

        variants = [("eager_host", n_host, lambda c=host_chain, n=n_host: c(n)),
                    ("eager_resident", ops, lambda c=res_chain: c(ops)),
                    ("batch", ops, batched)]
        if name == "wgpu":  # the same batch without the bind-group cache / the 32x32 small tile
            variants.append(("batch_nocache", ops, batched))
            if op == "min_plus":
                variants.append(("batch_tile64", ops, batched))
        per = {}
        for vname, n, fn in variants:
            if name == "wgpu":
                eng = get_backend("wgpu").engine
                bd.configure(eng, True, vname != "batch_nocache", vname != "batch_tile64")
            fn(), sync()  # warm-up (pipelines, pool)
            times = []
            inside.clear()
            for _ in range(repeats):
                t0 = time.perf_counter()
                fn()
                sync()
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            per[vname] = med / n
            progress(f"{name} {op} {vname}: {med / n * 1e6:.1f} us/op ({n} ops, median of {repeats})")
            if name == "wgpu":
                bd.configure(eng, True, True, True)
            rows.append({"backend": name, "device": device, "op": op, "size": size,
                         "variant": vname, "ops": n, "repeats": repeats, "median_s": med,
                         "min_s": min(times), "per_op_us": med / n * 1e6})
            if inside:  # the rest of a batch's time is its end: submit, wait, deferred checks
                rows[-1]["in_block_us_per_op"] = statistics.median(inside) / n * 1e6
        for r in rows:
            if r["backend"] == name and r["op"] == op:
                r["ratio_to_eager"] = per["eager_host"] / (r["per_op_us"] / 1e6)
    return rows


def run_apsp(name: str, n: int, repeats: int, progress) -> list[dict]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    import apsp_resident as ap

    ctx = tg.HybridContext(backend=name)
    w = ap.random_network(n, 6, 0)
    m = min(n, 256)
    ap.all_pairs(w[:m, :m], ctx)  # warm-up: the kernels of the big graph
    ap.all_pairs(w[:m, :m], ctx, timed=True)
    d0 = ap.start(w)[0]
    out = []
    ref = None
    for mode in ("batch", "eager"):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            dist, nxt, _ = ap.square(d0, None, ctx, batch=(mode == "batch"))
            times.append(time.perf_counter() - t0)
        if ref is None:
            ref = dist
            ok, what = ap.check(w, dist, nxt, list(range(0, n, max(1, n // 4)))[:4])
            if not ok:
                raise h.CheckFailed(f"apsp {name}: {what}")
        h.check(f"apsp {name} {mode}: distances", dist, ref)
        out.append((mode, statistics.median(times), min(times)))
    sums = []
    for _ in range(max(1, (repeats + 1) // 2)):
        sums.append(sum(ap.square(d0, None, ctx, timed=True)[2]))
    ksum = statistics.median(sums)
    rows = []
    for mode, med, best in out:
        progress(f"apsp {name} n={n} {mode}: end-to-end {med * 1e3:.1f} ms, kernel sum "
                 f"{ksum * 1e3:.1f} ms, ratio {med / ksum:.2f}")
        rows.append({"backend": name, "op": "apsp", "size": f"{n} nodes", "variant": mode,
                     "median_s": med, "min_s": best, "kernel_sum_s": ksum,
                     "ratio_end_to_end_to_kernels": med / ksum, "repeats": repeats})
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=1000, help="ops per chain (default 1000)")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--apsp", type=int, default=4096, help="APSP nodes (0: skip)")
    p.add_argument("--backends", default="wgpu,cuda")
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--profile", metavar="PREFIX", help="wgpu: cProfile of recording to PREFIX_<op>.txt")
    args = p.parse_args(argv)
    progress = h.stderr_progress("batch")
    rows, skipped = [], {}
    for name in args.backends.split(","):
        ok, why = probe(name)
        if not ok:
            skipped[name] = why
            progress(f"{name}: skipped ({why})")
            continue
        try:
            rows += run_backend(name, args.ops, args.repeats, progress)
            if name == "wgpu":
                rows += bd.breakdown(_chains, _host, args.ops, args.repeats, progress,
                                     args.profile)
            if args.apsp:
                rows += run_apsp(name, args.apsp, args.repeats if name == "cuda" else 1, progress)
        except h.CheckFailed as e:
            print(f"bench_batch: correctness check FAILED: {e}", file=sys.stderr)
            return 1
    for r in rows:
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()})
    device = "; ".join(sorted({f"{r['backend']}: {r.get('device', '')}" for r in rows
                               if r.get("device")}))
    path = h.write_json(args.json or h.default_json_path("batch"), rows, device or "none",
                        skipped=skipped, ops=args.ops)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
