// Semiring GEMM for pytropical_gpu: one kernel template, any semiring (cuASR's idea).
//
// A semiring is a functor type (below) with static members zero/one/add/mul/fma/better and the
// load_map/store_map pair; the compiler inlines them into the register-blocked tile loop, so
// min_plus on float32 compiles to FADD + FMNMX per term. Compiled at run time by CuPy/NVRTC
// (RawModule + name_expressions, see pytropical_gpu/backends/cuda/kernels.py) and checked with
// nvcc for sm_80 and sm_90 by tests/test_cuda_compile.py. No headers: NVRTC has none.
//
// Guards, padding and tile choice follow the rules in KERNELS.md (the WGSL kernels follow them too).
// Semantics (pytropical_gpu/semirings.py): guarded ⊗ under min/max ⊕, the zero is absorbing;
// float NaN products (inf - inf, 0 * inf) count as the zero: fminf/fmaxf return the other operand
// for a NaN and `better` is false for it. int32 plus saturates (add.sat.s32), int64 plus saturates
// (overflow test on the wrapped sum), integer times wraps (as numpy's).
// All offsets are 64-bit, so operands with more than 2^31 elements index correctly.

namespace ptg {

typedef long long i64;

template <typename T> struct Lim;
template <> struct Lim<float> {
  __device__ __forceinline__ static float hi() { return __int_as_float(0x7f800000); }
  __device__ __forceinline__ static float lo() { return __int_as_float(0xff800000); }
  __device__ __forceinline__ static float nan() { return __int_as_float(0x7fffffff); }
};
template <> struct Lim<double> {
  __device__ __forceinline__ static double hi() { return __longlong_as_double(0x7ff0000000000000LL); }
  __device__ __forceinline__ static double lo() { return __longlong_as_double((long long)0xfff0000000000000ULL); }
  __device__ __forceinline__ static double nan() { return __longlong_as_double(0x7fffffffffffffffLL); }
};
template <> struct Lim<int> {
  __device__ __forceinline__ static int hi() { return 2147483647; }
  __device__ __forceinline__ static int lo() { return -2147483647 - 1; }
};
template <> struct Lim<long long> {
  __device__ __forceinline__ static long long hi() { return 9223372036854775807LL; }
  __device__ __forceinline__ static long long lo() { return -9223372036854775807LL - 1; }
};

__device__ __forceinline__ float vmin(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ float vmax(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double vmin(double a, double b) { return fmin(a, b); }
__device__ __forceinline__ double vmax(double a, double b) { return fmax(a, b); }
__device__ __forceinline__ int vmin(int a, int b) { return min(a, b); }
__device__ __forceinline__ int vmax(int a, int b) { return max(a, b); }
__device__ __forceinline__ long long vmin(long long a, long long b) { return a < b ? a : b; }
__device__ __forceinline__ long long vmax(long long a, long long b) { return a > b ? a : b; }

__device__ __forceinline__ int sat_add(int a, int b) {
  int r;
  asm("add.sat.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
// int64 has no add.sat: wrap, then an overflow (operands of one sign, sum of the other) saturates
__device__ __forceinline__ long long sat_add(long long a, long long b) {
  const long long r = (long long)((unsigned long long)a + (unsigned long long)b);
  if (((a ^ r) & (b ^ r)) < 0) return a < 0 ? Lim<long long>::lo() : Lim<long long>::hi();
  return r;
}
// a * u + b as an IMAD: with u == 1 at run time (read from shared memory, so ptxas cannot fold
// it) the sum goes to the FMA pipe instead of the ALU pipe that every DPX instruction needs
__device__ __forceinline__ int imad(int a, int u, int b) {
  int r;
  asm("mad.lo.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(u), "r"(b));
  return r;
}
__device__ __forceinline__ float plain_add(float a, float b) { return a + b; }
__device__ __forceinline__ double plain_add(double a, double b) { return a + b; }
__device__ __forceinline__ int plain_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ long long plain_add(long long a, long long b) {
  return (long long)((unsigned long long)a + (unsigned long long)b);
}
__device__ __forceinline__ float plain_mul(float a, float b) { return a * b; }
__device__ __forceinline__ double plain_mul(double a, double b) { return a * b; }
__device__ __forceinline__ int plain_mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
__device__ __forceinline__ long long plain_mul(long long a, long long b) {
  return (long long)((unsigned long long)a * (unsigned long long)b);
}

// guarded ⊗: float plus needs no test (inf + x = inf; inf - inf = NaN is ignored by ⊕),
// float times does (-inf * -1 must stay the zero), int32 and int64 always do (the generic template:
// INT_MIN/INT_MAX of the type is absorbing, checked before the saturating add).
template <typename T> __device__ __forceinline__ T gplus(T a, T b, T z) {
  return (a == z || b == z) ? z : sat_add(a, b);
}
template <> __device__ __forceinline__ float gplus<float>(float a, float b, float) { return a + b; }
template <> __device__ __forceinline__ double gplus<double>(double a, double b, double) { return a + b; }
template <typename T> __device__ __forceinline__ T gtimes(T a, T b, T z) {
  return (a == z || b == z) ? z : plain_mul(a, b);
}

template <typename T> struct IsFloat { static constexpr bool value = false; };
template <> struct IsFloat<float> { static constexpr bool value = true; };
template <> struct IsFloat<double> { static constexpr bool value = true; };
template <typename T> struct IsInt32 { static constexpr bool value = false; };
template <> struct IsInt32<int> { static constexpr bool value = true; };

// Guard hoisting (the tiled kernel): an integer plus or a times needs a per-term guard
// (`a == zero || b == zero`, saturation), but a k-slab whose operands all pass `fast_ok` gives the
// same terms without it, through `fma_fast`: the block decides once per slab (__syncthreads_and).
// int32 plus: |x| < 2^30 on both sides, so a + b cannot wrap or reach the zero: Hopper's DPX
// max(a + b, acc) in one instruction. integer times: neither operand is the zero, so the plain
// product is the guarded one. (Float times need no decision: their zero is loaded as a NaN.)
__device__ __forceinline__ bool plus_fast_ok(int x) { return x > -(1 << 30) && x < (1 << 30); }
__device__ __forceinline__ bool plus_fast_ok(long long x) { return x > -(1LL << 62) && x < (1LL << 62); }
__device__ __forceinline__ int fast_max_plus(int acc, int a, int b) { return __viaddmax_s32(a, b, acc); }
__device__ __forceinline__ int fast_min_plus(int acc, int a, int b) { return __viaddmin_s32(a, b, acc); }
__device__ __forceinline__ long long fast_max_plus(long long acc, long long a, long long b) { return vmax(acc, a + b); }
__device__ __forceinline__ long long fast_min_plus(long long acc, long long a, long long b) { return vmin(acc, a + b); }

// Default members every semiring functor shares (CRTP).
template <typename T, class D> struct Base {
  typedef T type;
  // kSplit: the functor has a guard-free fast path (fast_ok / fma_fast, see above)
  static constexpr bool kSplit = false;
  // kPair: fma2 folds two terms into acc with one 3-input instruction (see MaxMin / MinMax)
  static constexpr bool kPair = false;
  __device__ __forceinline__ static T fma2(T acc, T a0, T b0, T a1, T b1) {
    return D::fma(D::fma(acc, a0, b0), a1, b1);
  }
  __device__ __forceinline__ static bool fast_ok(T) { return true; }
  // kMask: a third slab body for operands that are the zero or pass fast_ok (see TropPlus)
  static constexpr bool kMask = false;
  // kRunArg: argmax keeps one running ⊕ (no chunk accumulator; see sr_gemm's chunk and PlusDpxR)
  static constexpr bool kRunArg = false;
  // kArgGroup: how sr_gemm's argmax epilogue finds the first k of the winning chunk. 0: a loop
  // over the chunk's terms, one dependent load pair a term until the first match, output after
  // output. G > 0: every output's value and c first, then the searches in a rolled loop that loads
  // G terms at once (chunk_first). -1: no search, the index is the chunk's start (a bench's
  // diagnostic only: not the contract's index). PlusDpxRE (G 4) is the library's dpxw_small_arg
  // since session 8; PlusDpxE, RE's other G and -1 are bench-only. Integer functors only: this path
  // stores the accumulator's bits, where a float's ±0 tie would need the first term's (sr_gemm).
  static constexpr int kArgGroup = 0;
  // kArgZeroPass: the host runs the zero-sign pass (backends/cuda/zero_sign.py) after this
  // functor's argmax GEMM, so a float kArgGroup epilogue may store acc's bits: a ±0 tie's sign is
  // the pass's to order, whichever zero the accumulator held. Bench-only (ArgForm's G) so far.
  static constexpr bool kArgZeroPass = false;
  // kArgMove: argmax's chunk-end update as one compare and moves predicated on it (arg_move, on
  // the FMA pipe) instead of the compiler's FSEL / SEL (ALU pipe). Float ⊕ min / max only; the
  // bench-only wrapper ArgForm sets it (gemm_cuda_notes.md, session 9), no library functor does.
  static constexpr bool kArgMove = false;
  __device__ __forceinline__ static bool mask_ok(T) { return true; }
  __device__ __forceinline__ static T mask_of(T x) { return x; }
  __device__ __forceinline__ static T fma2_mask(T acc, T a0, T b0, T, T, T a1, T b1, T, T, T) {
    return D::fma2(acc, a0, b0, a1, b1);
  }
  __device__ __forceinline__ static T fma_fast(T acc, T a, T b) { return D::fma(acc, a, b); }
  __device__ __forceinline__ static T fma(T acc, T a, T b) { return D::add(acc, D::mul(a, b)); }
  __device__ __forceinline__ static T load_map(T x) { return x; }
  __device__ __forceinline__ static T store_map(T x) { return x; }
  __device__ __forceinline__ static T acc_init() { return D::load_map(D::zero()); }
  // the first term of an argmax chunk: fma(acc_init(), a, b); functors override it without the ⊕
  __device__ __forceinline__ static T first(T a, T b) { return D::fma(D::acc_init(), a, b); }
  __device__ __forceinline__ static T first_fast(T a, T b) { return D::fma_fast(D::acc_init(), a, b); }
  // strict improvement of v over acc under ⊕ (argmax keeps the first, i.e. smallest, k)
  __device__ __forceinline__ static bool better(T v, T acc) { return D::add(v, acc) == v && v != acc; }
};

// min_plus (MAX false) / max_plus (MAX true). int32 has a third slab body besides the DPX one and
// the guarded one (kMask): a slab whose operands are all the zero or |x| < 2^30 runs
// fma2_mask on the raw values plus masks built once per element in the shared-memory store
// (mask_of: the zero -> the zero, anything else -> the other extreme). The wrapped sum a + b is
// clamped by both masks in one 3-input DPX instruction, so a term with the zero is exactly the
// zero (the identity of ⊕, it never wins) and any other term is the exact sum (no wrap below 2^30).
template <typename T, bool MAX> struct TropPlus : Base<T, TropPlus<T, MAX> > {
  __device__ __forceinline__ static T zero() { return MAX ? Lim<T>::lo() : Lim<T>::hi(); }
  __device__ __forceinline__ static T one() { return (T)0; }
  __device__ __forceinline__ static T add(T x, T y) { return MAX ? vmax(x, y) : vmin(x, y); }
  __device__ __forceinline__ static T mul(T a, T b) { return gplus(a, b, zero()); }
  __device__ __forceinline__ static bool better(T v, T acc) { return MAX ? v > acc : v < acc; }
  static constexpr bool kSplit = !IsFloat<T>::value;
  __device__ __forceinline__ static bool fast_ok(T x) {
    if constexpr (IsFloat<T>::value) return true; else return plus_fast_ok(x);
  }
  __device__ __forceinline__ static T fma_fast(T acc, T a, T b) {
    if constexpr (IsFloat<T>::value) return add(acc, a + b);
    else return MAX ? fast_max_plus(acc, a, b) : fast_min_plus(acc, a, b);
  }
  // zero ⊕ x == x for every product but a float NaN one (inf - inf), which then starts the chunk
  // in place of the zero: fminf/fmaxf drop it at the next term and `better` is false for it, so
  // the chunk's value and winner are the same (argmax chunks, sr_gemm)
  __device__ __forceinline__ static T first(T a, T b) { return mul(a, b); }
  __device__ __forceinline__ static T first_fast(T a, T b) { return a + b; }  // int: |x| < 2^30
  static constexpr bool kMask = IsInt32<T>::value;
  __device__ __forceinline__ static bool mask_ok(T x) { return x == zero() || fast_ok(x); }
  __device__ __forceinline__ static T mask_of(T x) {
    return x == zero() ? zero() : MAX ? Lim<T>::hi() : Lim<T>::lo();
  }
  __device__ __forceinline__ static T fma2_mask(T acc, T a0, T b0, T m0, T n0, T a1, T b1, T m1, T n1,
                                                 T u) {
    if constexpr (IsInt32<T>::value) {
      const int s0 = imad(a0, u, b0), s1 = imad(a1, u, b1);
      return MAX ? __vimax3_s32(acc, __vimin3_s32(s0, m0, n0), __vimin3_s32(s1, m1, n1))
                 : __vimin3_s32(acc, __vimax3_s32(s0, m0, n0), __vimax3_s32(s1, m1, n1));
    } else {
      return Base<T, TropPlus<T, MAX> >::fma2(acc, a0, b0, a1, b1);
    }
  }
};
template <typename T> using MinPlus = TropPlus<T, false>;
template <typename T> using MaxPlus = TropPlus<T, true>;
// min_times / max_times. Floats (ZN): the zero enters shared memory as a NaN (load_map), so every
// term is the plain product: a zero operand gives NaN * x = NaN, which fminf/fmaxf drop and
// `better` never takes, exactly as the guarded term (the zero, the identity of ⊕) would; the
// accumulators start at the zero itself (acc_init), so acc never holds a NaN (an argmax chunk's
// slab value may, and never wins) and nothing maps back.
// No per-slab test, no block vote: the k-loop is min_plus's with FMUL for FADD, plus one select per
// element stored (the API refuses NaN operands, so a NaN can only be a mapped zero or 0 * inf,
// which already counted as the zero). Integers (no NaN): a slab without the zero runs the plain
// product (fma_fast), decided per slab (kSplit, __syncthreads_and), the guarded product otherwise.
// NZ: the host knows that neither operand holds the zero (its facts), so no element needs the map
// (exact only under that precondition; the padding's zero * one is still the zero).
template <typename T, bool MAX, bool NZ = false> struct TropTimes : Base<T, TropTimes<T, MAX, NZ> > {
  static constexpr bool kZN = IsFloat<T>::value && !NZ;
  __device__ __forceinline__ static T zero() { return MAX ? Lim<T>::lo() : Lim<T>::hi(); }
  __device__ __forceinline__ static T one() { return (T)1; }
  __device__ __forceinline__ static T add(T x, T y) { return MAX ? vmax(x, y) : vmin(x, y); }
  __device__ __forceinline__ static T mul(T a, T b) {
    return NZ || kZN ? plain_mul(a, b) : gtimes(a, b, zero());
  }
  static constexpr bool kSplit = !NZ && !kZN;
  __device__ __forceinline__ static T load_map(T x) {
    if constexpr (kZN) return x == zero() ? Lim<T>::nan() : x; else return x;
  }
  __device__ __forceinline__ static T acc_init() { return zero(); }
  __device__ __forceinline__ static bool fast_ok(T x) { return x != zero(); }
  __device__ __forceinline__ static T fma_fast(T acc, T a, T b) { return add(acc, plain_mul(a, b)); }
  __device__ __forceinline__ static bool better(T v, T acc) { return MAX ? v > acc : v < acc; }
  // as TropPlus::first (a NaN product, 0 * inf or a mapped zero, may start a chunk; it never wins)
  __device__ __forceinline__ static T first(T a, T b) { return mul(a, b); }
  __device__ __forceinline__ static T first_fast(T a, T b) { return plain_mul(a, b); }
};
template <typename T> using MinTimes = TropTimes<T, false>;
template <typename T> using MaxTimes = TropTimes<T, true>;
template <typename T> using MinTimesNZ = TropTimes<T, false, true>;
template <typename T> using MaxTimesNZ = TropTimes<T, true, true>;
static_assert(!MaxTimes<float>::kSplit && !MinTimes<double>::kSplit && MaxTimes<int>::kSplit,
              "float times map the zero to NaN (no per-slab test); integer times keep the test");
// min/max (both ⊕ and ⊗ on the ALU pipe's half-rate FMNMX/IMNMX): on int32, two terms fold with
// Hopper's 3-input __vimin3_s32 / __vimax3_s32 (emulated before sm_90): 3 instructions for 2 terms.
template <typename T> struct MinMax : Base<T, MinMax<T> > {
  __device__ __forceinline__ static T zero() { return Lim<T>::hi(); }
  __device__ __forceinline__ static T one() { return Lim<T>::lo(); }
  __device__ __forceinline__ static T add(T x, T y) { return vmin(x, y); }
  __device__ __forceinline__ static T mul(T a, T b) { return vmax(a, b); }
  __device__ __forceinline__ static T first(T a, T b) { return mul(a, b); }  // no NaN operands
  __device__ __forceinline__ static bool better(T v, T acc) { return v < acc; }
  static constexpr bool kPair = IsInt32<T>::value;
  __device__ __forceinline__ static T fma2(T acc, T a0, T b0, T a1, T b1) {
    if constexpr (IsInt32<T>::value) return __vimin3_s32(acc, max(a0, b0), max(a1, b1));
    else return add(add(acc, mul(a0, b0)), mul(a1, b1));
  }
};
template <typename T> struct MaxMin : Base<T, MaxMin<T> > {
  __device__ __forceinline__ static T zero() { return Lim<T>::lo(); }
  __device__ __forceinline__ static T one() { return Lim<T>::hi(); }
  __device__ __forceinline__ static T add(T x, T y) { return vmax(x, y); }
  __device__ __forceinline__ static T mul(T a, T b) { return vmin(a, b); }
  __device__ __forceinline__ static T first(T a, T b) { return mul(a, b); }  // no NaN operands
  __device__ __forceinline__ static bool better(T v, T acc) { return v > acc; }
  static constexpr bool kPair = IsInt32<T>::value;
  __device__ __forceinline__ static T fma2(T acc, T a0, T b0, T a1, T b1) {
    if constexpr (IsInt32<T>::value) return __vimax3_s32(acc, min(a0, b0), min(a1, b1));
    else return add(add(acc, mul(a0, b0)), mul(a1, b1));
  }
};
// float32 max_min (MAX) / min_max for the tiled kernel without argmax: operands enter shared memory
// as order-preserving int keys (load_map; NaN never reaches a kernel: the API refuses NaN operands),
// so the k-loop runs the int32 3-input path; store_map turns the result back into the float.
// add stays the float ⊕ (the epilogue's c and sr_combine see floats). -0.0 orders below +0.0 as a
// key; both compare equal as floats, so the result equals the float fold's value.
// (negative: the magnitude bits flipped; as a shift and one LOP3, not a compare and a select)
__device__ __forceinline__ int fkey(float x) {
  const int b = __float_as_int(x);
  return b ^ ((b >> 31) & 0x7fffffff);
}
__device__ __forceinline__ float funkey(int k) { return __int_as_float(k ^ ((k >> 31) & 0x7fffffff)); }
template <bool MAX> struct KeyMinMax : Base<float, KeyMinMax<MAX> > {
  __device__ __forceinline__ static float zero() { return MAX ? Lim<float>::lo() : Lim<float>::hi(); }
  __device__ __forceinline__ static float one() { return MAX ? Lim<float>::hi() : Lim<float>::lo(); }
  __device__ __forceinline__ static float add(float x, float y) { return MAX ? fmaxf(x, y) : fminf(x, y); }
  __device__ __forceinline__ static float load_map(float x) { return __int_as_float(fkey(x)); }
  __device__ __forceinline__ static float store_map(float x) { return funkey(__float_as_int(x)); }
  __device__ __forceinline__ static float fma(float acc, float a, float b) {
    const int x = __float_as_int(acc), p = __float_as_int(a), q = __float_as_int(b);
    return __int_as_float(MAX ? max(x, min(p, q)) : min(x, max(p, q)));
  }
  static constexpr bool kPair = true;
  __device__ __forceinline__ static float fma2(float acc, float a0, float b0, float a1, float b1) {
    const int x = __float_as_int(acc);
    const int p0 = __float_as_int(a0), q0 = __float_as_int(b0);
    const int p1 = __float_as_int(a1), q1 = __float_as_int(b1);
    return __int_as_float(MAX ? __vimax3_s32(x, min(p0, q0), min(p1, q1))
                              : __vimin3_s32(x, max(p0, q0), max(p1, q1)));
  }
};
template <typename T> struct PlusTimes : Base<T, PlusTimes<T> > {
  __device__ __forceinline__ static T zero() { return (T)0; }
  __device__ __forceinline__ static T one() { return (T)1; }
  __device__ __forceinline__ static T add(T x, T y) { return plain_add(x, y); }
  __device__ __forceinline__ static T mul(T a, T b) { return plain_mul(a, b); }
};
template <typename T> struct BorBand : Base<T, BorBand<T> > {
  __device__ __forceinline__ static T zero() { return (T)0; }
  __device__ __forceinline__ static T one() { return (T)~(T)0; }
  __device__ __forceinline__ static T add(T x, T y) { return x | y; }
  __device__ __forceinline__ static T mul(T a, T b) { return a & b; }
};
template <typename T> struct BxorBand : Base<T, BxorBand<T> > {
  __device__ __forceinline__ static T zero() { return (T)0; }
  __device__ __forceinline__ static T one() { return (T)~(T)0; }
  __device__ __forceinline__ static T add(T x, T y) { return x ^ y; }
  __device__ __forceinline__ static T mul(T a, T b) { return a & b; }
};

// int32 max_plus / min_plus through Hopper's DPX (__viaddmax_s32: max(a + b, c) in one
// instruction; emulated before sm_90). Exact only when the host has checked that every operand
// other than the zero satisfies |x| < 2^28: the zero is mapped on load to the sentinel -2^30
// (max) or 2^30 - 1 (min), so no sum wraps, every sum involving a zero lies below -2^29 (above 2^29 for min) and maps back.
// W ("dpxw_"): no sentinel, identity maps. Exact only when the host knows that neither operand
// holds the zero and every |x| < 2^30: each sum then lies strictly inside the int32 range (no
// wrap, never the zero, so it is the saturating guarded one); the only zero a k-loop meets is the
// padding's, A's zero + B's one (0) = the zero exactly, which ⊕ drops (acc starts at the zero).
template <bool MAX, bool W = false> struct PlusDpx : Base<int, PlusDpx<MAX, W> > {
  __device__ __forceinline__ static int zero() { return MAX ? Lim<int>::lo() : Lim<int>::hi(); }
  __device__ __forceinline__ static int one() { return 0; }
  __device__ __forceinline__ static int add(int x, int y) { return MAX ? max(x, y) : min(x, y); }
  __device__ __forceinline__ static int mul(int a, int b) { return a + b; }
  __device__ __forceinline__ static int fma(int acc, int a, int b) {
    return MAX ? __viaddmax_s32(a, b, acc) : __viaddmin_s32(a, b, acc);
  }
  __device__ __forceinline__ static int load_map(int x) {
    return W || x != zero() ? x : MAX ? -(1 << 30) : (1 << 30) - 1;
  }
  __device__ __forceinline__ static int store_map(int x) {
    return !W && (MAX ? x < -(1 << 29) : x > (1 << 29)) ? zero() : x;
  }
  __device__ __forceinline__ static bool better(int v, int acc) { return MAX ? v > acc : v < acc; }
};
typedef PlusDpx<true> MaxPlusDpx;
typedef PlusDpx<false> MinPlusDpx;
typedef PlusDpx<true, true> MaxPlusDpxW;
typedef PlusDpx<false, true> MinPlusDpxW;
// R: W with the running-best argmax (kRunArg; session 7's notes). Alone bench-only; the library's
// dpxw_small_arg runs it as RE (below).
// The k-loop folds every term into acc with the DPX instruction (no chunk accumulator, so no ⊕ of
// it into acc a chunk: that ⊕ is the next chunk's first DPX term); a chunk ends with acc compared
// to its value at the chunk's start (kept in sacc), and the chunk is remembered when acc grew.
// The running best first reaches its final value in the last chunk where it grew, at the first k
// of the whole range whose term equals it: the same (value, smallest k) as the chunk form.
template <bool MAX> struct PlusDpxR : PlusDpx<MAX, true> {
  static constexpr bool kRunArg = true;
};
typedef PlusDpxR<true> MaxPlusDpxR;
typedef PlusDpxR<false> MinPlusDpxR;
// E / RE: W and R with the argmax epilogue's search in groups of G terms loaded at once
// (kArgGroup; gemm_cuda_notes.md session 8 s8i32; RE with G 4 is "dpxw_small_arg", E and RE's
// other G bench-only): the default search costs each
// thread ~16 x 8.5 dependent memory round trips after its k-loop, while its SM holds only the
// other block.
template <bool MAX, int G = 4> struct PlusDpxE : PlusDpx<MAX, true> {
  static constexpr int kArgGroup = G;
};
template <bool MAX, int G = 4> struct PlusDpxRE : PlusDpxR<MAX> {
  static constexpr int kArgGroup = G;
};
typedef PlusDpxE<true> MaxPlusDpxE;
typedef PlusDpxE<false> MinPlusDpxE;
typedef PlusDpxRE<true> MaxPlusDpxRE;
typedef PlusDpxRE<false> MinPlusDpxRE;

// ArgForm<F, R, M>: the float32 min/max ⊕ functor F (TropPlus, TropTimes: ZN or NZ) with another
// argmax loop, bench-only (gemm_cuda_notes.md, session 9; no role uses it). R: the running best
// (kRunArg, as PlusDpxR): every term folds into acc, a chunk is remembered where acc grew. M
// (kArgMove): the chunk-end update through arg_move. The same (value, first k) as F's own loop:
// the epilogue, its serial search and the bits it stores are F's.
// AddIsMax<F>::value: F's ⊕ is max (its `better` is >), else min
template <class F> struct AddIsMax;
template <typename T, bool MAX> struct AddIsMax<TropPlus<T, MAX> > { static constexpr bool value = MAX; };
template <typename T, bool MAX, bool NZ> struct AddIsMax<TropTimes<T, MAX, NZ> > {
  static constexpr bool value = MAX;
};
template <class F, bool R, bool M, int G = 0> struct ArgForm : F {
  static_assert(IsFloat<typename F::type>::value && sizeof(typename F::type) == 4, "float32 only");
  static constexpr bool kMax = AddIsMax<F>::value;  // ⊕ is max: `better` is >, else <
  static constexpr bool kRunArg = R;
  static constexpr bool kArgMove = M;
  static constexpr int kArgGroup = G;  // G > 0: the grouped epilogue search (session 12, s12z)
  static constexpr bool kArgZeroPass = G != 0;
};

// ---------------------------------------------------------------------------- vector loads
// 4 consecutive elements; the caller guarantees 16-byte alignment.
template <typename T> struct V4 {
  __device__ __forceinline__ static void load(const T* p, T* v) {
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = p[j];
  }
};
#define PTG_V4_32(T, V4T)                                                                     \
  template <> struct V4<T> {                                                                  \
    __device__ __forceinline__ static void load(const T* p, T* v) {                           \
      const V4T t = *reinterpret_cast<const V4T*>(p);                                         \
      v[0] = t.x; v[1] = t.y; v[2] = t.z; v[3] = t.w;                                         \
    }                                                                                         \
  };
#define PTG_V4_64(T, V2)                                                                      \
  template <> struct V4<T> {                                                                  \
    __device__ __forceinline__ static void load(const T* p, T* v) {                           \
      const V2 t0 = *reinterpret_cast<const V2*>(p);                                          \
      const V2 t1 = *reinterpret_cast<const V2*>(p + 2);                                      \
      v[0] = t0.x; v[1] = t0.y; v[2] = t1.x; v[3] = t1.y;                                     \
    }                                                                                         \
  };
PTG_V4_32(float, float4)
PTG_V4_32(int, int4)
PTG_V4_32(unsigned, uint4)
PTG_V4_64(double, double2)
PTG_V4_64(long long, longlong2)
PTG_V4_64(unsigned long long, ulonglong2)
#undef PTG_V4_32
#undef PTG_V4_64

// ---------------------------------------------------------------------------- tiled kernel
// Block tile BM x BN, k-slab BK, each thread TM x TN outputs held in registers, split in
// 4-wide chunks BM/(TM/4) apart (conflict-free 16-byte shared loads). Double-buffered shared
// memory with a register prefetch of the next slab: one __syncthreads per slab.
// A: (batch, m, k), B: (batch, k, n), C, D: (batch, m, n), IDX int32; sA/sB/sC are the batch
// strides in elements (0 broadcasts). vec != 0: k % 4 == 0 and n % 4 == 0 (16-byte loads).
// Split k: blockIdx.z = batch entry * ks + part; part p covers k in [p * kc, (p + 1) * kc) (kc a
// multiple of BK) and writes D/IDX slice blockIdx.z (the host passes C only when ks == 1 and
// combines the parts with sr_combine: ⊕ is associative and commutative for builtin semirings).
// Guards: for a functor with kSplit, each slab is checked once (every operand fast_ok, block-wide)
// and then runs the guard-free fma_fast; the others run the guarded fma.
// Argmax: each chunk of AK terms (AK / BK slabs; one slab when BK >= AK) is reduced on its own
// (plain ⊕, no index per term; its first term starts the reduction without the ⊕: SR::first) and
// replaces the running best only when strictly better, remembering the chunk; the epilogue
// recomputes the winning chunk's terms from global memory and takes the first k whose term equals
// the best: the same (value, smallest k) as a per-term strict comparison, since that first k lies
// in the first chunk that reached the final value. A longer chunk spreads the compare and the two
// selects per output (ALU-pipe instructions, as every ⊕) over more terms, but its unrolled slab
// bodies measured slower on the H200 (AK 32: -6 %, AK 64: -13 % against AK 16 with BK 16; notes,
// session 4): the default is one slab.
// MODE: 0 the guarded fma, 1 fma_fast (kSplit), 2 fma2_mask with the masks Am / Bm (kMask).
// FIRST: acc holds nothing yet (the first slab of an argmax chunk).
template <bool B> struct Flag { static constexpr bool value = B; };
template <class SR, int MODE, int BK, int BM, int BN, int TM, int TN, bool FIRST = false>
__device__ __forceinline__ void slab_mma(typename SR::type (&acc)[TM][TN],
                                         const typename SR::type (&As)[BK][BM],
                                         const typename SR::type (&Bs)[BK][BN],
                                         const typename SR::type* Am, const typename SR::type* Bm,
                                         typename SR::type u, int ty, int tx) {
  typedef typename SR::type T;
  constexpr int CM = TM / 4, CN = TN / 4, SM = BM / CM, SN = BN / CN;
  if constexpr (FIRST && (MODE == 2 || SR::kPair)) {  // the pair bodies fold into the zero
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = SR::acc_init();
  }
  if constexpr (MODE == 2) {  // two k at a time, values and masks
#pragma unroll
    for (int kk = 0; kk < BK; kk += 2) {
      T a[2][TM], b[2][TN], ma[2][TM], mb[2][TN];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int c = 0; c < CM; ++c) {
          V4<T>::load(&As[kk + h][c * SM + ty * 4], a[h] + 4 * c);
          V4<T>::load(Am + (kk + h) * BM + c * SM + ty * 4, ma[h] + 4 * c);
        }
#pragma unroll
        for (int c = 0; c < CN; ++c) {
          V4<T>::load(&Bs[kk + h][c * SN + tx * 4], b[h] + 4 * c);
          V4<T>::load(Bm + (kk + h) * BN + c * SN + tx * 4, mb[h] + 4 * c);
        }
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
          acc[i][j] = SR::fma2_mask(acc[i][j], a[0][i], b[0][j], ma[0][i], mb[0][j], a[1][i], b[1][j],
                                    ma[1][i], mb[1][j], u);
    }
  } else if constexpr (SR::kPair) {  // two k at a time: one 3-input fold per output
#pragma unroll
    for (int kk = 0; kk < BK; kk += 2) {
      T a[2][TM], b[2][TN];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int c = 0; c < CM; ++c) V4<T>::load(&As[kk + h][c * SM + ty * 4], a[h] + 4 * c);
#pragma unroll
        for (int c = 0; c < CN; ++c) V4<T>::load(&Bs[kk + h][c * SN + tx * 4], b[h] + 4 * c);
      }
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = SR::fma2(acc[i][j], a[0][i], b[0][j], a[1][i], b[1][j]);
    }
  } else {
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      T a[TM], b[TN];
#pragma unroll
      for (int c = 0; c < CM; ++c) V4<T>::load(&As[kk][c * SM + ty * 4], a + 4 * c);
#pragma unroll
      for (int c = 0; c < CN; ++c) V4<T>::load(&Bs[kk][c * SN + tx * 4], b + 4 * c);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
          if (FIRST && kk == 0)
            acc[i][j] = MODE == 1 ? SR::first_fast(a[i], b[j]) : SR::first(a[i], b[j]);
          else
            acc[i][j] = MODE == 1 ? SR::fma_fast(acc[i][j], a[i], b[j]) : SR::fma(acc[i][j], a[i], b[j]);
        }
    }
  }
}

// ---------------------------------------------------------------------------- slab loads
// One slab prefetch, shared by sr_gemm and sr_gemm_units (cuda/semiring_gemm_units.cu) so the
// padding rule has one home: this thread's 4-vectors of the A and B slabs at k0 (k0 < ke) into ra,
// rb. Vector q (e = tid + q * NT): A row m0 + e / (BK/4), k offset 4 (e % (BK/4)); B k-row
// e / (BN/4), column n0 + 4 (e % (BN/4)). Padding (KERNELS.md): A elements beyond ke hold the zero
// z, B elements the one o, so a padded term is zero ⊗ one = zero whether or not the zero is
// absorbing; rows beyond m and columns beyond n feed no stored output and hold the one (so they
// never force a slab onto the guarded path). pa, pb: this thread's first 4-vectors of the slab,
// advanced here to the next one (step_b = BK * n; the others lie a fixed distance after them).
// inside: an interior block (every row and column inside, 16-byte loads), where a full slab needs
// no bound tests. EV: the edge path also loads 16 bytes where vec (k % 4 == 0 and n % 4 == 0;
// sr_gemm), else scalars (sr_gemm_units). The operands come by reference, as the kernels' load
// lambdas captured them: taken by value, the units kernel compiled to other code (4,382 -> 4,397
// instructions); so, every kernel's SASS is byte for byte what it was with the body in its own
// lambda (benchmarks/sass_compare.py, session 7).
template <class T, int BK, int BN, int NT, int LA, int LB, bool EV>
__device__ __forceinline__ void slab_load(T (&ra)[LA][4], T (&rb)[LB][4], const T*& pa, const T*& pb,
                                          const T* __restrict__ const& A,
                                          const T* __restrict__ const& B, const i64& m, const i64& n,
                                          const i64& k, const i64& m0, const i64& n0, i64 k0,
                                          const i64& ke, const i64& step_b, const bool& inside,
                                          const int& vec, const int& tid, const T& z, const T& o) {
  const T* a0 = pa;
  const T* b0 = pb;
  pa += BK;
  pb += step_b;
  if (inside && k0 + BK <= ke) {
#pragma unroll
    for (int q = 0; q < LA; ++q) V4<T>::load(a0 + q * (NT / (BK / 4)) * k, ra[q]);
#pragma unroll
    for (int q = 0; q < LB; ++q) V4<T>::load(b0 + q * (NT / (BN / 4)) * n, rb[q]);
    return;
  }
#pragma unroll
  for (int q = 0; q < LA; ++q) {
    const int e = tid + q * NT;
    const i64 row = m0 + e / (BK / 4), kk = k0 + (e % (BK / 4)) * 4;
    if (EV && vec) {
      if (row < m && kk < ke) V4<T>::load(A + row * k + kk, ra[q]);
      else {
        const T p = kk < ke ? o : z;
        ra[q][0] = p; ra[q][1] = p; ra[q][2] = p; ra[q][3] = p;
      }
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        ra[q][j] = kk + j >= ke ? z : row < m ? A[row * k + kk + j] : o;
    }
  }
#pragma unroll
  for (int q = 0; q < LB; ++q) {
    const int e = tid + q * NT;
    const i64 krow = k0 + e / (BN / 4), col = n0 + (e % (BN / 4)) * 4;
    if (EV && vec) {
      if (krow < ke && col < n) V4<T>::load(B + krow * n + col, rb[q]);
      else { rb[q][0] = o; rb[q][1] = o; rb[q][2] = o; rb[q][3] = o; }
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) rb[q][j] = (krow < ke && col + j < n) ? B[krow * n + col + j] : o;
    }
  }
}

