"""Host (Python) time of one public 1-query ``tg.search`` over a resident memory, with the device work
stubbed out, so any machine measures what the operation layer, the routing and the backends' plan
look-ups cost per call (issue 15: the search rows are missed by host-side Python).

- ``wgpu``: ``tg.search(host query, resident memory, k=10, backend="wgpu")`` through the cached plan,
  with the plan's query write, recorded submit and staging read replaced by no-ops (checked first
  against numpy with the real ones).
- ``ops (cuda stand-in)``: ``tg.search(..., backend="cpu")`` with the CPU backend's ``_search``
  returning fixed arrays: routing and the operation layer that every backend shares (CuPy's own
  calls are not in it).

The fastest of ``--reps`` blocks of ``--calls`` calls (µs a call; the least disturbed by other
work on a shared host).

    python benchmarks/bench_search_host.py [--rows 2000] [--dim 10000] [--calls 2000] [--reps 9]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_search import random_vecs  # noqa: E402

import pytropical_gpu as tg  # noqa: E402


def per_call_us(fn, calls: int, reps: int) -> tuple[float, list[float]]:
    for _ in range(200):
        fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
    return float(min(out)), out


def wgpu_python_us(call, k: int, calls: int, reps: int) -> tuple[float, list[float]]:
    """:func:`per_call_us` of a wgpu search through the plan with its query write, recorded submit
    and staging read stubbed: the Python alone."""
    from pytropical_gpu.backends.wgpu import mapread, recorded

    saved = recorded.Recorded.submit, recorded.Recorded.write, mapread.Staging.read
    raw = np.zeros(8 * k, np.uint8)
    recorded.Recorded.submit = lambda self, first=None: None
    recorded.Recorded.write = lambda self, buf, data: None
    mapread.Staging.read = lambda self, n: raw.copy()
    try:
        return per_call_us(call, calls, reps)
    finally:
        recorded.Recorded.submit, recorded.Recorded.write, mapread.Staging.read = saved


def reference(q, mem, k):
    want = q.to_array().astype(np.int64).reshape(1, -1) @ mem.to_array().astype(np.int64).T
    order = np.lexsort((np.arange(want.shape[1]), -want[0]))[:k]
    return order, want[0, order]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--dim", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--skip-wgpu", action="store_true")
    args = ap.parse_args(argv)
    k = args.k
    mem = random_vecs(args.rows, args.dim, 1)
    q2 = random_vecs(1, args.dim, 3)
    q = tg.TernaryVec(q2.pos[0], q2.neg[0], q2.dim)
    order, scores = reference(q, mem, k)

    from pytropical_gpu.backends.cpu import CpuBackend

    fixed = (np.zeros((1, k), np.int64), np.zeros((1, k), np.int64))
    orig = CpuBackend._search
    got = tg.search(q, mem, k=k, backend="cpu")
    assert np.array_equal(got[0], order) and np.array_equal(got[1], scores), "cpu: wrong results"
    CpuBackend._search = lambda self, qp, qn, mp, mn, kk: fixed
    try:
        m, all_ = per_call_us(lambda: tg.search(q, mem, k=k, backend="cpu"), args.calls, args.reps)
    finally:
        CpuBackend._search = orig
    print(f"ops (cuda stand-in, cpu backend, _search stubbed): {m:.2f} us/call "
          f"[{' '.join(f'{x:.1f}' for x in all_)}]")
    if args.skip_wgpu:
        return 0
    md = tg.HybridContext(backend="wgpu").to_device(mem)
    got = tg.search(q, md, k=k, backend="wgpu")
    assert np.array_equal(got[0], order) and np.array_equal(got[1], scores), "wgpu: wrong results"
    m, all_ = wgpu_python_us(lambda: tg.search(q, md, k=k, backend="wgpu"), k, args.calls, args.reps)
    print(f"wgpu (plan; write, submit, read stubbed): {m:.2f} us/call "
          f"[{' '.join(f'{x:.1f}' for x in all_)}]")
    got = tg.search(q, md, k=k, backend="wgpu")
    assert np.array_equal(got[0], order) and np.array_equal(got[1], scores), "wgpu: wrong after"
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
