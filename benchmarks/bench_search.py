"""Item-memory search (VSA clean-up): top-k rows of a large ternary memory by exact dot product.

Ours: ``pytropical_gpu.search`` on each available GPU backend with the memory resident on the
device (``HybridContext.to_device``: cupy planes on cuda, WgpuArray planes on wgpu, so no call
uploads the memory; a memory larger than one wgpu buffer falls back to the numpy planes, uploaded
each call, and the note says so). The wgpu rows pass a host query and get numpy arrays back (what a
user writes; ``bench_search_plan.py`` times the resident query too). Baseline in the same run:
what a user writes with CuPy — the trits as a dense float32 matrix, ``mem @ q`` (cuBLAS) and
``argsort`` of the scores. Results are checked (indices and scores) before timing.

The wgpu pass-one variants (queries per pass QB, lanes per row L, rows per thread R: the constants
``SEARCH_QB``, ``SEARCH_LANES``, ``SEARCH_ROWS`` of ``backends/wgpu/vsa_search.py``) are timed in
the same run, each checked first; rows ``search wgpu-variant``, the note names the variant.

    python benchmarks/bench_search.py [--quick] [--json PATH]
"""

from __future__ import annotations

import numpy as np

try:
    from . import _harness as h
except ImportError:
    import _harness as h

h.use_checkout()

#: (QB, L, R) timed at 64 queries and (1, L, R) at one query, beside the defaults
VARIANTS_64 = [(qb, lanes, r) for qb in (8, 16, 32) for lanes in (8, 16) for r in (1, 2, 4)
               if qb * r <= 64]
VARIANTS_1 = [(1, lanes, r) for lanes in (4, 8, 16, 32) for r in (1, 2, 4)]
#: (memory rows, trits per row, k): the issue's sizes and the --quick ones
FULL, QUICK = (200_000, 10_000, 10), (20_000, 4096, 10)