// One slab store, shared by sr_gemm and sr_gemm_units: this thread's prefetched 4-vectors ra, rb
// (slab_load) into the shared slabs as (A, k-major) and bs (B), each element mapped by
// SR::load_map; true when every one passes SR::fast_ok (kSplit). MK: also each element's
// SR::mask_of into the mask slabs *am, *bm, and *wild set when one fails SR::mask_ok (the units
// kernel has no masks and leaves them out). Both kernels' SASS is byte for byte what it was with
// the body in their own store lambdas (benchmarks/sass_compare.py, session 7).
template <class SR, int BM, int BN, int BK, int NT, int LA, int LB, bool MK = false, class MA = int,
          class MB = int>
__device__ __forceinline__ bool slab_store(const typename SR::type (&ra)[LA][4],
                                           const typename SR::type (&rb)[LB][4],
                                           typename SR::type (&as)[BK][BM],
                                           typename SR::type (&bs)[BK][BN], const int& tid,
                                           bool* wild = nullptr, MA* am = nullptr, MB* bm = nullptr) {
  typedef typename SR::type T;
  bool ok = true;
#pragma unroll
  for (int q = 0; q < LA; ++q) {
    const int e = tid + q * NT, r = e / (BK / 4), c = (e % (BK / 4)) * 4;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const T v = SR::load_map(ra[q][j]);
      if (SR::kSplit) ok = ok && SR::fast_ok(v);
      as[c + j][r] = v;
      if constexpr (MK) {
        *wild = *wild || !SR::mask_ok(v);
        (*am)[c + j][r] = SR::mask_of(v);
      }
    }
  }
