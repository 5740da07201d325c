"""Why is a host call slower right after a GPU call? (auto_notes.md: cpu bind of 512 trits 13 us
after a cpu call, 22-26 us after a cuda or wgpu call on the H200 host)

    python benchmarks/auto_after.py [--json PATH] [--n N]

For each predecessor (a cpu, cuda and wgpu bind of 512 trits; a 1 ms sleep; a 1 ms busy loop; a
write of 64 MiB that evicts the caches; a cuda call that waits 1 ms on a spinning kernel) it times,
right after it, (a) the cpu bind (numpy: a working set in the caches) and (b) a tiny pure-Python
loop (registers and the L1 only), with the thread free to move and pinned to one core, and counts
how often the thread woke on another core (``sched_getcpu`` before and after the predecessor).
It also records, per GPU call, the thread's CPU time over its wall time (near 1: the thread spun
while it waited; near 0: it slept in the driver) and the process's thread count.

Reading: slower after a predecessor only when free to move -> migration to a cold core; (b) as
slow as (a), relatively -> the core's clock or wake-up, not its caches; (a) slower but (b) not,
and the 64 MiB write does the same -> the caches; a GPU call whose thread slept behaves like the
1 ms sleep.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu.routing import usable_backends  # noqa: E402

_libc = ctypes.CDLL(None)


def _cpu() -> int:
    return _libc.sched_getcpu()


def _threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _loop() -> None:
    x = 0
    for i in range(40):
        x += i


def measure(prev, target, n: int) -> dict:
    """Median of ``target`` right after ``prev``; how often the core changed across ``prev``."""
    out, moved = [], 0
    for _ in range(n):
        c0 = _cpu()
        prev()
        moved += _cpu() != c0
        t0 = time.perf_counter()
        target()
        out.append(time.perf_counter() - t0)
    return {"median_us": statistics.median(out) * 1e6, "moved": moved / n}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--n", type=int, default=300)
    a = p.parse_args(argv)
    doc: dict = {"threads_start": _threads(), "cpus": len(os.sched_getaffinity(0))}
    gov = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    doc["governor"] = gov.read_text().strip() if gov.exists() else "none exposed"
    x, y = tg.TernaryVec.random(512, seed=1), tg.TernaryVec.random(512, seed=2)
    cpu = lambda: tg.bind(x, y, backend="cpu")  # noqa: E731
    big = np.zeros(64 << 17, np.float64)  # 64 MiB

    def evict() -> None:
        big[::8] += 1.0  # one write per cache line

    prevs = {"cpu": cpu, "sleep 1ms": lambda: time.sleep(1e-3), "spin 1ms": lambda: _spin(1e-3),
             "write 64MiB": evict}
    gpus = [b for b in usable_backends(include_software=True) if b != "cpu"]
    for g in gpus:
        prevs[g] = lambda g=g: tg.bind(x, y, backend=g)
    if "cuda" in gpus:
        import cupy as cp

        k = cp.RawKernel(r'''extern "C" __global__ void spin(long long n) {
            long long t = clock64(); while (clock64() - t < n) {} }''', "spin")
        rate = cp.cuda.runtime.getDeviceProperties(0)["clockRate"] * 1e3  # Hz
        prevs["cuda wait 1ms"] = lambda: (k((1,), (1,), (np.int64(rate * 1e-3),)),
                                          cp.cuda.Stream.null.synchronize())
    for f in prevs.values():
        f()
    doc["threads_after_init"] = _threads()
    doc["cpu_time_over_wall"] = {}
    for name in [n for n in prevs if n in gpus or n.startswith("cuda")]:
        w0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(200):
            prevs[name]()
        doc["cpu_time_over_wall"][name] = (time.thread_time() - c0) / (time.perf_counter() - w0)
    home = _cpu()
    rows = {}
    for pin in (False, True):
        if pin:
            os.sched_setaffinity(0, {home})
        for name, f in prevs.items():
            for tname, t in (("numpy bind", cpu), ("python loop", _loop)):
                r = measure(f, t, a.n)
                rows[f"{'pinned' if pin else 'free'} | {name} -> {tname}"] = r
                print(f"{'pinned' if pin else 'free':6s} {name:13s} -> {tname:11s} "
                      f"{r['median_us']:8.2f} us  moved {r['moved']:.2f}", flush=True)
    doc["rows"] = rows
    print("threads", doc["threads_start"], "->", doc["threads_after_init"], "cpus", doc["cpus"],
          "governor", doc["governor"], "cpu/wall", {k: round(v, 2) for k, v in
                                                    doc["cpu_time_over_wall"].items()})
    if a.json:
        Path(a.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
