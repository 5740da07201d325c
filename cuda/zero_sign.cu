// The zero-sign pass (pytropical_gpu/backends/cuda/zero_sign.py): after a float GEMM whose ⊕ is
// min or max, every zero output takes the ordered sign (-0 < +0, IEEE 754-2019 maximum / minimum;
// pytropical_gpu/zero_order.py states the rule, fix_host is its numpy form). The GEMM kernels fold
// with the hardware's min / max, which need not order zeros, and the argmax epilogues store a
// matching term's bits, so the sign is recomputed here from the terms, in place, after c was
// applied: a max is +0 if any zero-valued term (or c) is +0, else -0; a min is -0 if any
// zero-valued term (or c) is -0, else +0.
//
// One cooperative launch on the GEMM's stream (every block resident: the host sizes the grid by
// the occupancy), no host wait, no memset: a per-stream word triple (gate, barrier count, barrier
// generation) and a flag word per row of A and per column of B (a scratch of the call's). Phases,
// a grid-wide barrier between them:
//  1. zero the flag words, and read D (flat, 16 bytes a load where D is 16-byte aligned); a block
//     that saw a zero stores the call's epoch (a per-stream counter the host passes) in gate[0].
//     Most products have no zero output: the gate then holds an older epoch, every block returns
//     after the barrier, and the pass costs this one read of D and a launch. (A gate left from
//     2^32 - 1 calls before with the same epoch only opens the gate: slower, still exact.)
//     Session 13 measured the alternatives: zero_any as a launch of its own before (1024³ 0.4 µs
//     faster, 2048³ 0.8 µs slower, the open paths 4-10 % slower), and the gate set in the GEMM's
//     own epilogue (the units kernel 1.5-2.4 % slower in every form tried,
//     benchmarks/bench_units_gate_s13.py).
//  2. the flags of every row of A and column of B (bit 0: it holds a -0; bit 1: it holds a value
//     whose sign bit is set), k cut into chunks so that long rows and columns spread over the GPU;
//     a chunk ORs its bits in with one atomic, only where it found any.
//  3. one thread per output (flat, grid-stride): a zero output finds whether any of its terms can
//     be -0 from its row's and column's flags (IEEE, round to nearest: x + y is -0 only for
//     -0 + -0; a zero x * y is -0 only where the signs differ, underflow included; a min or max of
//     zeros is -0 only with a -0 operand). Where none can, a min is c's sign (-0 only where c is
//     -0) and a max is +0 (unless c is -0: then it looks for a zero term); where one can, it scans
//     its k terms, 4 at a time, until a term has the sign that settles it (max: +0, min: -0).
// The worst case left is a product whose rows and columns hold -0 (or, for times, negatives) while
// its zero outputs' terms settle late: each such output scans up to k terms.
//
// Terms as zero_order._zero_terms: x + y and x * y have their own IEEE sign (one rounding in T,
// compiled without flush to zero); a min ⊗ is -0 if either operand is -0, a max ⊗ +0 if either is
// +0. An operand equal to the semiring's zero (±inf) never makes a zero term (±inf, or NaN for
// 0 * inf), and NaN operands were refused before the GEMM, so no guard is needed.