#pragma unroll
  for (int q = 0; q < LB; ++q) {
    const int e = tid + q * NT, r = e / (BN / 4), c = (e % (BN / 4)) * 4;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const T v = SR::load_map(rb[q][j]);
      if (SR::kSplit) ok = ok && SR::fast_ok(v);
      bs[r][c + j] = v;
      if constexpr (MK) {
        *wild = *wild || !SR::mask_ok(v);
        (*bm)[r][c + j] = SR::mask_of(v);
      }
    }
  }
  return ok;
}

// kArgGroup G > 0: the first k in [w, min(w + N, ke)) whose term equals v (-1 if none), G terms a
// memory round trip: A's G terms as 16-byte loads where vec and the group lies inside ke (w is a
// multiple of 4: kb and the chunks are whole slabs), B's as G independent loads; beyond ke, A's
// scalar load is clamped to ke - 1, B is not read and the term never matches.
template <class SR, int N, int G>
__device__ __forceinline__ int chunk_first(const typename SR::type* __restrict__ A,
                                           const typename SR::type* __restrict__ B, i64 row, i64 col,
                                           i64 k, i64 n, i64 w, i64 ke, typename SR::type v, int vec) {
  typedef typename SR::type T;
  static_assert(N % G == 0, "whole groups");
  const T* a = A + row * k;
#pragma unroll 1
  for (int g = 0; g < N; g += G) {
    const i64 k0 = w + g;
    if (k0 >= ke) break;
    T av[G];
    if (G % 4 == 0 && vec && k0 + G <= ke) {
#pragma unroll
      for (int c = 0; c < G; c += 4) V4<T>::load(a + k0 + c, av + c);
    } else {
#pragma unroll
      for (int t = 0; t < G; ++t) av[t] = a[k0 + t < ke ? k0 + t : ke - 1];
    }
    int id = -1;
#pragma unroll
    for (int t = G - 1; t >= 0; --t) {
      const i64 kk = k0 + t < ke ? k0 + t : ke - 1;
      if (k0 + t < ke && SR::mul(SR::load_map(av[t]), SR::load_map(B[kk * n + col])) == v)
        id = (int)(k0 + t);
    }
    if (id >= 0) return id;
  }
  return -1;
}

