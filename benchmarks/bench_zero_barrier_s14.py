"""Issue 14, session 14 (second run): a cheaper grid barrier for the zero-sign pass, and PDL.

The first run (``bench_zero_pass_s14.py``, ``zero_pass_h200_s14.json``) split the pass's ~11 µs
after the 2048³ GEMM into a launch (~1.5 µs), the read of D (~6 µs) and the grid barrier alone
(6.5 µs timed alone against 3.1 for an empty kernel: ~3.4 µs for 528 blocks, 1.3 µs less on 132);
a programmatic dependent launch behind a GEMM that triggers at its start saved 2.6 µs. The barrier
variants here (all in ``s14_pass``, min_plus float32, the library's phases unchanged):

* ``k0``: the library's (``__threadfence``, one counter, ``__nanosleep(64)`` polling);
* ``k1`` / ``k2``: release / acquire atomics (no fence), one counter, polling without / with
  ``__nanosleep(32)`` (the form of CUTLASS's generic barrier);
* ``k3`` / ``k4``: the same, two levels: groups of 32 blocks arrive on their own counter (128
  bytes apart), the last of a group on the top one (17 arrivals in series instead of 528).

Each is timed after the library's GEMM and alone, the barrier also alone (``bar_k*``), and with
PDL behind the units kernel that triggers at its start (``trig+pdl_k*``, beside ``params+lib``).
Checks first: every variant equals ``zero_sign.fix`` bit for bit where the gate opens (two
barriers run), at 300×1030×260 and after a 2048³ GEMM, and leaves its counters at 0.

``python3 benchmarks/bench_zero_barrier_s14.py --json $OUT/zero_barrier_h200_s14.json``
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import bench_units_gate_s13 as s13  # noqa: E402
import bench_zero_pass_s14 as s14  # noqa: E402

from pytropical_gpu.backends.cuda import kernels, zero_sign  # noqa: E402
from pytropical_gpu.semirings import get_semiring  # noqa: E402

EXTRA = r"""
namespace ptg {
__device__ __forceinline__ unsigned b14_ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned b14_arrive(unsigned* p) {
  unsigned old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(p) : "memory");
  return old;
}
__device__ __forceinline__ void b14_reset(unsigned* p) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], 0;" ::"l"(p) : "memory");
}
__device__ __forceinline__ void b14_release_add(unsigned* p) {
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(p) : "memory");
}
// KIND 0: the library's grid_barrier; 1/2: one counter, release/acquire, 2 sleeps; 3/4: two levels
// (groups of 32 blocks on gate[32 * (group + 1)]), 4 sleeps
template <int KIND>
__device__ __forceinline__ void b14_sync(unsigned* gate) {
  if constexpr (KIND == 0) {
    grid_barrier(gate);
  } else {
    __syncthreads();
    if (threadIdx.x == 0) {
      const unsigned g = b14_ld_acquire(gate + 2);
      bool last;
      if constexpr (KIND <= 2) {
        last = b14_arrive(gate + 1) == gridDim.x - 1;
      } else {
        const unsigned ng = (gridDim.x + 31) / 32, grp = blockIdx.x / 32;
        const unsigned size = min(32u, gridDim.x - grp * 32);
        unsigned* mine = gate + 32 * (grp + 1);
        last = b14_arrive(mine) == size - 1;
        if (last) {
          b14_reset(mine);
          last = b14_arrive(gate + 1) == ng - 1;
        }
      }
      if (last) {
        b14_reset(gate + 1);
        b14_release_add(gate + 2);
      } else {
        while (b14_ld_acquire(gate + 2) == g) {
          if constexpr (KIND == 2 || KIND == 4) __nanosleep(32);
        }
      }
    }
    __syncthreads();
  }
}
template <int KIND>
__global__ void __launch_bounds__(256) b14_bar(unsigned* gate, unsigned epoch) {
  b14_sync<KIND>(gate);
  if (*(volatile const unsigned*)gate == epoch && threadIdx.x == 0) gate[0] = 0u;  // never
}
template <int KIND, bool PDL>
__global__ void __launch_bounds__(256)
b14_pass(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ c,
         float* __restrict__ d, long long m, long long n, long long k, long long sa, long long sb,
         long long sc, long long batch, long long ra, long long cb, unsigned* flags,
         unsigned* gate, unsigned epoch) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < ra + cb; j += stride)
    flags[j] = 0u;
  if constexpr (PDL) asm volatile("griddepcontrol.wait;" ::: "memory");
  if (__syncthreads_or(zero_in<float>(d, batch * m * n)) && threadIdx.x == 0) *gate = epoch;
  b14_sync<KIND>(gate);
  if (*(volatile const unsigned*)gate != epoch) return;
  flags_of<float>(a, b, ra, k, n, cb, flags);
  b14_sync<KIND>(gate);
  fix_signs<float, false, 0>(a, b, c, d, m, n, k, sa, sb, sc, batch, flags);
}
}  // namespace ptg
"""
KINDS = range(5)
NAMES = {**{f"pass_k{i}": f"ptg::b14_pass<{i}, false>" for i in KINDS},
         **{f"pdl_k{i}": f"ptg::b14_pass<{i}, true>" for i in KINDS},
         **{f"bar_k{i}": f"ptg::b14_bar<{i}>" for i in KINDS}}
WORDS = 32 * 40  # the gate, the top counter, the generation, then a counter every 128 bytes


class Gate:
    """A gate buffer of the variants' own (room for 39 groups' counters) and its epochs."""

    def __init__(self, cp):
        self.words = cp.zeros(WORDS, np.uint32)
        self.epoch = 0

    def next(self):
        self.epoch += 1
        return self.words, np.uint32(self.epoch)


def passes(cp, sp, grid: int, gate: Gate):
    fn = {name: kernels.function(sp, name) for name in NAMES}

    def args(d, a, b):
        out = list(s14.pass_args(d, a, b))
        out[14], out[15] = gate.next()
        return tuple(out)

    def plain(name):
        return lambda d, a, b: fn[name]((grid,), (256,), args(d, a, b), enable_cooperative_groups=True)

    def pdl(name):
        return lambda d, a, b: s14.launch_ex(cp, fn[name], grid, 256, args(d, a, b), True, True)

    def bar(name):
        return lambda d, a, b: fn[name]((grid,), (256,), gate.next(), enable_cooperative_groups=True)

    out = {"lib": lambda d, a, b: zero_sign.fix(d, a, b, get_semiring("min_plus"), None)}
    for i in KINDS:
        out[f"pass_k{i}"] = plain(f"pass_k{i}")
        out[f"pdl_k{i}"] = pdl(f"pdl_k{i}")
        out[f"bar_k{i}"] = bar(f"bar_k{i}")
    return out


def main() -> None:
    args = s14.arguments(__doc__, 5)
    import cupy as cp

    t0 = time.time()
    be, sr, grid, (units, trig), gemm = s14.setup(cp)
    sp = kernels.ModuleSpec("zero_sign:s14b", zero_sign.SPEC.source, dict(NAMES), EXTRA)
    gate = Gate(cp)
    pv = passes(cp, sp, grid, gate)
    out = {"device": be.describe(), "grid": grid, "checks": [], "rows": []}

    for m, k, n in ((300, 1030, 260), (2048, 2048, 2048)):
        a, b = s14.signed_zero_operands(cp, m, k, n, m + 1)
        want = gemm(a, b)
        zero_sign.fix(want, a, b, sr, None)
        assert int((want == 0).sum()) == m * n and bool(cp.signbit(want).any())
        for name in [v for v in pv if not v.startswith("bar_")] + ["trig+pdl"]:
            for kind in (KINDS if name == "trig+pdl" else [None]):
                if name == "trig+pdl":
                    d = s13.run(be, trig, a, b, zero_gate=zero_sign._gate())
                    pv[f"pdl_k{kind}"](d, a, b)
                else:
                    d = gemm(a, b)
                    pv[name](d, a, b)
                assert bool((d.view(cp.int32) == want.view(cp.int32)).all()), (name, kind, m)
                w = gate.words.get()
                assert w[1] == 0 and not w[32:].any(), (name, kind, "counters left")
                out["checks"].append(f"{name}{'' if kind is None else kind} {m}x{k}x{n} equals zero_sign.fix")
    for size in (int(x) for x in args.sizes.split(",")):
        out["rows"] += time_size(cp, be, gemm, pv, units, trig, size, args.rounds, args.reps)
    out["seconds"] = round(time.time() - t0, 1)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1))


def time_size(cp, be, gemm, pv, units, trig, size, rounds, reps) -> list[dict]:
    """The forms at size³ (uniform operands: the gate stays shut), interleaved rounds."""
    a, b = s14.uniform(cp, size)
    d0 = gemm(a, b)

    def unit(spec):
        return s13.run(be, spec, a, b, zero_gate=zero_sign._gate())

    forms = {"gemm": lambda: gemm(a, b), "params": lambda: unit(units), "trig": lambda: unit(trig),
             "params+lib": lambda: pv["lib"](unit(units), a, b)}
    for name, f in pv.items():
        if name.startswith("pdl_"):
            forms["trig+" + name] = lambda f=f: f(unit(trig), a, b)
        elif name.startswith("bar_"):
            forms["alone:" + name] = lambda f=f: f(d0, a, b)
        else:
            forms["gemm+" + name] = lambda f=f: f(gemm(a, b), a, b)
            forms["alone:" + name] = lambda f=f: f(d0, a, b)
    return s14.time_forms(cp, forms, size, rounds, reps)


if __name__ == "__main__":
    main()
