"""Small GEMMs in a wgpu batch: the library's tile choice against smaller tiles (more workgroups).

Evidence for the tile choice of ``backends/wgpu/gemm.py`` (this script swaps ``gemm.choose_kernel``
for the duration of one variant only). A 64³ GEMM took ``TILE_SMALL`` (64 x 64): one workgroup, so
the GPU runs it on one SM and the queued op's GPU time is latency (~48 µs of a ~91 µs queued 64³
min_plus on the H200); products up to 128 x 128 now take ``TILE_TINY`` (32 x 32). Variants: the
library's choice, the tiled kernel with 64 x 64 (the old choice), 32 x 32 and 16 x 16 tiles
(TM = TN = 4: 1, 4 and 16 workgroups for 64³), and the one-thread-per-output kernel. Every variant
accumulates k in the same order per output, so the bits must not change: checked against numpy
(min_plus, max_plus) and the library's choice before anything is timed.

Per op: median over repeats of a chain of ``--ops`` dependent calls in one ``ctx.batch()``
(recording, submission and the final wait), and the wait alone (GPU time not hidden by recording).

    python benchmarks/bench_small_gemm_tiles.py [--ops 500] [--repeats 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

try:  # imported as benchmarks.<name> or run as a script
    from . import _harness as h
except ImportError:
    import _harness as h

import pytropical_gpu as tg
from pytropical_gpu.backends import get_backend, probe
from pytropical_gpu.backends.wgpu import fastpath
from pytropical_gpu.backends.wgpu import gemm as wg

VARIANTS = {
    "library": None,
    "tiled64": ("gemm_tiled", {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "PF": 0}),
    "tiled32": ("gemm_tiled", {"BM": 32, "BN": 32, "BK": 8, "TM": 4, "TN": 4, "PF": 0}),
    "tiled16": ("gemm_tiled", {"BM": 16, "BN": 16, "BK": 8, "TM": 4, "TN": 4, "PF": 0}),
    "simple": ("gemm_simple", {"KCONST": 0, "WG": wg.WG}),
}
SHAPES = [32, 64, 128]


def _choose(variant):
    orig = wg.choose_kernel
    if VARIANTS[variant] is None:
        return orig
    kname, kp = VARIANTS[variant]

    def choose(m, n, k, argmax, *args, **kwargs):  # the library's signature, whatever it grows
        if argmax:
            return orig(m, n, k, argmax, *args, **kwargs)
        return kname, dict(kp, ARGMAX=False)
    return choose


def _ref(a, sr):
    x, y = a[:, :, None], a[None, :, :]
    return (x + y).min(axis=1) if sr == "min_plus" else (x + y).max(axis=1)


def run(ops: int, repeats: int, progress) -> list[dict]:
    ctx = tg.HybridContext(backend="wgpu")
    eng = get_backend("wgpu").engine
    orig = wg.choose_kernel
    rows = []
    try:
        for n in SHAPES:
            a = np.random.default_rng(n).integers(0, 100, (n, n)).astype(np.float32)
            A = ctx.to_device(a)
            lib = {}
            for variant in VARIANTS:
                wg.choose_kernel = _choose(variant)
                fastpath.records(eng).clear()
                for sr in ("min_plus", "max_plus"):  # checks first
                    with ctx.batch():
                        got = ctx.to_host(ctx.matmul(A, A, sr))
                    h.check(f"{n}^3 {sr} {variant} vs numpy", got, _ref(a, sr))
                    with ctx.batch():
                        x = A
                        for _ in range(5):
                            x = ctx.matmul(x, A, sr)
                    chain = ctx.to_host(x)
                    if variant == "library":
                        lib[sr] = chain
                    h.check(f"{n}^3 {sr} chain {variant} vs library", chain, lib[sr])
                totals, waits = [], []
                for i in range(repeats + 1):
                    t0 = time.perf_counter()
                    with ctx.batch() as b:
                        x = A
                        for _ in range(ops):
                            x = ctx.matmul(x, A, "min_plus")
                        cmds, eng.recording = eng.recording, []
                        eng.rt.submit(cmds)
                        t2 = time.perf_counter()
                        eng.rt.sync()
                        t3 = time.perf_counter()
                    del b
                    if i:  # the first is warm-up (pipelines, pool)
                        totals.append((t3 - t0) / ops * 1e6)
                        waits.append((t3 - t2) / ops * 1e6)
                row = {"backend": "wgpu", "op": "min_plus", "size": f"{n}x{n}x{n} f32",
                       "variant": variant, "kernel": (VARIANTS[variant] or
                                                      orig(n, n, n, False))[0],
                       "ops": ops, "repeats": repeats,
                       "per_op_us": statistics.median(totals), "wait_us": statistics.median(waits)}
                progress(f"{n}^3 {variant}: {row['per_op_us']:.1f} us/op in a batch "
                         f"(wait {row['wait_us']:.1f})")
                rows.append(row)
    finally:
        wg.choose_kernel = orig
        fastpath.records(eng).clear()
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ops", type=int, default=500)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args(argv)
    progress = h.stderr_progress("small_gemm_tiles")
    ok, why = probe("wgpu")
    if not ok:
        print(f"wgpu unavailable: {why}", file=sys.stderr)
        return 1
    try:
        rows = run(args.ops, args.repeats, progress)
    except h.CheckFailed as e:
        print(f"bench_small_gemm_tiles: correctness check FAILED: {e}", file=sys.stderr)
        return 1
    dev = get_backend("wgpu").describe()
    path = h.write_json(args.json or h.default_json_path("small_gemm_tiles"), rows,
                        dev.get("device") or dev.get("name") or "wgpu", ops=args.ops)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