// kArgMove (ArgForm's M): where s is strictly better than acc (SR::better: an ordered > for max,
// < for min, so a NaN product never wins), acc takes s's bits and win takes k0, as
// `if (SR::better(s, acc)) { acc = s; win = k0; }` does. Written so because the compiler turns
// that into FSETP, FSEL and SEL, and FSEL / SEL share the ALU pipe (half rate) with the k-loop's
// FMNMX, the pipe that binds: here each move is an IMAD x * nil + y predicated on the FSETP, with
// nil an opaque 0 (from shared memory: ptxas would turn a known 0, or a plain predicated mov,
// into SEL again), which runs on the FMA pipe beside the FMULs. VAL false (the running best): s
// is acc at the chunk's end, acc its value at the start, and only win moves.
template <bool MAX, bool VAL>
__device__ __forceinline__ void arg_move(float& acc, int& win, float s, int k0, int nil) {
  int a = __float_as_int(acc);
  if constexpr (VAL && MAX)
    asm("{\n\t.reg .pred p;\n\tsetp.gt.f32 p, %2, %3;\n\t@p mad.lo.u32 %0, %0, %5, %4;"
        "\n\t@p mad.lo.u32 %1, %1, %5, %6;\n\t}"
        : "+r"(a), "+r"(win) : "f"(s), "f"(acc), "r"(__float_as_int(s)), "r"(nil), "r"(k0));
  else if constexpr (VAL)
    asm("{\n\t.reg .pred p;\n\tsetp.lt.f32 p, %2, %3;\n\t@p mad.lo.u32 %0, %0, %5, %4;"
        "\n\t@p mad.lo.u32 %1, %1, %5, %6;\n\t}"
        : "+r"(a), "+r"(win) : "f"(s), "f"(acc), "r"(__float_as_int(s)), "r"(nil), "r"(k0));
  else if constexpr (MAX)
    asm("{\n\t.reg .pred p;\n\tsetp.gt.f32 p, %1, %2;\n\t@p mad.lo.u32 %0, %0, %3, %4;\n\t}"
        : "+r"(win) : "f"(s), "f"(acc), "r"(nil), "r"(k0));
  else
    asm("{\n\t.reg .pred p;\n\tsetp.lt.f32 p, %1, %2;\n\t@p mad.lo.u32 %0, %0, %3, %4;\n\t}"
        : "+r"(win) : "f"(s), "f"(acc), "r"(nil), "r"(k0));
  acc = __int_as_float(a);
}

