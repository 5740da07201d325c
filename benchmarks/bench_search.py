"""Item-memory search (VSA clean-up): top-k rows of a large ternary memory by exact dot product.

Ours: ``pytropical_gpu.search`` on each available GPU backend with the memory resident on the
device (``HybridContext.to_device``: cupy planes on cuda, WgpuArray planes on wgpu, so no call
uploads the memory; a memory larger than one wgpu buffer falls back to the numpy planes, uploaded
each call, and the note says so). Baseline in the same run:
what a user writes with CuPy — the trits as a dense float32 matrix, ``mem @ q`` (cuBLAS) and
``argsort`` of the scores. Results are checked (indices and scores) before timing.

    python benchmarks/bench_search.py [--quick] [--json PATH]
"""

from __future__ import annotations

import numpy as np

try:
    from . import _harness as h
except ImportError:
    import _harness as h

h.use_checkout()


def run(quick: bool = False, progress=None) -> list:
    import pytropical_gpu as tg
    from pytropical_gpu.backends import probe

    rows_m, dim, k = (20_000, 4096, 10) if quick else (200_000, 10_000, 10)
    say = progress or (lambda s: None)
    mem = tg.TernaryVec.random(dim, density=0.5, seed=1, batch=(rows_m,))
    mem_t = mem.to_array().astype(np.float32)  # float32 BLAS is exact here: |dot| <= dim < 2^24
    results = []
    wgpu_mem, wnote = None, ""
    have_cuda = probe("cuda")[0]
    if have_cuda:
        import cupy as cp

        dense = cp.asarray(mem_t)  # the user's formulation
        ctx = tg.HybridContext(backend="cuda")
        mem_dev = ctx.to_device(mem)
        sync = cp.cuda.Device().synchronize
    for nq in (1, 64):
        q = tg.TernaryVec.random(dim, density=0.5, seed=2 + nq, batch=(nq,))
        want = (q.to_array().astype(np.float32) @ mem_t.T).astype(np.int64)
        order = np.argsort(-want, axis=1, kind="stable")[:, :k]
        want_scores = np.take_along_axis(want, order, axis=1)
        sizes = f"{nq}x{rows_m}x{dim} k={k}"
        work = 2.0 * nq * rows_m * dim  # trit multiply-adds as 2 ops
        base = None
        if have_cuda:
            qd = cp.asarray(q.to_array(), dtype=cp.float32)

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
                s = sync
            else:
                wctx = tg.HybridContext(backend="wgpu")
                if wgpu_mem is None:
                    try:
                        wgpu_mem = wctx.to_device(mem)
                        wnote = "memory resident"
                    except ValueError as e:  # beyond the device's largest buffer
                        say(f"wgpu: memory stays on the host ({e})")
                        wgpu_mem, wnote = mem, "memory uploaded each call"
                qq = wctx.to_device(q)

                def ours(qq=qq, mm=wgpu_mem):
                    return tg.search(qq, mm, k=k, backend="wgpu")
                s = None
            idx, scores = ours()
            h.check(f"{name} indices {sizes}", h_np(idx), order)
            h.check(f"{name} scores {sizes}", h_np(scores), want_scores)
            device = tg.get_backend(name).describe().get("device", name)
            results.append(h.compare("search", name, str(device), sizes, ours, base, work=work,
                                     unit="op", baseline="cupy float32 mem @ q + argsort"
                                     if base else None, sync=s, base_sync=sync if base else None,
                                     repeats=7, note="memory resident" if name == "cuda" else
                                     wnote))
    return results


def h_np(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


def main(argv=None):
    return h.bench_main("search", run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