namespace ptg {

template <typename T> struct ZeroBits;
template <> struct ZeroBits<float> {
  using V = float4;  // 16 bytes
  __device__ __forceinline__ static bool neg(float x) { return (__float_as_uint(x) >> 31) != 0u; }
  __device__ __forceinline__ static bool negzero(float x) { return __float_as_uint(x) == 0x80000000u; }
  __device__ __forceinline__ static float make(bool neg) {
    return __uint_as_float(neg ? 0x80000000u : 0u);
  }
  __device__ __forceinline__ static bool any_zero(V v) {
    return v.x == 0.f || v.y == 0.f || v.z == 0.f || v.w == 0.f;
  }
};
template <> struct ZeroBits<double> {
  using V = double2;
  __device__ __forceinline__ static bool neg(double x) { return __double_as_longlong(x) < 0; }
  __device__ __forceinline__ static bool negzero(double x) {
    return __double_as_longlong(x) == (long long)0x8000000000000000ull;
  }
  __device__ __forceinline__ static double make(bool neg) {
    return __longlong_as_double(neg ? (long long)0x8000000000000000ull : 0ll);
  }
  __device__ __forceinline__ static bool any_zero(V v) { return v.x == 0.0 || v.y == 0.0; }
};

// 0: x is not a zero; 1: +0; 2: -0
template <typename T>
__device__ __forceinline__ int zero_kind(T x) {
  return x == T(0) ? 1 + (int)ZeroBits<T>::neg(x) : 0;
}

// the zero kind of the term x ⊗ y; MUL: 0 plus, 1 times, 2 min, 3 max
template <typename T, int MUL>
__device__ __forceinline__ int term_kind(T x, T y) {
  if constexpr (MUL == 0) {
    return zero_kind<T>(x + y);
  } else if constexpr (MUL == 1) {
    return zero_kind<T>(x * y);
  } else {
    const T t = MUL == 2 ? (y < x ? y : x) : (y > x ? y : x);
    if (t != T(0)) return 0;
    const int kx = zero_kind<T>(x), ky = zero_kind<T>(y);
    if constexpr (MUL == 2) {
      return (kx == 2 || ky == 2) ? 2 : 1;  // min of zeros: -0 if either is -0
    } else {
      return (kx == 1 || ky == 1) ? 1 : 2;  // max of zeros: +0 if either is +0
    }
  }
}

// whether this thread's share of d[0:total] (flat, grid-stride) holds a zero
template <typename T>
__device__ __forceinline__ bool zero_in(const T* d, long long total) {
  using V = typename ZeroBits<T>::V;
  constexpr int W = sizeof(V) / sizeof(T);
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  bool found = false;
  if ((reinterpret_cast<unsigned long long>(d) & 15ull) == 0) {
    const V* dv = reinterpret_cast<const V*>(d);
    const long long nv = total / W;
#pragma unroll 4
    for (long long j = i; j < nv; j += stride) found |= ZeroBits<T>::any_zero(dv[j]);
    for (long long j = nv * W + i; j < total; j += stride) found |= d[j] == T(0);
  } else {
    for (long long j = i; j < total; j += stride) found |= d[j] == T(0);
  }
  return found;
}

// 2. flags[r] |= the bits of row r of a (ra rows of k: every batch entry's rows), then
// flags[ra + c] |= the bits of column c of b (cb columns: every batch entry's n columns; the
// column c = zb * n + j is b[zb * k * n + i * n + j]). Work items: (row, chunk of RK) a warp, then
// (32 columns, chunk of CK) a block of 8 warps.
constexpr long long RK = 1024, CK = 256;

template <typename T>
__device__ __forceinline__ unsigned bits_of(T x) {
  return (ZeroBits<T>::negzero(x) ? 1u : 0u) | (ZeroBits<T>::neg(x) ? 2u : 0u);
}

template <typename T>
__device__ __forceinline__ void flags_of(const T* __restrict__ a, const T* __restrict__ b,
                                         long long ra, long long k, long long n, long long cb,
                                         unsigned* __restrict__ flags) {
  __shared__ unsigned part[8][32];
  const long long kcr = (k + RK - 1) / RK, kcc = (k + CK - 1) / CK;
  const long long blocks_a = (ra * kcr + 7) / 8;
  const long long ntile = (n + 31) / 32, batches_b = cb / (n > 0 ? n : 1);
  const long long blocks = blocks_a + batches_b * ntile * kcc;
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (long long blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    if (blk < blocks_a) {  // a row's chunk a warp
      const long long item = blk * 8 + w;
      if (item >= ra * kcr) continue;
      const long long r = item / kcr, i0 = (item - r * kcr) * RK;
      const long long i1 = i0 + RK < k ? i0 + RK : k;
      const T* row = a + r * k;
      unsigned acc = 0u;
      for (long long i = i0 + lane; i < i1; i += 32) acc |= bits_of<T>(row[i]);
      const unsigned nz = __any_sync(0xffffffffu, acc & 1u), sb = __any_sync(0xffffffffu, acc & 2u);
      if (lane == 0 && (nz | sb)) atomicOr(flags + r, nz | (sb << 1));
    } else {  // 32 columns' chunk a block: warp w reads rows i0 + w, i0 + w + 8, ...
      const long long t = blk - blocks_a;
      const long long zb = t / (ntile * kcc), rest = t - zb * ntile * kcc;
      const long long tile = rest / kcc, i0 = (rest - tile * kcc) * CK;
      const long long i1 = i0 + CK < k ? i0 + CK : k;
      const long long j = tile * 32 + lane;
      unsigned acc = 0u;
      if (j < n) {
        const T* col = b + zb * k * n + j;
        for (long long i = i0 + w; i < i1; i += 8) acc |= bits_of<T>(col[i * n]);
      }
      part[w][lane] = acc;
      __syncthreads();
      if (w == 0) {
        for (int q = 1; q < 8; ++q) acc |= part[q][lane];
        if (acc != 0u && j < n) atomicOr(flags + ra + zb * n + j, acc);
      }
      __syncthreads();
    }
  }
}

// 3. the ordered sign of every zero of d (batch, m, n); a (batch or 1, m, k), b (batch or 1, k, n),
// c (batch or 1, m, n) or null, all C-contiguous; sa, sb, sc: batch strides (0 where the operand
// broadcasts); flags as flags_of wrote them in this launch, with ra = (sa ? batch : 1) * m
template <typename T, bool MAX, int MUL>
__device__ __forceinline__ void fix_signs(const T* __restrict__ a, const T* __restrict__ b,
                                          const T* __restrict__ c, T* __restrict__ d, long long m,
                                          long long n, long long k, long long sa, long long sb,
                                          long long sc, long long batch, const unsigned* flags) {
  const long long total = batch * m * n, mn = m * n;
  const long long stride = (long long)gridDim.x * blockDim.x;
  const unsigned* fa = flags;
  const unsigned* fb = fa + (sa ? batch : 1) * m;
  const int want = MAX ? 1 : 2;  // the sign that settles the output once seen
  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; o < total; o += stride) {
    if (d[o] != T(0)) continue;
    const long long z = o / mn, r = o - z * mn, row = r / n, col = r - row * n;
    const int ck = c != nullptr ? zero_kind<T>(c[z * sc + r]) : 0;
    bool seen = ck == want;
    if (!seen) {
      // through L2 (__ldcg): the words were written in this launch, by other blocks' atomics
      const unsigned f = __ldcg(fa + (sa ? z : 0) * m + row), g = __ldcg(fb + (sb ? z : 0) * n + col);
      const bool can_neg = MUL == 0 ? (f & g & 1u) != 0u
                         : MUL == 1 ? ((f | g) & 2u) != 0u : ((f | g) & 1u) != 0u;
      bool scan = can_neg;
      if (!can_neg && MAX) {  // every zero term is +0: +0 unless c is -0 (then: is there one?)
        seen = ck != 2;
        scan = !seen;
      }
      if (scan) {
        const T* ar = a + z * sa + row * k;
        const T* bc = b + z * sb + col;
        long long i = 0;
        for (; i + 4 <= k && !seen; i += 4) {  // 4 terms a step: independent loads in flight
          const bool s0 = term_kind<T, MUL>(ar[i], bc[i * n]) == want;
          const bool s1 = term_kind<T, MUL>(ar[i + 1], bc[(i + 1) * n]) == want;
          const bool s2 = term_kind<T, MUL>(ar[i + 2], bc[(i + 2) * n]) == want;
          const bool s3 = term_kind<T, MUL>(ar[i + 3], bc[(i + 3) * n]) == want;
          seen = s0 || s1 || s2 || s3;
        }
        for (; i < k && !seen; ++i) seen = term_kind<T, MUL>(ar[i], bc[i * n]) == want;
      }
    }
    d[o] = ZeroBits<T>::make(MAX ? !seen : seen);
  }
}