template <class SR, int BM, int BN, int BK, int TM, int TN, int MINB, bool ARG, int AK = 16,
          bool HOT = ARG && sizeof(typename SR::type) == 4>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), MINB)
sr_gemm(const typename SR::type* __restrict__ A, const typename SR::type* __restrict__ B,
        const typename SR::type* __restrict__ C, typename SR::type* __restrict__ D,
        int* __restrict__ IDX, i64 m, i64 n, i64 k, i64 sA, i64 sB, i64 sC, int vec, int ks, i64 kc) {
  typedef typename SR::type T;
  constexpr int NX = BN / TN, NY = BM / TM, NT = NX * NY;
  constexpr int CM = TM / 4, CN = TN / 4;          // 4-wide chunks per thread
  constexpr int SM = BM / CM, SN = BN / CN;        // chunk strides
  constexpr int LA = BM * BK / (4 * NT), LB = BN * BK / (4 * NT);  // 4-vectors loaded per thread
  static_assert(LA >= 1 && LB >= 1 && LA * 4 * NT == BM * BK && LB * 4 * NT == BN * BK,
                "A and B slabs split evenly into 4-vectors over the threads");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "4-wide chunks");
  static_assert((LA == 1 || NT % (BK / 4) == 0) && (LB == 1 || NT % (BN / 4) == 0),
                "a thread's 4-vectors lie whole rows apart (the interior load path)");
  __shared__ __align__(16) T As[2][BK][BM];
  __shared__ __align__(16) T Bs[2][BK][BN];
  // the masked body's arrays and per-slab "wild operand" flag, where they fit the 48 KB of static
  // shared memory beside As / Bs (the 128x128x16 and 128x256x16 tiles keep the guarded body)
  constexpr bool MK = SR::kMask && 4 * BK * (BM + BN) * sizeof(T) <= 48 * 1024 - 64;
  __shared__ __align__(16) T Am[MK ? 2 : 1][MK ? BK : 1][MK ? BM : 4];
  __shared__ __align__(16) T Bm[MK ? 2 : 1][MK ? BK : 1][MK ? BN : 4];
  __shared__ i64 wild_at[2];
  __shared__ T unit;  // the one of integer multiplication, for imad

  const int tid = threadIdx.x;
  const int tx = tid % NX, ty = tid / NX;
  const int zi32 = blockIdx.z, bz32 = zi32 / ks;
  const i64 zi = zi32, bz = bz32;
  const i64 kb = (zi - bz * ks) * kc, ke = kb + kc < k ? kb + kc : k;
  const i64 m0 = (i64)blockIdx.x * BM, n0 = (i64)blockIdx.y * BN;
  A += bz * sA;
  B += bz * sB;
  if (C) C += bz * sC;
  D += zi * m * n;
  if (ARG) IDX += zi * m * n;

  // the slab loads, padding included (KERNELS.md): slab_load, above
  const T z = SR::zero(), o = SR::one();
  T ra[LA][4], rb[LB][4];
  const bool inside = vec && m0 + BM <= m && n0 + BN <= n;
  const T* pa = A + (m0 + tid / (BK / 4)) * k + (tid % (BK / 4)) * 4 + kb;
  const T* pb = B + (kb + tid / (BN / 4)) * n + n0 + (tid % (BN / 4)) * 4;
  const i64 step_b = BK * n;
  auto load = [&](i64 k0) {
    slab_load<T, BK, BN, NT, LA, LB, true>(ra, rb, pa, pb, A, B, m, n, k, m0, n0, k0, ke, step_b,
                                           inside, vec, tid, z, o);
  };
  // writes the prefetched slab k0 to shared buffer buf (slab_store); true when every operand
  // passes fast_ok. kMask: wild_at[buf] = k0 when an operand fails mask_ok (a flag without a
  // reset: stale equal values only send a slab to the guarded body, which is exact anyway)
  auto store = [&](int buf, i64 k0) {
    bool wild = false;
    const bool ok = slab_store<SR, BM, BN, BK, NT, LA, LB, MK>(ra, rb, As[buf], Bs[buf], tid, &wild,
                                                              &Am[MK ? buf : 0], &Bm[MK ? buf : 0]);
    if (MK && wild) wild_at[buf] = k0;
    return ok;
  };
  // the slab body for buffer buf holding slab k0: 1 fast, 2 masked, 0 guarded
  auto sync = [&](bool ok, int buf, i64 k0) -> int {
    if constexpr (SR::kSplit) {
      if (__syncthreads_and(ok)) return 1;
      return MK && wild_at[buf] != k0 ? 2 : 0;
    }
    __syncthreads();
    return 0;
  };
  if constexpr (MK) {
    if (tid == 0) {
      wild_at[0] = wild_at[1] = -1;
      unit = (T)1;
    }
    __syncthreads();
  }
  T u = T();
  if constexpr (MK) {  // an opaque load: neither NVVM nor ptxas may fold u == 1 into the sums
    int v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"((unsigned)__cvta_generic_to_shared(&unit)));
    u = (T)v;
  }

  int nil = 0;  // kArgMove: an opaque 0 (arg_move)
  if constexpr (ARG && SR::kArgMove) {
    if (tid == 0) unit = T();
    __syncthreads();
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(nil) : "r"((unsigned)__cvta_generic_to_shared(&unit))
                 : "memory");
  }

  T acc[TM][TN];
  T sacc[ARG ? TM : 1][ARG ? TN : 1];
  int win[ARG ? TM : 1][ARG ? TN : 1];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      acc[i][j] = SR::acc_init();
      if (ARG) win[ARG ? i : 0][ARG ? j : 0] = -1;
    }

  load(kb);
  int mode = sync(store(0, kb), 0, kb);
  int cur = 0;
  // one slab into a (acc, or sacc with argmax) with the body the block chose
  // fl: Flag<true> for the first slab of an argmax chunk
  // hot: Flag<true> in the fast-only loop (below), where mode == 1 is known
  auto mma = [&](T (&a)[TM][TN], auto fl, auto hot) {
    constexpr bool F = decltype(fl)::value;
    const T* am = MK ? &Am[MK ? cur : 0][0][0] : nullptr;
    const T* bm = MK ? &Bm[MK ? cur : 0][0][0] : nullptr;
    if constexpr (decltype(hot)::value) slab_mma<SR, 1, BK, BM, BN, TM, TN, F>(a, As[cur], Bs[cur], am, bm, u, ty, tx);
    else if (SR::kSplit && mode == 1) slab_mma<SR, 1, BK, BM, BN, TM, TN, F>(a, As[cur], Bs[cur], am, bm, u, ty, tx);
    else if (MK && mode == 2) slab_mma<SR, MK ? 2 : 0, BK, BM, BN, TM, TN, F>(a, As[cur], Bs[cur], am, bm, u, ty, tx);
    else slab_mma<SR, 0, BK, BM, BN, TM, TN, F>(a, As[cur], Bs[cur], am, bm, u, ty, tx);
  };
  // one slab (k0) into acc, or into sacc as slab p of an argmax chunk
  auto slab = [&](i64 k0, auto fl, auto hot) {
    const bool next = k0 + BK < ke;
    if (next) load(k0 + BK);
    if constexpr (ARG && SR::kRunArg) mma(acc, Flag<false>(), hot);
    else if constexpr (ARG) mma(sacc, fl, hot);
    else mma(acc, Flag<false>(), hot);
    if (next) {
      mode = sync(store(cur ^ 1, k0 + BK), cur ^ 1, k0 + BK);
      cur ^= 1;
    }
  };
  constexpr int AP = ARG && AK > BK ? AK / BK : 1;  // slabs per argmax chunk
  static_assert(!ARG || AK <= BK || AK % BK == 0, "an argmax chunk holds whole slabs");
  // one chunk (AP slabs from k0) and, with argmax, its update of the running best
  auto chunk = [&](i64 k0, auto hot) {
    if constexpr (ARG && SR::kRunArg) {  // sacc: acc at the chunk's start
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) sacc[ARG ? i : 0][ARG ? j : 0] = acc[i][j];
    }
    slab(k0, Flag<true>(), hot);
