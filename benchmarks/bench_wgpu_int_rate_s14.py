"""Issue 14, session 14: the int32 add-max rate a WGSL kernel reaches on the NVIDIA GPU, beside CUDA's.

The issue's row "int32 min/max_plus, DPX: ≥ 85 % of the DPX fused add-max issue rate" has a wgpu
column (22.9 TOPS then, 24.93 since session 4) but WGSL has no fused add-max: whether the Vulkan
driver fuses ``max(x, y + z)`` into one DPX instruction (``VIADDMNMX``) decides which ceiling binds
the wgpu int32 GEMM. This measures, in one run on the same GPU:

* ``wgsl i32 add-max``: 16 independent chains a thread, ``x[r] = max(x[r], y[r] + x[r + 1])``
  (the max_plus term), unrolled (the WGSL is generated), 8 workgroups of 256 an SM;
* ``wgsl f32 add-min``: the same with ``min`` on f32 (the min_plus term: FADD + FMNMX in CUDA);
* ``cuda DPX`` / ``cuda FADD+FMNMX``: ``bench_gemm_sweep.MICRO``'s ops 3 and 1, the same chains;
* the library's wgpu max_plus int32 GEMM at 8192³ (its default tile, ``bench_wgpu_sweep.time_gemm``:
  sampled rows checked against the cpu backend first).

Rates as TOPS (an op = one ⊕ or one ⊗, two a term) and lane-instructions a clock an SM. The micro
checks its output against numpy on a few threads first (the chains' values: wrapping int32 and f32
computed the same way on the host).

``python3 benchmarks/bench_wgpu_int_rate_s14.py --json $OUT/wgpu_int_rate_h200_s14.json``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

from _wgpu_timing import cupy_or_none, kernel_time, log  # noqa: E402

R = 16  # chains a thread
WG = 256


def micro_wgsl(t: str, op: str) -> str:
    """The micro kernel for element type ``t`` ("i32" / "f32") and ⊕ ``op`` ("max" / "min")."""
    lines = [
        "struct Params { n: u32, p1: u32, p2: u32, p3: u32 };",
        "@group(0) @binding(0) var<uniform> P: Params;",
        f"@group(0) @binding(1) var<storage, read> IN: array<{t}>;",
        f"@group(0) @binding(2) var<storage, read_write> OUT: array<{t}>;",
        f"@compute @workgroup_size({WG})",
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>, "
        "@builtin(local_invocation_index) li: u32) {",
    ]
    for r in range(R):
        lines.append(f"  var x{r}: {t} = IN[(li + {r}u) & 63u];")
        lines.append(f"  let y{r}: {t} = IN[(li + {2 * r + 1}u) & 63u];")
    lines.append("  for (var s = 0u; s < P.n; s = s + 1u) {")
    for r in range(R):
        lines.append(f"    x{r} = {op}(x{r}, y{r} + x{(r + 1) % R});")
    lines.append("  }")
    lines.append("  OUT[gid.x] = " + " + ".join(f"x{r}" for r in range(R)) + ";")
    lines.append("}")
    return "\n".join(lines) + "\n"


def micro_host(vals: np.ndarray, lane: int, steps: int, op: str) -> float | int:
    """The micro's output for local index ``lane`` (numpy, the same order of updates)."""
    x = [vals[(lane + r) & 63] for r in range(R)]
    y = [vals[(lane + 2 * r + 1) & 63] for r in range(R)]
    f = np.maximum if op == "max" else np.minimum
    with np.errstate(over="ignore"):
        for _ in range(steps):
            for r in range(R):
                x[r] = f(x[r], y[r] + x[(r + 1) % R])
        acc = x[0]
        for r in range(1, R):
            acc = acc + x[r]
    return acc


