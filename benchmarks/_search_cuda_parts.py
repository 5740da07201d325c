"""Parts of the CUDA search for benchmarks/bench_search_cuda.py: each kernel alone on the device
(launched 20 times inside one CUDA graph and timed by events around the graph, so the host's
launch cost is not in it; back-to-back launches where a graph cannot be captured), the kernels
without the public call's Python (``be._search`` on the planes), and the host time of one public
call (a memory of 256 rows: the device work is then shorter than the host's).
"""

from __future__ import annotations

import time

import numpy as np

NGRAPH = 20


def device_time(cp, launch, rounds: int = 7) -> tuple[float, str]:
    """Median seconds of one ``launch()`` on the device, and how it was timed."""
    launch()
    cp.cuda.Device().synchronize()
    how = "graph"
    try:
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            s.begin_capture()
            try:
                for _ in range(NGRAPH):
                    launch()
            finally:
                g = s.end_capture()
            g.launch(s)
            s.synchronize()

            def run():
                g.launch(s)
    except Exception:  # noqa: BLE001 (graphs unsupported here: back-to-back launches)
        how, s = "back-to-back", cp.cuda.get_current_stream()

        def run():
            for _ in range(NGRAPH):
                launch()
    times = []
    for _ in range(rounds):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(s)
        run()
        e1.record(s)
        e1.synchronize()
        times.append(cp.cuda.get_elapsed_time(e0, e1) * 1e-3 / NGRAPH)
    return float(np.median(times)), how


def _launch(fn, grid, args, block=(256,), smem=0):
    return lambda: fn(grid, block, args, shared_mem=smem)


def kernels_alone(be, sl, cp, qp, qn, mp, mn, k: int) -> dict[str, tuple[float, str]]:
    """{part: (seconds, how)}: the scoring and top-k kernels alone, every variant the run weighs."""
    from pytropical_gpu.backends.cuda import kernels

    q, w = qp.shape
    m = mp.shape[0]
    kb, kk, m64, w64 = 16, np.int32(k), np.int64(m), np.int64(w)
    out = {}
    idx, val = cp.empty((q, k), np.int64), cp.empty((q, k), np.int64)
    null, zero = np.uint64(0), np.int32(0)
    cnt = cp.zeros(max(q, 1), np.uint32)
    merge = kernels.function(sl.TOPK, f"merge{kb}")
    if q == 1:
        span = -(-w // 4) + 1
        smem = 16 * -(-2 * w // 4) + 8 * 3 * 2 * span * 16
        gx = max(1, min(-(-m // 8), be._sm_count() * 2))
        cand = cp.empty(gx * kb, np.int64)
        fused = kernels.function(sl.SEARCH_CP, f"scan_cp3_k{kb}")
        plain = kernels.function(sl.SEARCH_CP, "scan_cp3")
        sl._allow_smem(fused, smem), sl._allow_smem(plain, smem)
        s = cp.empty((1, m), np.int32)
        base = (mp, mn, qp, qn)
        out["scan fused + last-block merge (one launch)"] = device_time(cp, lambda: fused(
            (gx,), (256,), base + (null, m64, w64, np.int32(span), cand, kk, idx, val, cnt),
            shared_mem=smem))
        out["scan fused, block lists only"] = device_time(cp, lambda: fused(
            (gx,), (256,), base + (null, m64, w64, np.int32(span), cand, kk, null, null, null),
            shared_mem=smem))
        out["merge of the block lists (second launch)"] = device_time(cp, lambda: merge(
            (1,), (256,), (cand, np.int64(gx * kb), idx, val, kk)))
        out["scan scores only (unfused)"] = device_time(cp, lambda: plain(
            (gx,), (256,), base + (s, m64, w64, np.int32(span), null, zero, null, null, null),
            shared_mem=smem))
        return out
    nt = 1 if q <= 8 else 2 if q <= 16 else 4 if q <= 32 else 8
    pick = sl.MMA_PICK[nt]
    variants = [pick] + [v for v in sl.REG_VARIANTS if v[0] == nt and v != pick]
    s32, s16 = cp.empty((q, m), np.int32), cp.empty((q, m), np.int16)
    for v in variants:
        for narrow, s in ((False, s32), (True, s16)):
            fn, grid, block, smem, cs = sl.mma_launch(be, v, q, w, m, narrow)
            args = (mp, mn, qp, qn, s, m64, np.int64(q), w64, np.int32(8 * cs), null, zero, zero,
                    zero)
            out["scores {} NT={} MT={} WARPS={} G={}".format(
                "int16" if narrow else "int32", *v)] = device_time(
                cp, _launch(fn, grid, args, block, smem))
    for tpt in (32, 64, 128, 256):
        chunks = max(-(-m // (256 * tpt)), min(-(-m // 2048), -(-2 * be._sm_count() // q)))
        chunk = -(-m // chunks)
        chunks = -(-m // chunk)
        cand = cp.empty(q * chunks * kb, np.int64)
        c64 = np.int64(chunk)
        for sfx, s in (("", s32), ("_s16", s16)):
            st = "int16" if sfx else "int32"
            out[f"top-k one launch ({st}, {tpt} a thread)"] = device_time(cp, _launch(
                kernels.function(sl.TOPK, f"one{kb}{sfx}"), (chunks, q),
                (s, cand, m64, c64, kk, idx, val, cnt)))
            out[f"top-k pass 1 ({st}, {tpt} a thread)"] = device_time(cp, _launch(
                kernels.function(sl.TOPK, f"topk{kb}{sfx}"), (chunks, q), (s, cand, m64, c64, kk)))
        out[f"top-k merge ({tpt} a thread)"] = device_time(cp, _launch(
            merge, (q,), (cand, np.int64(chunks * kb), idx, val, kk)))
    return out


def host_per_call(be, cp, query, memory, k: int, calls: int = 200) -> float:
    """Seconds of host time per public call, where the device work is short (256 memory rows)."""
    for _ in range(5):
        be.search(query, memory, k=k)
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        be.search(query, memory, k=k)
    t1 = time.perf_counter()
    cp.cuda.Device().synchronize()
    return (t1 - t0) / calls