#pragma unroll
    for (int p = 1; p < AP; ++p)
      if (k0 + p * BK < ke) slab(k0 + p * BK, Flag<false>(), hot);
    if constexpr (ARG) {
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
          if constexpr (SR::kArgMove && SR::kRunArg) {
            arg_move<SR::kMax, false>(sacc[i][j], win[i][j], acc[i][j], (int)k0, nil);
          } else if constexpr (SR::kArgMove) {
            arg_move<SR::kMax, true>(acc[i][j], win[i][j], sacc[i][j], (int)k0, nil);
          } else if constexpr (SR::kRunArg) {
            if (SR::better(acc[i][j], sacc[i][j])) win[i][j] = (int)k0;
          } else if (SR::better(sacc[i][j], acc[i][j])) {
            acc[i][j] = sacc[i][j];
            win[i][j] = (int)k0;
          }
    }
  };
  // HOT (kSplit, one slab a chunk): the slabs run in a loop that holds only the fast body for as
  // long as every slab is fast (mode is block-uniform), then the rest in the loop holding every
  // body. The loop with all bodies spans 2-3x the code of its fast path (f32 max_times argmax, when
  // it was kSplit: 1,858 SASS instructions, the fast path ~610), jumping twice a slab over the cold
  // bodies. Default for argmax on 4-byte types: +9.6 % int32 max_plus on the H200; the plain tiles
  // measured -1 to +1.4 %, so they keep one loop (gemm_cuda_notes.md, session 4b).
  i64 k0 = kb;
  if constexpr (HOT && SR::kSplit && AP == 1)
    for (; k0 < ke && mode == 1; k0 += BK) chunk(k0, Flag<true>());
  for (; k0 < ke; k0 += AP * BK) chunk(k0, Flag<false>());

  if constexpr (ARG && SR::kArgGroup != 0) {  // values first, then the searches (kArgGroup)
    static_assert(!IsFloat<T>::value || SR::kArgZeroPass, "kArgGroup stores acc's bits: a float's "
                  "±0 tie needs the first matching term's (the serial path below) or the zero-sign pass");
    int wl[TM * TN];  // the chunk to search, or -1; indexed at run time, so in local memory
    T vl[TM * TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const int q = i * TN + j;
        const i64 row = m0 + (i / 4) * SM + ty * 4 + (i % 4), col = n0 + (j / 4) * SN + tx * 4 + (j % 4);
        wl[q] = -1;
        vl[q] = acc[i][j];
        if (row >= m || col >= n) continue;
        T v = SR::store_map(acc[i][j]);
        bool keep = win[i][j] >= 0;
        if (C) {
          const T cv = C[row * n + col];
          keep = keep && SR::better(v, cv);
          v = SR::add(cv, v);
        }
        D[row * n + col] = v;
        if (SR::kArgGroup > 0 && keep) wl[q] = win[i][j];
        else IDX[row * n + col] = keep ? win[i][j] : -1;
      }
#pragma unroll 1
    for (int q = 0; q < TM * TN; ++q) {
      if (wl[q] < 0) continue;
      const int i = q / TN, j = q % TN;
      const i64 row = m0 + (i / 4) * SM + ty * 4 + (i % 4), col = n0 + (j / 4) * SN + tx * 4 + (j % 4);
      constexpr int G = SR::kArgGroup > 0 ? SR::kArgGroup : 1;
      IDX[row * n + col] = chunk_first<SR, AP * BK, G>(A, B, row, col, k, n, wl[q], ke, vl[q], vec);
    }
  } else {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const i64 row = m0 + (i / 4) * SM + ty * 4 + (i % 4);
      if (row >= m) continue;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const i64 col = n0 + (j / 4) * SN + tx * 4 + (j % 4);
        if (col >= n) continue;
        T v = acc[i][j];
        int id = -1;
        if constexpr (ARG) {
          const i64 w = win[i][j];
          if (w >= 0) {  // the first k of the winning chunk whose term equals the best
            const i64 we = w + AP * BK < ke ? w + AP * BK : ke;
            for (i64 kk = w; kk < we; ++kk) {
              const T p = SR::mul(SR::load_map(A[row * k + kk]), SR::load_map(B[kk * n + col]));
              if (p == v) {
                v = p;
                id = (int)kk;
                break;
              }
            }
          }
        }
        v = SR::store_map(v);
        if (C) {
          const T cv = C[row * n + col];
          if (ARG && !SR::better(v, cv)) id = -1;
          v = SR::add(cv, v);
        }
        D[row * n + col] = v;
        if (ARG) IDX[row * n + col] = id;
      }
    }
  }
}

// Split-k epilogue: D = C ⊕ (⊕ over the ks parts P[batch * ks + p]); with argmax the first part
// strictly better wins (parts are in k order, so ties keep the smaller k).
template <class SR, bool ARG>
__global__ void __launch_bounds__(256)
sr_combine(const typename SR::type* __restrict__ P, const int* __restrict__ PI,
           const typename SR::type* __restrict__ C, typename SR::type* __restrict__ D,
           int* __restrict__ IDX, i64 mn, i64 batch, int ks, i64 sC) {
  typedef typename SR::type T;
  const i64 total = batch * mn;
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (i64)gridDim.x * blockDim.x) {
    const i64 bz = e / mn, r = e - bz * mn, base = bz * ks * mn + r;
    T v = P[base];
    int id = ARG ? PI[base] : -1;
    for (int p = 1; p < ks; ++p) {
      const T x = P[base + p * mn];
      if (ARG) {
        if (SR::better(x, v)) { v = x; id = PI[base + p * mn]; }
      } else {
        v = SR::add(v, x);
      }
    }
    if (C) {
      const T cv = C[bz * sC + r];
      if (ARG && !SR::better(v, cv)) id = -1;
      v = SR::add(cv, v);
    }
    D[e] = v;
    if (ARG) IDX[e] = id;
  }
}

// ---------------------------------------------------------------------------- ordered zeros
// ZeroOrd<SR>: for a float functor whose ⊕ is min or max (zero_order.applies), kAdd is 1 (min) or 2
// (max), and kMul the same for a min / max ⊗ (0 otherwise); 0 / 0 for every other functor. The
// small-k kernels fold with the hardware's min / max, then refold a zero result's k terms with
// fma_ord (and c with zord), so their zero results have the ordered sign (-0 < +0, zero_order.py)
// and the host runs no zero-sign pass after them (backends/cuda/zero_sign.py). The refold is only
// where a result is zero (a compare an output otherwise): the fold itself is unchanged.
template <class SR> struct ZeroOrd { static constexpr int kAdd = 0, kMul = 0; };
template <typename T, bool MAX> struct ZeroOrd<TropPlus<T, MAX> > {
  static constexpr int kAdd = IsFloat<T>::value ? 1 + MAX : 0, kMul = 0;
};
template <typename T, bool MAX, bool NZ> struct ZeroOrd<TropTimes<T, MAX, NZ> > {
  static constexpr int kAdd = IsFloat<T>::value ? 1 + MAX : 0, kMul = 0;
};
template <typename T> struct ZeroOrd<MinMax<T> > {
  static constexpr int kAdd = IsFloat<T>::value ? 1 : 0, kMul = IsFloat<T>::value ? 2 : 0;
};
template <typename T> struct ZeroOrd<MaxMin<T> > {
  static constexpr int kAdd = IsFloat<T>::value ? 2 : 0, kMul = IsFloat<T>::value ? 1 : 0;
};
// r = min (KIND 1) or max (KIND 2) of x and y from the hardware, which may return either of two
// zeros: where both are zeros, the OR (min: -0 if either is) or AND (max: +0 if either is) of their
// bits; r elsewhere (NaN, a mapped zero of min/max_times, is never a zero). KIND 0: r.
template <int KIND> __device__ __forceinline__ float zord(float r, float x, float y) {
  if constexpr (KIND == 0) return r;
  const unsigned bx = __float_as_uint(x), by = __float_as_uint(y);
  return ((bx | by) << 1) == 0u ? __uint_as_float(KIND == 2 ? bx & by : bx | by) : r;
}
template <int KIND> __device__ __forceinline__ double zord(double r, double x, double y) {
  if constexpr (KIND == 0) return r;
  const unsigned long long bx = __double_as_longlong(x), by = __double_as_longlong(y);
  return ((bx | by) << 1) == 0ull ? __longlong_as_double(KIND == 2 ? bx & by : bx | by) : r;
}
template <int KIND, typename T> __device__ __forceinline__ T zord(T r, T, T) { return r; }
// acc ⊕ (a ⊗ b) with ordered zeros (ZeroOrd<SR>); SR::fma for every other functor
template <class SR>
__device__ __forceinline__ typename SR::type fma_ord(typename SR::type acc, typename SR::type a,
                                                     typename SR::type b) {
  typedef ZeroOrd<SR> Z;
  if constexpr (Z::kAdd == 0) {
    return SR::fma(acc, a, b);
  } else {
    const typename SR::type p = zord<Z::kMul>(SR::mul(a, b), a, b);
    return zord<Z::kAdd>(SR::add(acc, p), acc, p);
  }
}

// A zero result's k terms folded again with fma_ord: x[kk * xs] ⊗ y[kk * ys], load_map applied to
// x (MAP_X) or y. Not inlined: the small-k kernels run under a register cap, and this cold path
// (a zero result) would otherwise take registers from their fold.
template <class SR, bool MAP_X>
__device__ __noinline__ typename SR::type refold_ord(const typename SR::type* x, i64 xs,
                                                     const typename SR::type* y, i64 ys, int k) {
  typename SR::type r = SR::acc_init();
  for (int kk = 0; kk < k; ++kk) {
    const typename SR::type u = x[kk * xs], v = y[kk * ys];
    r = fma_ord<SR>(r, MAP_X ? SR::load_map(u) : u, MAP_X ? v : SR::load_map(v));
  }
  return r;
}

// ---------------------------------------------------------------------------- small-k kernels
// Bandwidth kernels for k <= 64: no padding, exactly k terms per output, the small operand in
// shared memory (load_map applied), NV consecutive outputs per thread (NV = 4: the host checked
// n % 4 == 0 and 16-byte aligned D and C). blockIdx.y is the batch entry. Integer index math is
// 32-bit when the grid's work fits, else 64-bit.
template <typename T, int NV> struct Out {
  __device__ __forceinline__ static void store(T* p, const T (&v)[NV]) {
#pragma unroll
    for (int j = 0; j < NV; ++j) p[j] = v[j];
  }
};
template <> struct Out<float, 4> {
  __device__ __forceinline__ static void store(float* p, const float (&v)[4]) {
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  }
};
template <> struct Out<int, 4> {
  __device__ __forceinline__ static void store(int* p, const int (&v)[4]) {
    *reinterpret_cast<int4*>(p) = make_int4(v[0], v[1], v[2], v[3]);
  }
};
template <> struct Out<unsigned, 4> {
  __device__ __forceinline__ static void store(unsigned* p, const unsigned (&v)[4]) {
    *reinterpret_cast<uint4*>(p) = make_uint4(v[0], v[1], v[2], v[3]);
  }
};

