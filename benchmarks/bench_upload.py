"""Host-to-cuda uploads of large numpy arrays: ``cupy.asarray`` against the library's pinned staging
(``_pinned.put``, what ``to_device`` and numpy-in cuda calls use) and against an upload from memory
that is already pinned (the floor: the DMA alone).

    python benchmarks/bench_upload.py [--json PATH] [--mib 4 16 64 256] [--repeats 7]

Per size and route: median wall time from the call to the end of the DMA (the stream synchronised),
and for ``put`` also the time until it returns (its DMA runs on after that). Each route's result is
checked bit for bit against the host array first. Needs cuda.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's package

from pytropical_gpu import _pinned  # noqa: E402


def _median(f, sync, repeats: int) -> float:
    f()
    sync()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f()
        sync()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def _one(cp, mib: int, repeats: int, sync) -> dict | None:
    """One size: each route checked, then timed; None on a mismatch."""
    host = np.random.default_rng(mib).standard_normal(mib << 18).astype(np.float32)  # mib MiB
    pinned = np.ndarray(host.shape, host.dtype, buffer=cp.cuda.alloc_pinned_memory(host.nbytes))
    pinned[...] = host
    dev = cp.empty(host.shape, host.dtype)
    routes = {"asarray": lambda: cp.asarray(host), "put": lambda: _pinned.put(host),
              "from_pinned": lambda: (dev.set(pinned), dev)[1]}
    for name, f in routes.items():
        got = f()
        sync()
        if not np.array_equal(got.get().view(np.uint32), host.view(np.uint32)):
            print(f"MISMATCH {name} {mib} MiB", file=sys.stderr)
            return None
    row = {"mib": mib, **{f"{k}_s": _median(f, sync, repeats) for k, f in routes.items()},
           "put_return_s": _median(routes["put"], lambda: None, repeats)}
    sync()
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--mib", type=int, nargs="+", default=[4, 16, 64, 256])
    p.add_argument("--repeats", type=int, default=7)
    a = p.parse_args(argv)
    import cupy as cp

    sync = cp.cuda.get_current_stream().synchronize
    rows = []
    for mib in a.mib:
        row = _one(cp, mib, a.repeats, sync)
        if row is None:
            return 1
        rows.append(row)
        print(f"{mib:5d} MiB  asarray {row['asarray_s'] * 1e3:8.2f} ms  put {row['put_s'] * 1e3:8.2f} ms"
              f" (returns after {row['put_return_s'] * 1e3:.2f})  from pinned "
              f"{row['from_pinned_s'] * 1e3:8.2f} ms", flush=True)
    doc = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
           "threads": _pinned.THREADS, "chunk_bytes": _pinned.CHUNK, "rows": rows}
    if a.json:
        Path(a.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
