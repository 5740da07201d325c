"""The same WGSL GEMM kernels on the two WebGPU runtimes, in one run: wgpu-py (naga) and Dawn (Tint).

For each runtime: a fresh engine on the best adapter, an exact check of sampled rows against numpy,
then device-resident timing (operands uploaded once; each timed call submits ``reps`` identical
dispatches and waits), the method of ``bench_wgpu.py``. Kernel and tile choice are the backend's
own (``gemm.choose_kernel``), so both runtimes compile the identical WGSL text.

    python benchmarks/bench_dawn_vs_wgpupy.py [--size 8192] [--json PATH]

Exits non-zero when a result is wrong; a runtime that is not available is recorded with its reason.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

try:
    from . import _harness as h
except ImportError:
    import _harness as h

h.use_checkout()

CASES = [("min_plus", "float32"), ("max_plus", "int32")]


def _operands(rng, dt, m, k, n):
    if dt.kind == "f":
        a = rng.integers(-1000, 1000, (m, k)).astype(dt) / dt.type(8)
        b = rng.integers(-1000, 1000, (k, n)).astype(dt) / dt.type(8)
    else:
        a = rng.integers(-(1 << 20), 1 << 20, (m, k), dtype=np.int32)
        b = rng.integers(-(1 << 20), 1 << 20, (k, n), dtype=np.int32)
    return a, b


def bench_runtime(name: str, size: int, progress) -> dict:
    from pytropical_gpu import facts
    from pytropical_gpu.backends.wgpu import gemm
    from pytropical_gpu.backends.wgpu.engine import Engine
    from pytropical_gpu.backends.wgpu.runtime import create_runtime, probe_runtime
    from pytropical_gpu.facts import guard_needed
    from pytropical_gpu.semirings import get_semiring

    ok, reason = probe_runtime(name)
    out: dict = {"runtime": name, "probe": reason, "rows": []}
    if not ok:
        out["error"] = reason
        return out
    t0 = time.perf_counter()
    eng = Engine(create_runtime(name))
    rt = eng.rt
    out["adapter"] = {"name": rt.info.name, "backend": rt.info.backend,
                      "adapter_type": rt.info.adapter_type, "description": rt.info.description}
    out["features"] = sorted(rt.features)
    out["max_storage_binding"] = rt.limits.max_storage_binding
    out["device_seconds"] = round(time.perf_counter() - t0, 3)
    rng = np.random.default_rng(0)
    m = k = n = size
    for sname, dts in CASES:
        sr = get_semiring(sname)
        dt = np.dtype(dts)
        a, b = _operands(rng, dt, m, k, n)
        A, B = eng.upload(a), eng.upload(b)
        D = eng.alloc(m * n * dt.itemsize)
        code = gemm.semiring_code(sr, dt, guard_needed(sr, dt, facts.of(a), facts.of(b)))
        kname, kp = gemm.choose_kernel(m, n, k, False)
        tc = time.perf_counter()
        pipe = eng.pipeline(kname, **code.params(), **kp, HAS_C=False)
        compile_s = time.perf_counter() - tc
        disp = gemm.make_dispatch(eng, pipe, kname, kp, [A.binding(), B.binding(), D.binding()],
                                  m, n, k)
        eng.submit([disp])
        got = eng.download(D, dt, (m, n))
        rows_i = rng.choice(m, 8, replace=False)
        op = np.minimum if sr.add_op == "min" else np.maximum
        for i in rows_i:  # exact, one row at a time (int64 for the int32 sums)
            want = op.reduce(a[i][:, None].astype(np.int64 if dt.kind == "i" else dt) + b, axis=0)
            h.check(f"{name} {sname} {dts} {m}x{k}x{n} row {i}", got[i], want.astype(dt))
        reps = 3 if m * n * k >= (1 << 36) else 20
        t = h.median_time(lambda disp=disp, reps=reps: eng.submit([disp] * reps), eng.sync,
                          repeats=7, warmup=1, max_time=30.0)
        med, q20, q80 = t.median / reps, t.q20 / reps, t.q80 / reps
        tops = 2 * m * n * k / med / 1e12
        progress(f"{name:5s} {sname} {dts} {m}x{k}x{n} {kname} {kp}: {med * 1e3:.2f} ms "
                 f"(q20 {q20 * 1e3:.2f}, q80 {q80 * 1e3:.2f}), {tops:.2f} TOPS; compile {compile_s:.2f} s")
        out["rows"].append({"op": sname, "dtype": dts, "m": m, "k": k, "n": n, "kernel": kname,
                            "params": kp, "median_ms": med * 1e3, "q20_ms": q20 * 1e3,
                            "q80_ms": q80 * 1e3, "tops": tops, "timed_calls": t.n,
                            "dispatches_per_call": reps, "compile_s": compile_s, "checked_rows": 8})
        eng.release(A, B, D)
    rt.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--runtimes", default="wgpu,dawn")
    args = ap.parse_args(argv)

    def progress(msg):
        print(f"[dawn_vs_wgpupy] {msg}", file=sys.stderr, flush=True)

    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        commit = ""
    commit = commit if len(commit) == 40 else None  # no .git: "HEAD" and an error
    res = {"benchmark": "bench_dawn_vs_wgpupy", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "host": platform.node(), "python": platform.python_version(), "git_commit": commit,
           "size": args.size, "runtimes": []}
    for name in args.runtimes.split(","):
        res["runtimes"].append(bench_runtime(name.strip(), args.size, progress))
    by = {r["runtime"]: {(x["op"], x["dtype"]): x for x in r["rows"]} for r in res["runtimes"]}
    if "wgpu" in by and "dawn" in by:
        res["dawn_over_wgpupy"] = {f"{op} {dt}": by["dawn"][(op, dt)]["tops"] / by["wgpu"][(op, dt)]["tops"]
                                   for (op, dt) in by["wgpu"] if (op, dt) in by["dawn"]}
    text = json.dumps(res, indent=1)
    if args.json:
        args.json.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
