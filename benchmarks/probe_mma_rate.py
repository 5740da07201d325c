"""Tensor-core instruction rates on this device (issue 15 notes): one block per SM of W warps, each
warp issuing 8 independent ``mma.sync`` chains of one kind (``probe_mma_rate.cu``); prints clocks
per instruction per SM (at the device's rated clock) and the implied dense rate, as JSON lines.

    python benchmarks/probe_mma_rate.py
"""

from __future__ import annotations

import json
from pathlib import Path

KINDS = {0: ("m16n8k256 b1 and.popc", 16 * 8 * 256), 1: ("m16n8k32 s8", 16 * 8 * 32),
         2: ("m16n8k64 s4", 16 * 8 * 64), 3: ("m16n8k16 f16->f32", 16 * 8 * 16)}


def main() -> None:
    import cupy as cp

    src = (Path(__file__).with_name("probe_mma_rate.cu")).read_text()
    names = [f"mma_rate<{k}>" for k in KINDS]
    mod = cp.RawModule(code=src, options=("-std=c++17",), name_expressions=names)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    sms, clock = props["multiProcessorCount"], props["clockRate"] * 1e3
    out = cp.zeros(sms * 1024, cp.int32)
    iters = 4096
    for k, (name, macs) in KINDS.items():
        fn = mod.get_function(names[k])
        for warps in (4, 8, 16):
            fn((sms,), (32 * warps,), (out, cp.int32(16)))  # warm up
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            fn((sms,), (32 * warps,), (out, cp.int32(iters)))
            stop.record()
            stop.synchronize()
            t = cp.cuda.get_elapsed_time(start, stop) * 1e-3
            n = iters * 8 * warps  # instructions per SM
            print(json.dumps({"mma": name, "warps_per_sm": warps, "seconds": t,
                              "clk_per_instr_per_sm": t * clock / n,
                              "dense_tera_macs": n * sms * macs / t / 1e12}))


if __name__ == "__main__":
    main()