def wgsl_rate(eng, t: str, op: str, sms: int, steps: int, clock_hz: float) -> dict:
    from pytropical_gpu.backends.wgpu.runtime import Dispatch

    dt = np.int32 if t == "i32" else np.float32
    vals = (np.arange(64) % 7 - 3).astype(dt) if t == "i32" else np.linspace(-3, 3, 64, dtype=dt)
    pipe = eng.rt.compile(micro_wgsl(t, op), label=f"s14 micro {t} {op}")
    groups = sms * 8
    inb, outb = eng.upload(vals), eng.alloc(groups * WG * 4)
    params = np.array([steps, 0, 0, 0], np.uint32).tobytes()
    binds = (inb.binding(), outb.binding())
    disp = Dispatch(pipe, binds, (groups, 1, 1), params)
    try:
        check_steps = 3
        eng.submit([Dispatch(pipe, binds, (groups, 1, 1),
                             np.array([check_steps, 0, 0, 0], np.uint32).tobytes())])
        got = eng.download(outb, dt, (groups * WG,))
        for lane in (0, 1, 37, 255):
            want = micro_host(vals, lane, check_steps, op)
            assert got[lane] == want, (t, op, lane, got[lane], want)
        s = kernel_time(eng, disp, 3)
    finally:
        eng.release(inb, outb)
    terms = groups * WG * steps * R
    return {"op": f"wgsl {t} {op}", "s": s, "terms_per_clk_per_sm": terms / s / sms / clock_hz,
            "tops": 2 * terms / s / 1e12}


def cuda_rates(cp, sms: int, steps: int, clock_hz: float) -> list[dict]:
    from bench_gemm_sweep import MICRO

    from pytropical_gpu.backends.cuda import kernels
    from pytropical_gpu.bench import gputime

    spec = kernels.ModuleSpec("s14:micro", "semiring_gemm.cu", {"op1": "ptgmicro::issue<1>",
                                                                 "op3": "ptgmicro::issue<3>"}, MICRO)
    buf_in = cp.asarray(np.linspace(-3, 3, 64, dtype=np.float32))
    blocks = sms * 8
    buf_out = cp.empty(blocks * 256, cp.float32)
    rows = []
    for role, name in (("op3", "cuda DPX VIADDMNMX"), ("op1", "cuda FADD+FMNMX")):
        fn = kernels.function(spec, role)
        s = float(np.median(gputime.event_times(
            cp, lambda fn=fn: fn((blocks,), (256,), (buf_out, buf_in, np.int32(steps))), 5)))
        terms = blocks * 256 * steps * R
        rows.append({"op": name, "s": s, "terms_per_clk_per_sm": terms / s / sms / clock_hz,
                     "tops": 2 * terms / s / 1e12})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--steps", type=int, default=4096)
    ap.add_argument("--size", type=int, default=8192)
    args = ap.parse_args()
    from pytropical_gpu.backends.wgpu.device import get_engine

    t0 = time.time()
    eng = get_engine()
    cp = cupy_or_none()
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"] if cp else 132
    clock_hz = cp.cuda.runtime.getDeviceProperties(0)["clockRate"] * 1e3 if cp else 1.98e9
    out = {"device": f"{eng.rt.info.name} ({eng.rt.info.backend}, {eng.rt.name})", "sms": sms,
           "clock_hz_max": clock_hz, "rows": []}
    for t, op in (("i32", "max"), ("f32", "min")):
        out["rows"].append(wgsl_rate(eng, t, op, sms, args.steps, clock_hz))
        log(json.dumps(out["rows"][-1]))
    if cp is not None:
        for row in cuda_rates(cp, sms, args.steps, clock_hz):
            out["rows"].append(row)
            log(json.dumps(row))
    import bench_wgpu_sweep as sweep

    from pytropical_gpu.backends.wgpu import gemm

    s = args.size
    kp = dict(gemm.TILE, ARGMAX=False)
    secs, _ = sweep.time_gemm(eng, "gemm_tiled", kp, s, s, s, "max_plus", "int32", reps=3)
    out["rows"].append({"op": f"wgpu max_plus int32 {s}^3 (library tile)", "s": secs,
                        "tops": 2 * s ** 3 / secs / 1e12, "tile": kp})
    log(json.dumps(out["rows"][-1]))
    out["seconds"] = round(time.time() - t0, 1)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
