"""Issue 14's 65536×64×64 row: ``sr_gemm_mid`` (16 < n <= 64, k <= 64) against the tiles it replaces.

Checks first, bit for bit against tests/reference.py (a failed check stops the run): every mid
variant timed below, and the library's path (``CudaBackend._gemm``, which must pick "mid" and run no
zero-sign pass), on odd shapes (m not a multiple of the block's rows, n in each J range, k odd and
k % 4 == 0, with ``c``), operands with ±0, ±inf and ties. Then, on the H200-sized shapes, CUDA-event
medians behind a 2 ms spin kernel (the GPU's time without the host's launches):

* ``library``: ``CudaBackend._gemm`` (``sr_gemm_mid_cp`` where k % 4 == 0: A rows through each
  warp's two shared-memory buffers by cp.async, the next round's copy in flight during a fold);
* ``mid`` (A by register loads, RM 2, no prefetch: session 12's v2 library kernel, still the
  library's where k % 4 != 0), ``mid_rm4`` (4 rows a thread: more reuse),
  ``mid_pf`` (RM 2, the next 4 terms' loads issued before the current 4 fold; session 12's first
  library version, 7-9 % slower); all launched as the library does (at most 2 blocks an SM);
* ``tiles`` (what the library ran before: ``gemm_launch.plan`` without the mid roles) and
  ``tiles_and_pass`` (the tiles and the zero-sign pass they need);
* baselines in the same run: a device copy (read + write bytes over time) and the FADD+FMNMX and
  FMNMX+FMNMX issue rates (``bench_gemm_sweep``'s micro kernels); from them the floors: bytes moved
  over the copy rate, terms over the term rate.

``python3 benchmarks/bench_gemm_cuda_s12m.py --json $OUT/gemm_mid_cuda_h200_s12.json`` (``--quick``:
small shapes, for a machine without an H200).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_gemm_sweep import MICRO  # noqa: E402
from bench_zero_sign_cuda import median_ms  # noqa: E402
from reference import ref_matmul  # noqa: E402

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu import facts  # noqa: E402
from pytropical_gpu.backends.cuda import gemm_launch, kernels, zero_sign  # noqa: E402
from pytropical_gpu.backends.cuda.kernels import ModuleSpec  # noqa: E402
from pytropical_gpu.semirings import get_semiring  # noqa: E402

FUNCTORS = {("min_plus", "float32"): "ptg::MinPlus<float>", ("max_min", "float32"): "ptg::MaxMin<float>",
            ("max_times", "float32"): "ptg::MaxTimes<float>"}
#: variant -> (RM, PF)
VARIANTS = {"mid": (2, False), "mid_rm4": (4, False), "mid_pf": (2, True)}
CASES = (("min_plus", "float32", 65536, 64, 64), ("min_plus", "float32", 262144, 64, 64),
         ("min_plus", "float32", 262144, 32, 32), ("min_plus", "float32", 65536, 48, 48),
         ("min_plus", "float32", 1048576, 20, 20), ("max_min", "float32", 65536, 64, 64),
         ("max_times", "float32", 65536, 64, 64))
QUICK = tuple((s, d, min(m, 3000), k, n) for s, d, m, k, n in CASES)
CHECK_SHAPES = ((1, 1, 20), (257, 7, 20), (300, 64, 64), (1000, 33, 44), (129, 12, 36), (77, 64, 48),
                (70001, 64, 64), (70001, 8, 20))  # the last two: several rounds a warp
#: sr_gemm_mid_cp with stages left out (a bench's diagnostic, compiled beside semiring_gemm.cu):
#: P bit 0: no stores (behind a runtime flag the host passes as 0); bit 1: A copied only in the
#: first round (later rounds fold the same rows); bit 2: no fold (one min a 4 terms of A).
PROBE = r"""
namespace ptgbench {
template <int P>
__global__ void __launch_bounds__(256, 2)
mid_probe(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ D,
          long long m, long long n, long long k, int flag) {
  typedef ptg::MinPlus<float> SR;
  constexpr int J = 4, NP = 64, AP = 68, RM = 2;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* Bs = reinterpret_cast<float*>(smem_raw);
  const int kq = (int)k, nq = (int)n;
  ptg::stage_mid_b<SR, NP>(B, Bs, kq, nq);
  const int lane = threadIdx.x & 31, cg = lane & 3, rs = lane >> 2;
  float* As = Bs + kq * NP + (threadIdx.x >> 5) * (2 * 16 * AP);
  const float* bcol = Bs + cg * 4;
  const long long wstride = (long long)gridDim.x * 8 * 16;
  long long base = ((long long)blockIdx.x * 8 + (threadIdx.x >> 5)) * 16;
  const int kc = kq >> 2;
  auto copy = [&](long long b0, float* buf) {
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      const int r = 2 * q + (lane >> 4), c = lane & 15;
      const long long row = b0 + r < m ? b0 + r : m - 1;
      if (c < kc) ptg::mid_cp16(buf + r * AP + 4 * c, A + row * k + 4 * c);
    }
    ptg::mid_commit();
  };
  if (base < m) copy(base, As);
  for (int cur = 0; base < m; base += wstride, cur ^= 1) {
    if (!(P & 2) && base + wstride < m) {
      copy(base + wstride, As + (cur ^ 1) * 16 * AP);
      ptg::mid_wait<1>();
    } else {
      ptg::mid_wait<0>();
    }
    __syncwarp();
    const float* a0 = As + ((P & 2) ? 0 : cur) * 16 * AP + RM * rs * AP;
    float acc[RM][J][4];
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int j = 0; j < J; ++j)
#pragma unroll
        for (int v = 0; v < 4; ++v) acc[i][j][v] = SR::acc_init();
#pragma unroll 2
    for (int kk = 0; kk < kq; kk += 4) {
      float x[RM][4];
#pragma unroll
      for (int i = 0; i < RM; ++i) ptg::V4<float>::load(a0 + i * AP + kk, x[i]);
      if (P & 4) {
#pragma unroll
        for (int i = 0; i < RM; ++i)
          acc[i][0][0] = fminf(acc[i][0][0], fminf(fminf(x[i][0], x[i][1]), fminf(x[i][2], x[i][3])));
        continue;
      }
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float* brow = bcol + (kk + q) * NP;
#pragma unroll
        for (int j = 0; j < J; ++j) {
          float bv[4];
          ptg::V4<float>::load(brow + 16 * j, bv);
#pragma unroll
          for (int i = 0; i < RM; ++i)
#pragma unroll
            for (int v = 0; v < 4; ++v) acc[i][j][v] = SR::fma(acc[i][j][v], x[i][q], bv[v]);
        }
      }
    }
    const long long r0 = base + RM * rs;
    if (!(P & 1) || flag) {
#pragma unroll
      for (int i = 0; i < RM; ++i) {
        if (r0 + i >= m) break;
#pragma unroll
        for (int j = 0; j < J; ++j)
          *reinterpret_cast<float4*>(D + (r0 + i) * n + cg * 4 + 16 * j) =
              make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]);
      }
    }
    __syncwarp();
  }
}
}
"""
PROBES = {"full": 0, "no_store": 1, "a_once": 2, "a_once_no_store": 3, "no_fold": 4, "copy_only": 5}


#: sr_gemm_mid_cp variants -> (RM, WB): rows a thread, warps a block
CP_VARIANTS = {"cp_rm4_wb4": (4, 4), "cp_rm4_wb8": (4, 8), "cp_rm2_wb4": (2, 4)}


def variant_spec(name: str, dtype: str) -> ModuleSpec:
    """Every mid variant (J 2..4) for the semiring, in one module beside the library's."""
    f = FUNCTORS[(name, dtype)]
    names = {f"{v}{j}": f"ptg::sr_gemm_mid<{f}, {j}, {rm}, {'true' if pf else 'false'}>"
             for v, (rm, pf) in VARIANTS.items() for j in kernels.MID_J}
    names.update({f"{v}{j}": f"ptg::sr_gemm_mid_cp<{f}, {j}, {rm}, {wb}>"
                  for v, (rm, wb) in CP_VARIANTS.items() for j in kernels.MID_J})
    return ModuleSpec(f"bench_s12m:{name}:{dtype}", "semiring_gemm.cu", names)


