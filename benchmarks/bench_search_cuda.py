"""CUDA item-memory search (issue 15, cuda rows): 1 and 64 queries against 200,000 memory rows of
10,000 trits, k = 10, memory resident, in one run:

- the previous path (``search_launch.ENGINE = "old"``: int64 ``_dot`` then a stable argsort), the
  default (``"auto"``: for k <= 32 the top-k's first pass fused into the scoring kernel), the
  default before the fusion (``"auto"`` with ``FUSE = False``: scores written, then two top-k
  passes), the fused tensor-core kernel at every query tile width (``FUSED_NT``; one and two
  score buffers; int16 or int32 round scores), the one-query kernels (scan, popc) and every
  tensor-core variant (search_mma: NT, MT, WARPS, G; search_mma_cp: NT, WARPS, STAGES);
- the baseline a CuPy user writes: the trits as a dense float32 matrix, ``mem @ q`` (cuBLAS) and
  ``argsort``; and a device copy moving the memory's plane bytes (the bandwidth floor, measured);
- the scoring and top-k kernels alone, the kernels without the public call's Python work, and a
  sweep of query counts (2 to 32) for the routing.

Every path is checked (indices and scores, exact) against the float32 baseline before it is timed;
a path that fails is reported and not timed, and the script exits 1. CUDA events
(``cupyx.profiler.benchmark``), median of 20. JSON: benchmarks/results/search_cuda_<device>.json.

    python -m benchmarks.bench_search_cuda [--quick] [--json PATH]
"""

from __future__ import annotations

import sys

import numpy as np

try:  # imported as benchmarks.bench_search_cuda or run as a script
    from . import _harness as h
    from . import _search_cuda_parts as parts
except ImportError:  # pragma: no cover
    import _harness as h
    import _search_cuda_parts as parts

    h.use_checkout()

import pytropical_gpu as tg
from pytropical_gpu.backends.cuda import search_launch as sl
from pytropical_gpu.vsa import TernaryVec

FULL, QUICK = (200_000, 10_000, 10), (20_000, 4096, 10)
SWEEP = (2, 4, 8, 16, 32)
REPEATS = 20
BASELINE = "cupy float32 mem @ q + argsort"


def _timing(fn, repeats: int = REPEATS) -> h.Timing:
    from cupyx.profiler import benchmark

    t = np.asarray(benchmark(fn, n_repeat=repeats, n_warmup=3).gpu_times[0])
    q20, med, q80 = np.quantile(t, [0.2, 0.5, 0.8])
    return h.Timing(float(med), float(q20), float(q80), len(t))


