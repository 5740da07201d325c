// The zero-sign pass (pytropical_gpu/backends/cuda/zero_sign.py): after a float GEMM whose ⊕ is
// min or max, every zero output takes the ordered sign (-0 < +0, IEEE 754-2019 maximum / minimum;
// pytropical_gpu/zero_order.py states the rule, fix_host is its numpy form). The GEMM kernels fold
// with the hardware's min / max, which need not order zeros, and the argmax epilogues store a
// matching term's bits, so the sign is recomputed here from the terms, in place, after c was
// applied: a max is +0 if any zero-valued term (or c) is +0, else -0; a min is -0 if any
// zero-valued term (or c) is -0, else +0.
//
// One thread per output; a block is ROWS rows x 32 consecutive columns (a warp a row, so B's reads
// coalesce and the block's warps share B's lines), blocks stride over (batch, row tile, column
// tile). A non-zero output costs its one read; a zero output scans its k terms, 4 at a time, and
// stops at the first step holding a term with the sign the rule wants (max: +0, min: -0).
//
// Terms as zero_order._zero_terms: x + y and x * y have their own IEEE sign (one rounding in T,
// compiled without flush to zero); a min ⊗ is -0 if either operand is -0, a max ⊗ +0 if either is
// +0. An operand equal to the semiring's zero (±inf) never makes a zero term (±inf, or NaN for
// 0 * inf), and NaN operands were refused before the GEMM, so no guard is needed.

namespace ptg {

template <typename T> struct ZeroBits;
template <> struct ZeroBits<float> {
  __device__ __forceinline__ static bool neg(float x) { return (__float_as_uint(x) >> 31) != 0u; }
  __device__ __forceinline__ static float make(bool neg) {
    return __uint_as_float(neg ? 0x80000000u : 0u);
  }
};
template <> struct ZeroBits<double> {
  __device__ __forceinline__ static bool neg(double x) { return __double_as_longlong(x) < 0; }
  __device__ __forceinline__ static double make(bool neg) {
    return __longlong_as_double(neg ? (long long)0x8000000000000000ull : 0ll);
  }
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

// a (batch or 1, m, k), b (batch or 1, k, n), c (batch or 1, m, n) or null, d (batch, m, n), all
// C-contiguous; sa, sb, sc: batch strides (0 where the operand broadcasts)
template <typename T, bool MAX, int MUL, int ROWS>
__global__ void __launch_bounds__(32 * ROWS)
zero_sign(const T* __restrict__ a, const T* __restrict__ b, const T* __restrict__ c,
          T* __restrict__ d, long long m, long long n, long long k, long long sa, long long sb,
          long long sc, long long batch) {
  const long long tm = (m + ROWS - 1) / ROWS, tn = (n + 31) / 32;
  const long long per = tm * tn, tiles = batch * per;
  const long long w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int want = MAX ? 1 : 2;  // the sign that settles the output once seen
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    const long long z = t / per, r = t - z * per;
    const long long row = (r / tn) * ROWS + w, col = (r % tn) * 32 + lane;
    if (row >= m || col >= n) continue;
    const long long o = (z * m + row) * n + col;
    if (d[o] != T(0)) continue;
    bool seen = c != nullptr && zero_kind<T>(c[z * sc + row * n + col]) == want;
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
    d[o] = ZeroBits<T>::make(MAX ? !seen : seen);
  }
}

}  // namespace ptg