// A barrier over the whole grid, on gate[1] (arrivals) and gate[2] (generation): valid only in a
// cooperative launch (every block resident, else it could wait forever on a block not started).
// The last block in resets the count and moves the generation on, so the words are left ready.
__device__ __forceinline__ void grid_barrier(unsigned* gate) {
  __syncthreads();
  if (threadIdx.x == 0) {
    volatile unsigned* gen = gate + 2;
    const unsigned g = *gen;
    __threadfence();  // this block's writes (and the read of g) before its arrival
    if (atomicAdd(gate + 1, 1u) == gridDim.x - 1) {
      atomicExch(gate + 1, 0u);
      __threadfence();
      atomicAdd(gate + 2, 1u);
    } else {
      while (*gen == g) {
#if __CUDA_ARCH__ >= 700
        __nanosleep(64);
#endif
      }
    }
    __threadfence();
  }
  __syncthreads();
}

// The pass: gate[0] := epoch where d holds a zero (each block its share of d), a grid barrier,
// then nothing unless the gate holds this call's epoch (every block reads the word after the
// barrier: all return, or none); else compute the flags (zeroed before the first barrier), a
// barrier, and fix the zeros.
template <typename T, bool MAX, int MUL>
__global__ void __launch_bounds__(256)
zero_pass(const T* __restrict__ a, const T* __restrict__ b, const T* __restrict__ c,
          T* __restrict__ d, long long m, long long n, long long k, long long sa, long long sb,
          long long sc, long long batch, long long ra, long long cb, unsigned* flags,
          unsigned* gate, unsigned epoch) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < ra + cb; j += stride)
    flags[j] = 0u;
  if (__syncthreads_or(zero_in<T>(d, batch * m * n)) && threadIdx.x == 0) *gate = epoch;
  grid_barrier(gate);
  if (*(volatile const unsigned*)gate != epoch) return;  // no zero output: nothing to decide
  flags_of<T>(a, b, ra, k, n, cb, flags);
  grid_barrier(gate);
  fix_signs<T, MAX, MUL>(a, b, c, d, m, n, k, sa, sb, sc, batch, flags);
}

}  // namespace ptg
