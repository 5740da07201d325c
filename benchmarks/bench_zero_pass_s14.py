"""Issue 14, session 14: where the cuda zero-sign pass's fixed cost goes, and what hides it.

The 2048³ min_plus row (≥ 25 TOPS) is short with the pass: the GEMM alone 0.6774 ms, GEMM and pass
0.6901 ms (session 13); the pass may add at most ~9.8 µs and adds ~12.7 (10.0 timed alone, 7.9 at
1024³: so ~7 µs of it does not grow with D). This script times, after the library's GEMM
(``CudaBackend._gemm_kernels``, min_plus float32, uniform operands: no zero output, the gate stays
shut) and alone, on the GPU's timeline (a 2 ms spin kernel before each repetition), interleaved
over ``--rounds`` rounds:

* ``lib``: ``zero_sign.fix`` (one cooperative launch of ``zero_pass``, 528 blocks on the H200);
* ``lib_g132`` / ``lib_g264``: the same kernel on fewer blocks (fewer arrivals at the barrier);
* ``empty_plain`` / ``empty_coop``: an empty kernel on 528 blocks, plain / cooperative (the launch);
* ``read_plain``: phase 1 alone (zero the flags, read D, set the gate), no barrier;
* ``barrier_coop``: the grid barrier and the gate check alone (no read);
* ``nosleep``: ``zero_pass`` whose barrier spins without ``__nanosleep``;
* ``nt512`` / ``nt1024``: 264 × 512 / 132 × 1024 threads (a bench-only kernel: it traps if the
  gate opens, its phase 2 assumes 8 warps);
* ``ex_coop``: ``zero_pass`` (the s14 copy) launched through the driver's ``cuLaunchKernelEx``
  with the cooperative attribute (the launch path below, without PDL);
* ``pdl_coop``: the same with programmatic dependent launch (Hopper): the kernel zeroes its flags,
  then ``griddepcontrol.wait``s for the GEMM, so its launch overlaps the GEMM's end;
* ``trig+pdl_coop``: the units kernel with ``griddepcontrol.launch_dependents`` at its start
  (``bench_units_gate_s13``'s ``params_only`` text plus that line), then ``pdl_coop``; beside it
  ``params`` (the same kernel without the line) and ``params+lib``.

Checks first (a failed check stops the run): every full pass variant equals ``zero_sign.fix`` bit
for bit on outputs whose gate opens (operands of ±0, 1, 2: every output a zero, both signs) at
300×1030×260 and, for the launches through ``cuLaunchKernelEx``, right after a 2048³ GEMM; the
trap variants leave D unchanged on a shut gate.

``python3 benchmarks/bench_zero_pass_s14.py --json $OUT/zero_pass_h200_s14.json``
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import bench_units_gate_s13 as s13  # noqa: E402
from bench_zero_sign_cuda import median_ms  # noqa: E402

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu import facts  # noqa: E402
from pytropical_gpu.backends.cuda import kernels, zero_sign  # noqa: E402
from pytropical_gpu.semirings import get_semiring  # noqa: E402

EXTRA = r"""
namespace ptg {
__global__ void __launch_bounds__(256) s14_empty(unsigned* gate, unsigned epoch) {
  if (epoch == 0u && threadIdx.x == 0) *gate = 1u;  // never (epochs start at 1)
}
__global__ void __launch_bounds__(256) s14_read(const float* d, long long total, unsigned* flags,
                                                long long nflags, unsigned* gate, unsigned epoch) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < nflags; j += stride)
    flags[j] = 0u;
  if (__syncthreads_or(zero_in<float>(d, total)) && threadIdx.x == 0) *gate = epoch;
}
__global__ void __launch_bounds__(256) s14_barrier(unsigned* gate, unsigned epoch) {
  grid_barrier(gate);
  if (*(volatile const unsigned*)gate == epoch && threadIdx.x == 0) gate[0] = 0u;  // never
}
template <bool SLEEP>
__device__ __forceinline__ void s14_grid_barrier(unsigned* gate) {
  __syncthreads();
  if (threadIdx.x == 0) {
    volatile unsigned* gen = gate + 2;
    const unsigned g = *gen;
    __threadfence();
    if (atomicAdd(gate + 1, 1u) == gridDim.x - 1) {
      atomicExch(gate + 1, 0u);
      __threadfence();
      atomicAdd(gate + 2, 1u);
    } else {
      while (*gen == g) {
        if constexpr (SLEEP) __nanosleep(64);
      }
    }
    __threadfence();
  }
  __syncthreads();
}
// zero_pass for min_plus float32 with the block size, the barrier's sleep and a PDL wait as knobs
template <int NT, bool SLEEP, bool PDL>
__global__ void __launch_bounds__(NT)
s14_pass(const float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ c,
         float* __restrict__ d, long long m, long long n, long long k, long long sa, long long sb,
         long long sc, long long batch, long long ra, long long cb, unsigned* flags,
         unsigned* gate, unsigned epoch) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < ra + cb; j += stride)
    flags[j] = 0u;
  if constexpr (PDL) asm volatile("griddepcontrol.wait;" ::: "memory");
  if (__syncthreads_or(zero_in<float>(d, batch * m * n)) && threadIdx.x == 0) *gate = epoch;
  s14_grid_barrier<SLEEP>(gate);
  if (*(volatile const unsigned*)gate != epoch) return;
  if constexpr (NT != 256) {
    __trap();  // bench-only: flags_of assumes 8 warps a block
  } else {
    flags_of<float>(a, b, ra, k, n, cb, flags);
    s14_grid_barrier<SLEEP>(gate);
    fix_signs<float, false, 0>(a, b, c, d, m, n, k, sa, sb, sc, batch, flags);
  }
}
}  // namespace ptg
"""
NAMES = {"empty": "ptg::s14_empty", "read": "ptg::s14_read", "barrier": "ptg::s14_barrier",
         "nosleep": "ptg::s14_pass<256, false, false>", "copy": "ptg::s14_pass<256, true, false>",
         "pdl": "ptg::s14_pass<256, true, true>", "nt512": "ptg::s14_pass<512, true, false>",
         "nt1024": "ptg::s14_pass<1024, true, false>"}
TRIGGER = '  asm volatile("griddepcontrol.launch_dependents;");\n'


def spec() -> kernels.ModuleSpec:
    base = zero_sign.SPEC
    return kernels.ModuleSpec("zero_sign:s14", base.source, dict(NAMES), EXTRA)


class _Attr(ctypes.Structure):  # CUlaunchAttribute: id, pad to 8, a 64-byte value union
    _fields_ = [("id", ctypes.c_uint), ("pad", ctypes.c_char * 4), ("val", ctypes.c_int),
                ("rest", ctypes.c_char * 60)]


class _Config(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("gx", ctypes.c_uint), ("gy", ctypes.c_uint), ("gz", ctypes.c_uint),
                ("bx", ctypes.c_uint), ("by", ctypes.c_uint), ("bz", ctypes.c_uint),
                ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(_Attr)), ("nattrs", ctypes.c_uint)]


_CU = {}


def launch_ex(cp, fn, grid: int, block: int, args, coop: bool, pdl: bool) -> None:
    """``fn`` through ``cuLaunchKernelEx`` on the current stream, with the cooperative (id 2) and
    programmatic stream serialization (id 6) attributes as asked."""
    if "lib" not in _CU:
        _CU["lib"] = ctypes.CDLL("libcuda.so.1")
    attrs = (_Attr * 2)()
    count = 0
    for on, ident in ((coop, 2), (pdl, 6)):
        if on:
            attrs[count].id, attrs[count].val = ident, 1
            count += 1
    cfg = _Config(grid, 1, 1, block, 1, 1, 0, cp.cuda.get_current_stream().ptr, attrs, count)
    held = []
    for x in args:
        if isinstance(x, cp.ndarray):
            held.append(ctypes.c_void_p(x.data.ptr))
        elif isinstance(x, np.int64):
            held.append(ctypes.c_longlong(int(x)))
        elif isinstance(x, np.uint32):
            held.append(ctypes.c_uint(int(x)))
        elif isinstance(x, np.uint64):
            held.append(ctypes.c_void_p(int(x) or None))
        else:
            raise TypeError(type(x))
    params = (ctypes.c_void_p * len(held))(*[ctypes.addressof(h) for h in held])
    rc = _CU["lib"].cuLaunchKernelEx(ctypes.byref(cfg), ctypes.c_void_p(fn.ptr), params, None)
    if rc != 0:
        raise RuntimeError(f"cuLaunchKernelEx returned {rc}")


def pass_args(d, a, b, c=None):
    """``zero_sign.fix``'s arguments for (1, m, k) a, (1, k, n) b, (1, m, n) d."""
    return zero_sign.launch_args(d, a, b, c)[1]


