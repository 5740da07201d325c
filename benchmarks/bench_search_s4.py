"""Issue 15's two CUDA search rows, session 4: every variant in one run, checks first.

Memory 200,000 x 10,000 trits resident (cupy planes), k = 10, 1 and 64 queries.

1. Checks: every switch setting below against the cpu backend (numpy, written apart from the CUDA
   kernels) on odd sizes (rows 1 ... 4,099, dims 1 ... 1,000, k 1 ... 40 with k > rows), then at
   full size against CuPy float32 ``dense @ q`` ranked on the host by (-score, row).
2. Floors: a device copy of half the planes' bytes (read + write = the planes' bytes), and
   read-only streaming of 500.8 MB (benchmarks/probe_read_bw.cu: 16-byte loads, bulk copies).
3. One query, ``tg.search`` (resident (1, W) query and memory): CUDA events around each call
   (cupyx ``benchmark``, median of 300); the kernels alone (``be._search`` back to back, events);
   the host time of one public call on 256 rows; the scan kernel alone with and without its
   last-block merge (graph of 20). Variants: search_scan_cp (3 stages, the s3 default) with the
   results passed as views / as addresses (search_fused.PTR_ARGS); search_scan_tma at 3, 4, 6, 8
   stages, 1-3 blocks a SM, the query as words or 4 shifted copies ("v"); the launch through
   cuLaunchKernel (search_fused.RAW_LAUNCH). The defaults after s4: tma3, 2 a SM, raw.
4. 64 queries: ``tg.search`` events, and the top-k launch alone (graph of 20) for topk_one_w
   (the s3 default) against topk_one_v (16-byte int16 loads, 4 or 8 in flight a lane, a packed
   int16 max prefilter) at 128, 256 and 512 scores a thread; the scoring kernel alone. The
   defaults after s4: topk_one_v, 4 vectors, 256 a thread.
5. Baselines: CuPy float32 ``mem @ q`` + argsort (1 and 64 queries).

    python benchmarks/bench_search_s4.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _search_cuda_parts import device_time  # noqa: E402
from bench_search import random_vecs  # noqa: E402
from bench_search_host import per_call_us  # noqa: E402
from bench_search_plan import log  # noqa: E402
from bench_search_public import dense_f32  # noqa: E402

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu import TernaryVec  # noqa: E402
from pytropical_gpu.backends.cuda import search_fused, search_launch, search_two  # noqa: E402

MODS = {"sl": search_launch, "fused": search_fused, "two": search_two}
_NR = {"fused.RAW_LAUNCH": False}  # the rows as run in s4b (RAW_LAUNCH was off by default then)
ONE = {"cp3 views (s3 default)": {"sl.SCAN": "cp3", "fused.PTR_ARGS": False, **_NR},
       "cp3 ptr": {"sl.SCAN": "cp3", **_NR},
       "tma3 2/SM": {"sl.SCAN": "tma3", "sl.TMA_BLOCKS": 2, **_NR},
       "tma4 2/SM": {"sl.SCAN": "tma4", "sl.TMA_BLOCKS": 2, **_NR},
       **{f"tma{st}v {b}/SM": {"sl.SCAN": f"tma{st}v", "sl.TMA_BLOCKS": b, **_NR}
          for st, b in ((3, 2), (4, 2), (3, 3), (6, 1), (8, 1))},
       "tma3 2/SM raw": {"sl.SCAN": "tma3", "sl.TMA_BLOCKS": 2, "fused.RAW_LAUNCH": True},
       "tma4v 2/SM raw": {"sl.SCAN": "tma4v", "sl.TMA_BLOCKS": 2, "fused.RAW_LAUNCH": True},
       "tma6v 1/SM raw": {"sl.SCAN": "tma6v", "sl.TMA_BLOCKS": 1, "fused.RAW_LAUNCH": True}}
MANY = {"one_w 128 (s3 default)": {"two.TOPK_VEC": 0, "sl.TOPK_PER_THREAD": 128},
        "one_w 256": {"two.TOPK_VEC": 0, "sl.TOPK_PER_THREAD": 256},
        **{f"one_v{v} {t}": {"two.TOPK_VEC": v, "sl.TOPK_PER_THREAD": t}
           for v in (4, 8) for t in (128, 256, 512)}}


class switches:
    """Context: the named module switches set for the body, restored after."""

    def __init__(self, sets):
        self.sets = sets

    def __enter__(self):
        self.saved = {}
        for name, value in self.sets.items():
            mod, attr = name.split(".")
            self.saved[name] = getattr(MODS[mod], attr)
            setattr(MODS[mod], attr, value)

    def __exit__(self, *exc):
        for name, value in self.saved.items():
            mod, attr = name.split(".")
            setattr(MODS[mod], attr, value)


def section(out, name, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - one part failing must not lose the others
        out["errors"][name] = f"{type(e).__name__}: {e}"
        log(f"{name}: FAILED {type(e).__name__}: {e}\n{traceback.format_exc()}")


def ranked(scores, k):
    order = np.lexsort((np.arange(scores.shape[0]), -scores))[:k]
    return order, scores[order]


def same(got, want_idx, want_val) -> bool:
    return bool(np.array_equal(np.asarray(got[0]), want_idx)
                and np.array_equal(np.asarray(got[1]), want_val))


def checks(out, cp):
    """Every variant on odd sizes against the cpu backend."""
    bad = []
    n = 0
    cases = [(1, 1, 1, 1), (7, 31, 1, 7), (5, 333, 1, 5), (40, 333, 1, 10), (1001, 333, 1, 10),
             (4099, 1000, 1, 20), (3001, 317, 1, 32), (48, 64, 3, 40), (4096, 1000, 64, 10),
             (4104, 333, 64, 20), (2000, 1000, 9, 32), (4101, 317, 64, 10), (40000, 320, 64, 10)]
    for rows, dim, nq, k in cases:
        mem = random_vecs(rows, dim, rows + dim)
        qs = random_vecs(nq, dim, 7 * rows + nq)
        if rows > 2:  # ties: duplicate rows, the smaller index must win
            mem.pos[rows // 2], mem.neg[rows // 2] = mem.pos[1], mem.neg[1]
        want = tg.search(qs, mem, k=k, backend="cpu")
        mc = TernaryVec._trusted(cp.asarray(mem.pos), cp.asarray(mem.neg), dim)
        qc = TernaryVec._trusted(cp.asarray(qs.pos), cp.asarray(qs.neg), dim)
        for name, sets in {**ONE, **MANY}.items():
            with switches(sets):
                got = [cp.asnumpy(x) for x in tg.search(qc, mc, k=k, backend="cuda")]
            n += 1
            if not same(got, np.asarray(want[0]), np.asarray(want[1])):
                bad.append(f"{name} rows={rows} dim={dim} q={nq} k={k}")
    out["odd_checks"] = {"cases": n, "failed": bad}
    log(f"odd-size checks: {n} cases, failed: {bad}")


def floors(out, cp, nbytes):
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    rows = out["floors_ms"] = {}
    pair = [cp.zeros(nbytes // 8, cp.uint32), cp.zeros(nbytes // 8, cp.uint32)]
    rows["copy half the planes (read + write = the planes' bytes)"] = device_time(
        cp, lambda: cp.copyto(pair[1], pair[0]))[0] * 1e3
    pair.clear()
    a = cp.zeros(nbytes // 4, cp.uint32)
    o = cp.zeros(1, cp.uint32)
    n = np.int64(nbytes // 16)
    code = (ROOT / "benchmarks" / "probe_read_bw.cu").read_text()
    names = [f"read_ld<{u}>" for u in (4, 8)] + [f"read_bulk<{s}, {c}>" for s, c in
                                                ((4, 4096), (3, 2560), (6, 2560), (8, 2048))]
    mod = cp.RawModule(code=code, options=("--std=c++17",), name_expressions=names)
    for u in (4, 8):
        fn = mod.get_function(f"read_ld<{u}>")
        for per in (4, 8, 16):
            g = sms * per
            rows[f"read_ld<{u}> {per} blocks/SM"] = device_time(
                cp, lambda fn=fn, g=g: fn((g,), (256,), (a, n, o)))[0] * 1e3
    for s, c in ((4, 4096), (3, 2560), (6, 2560), (8, 2048)):
        fn = mod.get_function(f"read_bulk<{s}, {c}>")
        smem = 64 * s + 8 * s * c
        fn.max_dynamic_shared_size_bytes = smem
        per = max(1, min(4, (228 * 1024) // (smem + 1024)))
        rows[f"read_bulk<{s}, {c}> {per} blocks/SM"] = device_time(
            cp, lambda fn=fn, g=sms * per, smem=smem: fn((g,), (256,), (a, n, o), shared_mem=smem))[0] * 1e3
    for k, v in rows.items():
        log(f"floor {k}: {v:.4f} ms ({nbytes / v / 1e9:.2f} TB/s)")


def one_query(out, cp, be, mc, qb, want, k):
    from pytropical_gpu.ops._planes import flat

    qp, qn = flat(be, qb)
    mp, mn = flat(be, mc)
    small = TernaryVec._trusted(mc.pos[:256], mc.neg[:256], mc.dim)
    call = lambda: tg.search(qb, mc, k=k, backend="cuda")  # noqa: E731
    for name, sets in ONE.items():
        section(out, f"one {name}", lambda name=name, sets=sets: one_row(
            out, cp, be, mc, qb, want, k, name, sets, (qp, qn, mp, mn), small, call))


def one_row(out, cp, be, mc, qb, want, k, name, sets, planes, small, call):
    from cupyx.profiler import benchmark

    from pytropical_gpu.bench.gputime import cupy_time

    qp, qn, mp, mn = planes
    with switches(sets):
        got = [cp.asnumpy(x).reshape(-1) for x in call()]
        row = {"variant": name, "checked": same(got, *want)}
        if row["checked"]:
            t = np.asarray(benchmark(call, n_repeat=300, n_warmup=20).gpu_times[0]) * 1e3
            row["events_each_call_ms"] = dict(zip(("q20", "median", "q80"),
                                                  np.quantile(t, [0.2, 0.5, 0.8]).tolist()))
            row["kernels_alone_ms"] = cupy_time(cp, lambda: be._search(qp, qn, mp, mn, k),
                                                50).median * 1e3
            pub = lambda: tg.search(qb, small, k=k, backend="cuda")  # noqa: E731
            cp.cuda.Device().synchronize()
            row["host_us_256_rows"] = per_call_us(pub, 200, 5)[0]
            cp.cuda.Device().synchronize()
            row["checked_after"] = same([cp.asnumpy(x).reshape(-1) for x in call()], *want)
            row.update(scan_parts(cp, be, qp, qn, mp, mn, k))
    log(f"1 query: {json.dumps(row)}")
    out["one_query"].append(row)


def scan_parts(cp, be, qp, qn, mp, mn, k):
    """The one-query kernel of the current switches alone (graph of 20): with the last-block
    merge, and the block lists only (no counter: no merge)."""
    w, m = qp.shape[1], mp.shape[0]
    plan = search_fused._plan(be, search_launch, 1, w, m, 16, True)
    fn, (gx, _), block, smem, (pre, _, post, _), *_ = plan
    cand = cp.empty(gx * 16, np.int64)
    idx, val, cnt = cp.empty(k, np.int64), cp.empty(k, np.int64), cp.zeros(4, np.uint32)
    null = np.uint64(0)
    base = (mp, mn, qp, qn, null, *pre, *post, cand, np.int32(k))
    return {"blocks": int(gx),
            "scan+merge_ms": device_time(cp, lambda: fn((gx,), block, base + (idx, val, cnt),
                                                       shared_mem=smem))[0] * 1e3,
            "scan lists only_ms": device_time(cp, lambda: fn((gx,), block, base + (null, null, null),
                                                            shared_mem=smem))[0] * 1e3}


def many_queries(out, cp, be, mc, qc, want, k):
    from cupyx.profiler import benchmark

    from pytropical_gpu.ops._planes import flat

    qp, qn = flat(be, qc)
    mp, mn = flat(be, mc)
    q, w = qp.shape
    m = mp.shape[0]
    call = lambda: tg.search(qc, mc, k=k, backend="cuda")  # noqa: E731
    s16 = cp.empty((q, m), np.int16)
    fn, grid, block, smem, cs = search_launch.mma_launch(be, search_launch.MMA_PICK[8], q, w, m, True)
    null, zero = np.uint64(0), np.int32(0)
    score_args = (mp, mn, qp, qn, s16, np.int64(m), np.int64(q), np.int64(w), np.int32(8 * cs), null,
                  zero, zero, zero)
    out["scores_kernel_int16_ms"] = device_time(
        cp, lambda: fn(grid, block, score_args, shared_mem=smem))[0] * 1e3
    log(f"64 queries: scoring kernel alone {out['scores_kernel_int16_ms']:.4f} ms")
    idx, val = cp.empty((q, k), np.int64), cp.empty((q, k), np.int64)
    cnt = cp.zeros(q, np.uint32)
    for name, sets in MANY.items():
        with switches(sets):
            got = [cp.asnumpy(x) for x in call()]
            row = {"variant": name, "checked": same(got, *want)}
            if row["checked"]:
                t = np.asarray(benchmark(call, n_repeat=200, n_warmup=10).gpu_times[0]) * 1e3
                row["events_each_call_ms"] = dict(zip(("q20", "median", "q80"),
                                                      np.quantile(t, [0.2, 0.5, 0.8]).tolist()))
                plan = search_two._plan(be, search_launch, q, w, m, 16)
                topk, chunks, chunk = plan[8], plan[9], plan[10]
                cand = cp.empty(q * chunks * 16, np.int64)
                args = (s16, cand, np.int64(m), np.int64(chunk), np.int32(k), idx, val, cnt)
                fn(grid, block, score_args, shared_mem=smem)
                row["topk_alone_ms"] = device_time(
                    cp, lambda t=topk, g=(chunks, q), a=args: t(g, (256,), a))[0] * 1e3
                row["topk_blocks_a_query"] = int(chunks)
                row["checked_after"] = same([cp.asnumpy(x) for x in call()], *want)
        log(f"64 queries: {json.dumps(row)}")
        out["many_queries"].append(row)


def baselines(out, cp, dense, q1, q64, k):
    from pytropical_gpu.bench.gputime import cupy_time

    d1 = cp.asarray(q1.to_array(), dtype=cp.float32)
    d64 = cp.asarray(q64.to_array(), dtype=cp.float32)
    out["baseline_ms"] = {
        "cupy float32 mem @ q + argsort, 1 query": cupy_time(
            cp, lambda: cp.argsort(-(dense @ d1))[:k], 10).median * 1e3,
        "cupy float32 mem @ Q.T + argsort, 64 queries": cupy_time(
            cp, lambda: cp.argsort(-(dense @ d64.T), axis=0)[:k], 3).median * 1e3}
    log(f"baselines: {out['baseline_ms']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="4,000 x 1,024 trits")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    import cupy as cp

    t0 = time.time()
    rows, dim, k = (4_000, 1024, 10) if args.quick else (200_000, 10_000, 10)
    out = {"sizes": f"M={rows} x dim={dim}, k={k}, 1 and 64 queries", "errors": {},
           "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "one_query": [], "many_queries": []}
    section(out, "checks", lambda: checks(out, cp))
    log(f"checks done at {time.time() - t0:.1f} s")
    mem = random_vecs(rows, dim, 1)
    q64 = random_vecs(64, dim, 3)
    mc = TernaryVec._trusted(cp.asarray(mem.pos), cp.asarray(mem.neg), dim)
    qc = TernaryVec._trusted(cp.asarray(q64.pos), cp.asarray(q64.neg), dim)
    qb = TernaryVec._trusted(qc.pos[:1], qc.neg[:1], dim)
    dense = dense_f32(cp, mem)
    s64 = cp.asnumpy(dense @ cp.asarray(q64.to_array(), dtype=cp.float32).T).astype(np.int64)
    ref = [ranked(s64[:, j], k) for j in range(64)]
    want64 = (np.stack([r[0] for r in ref]), np.stack([r[1] for r in ref]))
    want1 = ref[0]
    be = tg.get_backend("cuda")
    log(f"{out['sizes']}: reference ready at {time.time() - t0:.1f} s")
    section(out, "floors", lambda: floors(out, cp, 2 * mem.pos.nbytes))
    section(out, "one", lambda: one_query(out, cp, be, mc, qb, want1, k))
    log(f"one query done at {time.time() - t0:.1f} s")
    section(out, "many", lambda: many_queries(out, cp, be, mc, qc, want64, k))
    log(f"64 queries done at {time.time() - t0:.1f} s")
    section(out, "baselines", lambda: baselines(out, cp, dense, TernaryVec(
        q64.pos[0], q64.neg[0], dim), q64, k))
    bad = [r["variant"] for r in out["one_query"] + out["many_queries"]
           if not r.get("checked") or r.get("checked_after") is False]
    out["all_checked"] = not bad and not out["errors"] and not out.get("odd_checks", {}).get("failed")
    log(f"all checked: {out['all_checked']} {bad or ''} {out['errors'] or ''}; {time.time() - t0:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0 if out["all_checked"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