template <class SR, bool ARG, int NV>
__device__ __forceinline__ void small_k_epilogue(typename SR::type (&acc)[NV], int (&id)[NV],
                                                 const typename SR::type* C, typename SR::type* D,
                                                 int* IDX, i64 off) {
  typedef typename SR::type T;
#pragma unroll
  for (int j = 0; j < NV; ++j) {
    T v = SR::store_map(acc[j]);
    if (C) {
      const T cv = C[off + j];
      if (ARG && !SR::better(v, cv)) id[j] = -1;
      v = zord<ZeroOrd<SR>::kAdd>(SR::add(cv, v), cv, v);
    }
    acc[j] = v;
  }
  Out<T, NV>::store(D + off, acc);
  if (ARG) Out<int, NV>::store(IDX + off, id);
}

// The small-k kernels' common start: blockIdx.y's batch entry (operands with stride 0 broadcast)...
#define PTG_SMALL_K_BATCH()      \
  const i64 bz = blockIdx.y;     \
  A += bz * sA;                  \
  B += bz * sB;                  \
  if (C) C += bz * sC;           \
  D += bz * m * n;               \
  if (ARG) IDX += bz * m * n
// ...and the small operand (count elements from src, load_map applied) in dynamic shared memory.
template <class SR>
__device__ __forceinline__ const typename SR::type* stage_shared(const typename SR::type* src, i64 count) {
  typedef typename SR::type T;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* s = reinterpret_cast<T*>(smem_raw);
  for (i64 e = threadIdx.x; e < count; e += blockDim.x) s[e] = SR::load_map(src[e]);
  __syncthreads();
  return s;
}

// m >> n (n <= 64): B (k x n) in shared memory; thread = (row, NV columns), A's row read once
// per thread through L1 (16-byte loads when vecA: k % 4 == 0 and A 16-byte aligned).
template <class SR, bool ARG, int NV>
__global__ void __launch_bounds__(256)
sr_gemm_skinny(const typename SR::type* __restrict__ A, const typename SR::type* __restrict__ B,
               const typename SR::type* __restrict__ C, typename SR::type* __restrict__ D,
               int* __restrict__ IDX, i64 m, i64 n, i64 k, i64 sA, i64 sB, i64 sC, int vecA) {
  typedef typename SR::type T;
  PTG_SMALL_K_BATCH();
  const T* Bs = stage_shared<SR>(B, k * n);
  const i64 g = n / NV, total = m * g;
  const bool narrow = total + (i64)gridDim.x * blockDim.x < (1LL << 31);
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (i64)gridDim.x * blockDim.x) {
    i64 row, cg;
    if (narrow) {
      const unsigned q = (unsigned)e / (unsigned)g;
      row = q;
      cg = (unsigned)e - q * (unsigned)g;
    } else {
      row = e / g;
      cg = e - row * g;
    }
    const i64 col = cg * NV;
    const T* a = A + row * k;
    T acc[NV];
    int id[NV];
#pragma unroll
    for (int j = 0; j < NV; ++j) { acc[j] = SR::acc_init(); id[j] = -1; }
    auto term = [&](T av, int kk) {
      av = SR::load_map(av);
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        const T bv = Bs[kk * n + col + j];
        if (ARG) {
          const T p = SR::mul(av, bv);
          if (SR::better(p, acc[j])) { acc[j] = p; id[j] = kk; }
        } else {
          acc[j] = SR::fma(acc[j], av, bv);
        }
      }
    };
    if (vecA) {
      for (int kk = 0; kk < (int)k; kk += 4) {
        T av[4];
        V4<T>::load(a + kk, av);
#pragma unroll
        for (int q = 0; q < 4; ++q) term(av[q], kk + q);
      }
    } else {
      for (int kk = 0; kk < (int)k; ++kk) term(a[kk], kk);
    }
    if constexpr (!ARG && ZeroOrd<SR>::kAdd != 0) {  // a zero: its sign again, ordered (rare)
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        if (acc[j] == T(0)) acc[j] = refold_ord<SR, true>(a, 1, Bs + col + j, n, (int)k);
      }
    }
    small_k_epilogue<SR, ARG, NV>(acc, id, C, D, IDX, row * n + col);
  }
}

// n >> m (m <= MM, MM = 16 or 4): A (m x k) in shared memory; thread = NV columns of every row,
// each B element read once (16-byte loads when NV = 4). MM = 4 holds a quarter of the accumulators
// (more resident warps, more loads in flight: the kernel is bound by bytes in flight).
template <class SR, bool ARG, int NV, int MM = 16>
__global__ void __launch_bounds__(256)
sr_gemm_wide(const typename SR::type* __restrict__ A, const typename SR::type* __restrict__ B,
             const typename SR::type* __restrict__ C, typename SR::type* __restrict__ D,
             int* __restrict__ IDX, i64 m, i64 n, i64 k, i64 sA, i64 sB, i64 sC) {
  typedef typename SR::type T;
  PTG_SMALL_K_BATCH();
  const T* As = stage_shared<SR>(A, m * k);
  const i64 g = n / NV;
  for (i64 cg = (i64)blockIdx.x * blockDim.x + threadIdx.x; cg < g; cg += (i64)gridDim.x * blockDim.x) {
    const i64 col = cg * NV;
    T acc[MM][NV];
    int id[ARG ? MM : 1][NV];
#pragma unroll
    for (int i = 0; i < MM; ++i)
#pragma unroll
      for (int j = 0; j < NV; ++j) { acc[i][j] = SR::acc_init(); if (ARG) id[ARG ? i : 0][j] = -1; }
#pragma unroll 4
    for (int kk = 0; kk < (int)k; ++kk) {
      T bv[NV];
      if (NV == 4) V4<T>::load(B + kk * n + col, bv);
      else
#pragma unroll
        for (int j = 0; j < NV; ++j) bv[j] = B[kk * n + col + j];
#pragma unroll
      for (int j = 0; j < NV; ++j) bv[j] = SR::load_map(bv[j]);
#pragma unroll
      for (int i = 0; i < MM; ++i) {
        if (i >= m) break;
        const T av = As[i * k + kk];
#pragma unroll
        for (int j = 0; j < NV; ++j) {
          if (ARG) {
            const T p = SR::mul(av, bv[j]);
            if (SR::better(p, acc[i][j])) { acc[i][j] = p; id[ARG ? i : 0][j] = kk; }
          } else {
            acc[i][j] = SR::fma(acc[i][j], av, bv[j]);
          }
        }
      }
    }
    if constexpr (!ARG && ZeroOrd<SR>::kAdd != 0) {  // a zero: its sign again, ordered (rare)
#pragma unroll
      for (int i = 0; i < MM; ++i) {
        if (i >= m) break;
#pragma unroll
        for (int j = 0; j < NV; ++j) {
          if (acc[i][j] == T(0)) acc[i][j] = refold_ord<SR, false>(As + i * k, 1, B + col + j, n, (int)k);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < MM; ++i) {
      if (i >= m) break;
      small_k_epilogue<SR, ARG, NV>(acc[i], id[ARG ? i : 0], C, D, IDX, i * n + col);
    }
  }
}

// The mid kernels' B (k x n, load_map applied) into Bs with rows padded to NP columns (acc_init
// there), then a block barrier. k <= 64 (kernels.SMALL_K) and NT threads: every load in flight at
// once (a loop that waited for each cost ~4 µs a block, gemm_cuda_notes.md session 12).
template <class SR, int NP, int NT = 256>  // NT: the block's threads
__device__ __forceinline__ void stage_mid_b(const typename SR::type* B, typename SR::type* Bs, int kq, int nq) {
  constexpr int SLOTS = 64 * NP / NT;
  typename SR::type st[SLOTS];
#pragma unroll
  for (int q = 0; q < SLOTS; ++q) {
    const int e = threadIdx.x + NT * q, kk = e / NP, col = e - kk * NP;
    st[q] = kk < kq && col < nq ? SR::load_map(B[kk * nq + col]) : SR::acc_init();
  }
#pragma unroll
  for (int q = 0; q < SLOTS; ++q) {
    if (threadIdx.x + NT * q < kq * NP) Bs[threadIdx.x + NT * q] = st[q];
  }
  __syncthreads();
}

// 16 bytes global -> shared without a register (cp.async, sm_80+; a plain copy before), a group
// commit and a wait for all but N groups (the calling thread's own copies; then a __syncwarp).
__device__ __forceinline__ void mid_cp16(void* dst, const void* src) {
#if __CUDA_ARCH__ >= 800
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
#else
  *reinterpret_cast<float4*>(dst) = *reinterpret_cast<const float4*>(src);
#endif
}
__device__ __forceinline__ void mid_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N> __device__ __forceinline__ void mid_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// The mid kernels' accumulators: RM rows x J groups x 4 columns, acc_init each.
template <class SR, int RM, int J>
__device__ __forceinline__ void mid_init(typename SR::type (&acc)[RM][J][4]) {
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int j = 0; j < J; ++j)
#pragma unroll
      for (int v = 0; v < 4; ++v) acc[i][j][v] = SR::acc_init();
}

// One k step: row i's A value av(i) (load_map applied) against B's row at brow in Bs (the
// thread's 4 columns of each group, groups 16 columns apart). av is called in the j loop, where
// sr_gemm_mid_cp mapped its A values (mapping them once before the loop changed its SASS).
template <class SR, int RM, int J, class AV>
__device__ __forceinline__ void mid_step(typename SR::type (&acc)[RM][J][4], AV av,
                                         const typename SR::type* brow) {
  typedef typename SR::type T;
#pragma unroll
  for (int j = 0; j < J; ++j) {
    T bv[4];
    V4<T>::load(brow + 16 * j, bv);
#pragma unroll
    for (int i = 0; i < RM; ++i) {
      const T a = av(i);
#pragma unroll
      for (int v = 0; v < 4; ++v) acc[i][j][v] = SR::fma(acc[i][j][v], a, bv[v]);
    }
  }
}

// A row set's end: zero results refolded with ordered signs (row i's A at arow(i), B's columns
// from bcol in Bs), then rows rb + ro + i below m, columns below n stored (small_k_epilogue, no
// argmax). rb + ro is summed here, after the refold, where sr_gemm_mid_cp summed it (summed
// before the call, its SASS changed).
template <class SR, int RM, int J, int NP, class AR>
__device__ __forceinline__ void mid_finish(typename SR::type (&acc)[RM][J][4], AR arow,
                                           const typename SR::type* bcol, int kq, int cg, int nq, i64 rb,
                                           int ro, i64 m, i64 n, const typename SR::type* C,
                                           typename SR::type* D, int* IDX) {
  typedef typename SR::type T;
  if constexpr (ZeroOrd<SR>::kAdd != 0) {  // a zero: its sign again, ordered (rare)
#pragma unroll
    for (int i = 0; i < RM; ++i)
#pragma unroll
      for (int j = 0; j < J; ++j)
#pragma unroll
        for (int v = 0; v < 4; ++v) {
          if (acc[i][j][v] == T(0))
            acc[i][j][v] = refold_ord<SR, true>(arow(i), 1, bcol + 16 * j + v, NP, kq);
        }
  }
  int id[4];  // no argmax: unused
  const i64 r0 = rb + ro;
#pragma unroll
  for (int i = 0; i < RM; ++i) {
    if (r0 + i >= m) break;
#pragma unroll
    for (int j = 0; j < J; ++j) {
      const int col = cg * 4 + 16 * j;
      if (col < nq) small_k_epilogue<SR, false, 4>(acc[i][j], id, C, D, IDX, (r0 + i) * n + col);
    }
  }
}

// m >> n, 16 < n <= 64, k <= 64, float32, n % 4 == 0, no argmax (that stays on the tiles; int32
// too: its guarded fold lost to the DPX tiles 0.117 to 0.064 ms, gemm_cuda_notes.md session 12).
// The skinny kernel's 4 outputs a thread re-read each A row n / 4 times through L1 (65536x64x64:
// 16 times, slower than the tiles). Here a thread holds RM consecutive rows x J groups of 4
// columns (cg, cg + 4, ...: 16 columns apart, so a warp's four cg read 64 contiguous bytes of Bs,
// conflict-free, broadcast to its 8 row sets): each A element it loads serves 4 J outputs, each B
// value RM. 4 threads a row set, 64 RM rows a block. RM 2 (kernels.MID_RM): RM 4's 64
// accumulators and two load buffers spill under the 128-register cap (ptxas: 172 bytes, float
// min_plus, J 4). B (k x n) sits in shared memory, rows padded to 16 J columns (the padding holds
// acc_init and is never stored). Rows past m load row m - 1 and store nothing. With vecA
// (k % 4 == 0, A 16-byte aligned) A is read 16 bytes a row at a time (PF, a bench variant: the
// next 4 terms loaded while the current 4 fold; measured 7-9 % slower). The host launches at most
// 2 blocks an SM (B staged once a block; they loop over row sets). Like the other small-k
// kernels: exactly k terms in k order, zero results refolded with ordered signs (no zero-sign pass).
template <class SR, int J, int RM = 2, bool PF = false>
__global__ void __launch_bounds__(256, 2)
sr_gemm_mid(const typename SR::type* __restrict__ A, const typename SR::type* __restrict__ B,
            const typename SR::type* __restrict__ C, typename SR::type* __restrict__ D,
            int* __restrict__ IDX, i64 m, i64 n, i64 k, i64 sA, i64 sB, i64 sC, int vecA) {
  typedef typename SR::type T;
  static_assert(sizeof(T) == 4, "4-byte types (16-byte vectors of 4)");
  constexpr bool ARG = false;
  constexpr int NP = 16 * J;  // Bs row stride
  PTG_SMALL_K_BATCH();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* Bs = reinterpret_cast<T*>(smem_raw);
  const int kq = (int)k, nq = (int)n;
  stage_mid_b<SR, NP>(B, Bs, kq, nq);
  const int cg = threadIdx.x & 3;
  const T* bcol = Bs + cg * 4;
  for (i64 r0 = ((i64)blockIdx.x * 64 + (threadIdx.x >> 2)) * RM; r0 < m;
       r0 += (i64)gridDim.x * 64 * RM) {
    const T* a[RM];
#pragma unroll
    for (int i = 0; i < RM; ++i) a[i] = A + (r0 + i < m ? r0 + i : m - 1) * k;
    T acc[RM][J][4];
    mid_init<SR>(acc);
    auto fold = [&](const T (&av)[RM], int kk) {
      mid_step<SR>(acc, [&](int i) { return av[i]; }, bcol + kk * NP);
    };
    if (vecA) {
      auto fold4 = [&](const T (&x)[RM][4], int kk) {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          T av[RM];
#pragma unroll
          for (int i = 0; i < RM; ++i) av[i] = SR::load_map(x[i][q]);
          fold(av, kk + q);
        }
      };
      auto load4 = [&](T (&x)[RM][4], int kk) {
#pragma unroll
        for (int i = 0; i < RM; ++i) V4<T>::load(a[i] + kk, x[i]);
      };
      T x0[RM][4], x1[RM][4];  // PF: the next 4 terms load while these fold (no copies: 8 a trip)
      load4(x0, 0);
      for (int kk = 0; kk < kq; kk += 8) {
        if (PF && kk + 4 < kq) load4(x1, kk + 4);
        fold4(x0, kk);
        if (kk + 4 >= kq) break;
        if (!PF) load4(x1, kk + 4);
        if (PF && kk + 8 < kq) load4(x0, kk + 8);
        fold4(x1, kk + 4);
        if (!PF && kk + 8 < kq) load4(x0, kk + 8);
      }
    } else {
      for (int kk = 0; kk < kq; ++kk) {
        T av[RM];
#pragma unroll
        for (int i = 0; i < RM; ++i) av[i] = SR::load_map(a[i][kk]);
        fold(av, kk);
      }
    }
    mid_finish<SR, RM, J, NP>(acc, [&](int i) { return a[i]; }, bcol, kq, cg, nq, r0, 0, m, n, C, D, IDX);
  }
}