def passes(cp, sp, grid: int):
    """Variant name -> f(d, a, b): runs that pass variant on d."""
    fn = {name: kernels.function(sp, name) for name in NAMES}
    lib = kernels.function(zero_sign.SPEC, zero_sign.role("min", "plus", np.float32))

    def coop(f, g, block=256):
        return lambda d, a, b: f((g,), (block,), pass_args(d, a, b), enable_cooperative_groups=True)

    def empty(coop_):
        def run(d, a, b):
            gate, epoch = zero_sign._gate()
            fn["empty"]((grid,), (256,), (gate, epoch), enable_cooperative_groups=coop_)
        return run

    def read(d, a, b):
        args = pass_args(d, a, b)
        fn["read"]((grid,), (256,), (d, np.int64(d.size), args[13], np.int64(args[13].size),
                                     args[14], args[15]))

    def barrier(d, a, b):
        gate, epoch = zero_sign._gate()
        fn["barrier"]((grid,), (256,), (gate, epoch), enable_cooperative_groups=True)

    def ex(pdl):
        return lambda d, a, b: launch_ex(cp, fn["pdl" if pdl else "copy"], grid, 256,
                                         pass_args(d, a, b), True, pdl)

    return {"lib": lambda d, a, b: zero_sign.fix(d, a, b, get_semiring("min_plus"), None),
            "lib_g132": coop(lib, 132), "lib_g264": coop(lib, 264),
            "empty_plain": empty(False), "empty_coop": empty(True), "read_plain": read,
            "barrier_coop": barrier, "nosleep": coop(fn["nosleep"], grid),
            "nt512": coop(fn["nt512"], max(1, grid // 2), 512),
            "nt1024": coop(fn["nt1024"], max(1, grid // 4), 1024),
            "ex_coop": ex(False), "pdl_coop": ex(True)}


FULL = ("lib", "lib_g132", "lib_g264", "nosleep", "ex_coop", "pdl_coop")


def signed_zero_operands(cp, m, k, n, seed):
    """Operands of +0, -0, 1, 2: every min_plus output is a zero, of either sign (the gate opens)."""
    rs = cp.random.RandomState(seed)
    vals = cp.asarray(np.array([0.0, -0.0, 1.0, 2.0], np.float32))
    return (vals[rs.randint(0, 4, (1, m, k))], vals[rs.randint(0, 4, (1, k, n))])


def unit_specs():
    """(``params``, ``trig``): the units kernel with the gate's two parameters
    (``bench_units_gate_s13``'s ``params_only``), and the same with :data:`TRIGGER` at its start."""
    text = s13.variants()["params_only"]
    sig = "              unsigned* __restrict__ ZG, unsigned zepoch) {\n"
    assert text.count(sig) == 1
    return (s13.specs({"params": text})["params"],
            s13.specs({"trig": text.replace(sig, sig + TRIGGER)})["trig"])


def library_gemm(cp, be, sr):
    """f(a, b): the library's GEMM kernels (no pass) on (1, m, k) a and (1, k, n) b, the operands'
    facts learned once a pair, as matmul does (so no fact is computed in a timed call)."""
    known = {}

    def gemm(a, b):
        key = (a.data.ptr, b.data.ptr)
        if key not in known:
            known[key] = {"a": facts.of(a, cp), "b": facts.of(b, cp), "c": None}
        return be._gemm_kernels(a, b, sr, None, False, known[key])[0]
    return gemm


def uniform(cp, size: int):
    """(1, size, size) float32 operands uniform in [-1, 1) (no zero output: the gate stays shut)."""
    rs = cp.random.RandomState(size)
    return tuple(rs.random_sample((1, size, size), dtype=np.float32) * 2 - 1 for _ in range(2))


def time_forms(cp, forms: dict, size: int, rounds: int, reps: int) -> list[dict]:
    """Each form's GPU median (ms, behind a spin kernel), the forms interleaved over ``rounds``, and
    the µs it adds to the "gemm" form's median; one row a form, printed as it is made."""
    times = {name: [] for name in forms}
    for _ in range(rounds):
        for name, f in forms.items():
            times[name].append(median_ms(cp, f, reps, True))
    base = float(np.median(times["gemm"]))
    rows = []
    for name, ts in times.items():
        ms = float(np.median(ts))
        rows.append({"form": name, "size": size, "median_ms": ms, "rounds_ms": ts,
                     "tops": round(2 * size ** 3 / ms / 1e9, 3), "added_us": round(1e3 * (ms - base), 2)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def time_size(cp, be, gemm, pv, ok, units, trig, size, with_trig, rounds, reps) -> list[dict]:
    """The forms at size³ (uniform operands: the gate stays shut), interleaved rounds."""
    a, b = uniform(cp, size)
    d0 = gemm(a, b)
    ref = d0.copy()
    for name in ok:
        pv[name](d0, a, b)
        assert bool((d0 == ref).all()), name

    def unit(spec):
        return s13.run(be, spec, a, b, zero_gate=zero_sign._gate())

    forms = {"gemm": lambda: gemm(a, b), "params": lambda: unit(units), "trig": lambda: unit(trig)}
    for name in ok:
        forms["gemm+" + name] = lambda f=pv[name]: f(gemm(a, b), a, b)
        forms["alone:" + name] = lambda f=pv[name]: f(d0, a, b)
    forms["params+lib"] = lambda: pv["lib"](unit(units), a, b)
    if with_trig and "pdl_coop" in ok:
        forms["trig+pdl_coop"] = lambda: pv["pdl_coop"](unit(trig), a, b)
    return time_forms(cp, forms, size, rounds, reps)


def arguments(doc: str, rounds: int):
    """The s14 benches' command line: --json, --rounds, --reps, --sizes."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--sizes", default="2048,1024")
    return ap.parse_args()


def setup(cp):
    """(backend, min_plus, the library pass's grid, units specs (params, trig), the library GEMM):
    what both s14 benches time against."""
    be = tg.get_backend("cuda")
    sr = get_semiring("min_plus")
    grid = zero_sign._resident(kernels.function(zero_sign.SPEC, zero_sign.role("min", "plus", np.float32)))
    return be, sr, grid, unit_specs(), library_gemm(cp, be, sr)


def main() -> None:
    args = arguments(__doc__, 3)
    import cupy as cp

    t0 = time.time()
    be, sr, grid, (units, trig), gemm = setup(cp)
    out = {"device": be.describe(), "grid": grid, "checks": [], "errors": {}, "rows": []}
    pv = passes(cp, spec(), grid)

    # checks: every full variant equals zero_sign.fix where the gate opens
    for m, k, n, big in ((300, 1030, 260, False), (2048, 2048, 2048, True)):
        a, b = signed_zero_operands(cp, m, k, n, m)
        want = gemm(a, b)
        zero_sign.fix(want, a, b, sr, None)
        assert int((want == 0).sum()) == m * n and bool(cp.signbit(want).any())
        for name in FULL:
            try:
                d = gemm(a, b)
                pv[name](d, a, b)
                same = bool((d.view(cp.int32) == want.view(cp.int32)).all())
            except Exception as exc:  # noqa: BLE001 - a refused launch is a result
                out["errors"][f"{name} {m}"] = repr(exc)
                print(name, repr(exc), flush=True)
                continue
            assert same, (name, m, k, n)
            out["checks"].append(f"{name} {m}x{k}x{n} equals zero_sign.fix")
        if big:  # the trigger GEMM then pdl_coop, on the open gate
            try:
                d = s13.run(be, trig, a, b, zero_gate=zero_sign._gate())
                pv["pdl_coop"](d, a, b)
                assert bool((d.view(cp.int32) == want.view(cp.int32)).all()), "trig+pdl"
                out["checks"].append(f"trig+pdl_coop {m}^3 equals zero_sign.fix")
            except RuntimeError as exc:
                out["errors"]["trig+pdl_coop"] = repr(exc)
    ok = [v for v in pv if not any(key.startswith(v + " ") for key in out["errors"])]
    for size in (int(x) for x in args.sizes.split(",")):
        with_trig = "trig+pdl_coop" not in out["errors"]
        out["rows"] += time_size(cp, be, gemm, pv, ok, units, trig, size, with_trig, args.rounds, args.reps)
    out["seconds"] = round(time.time() - t0, 1)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
