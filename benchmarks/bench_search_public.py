"""The public 1-query search on both GPU backends (issue 15, the host-side Python of the 1-query
rows), in one run of well under a minute: checks first, then timings.

Memory 200,000 x 10,000 trits resident (wgpu: ``ctx.to_device``; cuda: cupy planes), k = 10.

- reference: CuPy float32 ``dense @ q`` (exact: |score| <= 10,000 < 2^24), ranked on the host by
  (-score, index); every row below is checked against it before it is timed (cpu numpy int64 when
  CuPy is absent);
- wgpu: ``tg.search(host TernaryVec, resident memory, k=10, backend="wgpu")``, numpy out: wall
  (median of 200, q20, q80), the host breakdown of ``bench_search_plan.breakdown``, and the Python
  alone (the plan's write, submit and read stubbed: what is left of the ~57 us);
- cuda: ``tg.search(resident query, resident memory, k=10, backend="cuda")`` (a (1, W) and a (W,)
  query), ``be.search`` as the v9 notes timed it, and a host query: CUDA events around each call
  (``cupyx.profiler.benchmark``'s gpu_times, as ``bench_search_cuda.py``: host work before the
  launch included) and wall with a device synchronise after each call; the kernels alone
  (``be._search`` on the planes, CUDA events); the host time of one public call on 256 rows
  (device idle: the host before the launch); the Python alone (``_search`` stubbed: the
  operation layer and the routing);
- the CuPy float32 ``mem @ q`` + argsort baseline (wall and CUDA events).

    python benchmarks/bench_search_public.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_search import random_vecs  # noqa: E402
from bench_search_host import per_call_us, wgpu_python_us  # noqa: E402
from bench_search_plan import log  # noqa: E402
from bench_search_plan import wall as _wall  # noqa: E402

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu import TernaryVec  # noqa: E402


def wall(fn, n=200, warm=10, sync=None):
    """bench_search_plan's wall timer with this script's rounds (200 calls after 10)."""
    return _wall(fn, n, warm, sync)


def ranked(scores, k):
    order = np.lexsort((np.arange(scores.shape[0]), -scores))[:k]
    return order, scores[order]


def same(got, want) -> bool:
    return bool(np.array_equal(np.asarray(got[0]).reshape(-1), want[0])
                and np.array_equal(np.asarray(got[1]).reshape(-1), want[1]))


def section(out, name, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - one backend failing must not lose the other's rows
        out["errors"][name] = f"{type(e).__name__}: {e}"
        log(f"{name}: FAILED {type(e).__name__}: {e}\n{traceback.format_exc()}")


def wgpu_rows(out, q, mem, want, k):
    from bench_search_plan import breakdown

    be = tg.get_backend("wgpu")
    md = tg.HybridContext(backend="wgpu").to_device(mem)
    call = lambda: tg.search(q, md, k=k, backend="wgpu")  # noqa: E731
    ok = same(call(), want)
    row = {"backend": "wgpu", "variant": "tg.search(host query, resident memory), numpy out",
           "device": str(be.describe().get("device")), "checked": ok}
    if ok:
        row["wall"] = wall(call)
        row["host_us"] = breakdown(be.engine, call, n=200)
        row["python_alone_us"] = wgpu_python_us(call, k, 1000, 9)[0]
        row["checked_after"] = same(call(), want)
    log(f"wgpu: {json.dumps(row)}")
    out["rows"].append(row)


def cuda_rows(out, cp, q, mem, want, k):
    from cupyx.profiler import benchmark

    from pytropical_gpu.backends.cuda.backend import CudaBackend
    from pytropical_gpu.bench.gputime import cupy_time
    from pytropical_gpu.ops._planes import flat

    be = tg.get_backend("cuda")
    sync = cp.cuda.Device().synchronize
    mc = TernaryVec._trusted(cp.asarray(mem.pos), cp.asarray(mem.neg), mem.dim)
    qc = TernaryVec._trusted(cp.asarray(q.pos), cp.asarray(q.neg), q.dim)
    qb = TernaryVec._trusted(qc.pos.reshape(1, -1), qc.neg.reshape(1, -1), q.dim)
    calls = (("tg.search(resident query (1, W), resident memory)",
              lambda: tg.search(qb, mc, k=k, backend="cuda")),
             ("be.search(resident query (1, W), resident memory) (the v9 notes' row)",
              lambda: be.search(qb, mc, k=k)),
             ("tg.search(resident query (W,), resident memory)",
              lambda: tg.search(qc, mc, k=k, backend="cuda")),
             ("tg.search(host query (W,), resident memory)",
              lambda: tg.search(q, mc, k=k, backend="cuda")))
    for name, call in calls:
        ok = same([cp.asnumpy(x) for x in call()], want)
        row = {"backend": "cuda", "variant": name + ", cupy out", "checked": ok}
        if ok:
            t = np.asarray(benchmark(call, n_repeat=200, n_warmup=10).gpu_times[0])
            row["events_each_call_ms"] = dict(zip(("q20", "median", "q80"),
                                                  (np.quantile(t, [0.2, 0.5, 0.8]) * 1e3).tolist()))
            row["wall_sync"] = wall(call, sync=sync)
        log(f"cuda: {json.dumps(row)}")
        out["rows"].append(row)
    qp, qn = flat(be, qc)
    mp, mn = flat(be, mc)
    kern = cupy_time(cp, lambda: be._search(qp, qn, mp, mn, k), 20).median * 1e3
    small = TernaryVec._trusted(mc.pos[:256], mc.neg[:256], mc.dim)
    pub = lambda: tg.search(qc, small, k=k, backend="cuda")  # noqa: E731
    sync()
    host = per_call_us(pub, 200, 7)[0]
    sync()
    fixed = (cp.zeros((1, k), np.int64), cp.zeros((1, k), np.int64))
    orig = CudaBackend._search
    CudaBackend._search = lambda self, a, b, c, d, kk: fixed
    try:
        alone = per_call_us(lambda: tg.search(qc, mc, k=k, backend="cuda"), 1000, 9)[0]
    finally:
        CudaBackend._search = orig
    row = {"backend": "cuda", "variant": "parts", "kernels_alone_ms (be._search, events)": kern,
           "host_per_public_call_us (256 rows, device idle)": host,
           "python_alone_us (_search stubbed)": alone,
           "checked_after": same([cp.asnumpy(x) for x in tg.search(qc, mc, k=k, backend="cuda")],
                                 want)}
    log(f"cuda: {json.dumps(row)}")
    out["rows"].append(row)


def baseline_row(out, cp, dense, q, want, scores, k):
    from pytropical_gpu.bench.gputime import cupy_time

    qd = cp.asarray(q.to_array(), dtype=cp.float32)

    def base():
        s = dense @ qd
        return cp.argsort(-s)[:k]

    got = cp.asnumpy(base())
    row = {"backend": "cupy", "variant": "float32 mem @ q + argsort",
           "checked_best": bool(scores[got[0]] == want[1][0]),  # argsort: ties in any order
           "wall_sync": wall(lambda: cp.asnumpy(base()), n=50),
           "events_ms": cupy_time(cp, base, 10).median * 1e3}
    log(f"baseline: {json.dumps(row)}")
    out["rows"].append(row)


def dense_f32(cp, mem):
    """(M, dim) float32 trits unpacked on the device from the planes (no 2 GB host array)."""
    shifts = cp.arange(32, dtype=cp.uint32)
    out = []
    for plane in (mem.pos, mem.neg):
        p = cp.asarray(plane)
        bits = ((p[:, :, None] >> shifts) & cp.uint32(1)).astype(cp.float32)
        out.append(bits.reshape(p.shape[0], -1)[:, :mem.dim])
        del bits
    return out[0] - out[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2,000 x 1,024 trits")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    rows, dim, k = (2_000, 1024, 10) if args.quick else (200_000, 10_000, 10)
    out = {"sizes": f"1 query x M={rows} x dim={dim}, k={k}", "rows": [], "errors": {}}
    mem = random_vecs(rows, dim, 1)
    q2 = random_vecs(1, dim, 3)
    q = TernaryVec(q2.pos[0], q2.neg[0], dim)
    try:
        import cupy as cp

        cp.cuda.Device(0).compute_capability  # noqa: B018
    except Exception:  # noqa: BLE001
        cp = None
    if cp is not None:
        dense = dense_f32(cp, mem)
        scores = cp.asnumpy(dense @ cp.asarray(q.to_array(), dtype=cp.float32)).astype(np.int64)
        out["reference"] = "cupy float32 dense @ q"
    else:
        dense = None
        scores = mem.to_array().astype(np.int64) @ q.to_array().astype(np.int64)
        out["reference"] = "numpy int64"
    want = ranked(scores, k)
    log(f"{out['sizes']}; reference {out['reference']}")
    section(out, "wgpu", lambda: wgpu_rows(out, q, mem, want, k))
    if cp is not None:
        section(out, "cuda", lambda: cuda_rows(out, cp, q, mem, want, k))
        section(out, "baseline", lambda: baseline_row(out, cp, dense, q, want, scores, k))
    bad = [r["variant"] for r in out["rows"] if r.get("checked") is False
           or r.get("checked_after") is False or r.get("checked_best") is False]
    out["all_checked"] = not bad and not out["errors"]
    log(f"all checked: {out['all_checked']} {bad or ''} {out['errors'] or ''}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0 if out["all_checked"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
