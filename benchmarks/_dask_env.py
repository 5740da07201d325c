"""Pieces of bench_dask.py: data made where it is used, the cluster with explicit row placement, and
timings that end when the GPUs are done (the results staying on the workers).

Data are a counter-based hash (splitmix64) of the global index, vectorised on the device that holds
the block, so every layout and the one-GPU run see the same numbers without shipping them.
"""

from __future__ import annotations

import contextlib
import os
import platform
import statistics
import threading
import time
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
_M1, _M2, _G = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), 0x9E3779B97F4A7C15
_T0 = time.perf_counter()


def log(msg: str) -> None:
    """Progress with the wall clock and the seconds since the start (a timed-out run still says
    how far it got)."""
    print(f"[{time.strftime('%H:%M:%S')} +{time.perf_counter() - _T0:7.1f}s] {msg}", flush=True)


# ---------------------------------------------------------------- data made where it is used
def xp_for(gpu: bool):
    if gpu:
        import cupy
        return cupy
    return np


def _hash(xp, r0, r1, c0, c1, ncols, seed):
    """splitmix64 of the global index row * ncols + col: the same numbers on any device/layout."""
    i = xp.arange(r0, r1, dtype=np.uint64)[:, None]
    j = xp.arange(c0, c1, dtype=np.uint64)[None, :]
    x = i * np.uint64(ncols) + j + np.uint64((seed * _G) % 2**64)
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def gen(kind, xp, r0, r1, c0, c1, ncols, seed, **kw):
    """Rows r0:r1, columns c0:c1 of a generated matrix, made in row slices of 2^27 elements (whole
    array operations on the device, bounded temporaries).

    kind: "values" (integers 0..999 as float32: sums stay exact), "graph" (~deg out-edges per node,
    weights 1..100, 0 on the diagonal, inf elsewhere), "planes" (random uint32 words), "tpos" /
    "tneg" (the trit planes of dense ±1 vectors of ``dim`` trits: pos = the words, neg = ~pos, the
    tail bits of the last word zero)."""
    dt = np.float32 if kind in ("values", "graph") else np.uint32
    out = xp.empty((r1 - r0, c1 - c0), dt)
    step = max(1, (1 << 27) // max(1, c1 - c0))
    for s0 in range(r0, r1, step):
        s1 = min(r1, s0 + step)
        h = _hash(xp, s0, s1, c0, c1, ncols, seed)
        if kind == "values":
            v = (h >> np.uint64(40)) % np.uint64(1000)
            out[s0 - r0:s1 - r0] = v.astype(np.float32)
        elif kind == "graph":
            edge = (h & np.uint64(0xFFFFFFFF)) < np.uint64(int(kw["deg"] / ncols * 2**32))
            w = (np.uint64(1) + (h >> np.uint64(32)) % np.uint64(100)).astype(np.float32)
            blk = xp.where(edge, w, np.float32(np.inf))
            ii = xp.arange(s0, s1)[:, None]
            jj = xp.arange(c0, c1)[None, :]
            out[s0 - r0:s1 - r0] = xp.where(ii == jj, np.float32(0), blk)
        else:
            words = (h & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            out[s0 - r0:s1 - r0] = ~words if kind == "tneg" else words
    if kind in ("tpos", "tneg") and kw["dim"] % 32 and c1 == ncols and c1 > c0:
        out[:, -1] &= np.uint32((1 << (kw["dim"] % 32)) - 1)
    return out


def trit_planes(pos, dim, xp):
    """(pos, neg) of random words ``pos`` as dense ±1 trits (in place on ``pos``)."""
    neg = ~pos
    if dim % 32:
        mask = np.uint32((1 << (dim % 32)) - 1)
        pos[..., -1] &= mask
        neg[..., -1] &= mask
    return pos, neg


def _block_gen(kind, shape, seed, gpu, kw, block_info=None):
    (r0, r1), (c0, c1) = block_info[None]["array-location"]
    return gen(kind, xp_for(gpu), r0, r1, c0, c1, shape[1], seed, **kw)


def lazy_gen(kind, shape, chunks, seed, gpu, **kw):
    """A dask array whose blocks are generated on the workers that compute them (meta: the chunk
    type, so nothing downstream mistakes cupy blocks for numpy)."""
    import dask.array as da

    dt = np.float32 if kind in ("values", "graph") else np.uint32
    return da.map_blocks(_block_gen, kind, shape, seed, gpu, kw, dtype=dt, meta=xp_for(gpu).empty((0, 0), dt),
                         chunks=da.core.normalize_chunks(chunks, shape, dtype=dt))


def same(x):
    return x


def synced(x):
    """Identity that returns when the GPU work queued on this worker's device is done, so a timing
    that waits for these tasks ends with the GPUs, and the task stream charges GPU time to the worker."""
    if not isinstance(x, np.ndarray):
        import cupy
        cupy.cuda.runtime.deviceSynchronize()
    return x


def renamed(x, prefix="in"):
    """``x`` through an identity under fresh keys (no copy; runs on the worker holding each block)."""
    return x.map_blocks(same, name=f"{prefix}-{uuid.uuid4().hex}", dtype=x.dtype, meta=x._meta)


# ---------------------------------------------------------------- environment
class Env:
    """The cluster (LocalCUDACluster, or an in-process LocalCluster with numpy chunks for --cpu)."""

    def __init__(self, cpu: bool, workers: int | None):
        from distributed import Client, LocalCluster

        self.gpu = not cpu
        os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [
            os.environ.get("PYTHONPATH")] if p])  # spawned workers import this checkout
        if cpu:
            self.cluster = LocalCluster(n_workers=workers or 2, threads_per_worker=1, processes=False,
                                        dashboard_address=None)
            self.devices = list(range(workers or 2))
        else:
            import cupy
            from dask_cuda import LocalCUDACluster
            count = cupy.cuda.runtime.getDeviceCount()
            self.devices = list(range(workers or count))
            self.cluster = LocalCUDACluster(
                CUDA_VISIBLE_DEVICES=",".join(map(str, self.devices)), threads_per_worker=1)
        self.client = Client(self.cluster)
        self.client.wait_for_workers(len(self.devices))
        self.workers = sorted(self.client.scheduler_info()["workers"])

    @property
    def g(self) -> int:
        return len(self.devices)

    def device(self, d):
        if not self.gpu:
            return contextlib.nullcontext()
        import cupy
        return cupy.cuda.Device(d)

    def sync(self, d=None):
        if self.gpu:
            import cupy
            with self.device(d if d is not None else 0):
                cupy.cuda.Device().synchronize()

    def place_rows(self, x):
        """Each row block of ``x`` made and kept on one worker (block i on worker i mod g): a list of
        persisted one-block arrays, finished. Scheduler placement alone put both blocks of A on one
        worker in the first 2-GPU run."""
        from distributed import wait

        parts = [self.client.persist(x.blocks[i], workers=[self.workers[i % self.g]],
                                     allow_other_workers=False) for i in range(x.numblocks[0])]
        wait(parts)
        return parts

    def holdings(self, arrays) -> dict:
        """GB of each persisted array's blocks per worker (replicas counted on every holder)."""
        who = self.client.who_has(arrays)
        nbytes = self.client.nbytes(summary=False)
        out = {}
        for key, ws in who.items():
            for w in ws:
                out[w] = round(out.get(w, 0.0) + nbytes.get(key, 0) / 1e9, 3)
        return out

    def free(self):
        """Release the client's and the workers' cached device memory between sections."""
        if self.gpu:
            def _free():
                import cupy
                cupy.get_default_memory_pool().free_all_blocks()
            for d in self.devices:
                with self.device(d):
                    _free()
            self.client.run(_free)

    def describe(self) -> dict:
        info = {"host": platform.node(), "python": platform.python_version(), "workers": len(self.workers),
                "gpu": self.gpu}
        import dask
        import distributed
        info.update(dask=dask.__version__, distributed=distributed.__version__)
        if self.gpu:
            import cupy
            import dask_cuda
            info.update(cupy=cupy.__version__, dask_cuda=dask_cuda.__version__, gpus=[
                cupy.cuda.runtime.getDeviceProperties(d)["name"].decode() for d in self.devices])
        return info

    def close(self):
        self.client.close()
        self.cluster.close()