def random_vecs(rows: int, dim: int, seed: int):
    """Random trits, density 1/2, built as words (TernaryVec.random draws a float per trit: ~30 s
    for the full memory)."""
    import pytropical_gpu as tg

    rng = np.random.default_rng(seed)
    w = -(-dim // 32)
    nz = rng.integers(0, 2**32, (rows, w), dtype=np.uint32)
    sign = rng.integers(0, 2**32, (rows, w), dtype=np.uint32)
    if dim % 32:
        nz[:, -1] &= np.uint32((1 << (dim % 32)) - 1)
    return tg.TernaryVec(nz & sign, nz & ~sign, dim)


def run(quick: bool = False, progress=None) -> list:
    import pytropical_gpu as tg
    from pytropical_gpu.backends import probe

    rows_m, dim, k = QUICK if quick else FULL
    say = progress or (lambda s: None)
    say(f"memory {rows_m} x {dim} trits")
    mem = random_vecs(rows_m, dim, 1)
    results = []
    have_cuda = probe("cuda")[0]
    cp = sync = None
    if have_cuda:
        import cupy as cp

        ctx = tg.HybridContext(backend="cuda")
        mem_dev = ctx.to_device(mem)
        dense = mem_dev.to_array().astype(cp.float32)  # the user's formulation, built on the GPU
        sync = cp.cuda.Device().synchronize
    wgpu_mem, wnote = None, ""
    if probe("wgpu")[0]:
        try:
            wgpu_mem, wnote = tg.HybridContext(backend="wgpu").to_device(mem), "memory resident"
        except ValueError as e:  # beyond the device's largest buffer
            say(f"wgpu: memory stays on the host ({e})")
            wgpu_mem, wnote = mem, "memory uploaded each call"
    for nq in (1, 64):
        q = random_vecs(nq, dim, 2 + nq)
        if have_cuda:
            qd = cp.asarray(q.to_array(), dtype=cp.float32)
            want = cp.asnumpy(qd @ dense.T).astype(np.int64)
        else:
            want = (q.to_array().astype(np.float32) @ mem.to_array().astype(np.float32).T
                    ).astype(np.int64)
        order = np.argsort(-want, axis=1, kind="stable")[:, :k]
        want_scores = np.take_along_axis(want, order, axis=1)
        sizes = f"{nq}x{rows_m}x{dim} k={k}"
        work = 2.0 * nq * rows_m * dim  # trit multiply-adds as 2 ops
        base = None
        if have_cuda:
            def base(qd=qd):
                s = dense @ qd.T
                return cp.argsort(-s, axis=0)[:k].T

            h.check(f"baseline {sizes}", cp.asnumpy(base()).astype(np.int64)[:, 0], order[:, 0])
        for name in ("cuda", "wgpu"):
            if not probe(name)[0]:
                continue
            say(f"search {name} {sizes}")
            if name == "cuda":
                qq = ctx.to_device(q)

                def ours(qq=qq):
                    return tg.search(qq, mem_dev, k=k, backend="cuda")
                s, note = sync, "memory resident"
            else:  # a host query (numpy planes) in, numpy out: what a user writes
                def ours(qq=q, mm=wgpu_mem):
                    return tg.search(qq, mm, k=k, backend="wgpu")
                s, note = None, wnote + ", host query, " + _wgpu_variant()
            _check(name, sizes, ours, order, want_scores)
            device = tg.get_backend(name).describe().get("device", name)
            results.append(h.compare("search", name, str(device), sizes, ours, base, work=work,
                                     unit="op", baseline="cupy float32 mem @ q + argsort"
                                     if base else None, sync=s, base_sync=sync if base else None,
                                     repeats=7, note=note))
            if name == "wgpu":
                results += _variants(ours, nq, sizes, str(device), work, order, want_scores, say)
    return results


def _check(name, sizes, ours, order, want_scores):
    idx, scores = ours()
    h.check(f"{name} indices {sizes}", h_np(idx), order)
    h.check(f"{name} scores {sizes}", h_np(scores), want_scores)


def _wgpu_variant() -> str:
    from pytropical_gpu.backends.wgpu import vsa_search as vs

    one = f" (1 query: L={vs.SEARCH_ONE[0]} R={vs.SEARCH_ONE[1]})" if vs.SEARCH_ONE else ""
    return f"QB={vs.SEARCH_QB} L={vs.SEARCH_LANES} R={vs.SEARCH_ROWS}{one}"


def _variants(ours, nq, sizes, device, work, order, want_scores, say) -> list:
    """Each pass-one variant, checked then timed; the defaults are restored afterwards."""
    from pytropical_gpu.backends.wgpu import vsa_search as vs

    saved = vs.SEARCH_QB, vs.SEARCH_LANES, vs.SEARCH_ROWS, vs.SEARCH_ONE
    rows = []
    try:
        for qb, lanes, r in VARIANTS_64 if nq > 1 else VARIANTS_1:
            vs.SEARCH_QB, vs.SEARCH_LANES, vs.SEARCH_ROWS = qb, lanes, r
            vs.SEARCH_ONE = None  # one query takes (L, R) from SEARCH_LANES / SEARCH_ROWS
            say(f"search wgpu {sizes} variant {_wgpu_variant()}")
            _check("wgpu " + _wgpu_variant(), sizes, ours, order, want_scores)
            rows.append(h.compare("search", "wgpu-variant", device, sizes, ours, work=work,
                                  unit="op", repeats=5, max_time=1.0, note=_wgpu_variant()))
    finally:
        vs.SEARCH_QB, vs.SEARCH_LANES, vs.SEARCH_ROWS, vs.SEARCH_ONE = saved
    best = min(rows, key=lambda x: x.median_s)
    say(f"fastest wgpu variant at {sizes}: {best.note} {best.median_s * 1e3:.3f} ms")
    return rows


def h_np(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def main(argv=None):
    return h.bench_main("search", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