// sr_gemm_mid for vecA shapes (k % 4 == 0, A 16-byte aligned), with A through shared memory: the
// register loads above keep ~256 bytes in flight a warp (its 4 cg threads load the same 16 bytes),
// so A streams at ~0.5 TB/s and 65536x64x64 took 0.032 ms against 0.018 for its terms. Here each
// warp owns WR = 8 RM rows a round (8 row sets) and two buffers of WR rows x AP floats (AP = 68:
// the rows' same k on distinct banks); it copies its next round's rows by cp.async (4 RM KiB in
// flight a warp) while it folds the current one, and never waits for the other warps (no block
// barrier after B's). WB warps a block; the library's RM 2, WB 8 at 2 blocks an SM: 2 x (8 warps
// x 8.5 KiB + B's 16 KiB) of shared memory (kernels.MID_CP_A_FLOATS).
template <class SR, int J, int RM = 2, int WB = 8>
__global__ void __launch_bounds__(32 * WB, 2)
sr_gemm_mid_cp(const typename SR::type* __restrict__ A, const typename SR::type* __restrict__ B,
               const typename SR::type* __restrict__ C, typename SR::type* __restrict__ D,
               int* __restrict__ IDX, i64 m, i64 n, i64 k, i64 sA, i64 sB, i64 sC) {
  typedef typename SR::type T;
  static_assert(sizeof(T) == 4, "4-byte types (16-byte vectors of 4)");
  constexpr bool ARG = false;
  constexpr int NP = 16 * J, AP = 68, WR = 8 * RM;  // WR rows a warp a round
  PTG_SMALL_K_BATCH();
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* Bs = reinterpret_cast<T*>(smem_raw);
  const int kq = (int)k, nq = (int)n;
  stage_mid_b<SR, NP, 32 * WB>(B, Bs, kq, nq);
  const int lane = threadIdx.x & 31, cg = lane & 3, rs = lane >> 2;
  T* As = Bs + kq * NP + (threadIdx.x >> 5) * (2 * WR * AP);  // this warp's two buffers
  const T* bcol = Bs + cg * 4;
  const i64 wstride = (i64)gridDim.x * WB * WR;
  i64 base = ((i64)blockIdx.x * WB + (threadIdx.x >> 5)) * WR;
  const int kc = kq >> 2;  // 16-byte chunks a row
  auto copy = [&](i64 b0, T* buf) {  // lane: chunk lane & 15 of rows lane >> 4, +2, ..., WR - 2
#pragma unroll
    for (int q = 0; q < WR / 2; ++q) {
      const int r = 2 * q + (lane >> 4), c = lane & 15;
      const i64 row = b0 + r < m ? b0 + r : m - 1;
      if (c < kc) mid_cp16(buf + r * AP + 4 * c, A + row * k + 4 * c);
    }
    mid_commit();
  };
  if (base < m) copy(base, As);
  for (int cur = 0; base < m; base += wstride, cur ^= 1) {  // warp-uniform
    if (base + wstride < m) {
      copy(base + wstride, As + (cur ^ 1) * WR * AP);
      mid_wait<1>();
    } else {
      mid_wait<0>();
    }
    __syncwarp();
    const T* a0 = As + cur * WR * AP + RM * rs * AP;  // row RM rs of the round; the next at + AP
    T acc[RM][J][4];
    mid_init<SR>(acc);
#pragma unroll 2
    for (int kk = 0; kk < kq; kk += 4) {
      T x[RM][4];
#pragma unroll
      for (int i = 0; i < RM; ++i) V4<T>::load(a0 + i * AP + kk, x[i]);
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        mid_step<SR>(acc, [&](int i) { return SR::load_map(x[i][q]); }, bcol + (kk + q) * NP);
      }
    }
    mid_finish<SR, RM, J, NP>(acc, [&](int i) { return a0 + i * AP; }, bcol, kq, cg, nq, base, RM * rs,
                              m, n, C, D, IDX);
    __syncwarp();  // every lane done with this buffer before the next round's copy refills it
  }
}

#undef PTG_SMALL_K_BATCH

// Flags operands the DPX tiles cannot take exactly: flag[0] for "dpx_" (some x != zero with
// |x| >= 2^28), flag[1] for "dpxw_" (the zero, or some |x| >= 2^30). One pass answers both.
__global__ void dpx_range_check(const int* __restrict__ x, i64 size, int zero, int* __restrict__ flag) {
  bool f0 = false, f1 = false;
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < size; e += (i64)gridDim.x * blockDim.x) {
    const int v = x[e];
    f0 = f0 || (v != zero && (v >= (1 << 28) || v <= -(1 << 28)));
    f1 = f1 || v == zero || v >= (1 << 30) || v <= -(1 << 30);
  }
  if (f0) flag[0] = 1;
  if (f1) flag[1] = 1;
}

}  // namespace ptg