# ---------------------------------------------------------------- timings
def parallel(env, fns):
    """Run one callable per device, each in its own thread inside that device's context; wall time."""
    out, errs = [None] * len(fns), []
    barrier = threading.Barrier(len(fns) + 1)

    def work(i, fn):
        with env.device(env.devices[i]):
            barrier.wait()
            try:
                out[i] = fn()
                env.sync(env.devices[i])
            except Exception as e:  # reported, and the run fails
                errs.append(f"device {env.devices[i]}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(i, fn)) for i, fn in enumerate(fns)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    if errs:
        raise RuntimeError("; ".join(errs))
    return time.perf_counter() - t0, out


def timed(fn, repeats, label, warmup=1):
    """Median wall time of ``fn()`` over ``repeats`` calls after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    ts, res = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = fn()
        ts.append(time.perf_counter() - t0)
    log(f"  {label}: {' '.join(f'{t:.4f}' for t in ts)} s")
    return {"median_s": statistics.median(ts), "all_s": ts}, res


def stream_summary(data: list) -> dict:
    """Where the time went, from distributed's task stream: per worker, the seconds its tasks
    computed (GPU time included: every result ends in a device-synchronising task), the seconds it
    spent receiving data from other workers, its task count and how many tasks of each name it ran
    (``_block``/``getitem``: block products, ``_shard``: search shards; fused names are joined)."""
    per = {}
    for rec in data:
        w = per.setdefault(rec.get("worker", "?"), {"compute_s": 0.0, "transfer_s": 0.0, "tasks": 0,
                                                    "names": {}})
        w["tasks"] += 1
        key = rec.get("key")
        name = str(key[0] if isinstance(key, tuple) else key).rsplit("-", 1)[0][:60]
        w["names"][name] = w["names"].get(name, 0) + 1
        for ss in rec.get("startstops", ()):
            if ss["action"] in ("compute", "transfer"):
                w[ss["action"] + "_s"] += ss["stop"] - ss["start"]
    for w in per.values():
        w["compute_s"], w["transfer_s"] = round(w["compute_s"], 4), round(w["transfer_s"], 4)
    return per


def _clear_transfers(dask_worker):
    dask_worker.transfer_incoming_log.clear()


def _transfers(dask_worker):
    return [(str(key), int(nb), e["who"]) for e in dask_worker.transfer_incoming_log
            for key, nb in e["keys"].items()]


def transfers(client, clear=False) -> dict:
    """Bytes each worker received from other workers (distributed's incoming-transfer log, which
    every dependency fetched by a task adds to; ``clear``: empty the logs now and return {}).
    Returns {worker: {"bytes": total, "keys": {key name: bytes}}} for workers that received any."""
    if clear:
        client.run(_clear_transfers)
        return {}
    out = {}
    for w, recs in client.run(_transfers).items():
        if recs:
            names = {}
            for key, nb, _ in recs:
                name = key.strip("('\"").split(",")[0].rsplit("-", 1)[0][:60]
                names[name] = names.get(name, 0) + nb
            out[w] = {"bytes": sum(nb for _, nb, _ in recs), "keys": names}
    return out


def dask_timed(env, build, inputs, repeats, label, keep=(), pin_rows=False):
    """Time ``persist`` + ``wait`` of ``build(*inputs)``, results left on the workers, ending when
    their GPUs are done (a synchronising identity on every result block).

    Inputs whose index is in ``keep`` (replicated ones) are passed as they are; the others through a
    renamed identity every repeat, so nothing downstream is already in memory (renaming a replicated
    input would leave the new key on one worker only and pull all the work there). ``pin_rows``:
    row block i of every result is persisted with its whole computation restricted to worker i mod g
    (the worker holding input rows i), instead of leaving placement to the scheduler's estimates.
    The first run warms the workers (kernel compilation, cupy's elementwise kernels) and is not
    timed; the last one records the task stream and the bytes moved between workers
    (``transfer_bytes``; per receiving worker and key name: ``transfers``).
    Returns (timing, the last run's persisted results)."""
    import dask.array as da
    from distributed import get_task_stream, wait

    ts, outs, stream = [], None, None
    for r in range(repeats + 1):
        args = [x if i in keep else renamed(x) for i, x in enumerate(inputs)]
        res = build(*args)
        res = list(res) if isinstance(res, (tuple, list)) else [res]
        res = [o.map_blocks(synced, dtype=o.dtype, meta=o._meta) for o in res]
        outs = None  # the previous run's results are released first
        cm = get_task_stream(env.client) if r == repeats else contextlib.nullcontext()
        if r == repeats:
            transfers(env.client, clear=True)
        with cm as st:
            t0 = time.perf_counter()
            if pin_rows:
                outs = [[env.client.persist(o.blocks[i], workers=[env.workers[i % env.g]],
                                            allow_other_workers=False) for i in range(o.numblocks[0])]
                        for o in res]
                wait(outs)
                outs = [da.concatenate(parts) for parts in outs]
            else:
                outs = env.client.persist(res)
                wait(outs)
            dt = time.perf_counter() - t0
        stream = st or stream
        if r:
            ts.append(dt)
        log(f"  {label} {'warm-up' if r == 0 else f'run {r}'}: {dt:.4f} s")
    moved = transfers(env.client)
    return {"median_s": statistics.median(ts), "all_s": ts, "where": stream_summary(stream.data),
            "transfer_bytes": sum(w["bytes"] for w in moved.values()), "transfers": moved}, outs


def gathered(outs):
    """The results brought to the client (what a user who needs them in one place pays), timed."""
    import dask

    t0 = time.perf_counter()
    got = dask.compute(*outs)
    return time.perf_counter() - t0, got


def host(x):
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else np.asarray(x)


def speed(base, ours):
    return round(base["median_s"] / ours["median_s"], 3) if ours["median_s"] else None
