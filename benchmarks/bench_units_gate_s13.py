"""Issue 14, session 13: what setting the zero-sign gate costs the units kernel (``sr_gemm_units``).

Tried in session 13: the kernel stores the call's epoch in the zero-sign pass's gate where it
stores a zero, so that the pass after it is one launch that returns at once (no ``zero_any`` read
of D). The first H200 run had that kernel 1.6-1.7 % slower at 2048³ and 8192³ than without the
gate, though the k loop's SASS from the local nvcc 13.0 was the same but for branch addresses.
The device compiles with its own NVRTC, so this script builds the variants below there, in one run:

* ``old``: the library's kernel, without a gate (the baseline; the gate was not adopted);
* ``fminf``: the library's (the least |v| stored, one vote a warp a tile);
* ``bool``: a flag an output (``zero |= v == 0``: the first form tried);
* ``params_only``: the gate parameters, no gate code (does the signature alone move the loop?);
* ``reread``: the old store loop, then a ``__noinline__`` function that reads the thread's outputs
  back (L2 hits) and sets the gate (no new code in the kernel body but a call);
* ``pred_store``: each zero output stores the epoch (predicated; nothing live across outputs);
* ``block_or``: ``fminf`` voted over the block (``__syncthreads_or``) instead of a warp;
* ``smem``: a zero output sets a shared word, which thread 0 reads after the barrier that follows
  the store loop anyway (one predicated shared store an output, no register live across them).

Checks first: every variant's values equal the old kernel's at each size, and the gate variants
open the gate on a product with one zero output and leave it shut without. Then CUDA-event medians
behind a 2 ms spin kernel (``bench_zero_sign_cuda.median_ms``), the variants interleaved over
``--rounds`` rounds (drift falls on all alike), min_plus float32; with ``--sass-dir`` each variant's
cubin is written there (``cuobjdump -sass`` it on the host).

Every variant is generated from the library's ``cuda/semiring_gemm_units.cu`` by text edits (each
anchor asserted); ``fminf`` is the form the first run measured in the library.

``python3 benchmarks/bench_units_gate_s13.py --json $OUT/units_gate_h200_s13b.json``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from bench_zero_sign_cuda import median_ms  # noqa: E402

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu.backends.base import ceil_div  # noqa: E402
from pytropical_gpu.backends.cuda import gemm_units, kernels, nvrtc_cache, zero_sign  # noqa: E402
from pytropical_gpu.shaders import load_source  # noqa: E402

GATE_LO = "      float low = __int_as_float(0x7f800000);"
GATE_FOLD = "          low = fminf(low, fabsf(v));\n"
GATE_VOTE = ("      if (__any_sync(0xffffffffu, low == 0.f) && (tid & 31) == 0 && ZG != nullptr) "
             "*ZG = zepoch;\n")
REREAD_FN = r"""
namespace ptg {
// reads this thread's outputs of the tile back and opens the zero-sign gate where one is zero
template <int TM, int TN, int SM, int SN>
__device__ __noinline__ void gate_tile(const float* D, i64 m, i64 n, i64 m0, i64 n0, int tx, int ty,
                                       unsigned* ZG, unsigned zepoch) {
  float low = __int_as_float(0x7f800000);
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const i64 row = m0 + (i / 4) * SM + ty * 4 + (i % 4);
    if (row >= m) continue;
#pragma unroll
    for (int jj = 0; jj < TN; ++jj) {
      const i64 col = n0 + (jj / 4) * SN + tx * 4 + (jj % 4);
      if (col < n) low = fminf(low, fabsf(D[row * n + col]));
    }
  }
  if (__any_sync(0xffffffffu, low == 0.f) && (threadIdx.x & 31) == 0) *ZG = zepoch;
}
}  // namespace ptg
"""


def _lines_with(src: str, start: str) -> str:
    """The whole line of ``src`` that starts with ``start``."""
    i = src.index(start)
    return src[i:src.index("\n", i) + 1]


SIG = "              int vec, int W, int U, int maxc, int dyn, i64 KI, i64 tiles_m, i64 I) {\n"
STORE_HEAD = "    if (store) {\n#pragma unroll\n      for (int i = 0; i < TM; ++i) {\n"
STORE_TAIL = "          D[row * n + col] = v;\n        }\n      }\n"


def variants() -> dict[str, str]:
    """Variant name -> units source text, from the library's (gate-less) kernel."""
    bare = load_source("cuda", "semiring_gemm_units.cu")
    assert bare.count(SIG) == bare.count(STORE_HEAD) == bare.count(STORE_TAIL) == 1
    old = bare
    bare = bare.replace(SIG, SIG[:-4] + ",\n              unsigned* __restrict__ ZG, unsigned zepoch) {\n")
    lo = GATE_LO + "  // +inf; the least |v| stored\n"
    vote = GATE_VOTE
    close = "        }\n      }\n"
    cur = (bare.replace(STORE_HEAD, "    if (store) {\n" + lo + STORE_HEAD[len("    if (store) {\n"):])
           .replace(STORE_TAIL, STORE_TAIL[:-len(close)] + GATE_FOLD + close + vote))
    out = {"old": old, "fminf": cur, "params_only": bare}
    vote_bool = "      if (__any_sync(0xffffffffu, zero) && (tid & 31) == 0 && ZG != nullptr) *ZG = zepoch;\n"
    out["bool"] = (cur.replace(lo, "      bool zero = false;\n")
                   .replace(GATE_FOLD, "          zero |= v == T(0);\n").replace(vote, vote_bool))
    after = "    __syncthreads();  // every thread has read sv"
    call = "    if (store && ZG != nullptr) gate_tile<TM, TN, SM, SN>(D, m, n, m0, n0, tx, ty, ZG, zepoch);\n"
    assert bare.count(after) == 1
    out["reread"] = REREAD_FN + bare.replace(after, call + after)
    store = "          D[row * n + col] = v;\n"
    assert bare.count(store) == 1
    # pred_store: each zero output stores the epoch itself (no value live across the loop)
    pred = "          if (v == T(0) && ZG != nullptr) *ZG = zepoch;\n"
    out["pred_store"] = bare.replace(store, store + pred)
    # block_or: the least |v| as fminf, voted over the block (the store branch is block-uniform)
    out["block_or"] = cur.replace(
        vote, "      if (__syncthreads_or(low == 0.f) && tid == 0 && ZG != nullptr) *ZG = zepoch;\n")
    # smem: a zero output sets a shared word; thread 0 reads it after the barrier that follows
    sh, init, tid0 = ("  __shared__ int last, s_unit, s_next;\n", "  if (tid == 0) {\n    if (dyn) s_unit",
                      after + " (and s_next, written before the tile's first barrier)\n    if (tid == 0) {\n")
    assert bare.count(sh) == bare.count(init) == bare.count(tid0) == 1
    out["smem"] = (bare.replace(sh, "  __shared__ int last, s_unit, s_next, zflag;\n")
                   .replace(init, "  if (tid == 0) {\n    zflag = 0;\n    if (dyn) s_unit")
                   .replace(store, store + "          if (v == T(0)) zflag = 1;\n")
                   .replace(tid0, tid0 + "      if (zflag != 0) {\n        zflag = 0;\n"
                                         "        if (ZG != nullptr) *ZG = zepoch;\n      }\n"))
    return out


