"""Does the device's own min / max order zeros (-0 < +0)? A fact for the ordered-zero rule's notes
(pytropical_gpu/zero_order.py): which GPU instructions would give the rule without the zero-sign
pass. Not a check of the library (tests/test_zero_sign.py is); prints JSON, writes it under --out.

    python benchmarks/probe_zero_order.py --out $OUT/zero_order_probe.json
"""

from __future__ import annotations

import argparse
import json

import numpy as np

PAIRS = np.array([[0.0, -0.0], [-0.0, 0.0], [0.0, 0.0], [-0.0, -0.0]], np.float32)

_CUDA = r"""
extern "C" __global__ void probe(const float* a, const float* b, unsigned* out, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i];
    volatile float vx = x, vy = y;  // no constant folding
    out[8 * i + 0] = __float_as_uint(fmaxf(vx, vy));
    out[8 * i + 1] = __float_as_uint(fminf(vx, vy));
    out[8 * i + 2] = __float_as_uint(vx > vy ? vx : vy);
    out[8 * i + 3] = __float_as_uint(vx < vy ? vx : vy);
    out[8 * i + 4] = __float_as_uint(vx + vy);
    out[8 * i + 5] = __float_as_uint(vx * vy);
    out[8 * i + 6] = __float_as_uint((float)fmax((double)vx, (double)vy));
    out[8 * i + 7] = 0u;
}
"""

_WGSL = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(4)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    let x = a[i];
    let y = b[i];
    out[4u * i + 0u] = bitcast<u32>(max(x, y));
    out[4u * i + 1u] = bitcast<u32>(min(x, y));
    out[4u * i + 2u] = bitcast<u32>(select(y, x, x > y));
    out[4u * i + 3u] = bitcast<u32>(x + y);
}
"""


def _signs(words: np.ndarray) -> list:
    return ["-0" if int(w) == 0x80000000 else "+0" if int(w) == 0 else hex(int(w)) for w in words]


def cuda() -> dict:
    import cupy as cp

    k = cp.RawKernel(_CUDA, "probe")
    a, b = cp.asarray(PAIRS[:, 0]), cp.asarray(PAIRS[:, 1])
    out = cp.zeros(8 * len(PAIRS), cp.uint32)
    k((1,), (32,), (a, b, out, np.int32(len(PAIRS))))
    o = cp.asnumpy(out).reshape(len(PAIRS), 8)
    names = ["fmaxf", "fminf", "x>y?x:y", "x<y?x:y", "x+y", "x*y", "fmax(double)"]
    res = {f"{n}": _signs(o[:, j]) for j, n in enumerate(names)}
    res["cupy.maximum"] = _signs(cp.asnumpy(cp.maximum(a, b)).view(np.uint32))
    res["cupy.minimum"] = _signs(cp.asnumpy(cp.minimum(a, b)).view(np.uint32))
    res["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    return res


def wgsl() -> dict:
    import wgpu
    from wgpu.utils.compute import compute_with_buffers

    outs = compute_with_buffers({0: PAIRS[:, 0].copy(), 1: PAIRS[:, 1].copy()},
                                {2: (4 * len(PAIRS), "I")}, _WGSL, n=len(PAIRS))
    o = np.frombuffer(outs[2], np.uint32).reshape(len(PAIRS), 4)
    info = wgpu.gpu.request_adapter_sync().info
    res = {n: _signs(o[:, j]) for j, n in enumerate(["max", "min", "select(x>y)", "x+y"])}
    res["adapter"] = f"{info['device']} | {info['backend_type']}"
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    res = {"pairs (x, y)": [[str(x), str(y)] for x, y in PAIRS.tolist()],
           "ieee_2019": {"max": ["+0", "+0", "+0", "-0"], "min": ["-0", "-0", "+0", "-0"]}}
    for name, fn in (("cuda", cuda), ("wgsl", wgsl)):
        try:
            res[name] = fn()
        except Exception as e:  # a backend this machine lacks: say so, probe the other
            res[name] = f"unavailable: {type(e).__name__}: {e}"
    text = json.dumps(res, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