def _vecs(cp, rows: int, dim: int, seed: int) -> TernaryVec:
    """Deterministic trits on the device: non-zero 1/2, then +-1 with equal odds; zero tail."""
    w = -(-dim // 32)
    x = (cp.arange(rows * w, dtype=cp.uint64) + np.uint64(seed << 40)) * np.uint64(0x9E3779B97F4A7C15)
    x ^= x >> np.uint64(29)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(32)
    nz = (x >> np.uint64(32)).astype(cp.uint32).reshape(rows, w)
    sign = x.astype(cp.uint32).reshape(rows, w)
    if dim % 32:
        nz[:, -1] &= np.uint32((1 << (dim % 32)) - 1)
    return TernaryVec._trusted(nz & sign, nz & ~sign, dim)


class _Engine:
    """Context: search_launch's switches (ENGINE, VARIANT, SCAN) set for the body, restored after."""

    def __init__(self, **switches):
        self.switches = switches

    def __enter__(self):
        self.saved = {name: getattr(sl, name) for name in self.switches}
        for name, value in self.switches.items():
            setattr(sl, name, value)

    def __exit__(self, *exc):
        for name, value in self.saved.items():
            setattr(sl, name, value)


def _paths(nq: int) -> dict:
    """{name: search_launch switches} timed at nq queries."""
    paths = {"old": {"ENGINE": "old"}, "new": {"ENGINE": "auto"},
             "new unfused": {"ENGINE": "auto", "FUSE": False}}
    if nq == 1:
        paths["fused scan, merge in a second launch"] = {"LAST_MERGE": False}
        paths.update({f"scan {u}": {"ENGINE": "scan", "SCAN": u}
                      for u in (*sl.SCAN_U, *(f"cp{st}" for st in sl.SCAN_CP_STAGES))})
    else:
        paths["general path (int32 scores, 3 launches, no plan)"] = {"PLANNED": False}
        paths["planned, int32 scores"] = {"SCORES16": False}
        paths["planned, int16 scores, merge in a second launch"] = {"LAST_MERGE": False}
        every = (1, 2, 4, 8)
        paths["fused at every NT"] = {"ENGINE": "auto", "FUSED_NT": every}
        if nq == 64:
            for tpt in (32, 64, 256):
                paths[f"planned, top-k {tpt} a thread"] = {"TOPK_PER_THREAD": tpt}
            paths["fused at every NT, two buffers"] = {"ENGINE": "auto", "FUSED_NT": every,
                                                       "DOUBLE_BUFFER": True}
    if nq <= 8:
        paths["popc"] = {"ENGINE": "popc"}
    nt = 1 if nq <= 8 else 2 if nq <= 16 else 4 if nq <= 32 else 8
    for v in sl.MMA_VARIANTS:
        vnt = v[1] if v[0] == "cp" else v[0]
        if vnt == nt or (nq == 64 and vnt == 4):
            name = ("mma cp NT={} WARPS={} STAGES={}".format(*v[1:]) if v[0] == "cp" else
                    "mma NT={} MT={} WARPS={} G={}".format(*v))
            paths[name] = {"ENGINE": "mma", "VARIANT": v}
    return paths


def run(quick: bool = False, progress=None) -> tuple[list[h.Result], list[str]]:
    import cupy as cp

    say = progress or (lambda s: None)
    be = tg.get_backend("cuda")
    dev = be.describe()["device"]
    rows_m, dim, k = QUICK if quick else FULL
    mem = _vecs(cp, rows_m, dim, 1)
    dense = mem.to_array().astype(cp.float32)  # the user's formulation, built on the device
    plane_bytes = 2 * mem.pos.nbytes
    src = cp.zeros(plane_bytes // 8, cp.uint32)  # a copy of half the bytes moves them all
    dst = cp.empty_like(src)
    t_copy = _timing(lambda: cp.copyto(dst, src))
    floor = plane_bytes / 4.3e12
    results: list[h.Result] = [h.Result(
        "device copy (read+write)", "cuda", dev, f"{plane_bytes >> 20} MiB moved", t_copy.median,
        t_copy.q20, t_copy.q80, plane_bytes, "B", note="the memory planes' bytes, moved once")]
    failures: list[str] = []
    for nq in (1, 64) + (() if quick else SWEEP):
        sizes = f"{nq}x{rows_m}x{dim} k={k}"
        q = _vecs(cp, nq, dim, 2 + nq)
        qd = q.to_array().astype(cp.float32)
        want = (qd @ dense.T).astype(cp.int64)
        order = cp.argsort(-want, axis=1)[:, :k]  # stable: ties to the smaller row
        want_scores = cp.take_along_axis(want, order, axis=1)

        def base(qd=qd):
            return cp.argsort(-(dense @ qd.T), axis=0)[:k].T

        t_base = _timing(base, 10 if nq > 1 else REPEATS)
        work = 2.0 * nq * rows_m * dim
        say(f"{sizes}: baseline {t_base.median * 1e3:.3f} ms")
        main = nq in (1, 64)
        if main:
            results.append(h.Result("search baseline", "cupy", dev, sizes, t_base.median,
                                    t_base.q20, t_base.q80, work, "op", note=BASELINE))
        for name, switches in _paths(nq).items():
            if not main and name not in ("new", "general path (int32 scores, 3 launches, no plan)",
                                         "fused at every NT", "popc"):
                continue
            with _Engine(**switches):
                def ours(q=q):
                    return be.search(q, mem, k=k)
                idx, sc = ours()
                if not (bool(cp.array_equal(idx, order)) and bool(cp.array_equal(sc, want_scores))):
                    failures.append(f"{name} {sizes}")
                    say(f"CHECK FAILED: {name} {sizes}")
                    continue
                t = _timing(ours, 10 if name == "old" and nq > 1 else REPEATS)
            say(f"{sizes}: {name} {t.median * 1e3:.3f} ms")
            results.append(h.Result(f"search [{name}]", "cuda", dev, sizes, t.median, t.q20, t.q80,
                                    work, "op", BASELINE, t_base.median,
                                    note=f"floor {floor * 1e3:.3f} ms (planes at 4.3 TB/s); copy "
                                         f"{t_copy.median * 1e3:.3f} ms"))
        if main:
            results += _parts(be, cp, q, mem, k, dev, sizes)
    return results, failures


def _parts(be, cp, q, mem, k, dev, sizes) -> list[h.Result]:
    """Each kernel alone on the device (_search_cuda_parts), both paths' kernels without the public
    call's Python work, and the host time of one public call."""
    from pytropical_gpu.ops._planes import flat

    qp, qn = flat(be, q)
    mp, mn = flat(be, mem)
    out = []
    for part, (sec, how) in parts.kernels_alone(be, sl, cp, qp, qn, mp, mn, k).items():
        out.append(h.Result(f"search kernel: {part}", "cuda", dev, sizes, sec, sec, sec, note=how))

    def v8():
        with _Engine(PLANNED=False, LAST_MERGE=False):
            return be._search(qp, qn, mp, mn, k)

    for part, fn in (("kernels, default (be._search on the planes)", lambda: be._search(qp, qn, mp, mn, k)),
                     ("kernels, general path (be._search on the planes)", v8)):
        t = _timing(fn)
        out.append(h.Result(f"search part: {part}", "cuda", dev, sizes, t.median, t.q20, t.q80))
    small = _vecs(cp, 256, mem.dim, 7)
    for name, sw in (("default", {}), ("general path", {"PLANNED": False, "LAST_MERGE": False})):
        with _Engine(**sw):
            sec = parts.host_per_call(be, cp, q, small, k)
        out.append(h.Result(f"search host time a public call ({name}, 256 memory rows)", "cuda",
                            dev, f"{q.batch_shape[0]}x256x{mem.dim} k={k}", sec, sec, sec))
    return out


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(description="pytropical_gpu cuda search against the float32 baseline")
    p.add_argument("--quick", action="store_true", help="20,000 x 4,096 trits, no sweep")
    p.add_argument("--json", metavar="PATH", help="where to write the JSON results "
                   "(default benchmarks/results/search_cuda_<device>.json)")
    p.add_argument("--no-json", action="store_true")
    args = p.parse_args(argv)
    rows, failures = run(quick=args.quick, progress=h.stderr_progress("search_cuda"))
    h.print_table(rows)
    if not args.no_json:
        import cupy

        info = tg.get_backend("cuda").describe()
        tag = "".join(c if c.isalnum() else "_" for c in info["device"].replace("NVIDIA ", ""))
        path = args.json or h.RESULTS_DIR / f"search_cuda_{tag}.json"
        path = h.write_json(path, rows, info["device"], quick=args.quick, cupy=cupy.__version__,
                            backend=info, mma_pick={str(k): v for k, v in sl.MMA_PICK.items()},
                            mma_from_q=sl.MMA_FROM_Q, fuse=sl.FUSE, fused_k=sl.FUSED_K,
                            planned=sl.PLANNED, scores16=sl.SCORES16, last_merge=sl.LAST_MERGE,
                            failures=failures)
        print(f"wrote {path}")
    if failures:
        print(f"search_cuda: correctness check FAILED: {failures}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