def launch_cp_variant(cp, spec, variant: str, a, b, c=None):
    """One call of sr_gemm_mid_cp ``variant`` (k % 4 == 0, A 16-byte aligned) as the library
    launches its own: at most 2 blocks an SM, the warps' A buffers in dynamic shared memory."""
    m, k = a.shape
    n = b.shape[1]
    j = -(-n // 16)
    rm, wb = CP_VARIANTS[variant]
    d = cp.empty((m, n), a.dtype)
    blocks = max(1, min(-(-m // (wb * 8 * rm)), 2 * tg.get_backend("cuda")._sm_count()))
    smem = 4 * (k * 16 * j + wb * 2 * 8 * rm * 68)
    fn = gemm_launch._with_shared(kernels.function(spec, f"{variant}{j}"), smem)
    i64 = np.int64
    fn((blocks, 1), (32 * wb,), (a, b, np.uint64(0) if c is None else c, d, np.uint64(0), i64(m), i64(n),
                                 i64(k), i64(0), i64(0), i64(0)), shared_mem=smem)
    return d


def launch_variant(cp, spec, variant: str, a, b, c=None):
    """One call of ``variant`` on 2-D a (m, k), b (k, n): the library's launch (gemm_launch.run)
    with the variant's rows a block."""
    m, k = a.shape
    n = b.shape[1]
    j = -(-n // 16)
    rm = VARIANTS[variant][0]
    d = cp.empty((m, n), a.dtype)
    blocks = max(1, min(-(-m // (64 * rm)), 2 * tg.get_backend("cuda")._sm_count()))
    veca = int(k % 4 == 0 and a.data.ptr % 16 == 0)
    i64 = np.int64
    kernels.function(spec, f"{variant}{j}")((blocks, 1), (256,), (
        a, b, np.uint64(0) if c is None else c, d, np.uint64(0), i64(m), i64(n), i64(k), i64(0), i64(0),
        i64(0), np.int32(veca)), shared_mem=k * 16 * j * a.dtype.itemsize)
    return d


def operands(rng, dtype, m, k, n, special=True):
    dt = np.dtype(dtype)
    if dt.kind == "i":
        a, b = rng.integers(-1000, 1000, (m, k)).astype(dt), rng.integers(-1000, 1000, (k, n)).astype(dt)
        pool = np.array([np.iinfo(dt).min, np.iinfo(dt).max, 0, 5], dt)
    else:
        a, b = rng.integers(-4, 4, (m, k)).astype(dt), rng.integers(-4, 4, (k, n)).astype(dt)
        pool = np.array([0.0, -0.0, np.inf, -np.inf, 1e-40, 3e38], dt)
    if special:
        for x in (a, b):
            mask = rng.random(x.shape) < 0.15
            x[mask] = rng.choice(pool, int(mask.sum()))
    c = rng.choice(pool, (m, n)).astype(dt)
    return a, b, c


def same(got, want) -> bool:
    return got.shape == want.shape and (got.view(np.uint32) == want.view(np.uint32)).all()


def check(cp, rng) -> list[str]:
    done = []
    for name, dtype in FUNCTORS:
        spec = variant_spec(name, dtype)
        for m, k, n in CHECK_SHAPES:
            a, b, c = operands(rng, dtype, m, k, n)
            for cc in (None, c):
                want, _ = ref_matmul(a, b, name, cc)
                da, db = cp.asarray(a), cp.asarray(b)
                dc = None if cc is None else cp.asarray(cc)
                for v in VARIANTS:
                    got = cp.asnumpy(launch_variant(cp, spec, v, da, db, dc))
                    assert same(got, want), f"{v} {name} {dtype} {m}x{k}x{n} c={cc is not None}"
                for v in CP_VARIANTS if k % 4 == 0 else ():
                    got = cp.asnumpy(launch_cp_variant(cp, spec, v, da, db, dc))
                    assert same(got, want), f"{v} {name} {dtype} {m}x{k}x{n} c={cc is not None}"
                roles = []
                orig = kernels.function
                kernels.function = lambda s, r, _o=orig, _seen=roles: (_seen.append(r), _o(s, r))[1]
                try:
                    got = tg.matmul(a, b, name, c=cc, backend="cuda")
                finally:
                    kernels.function = orig
                assert same(np.asarray(got), want), f"matmul {name} {dtype} {m}x{k}x{n}"
                mids = [r for r in roles if r.startswith("mid")]
                assert mids and not any(r.startswith("zero_") for r in roles), roles
                done.append(f"{name} {dtype} {m}x{k}x{n} c={cc is not None}: {sorted(VARIANTS)} + {mids}")
    return done


def timer(cp, reps):
    """``fn`` -> its median ms on the GPU's timeline (bench_zero_sign_cuda's spin-kernel loop)."""
    return lambda fn: median_ms(cp, fn, reps, hide_host=True)


def baselines(cp, median_ms, sms: int) -> dict:
    nbytes = 1 << 28
    src, dst = cp.empty(nbytes, cp.uint8), cp.empty(nbytes, cp.uint8)
    t = median_ms(lambda: cp.copyto(dst, src))
    micro = ModuleSpec("bench_s12m_micro", "semiring_gemm.cu", {"op1": "ptgmicro::issue<1>",
                                                                "op2": "ptgmicro::issue<2>"}, MICRO)
    buf_in = cp.asarray(np.linspace(-3, 3, 64, dtype=np.float32))
    blocks, threads, steps = sms * 8, 256, 4096
    out = cp.empty(blocks * threads, cp.float32)
    rates = {}
    for op, label in ((1, "fadd_fmnmx"), (2, "fmnmx_fmnmx")):
        fn = kernels.function(micro, f"op{op}")
        ms = median_ms(lambda fn=fn: fn((blocks,), (threads,), (out, buf_in, np.int32(steps))))
        rates[f"{label}_terms_per_s"] = blocks * threads * steps * 16 / (ms / 1e3)
    return {"copy_bytes_per_s": 2 * nbytes / (t / 1e3), **rates}


def time_case(cp, median_ms, base, name, dtype, m, k, n) -> dict:
    be = tg.get_backend("cuda")
    sr = get_semiring(name)
    rng = np.random.default_rng(m + k + n)
    a, b, _ = operands(rng, dtype, m, k, n, special=False)
    da, db = cp.asarray(a), cp.asarray(b)
    a3, b3 = da[None], db[None]
    known = {"a": facts.of(a3, cp), "b": facts.of(b3, cp), "c": None}
    spec = gemm_launch.spec(sr, np.dtype(dtype))
    names = {r for r in spec.names if not r.startswith("mid")}
    p = gemm_launch.plan(m, n, k, 1, 4, False, True, be._sm_count(), names)
    d_lib, _ = be._gemm(a3, b3, sr, None, False, known)
    d_tile, _ = gemm_launch.run(be, spec, a3, b3, None, False, p)
    zero_sign.fix(d_tile, a3, b3, sr, None)
    assert same(cp.asnumpy(d_lib), cp.asnumpy(d_tile)), f"{name} {m}x{k}x{n}: mid != tiles"
    vspec = variant_spec(name, dtype)
    for v in VARIANTS:
        assert same(cp.asnumpy(launch_variant(cp, vspec, v, da, db)), cp.asnumpy(d_lib[0])), v
    row = {"semiring": name, "dtype": dtype, "m": m, "k": k, "n": n, "tile_role": p.role,
           "library_ms": median_ms(lambda: be._gemm(a3, b3, sr, None, False, known)),
           "tiles_ms": median_ms(lambda: gemm_launch.run(be, spec, a3, b3, None, False, p)),
           "tiles_and_pass_ms": median_ms(lambda: (gemm_launch.run(be, spec, a3, b3, None, False, p),
                                                  zero_sign.fix(d_tile, a3, b3, sr, None)))}
    for v in VARIANTS:
        row[f"{v}_ms"] = median_ms(lambda v=v: launch_variant(cp, vspec, v, da, db))
    for v in CP_VARIANTS if k % 4 == 0 else ():
        assert same(cp.asnumpy(launch_cp_variant(cp, vspec, v, da, db)), cp.asnumpy(d_lib[0])), v
        row[f"{v}_ms"] = median_ms(lambda v=v: launch_cp_variant(cp, vspec, v, da, db))
    moved = 4 * (m * k + k * n + m * n)
    row["bytes_floor_ms"] = 1e3 * moved / base["copy_bytes_per_s"]
    rate = base["fmnmx_fmnmx_terms_per_s" if name == "max_min" else "fadd_fmnmx_terms_per_s"]
    row["terms_floor_ms"] = 1e3 * m * n * k / rate
    for key in ("library", "tiles_and_pass", "mid", "mid_rm4", "mid_pf"):
        row[f"{key}_pct_of_copy"] = round(100 * row["bytes_floor_ms"] / row[f"{key}_ms"], 1)
    row["library_vs_tiles_and_pass"] = round(row["tiles_and_pass_ms"] / row["library_ms"], 2)
    row["library_pct_of_terms_floor"] = round(100 * row["terms_floor_ms"] / row["library_ms"], 1)
    return row


def time_probes(cp, median_ms, m: int) -> dict:
    """sr_gemm_mid_cp's stages left out (``PROBE``) on min_plus m x 64 x 64: what each costs."""
    names = {f"p{v}": f"ptgbench::mid_probe<{v}>" for v in sorted(set(PROBES.values()))}
    spec = ModuleSpec("bench_s12m_probe", "semiring_gemm.cu", names, PROBE)
    rng = np.random.default_rng(3)
    a = cp.asarray(rng.random((m, 64), dtype=np.float32))
    b = cp.asarray(rng.random((64, 64), dtype=np.float32))
    d = cp.empty((m, 64), cp.float32)
    sms = tg.get_backend("cuda")._sm_count()
    smem = (64 * 64 + gemm_launch.MID_CP_A_FLOATS) * 4
    out = {"m": m, "k": 64, "n": 64}
    for label, v in PROBES.items():
        f = gemm_launch._with_shared(kernels.function(spec, f"p{v}"), smem)
        for grid, tag in ((min(-(-m // 128), 2 * sms), ""), (-(-m // 128), "_one_round")):
            if label != "full" and tag:
                continue
            run = lambda f=f, grid=grid: f((grid,), (256,), (a, b, d, np.int64(m), np.int64(64),  # noqa: E731
                                                             np.int64(64), np.int32(0)), shared_mem=smem)
            out[f"{label}{tag}_ms"] = median_ms(run)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--quick", action="store_true", help="small shapes")
    ap.add_argument("--reps", type=int, default=9)
    args = ap.parse_args()
    import cupy as cp

    t0 = time.time()
    be = tg.get_backend("cuda")
    sms = int(cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"])
    out = {"device": be.describe(), "checks": check(cp, np.random.default_rng(0))}
    median_ms = timer(cp, args.reps)
    out["baselines"] = baselines(cp, median_ms, sms)
    out["cases"] = []
    for case in (QUICK if args.quick else CASES):
        out["cases"].append(time_case(cp, median_ms, out["baselines"], *case))
        print(json.dumps(out["cases"][-1]), flush=True)
    out["probes"] = [time_probes(cp, median_ms, m) for m in ((3000,) if args.quick else (65536, 262144))]
    print(json.dumps(out["probes"]), flush=True)
    out["seconds"] = round(time.time() - t0, 1)
    text = json.dumps(out, indent=1)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