@dataclass(frozen=True)
class _Text(kernels.ModuleSpec):
    """A module from source text (a variant of ``semiring_gemm_units.cu``) instead of a file."""

    text: str = ""

    def code(self) -> str:
        return self.head + self.text + self.extra


def specs(texts: dict[str, str]) -> dict[str, _Text]:
    base = gemm_units.spec("min_plus")
    return {name: _Text(f"{base.key}:s13:{name}", base.source, base.names, base.extra, base.head, text)
            for name, text in texts.items()}


def run(be, spec, a, b, slots: int | None = None, zero_gate=None):
    """``gemm_units.run`` (no ``c``, one unit a block) with the gate's two parameters appended (the
    library's kernel takes none: the old variant ignores them)."""
    cp = be._cp
    _, m, k = a.shape
    n = b.shape[2]
    bm, bn, bk, tm, tn, _ = kernels.TILES["big3"]
    slots = slots or gemm_units.PER_SM * be._sm_count()
    w, u, maxc = gemm_units.layout(m, n, k, slots)
    split = ceil_div(m, bm) * ceil_div(n, bn) - w
    ki = ceil_div(k, bk)
    d = cp.empty((1, m, n), np.float32)
    ws, cnt = gemm_units._buffers_for(cp, split * maxc * bm * bn, split + 2)
    vec = int(k % 4 == 0 and n % 4 == 0 and a.data.ptr % 16 == 0 and b.data.ptr % 16 == 0)
    i64 = np.int64
    zg, ze = (np.uint64(0), np.uint32(0)) if zero_gate is None else zero_gate
    kernels.function(spec, gemm_units.ROLE)((w + u,), ((bm // tm) * (bn // tn),), (
        a, b, np.uint64(0), d, ws, cnt, i64(m), i64(n), i64(k), np.int32(vec), np.int32(w), np.int32(u),
        np.int32(maxc), np.int32(0), i64(ki), i64(ceil_div(m, bm)), i64(split * ki),
        zg, ze))
    return d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--sass-dir", help="write each variant's cubin here")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--sizes", default="2048,8192")
    args = ap.parse_args()
    import cupy as cp

    t0 = time.time()
    be = tg.get_backend("cuda")
    sp = specs(variants())
    out = {"device": be.describe(), "variants": list(sp), "checks": [], "rows": []}
    if args.sass_dir:
        Path(args.sass_dir).mkdir(parents=True, exist_ok=True)
        for name, s in sp.items():
            binary, _ = nvrtc_cache.compile_module(s.code(), kernels.OPTIONS, list(s.names.values()))
            Path(args.sass_dir, f"units_{name}.cubin").write_bytes(binary)
    # gate checks: one zero output (a[5, 0] + b[0, 7] = 0) and none, 300 x 1030 x 260 on 12 slots
    m, k, n = 300, 1030, 260
    for name, s in sp.items():
        for zero in (True, False):
            a, b = np.ones((m, k), np.float32), np.ones((k, n), np.float32)
            if zero:
                a[5, 0], b[0, 7] = -5.0, 5.0
            gate, epoch = zero_sign._gate()
            d = run(be, s, cp.asarray(a)[None], cp.asarray(b)[None], slots=12, zero_gate=(gate, epoch))
            assert int((d == 0).sum()) == int(zero), (name, zero)
            if name not in ("old", "params_only"):
                assert (int(gate.get()[0]) == epoch) == zero, (name, zero)
            out["checks"].append(f"{name} zero={zero}")
    for size in (int(x) for x in args.sizes.split(",")):
        rs = cp.random.RandomState(size)
        a = rs.random_sample((1, size, size), dtype=np.float32) * 2 - 1
        b = rs.random_sample((1, size, size), dtype=np.float32) * 2 - 1
        ref = run(be, sp["old"], a, b)
        for name, s in sp.items():
            gate = zero_sign._gate()
            assert (run(be, s, a, b, zero_gate=gate) == ref).all(), (name, size)
        out["checks"].append(f"values {size}^3: every variant equals old")
        times = {name: [] for name in sp}
        reps = args.reps if size <= 4096 else max(3, args.reps // 2)
        for _ in range(args.rounds):
            for name, s in sp.items():
                gate = zero_sign._gate()
                times[name].append(median_ms(cp, lambda s=s, gate=gate, a=a, b=b: run(
                    be, s, a, b, zero_gate=gate), reps, True))
        for name, ts in times.items():
            ms = float(np.median(ts))
            row = {"variant": name, "size": size, "median_ms": ms, "rounds_ms": ts,
                   "tops": round(2 * size ** 3 / ms / 1e9, 2),
                   "ratio_to_old": round(float(np.median(times["old"])) / ms, 4)}
            out["rows"].append(row)
            print(json.dumps(row), flush=True)
    out["seconds"] = round(time.time() - t0, 1)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
