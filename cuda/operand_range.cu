// The range facts of a float operand in one read (pytropical_gpu/backends/cuda/operand_range.py,
// for pytropical_gpu/facts.py): the least and the greatest value as order-preserving unsigned keys
// (bits only: no float instruction, so no flush to zero can touch a subnormal), whether a NaN
// occurs, whether a -0 occurs, whether a value with its sign bit set (a negative or -0) occurs.
// out[0] holds ~(the least key), out[1] the greatest key, out[2] the flags (bit 0 NaN, bit 1 -0,
// bit 2 a sign bit), all zeroed by the host before the launch (so the least key is stored
// inverted: every word folds with atomicMax / atomicOr from 0). NaN is left out of the keys.

namespace ptg {

template <typename T> struct RangeBits;
template <> struct RangeBits<float> {
  using U = unsigned;
  static constexpr U SIGN = 0x80000000u, INF = 0x7f800000u;
  __device__ __forceinline__ static U bits(float x) { return __float_as_uint(x); }
};
template <> struct RangeBits<double> {
  using U = unsigned long long;
  static constexpr U SIGN = 0x8000000000000000ull, INF = 0x7ff0000000000000ull;
  __device__ __forceinline__ static U bits(double x) { return (U)__double_as_longlong(x); }
};

template <typename T>
__global__ void __launch_bounds__(256)
operand_range(const T* __restrict__ x, long long size, unsigned long long* __restrict__ out) {
  using B = RangeBits<T>;
  using U = typename B::U;
  unsigned long long lo = ~0ull, hi = 0ull;  // the least / greatest key (widened)
  unsigned flags = 0u;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < size; i += stride) {
    const U u = B::bits(x[i]);
    if ((u & ~B::SIGN) > B::INF) {  // NaN
      flags |= 1u;
      continue;
    }
    const bool neg = (u & B::SIGN) != 0;
    flags |= (u == B::SIGN ? 2u : 0u) | (neg ? 4u : 0u);
    const unsigned long long key = neg ? (unsigned long long)(U)~u : (unsigned long long)(u | B::SIGN);
    lo = key < lo ? key : lo;
    hi = key > hi ? key : hi;
  }
  for (int s = 16; s > 0; s >>= 1) {
    const unsigned long long l = __shfl_xor_sync(0xffffffffu, lo, s);
    const unsigned long long h = __shfl_xor_sync(0xffffffffu, hi, s);
    lo = l < lo ? l : lo;
    hi = h > hi ? h : hi;
    flags |= __shfl_xor_sync(0xffffffffu, flags, s);
  }
  __shared__ unsigned long long slo[8], shi[8];
  __shared__ unsigned sflags[8];
  const int w = threadIdx.x >> 5;
  if ((threadIdx.x & 31) == 0) {
    slo[w] = lo;
    shi[w] = hi;
    sflags[w] = flags;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int q = 1; q < (int)(blockDim.x >> 5); ++q) {
      lo = slo[q] < lo ? slo[q] : lo;
      hi = shi[q] > hi ? shi[q] : hi;
      flags |= sflags[q];
    }
    if (~lo != 0ull) atomicMax(out, ~lo);
    if (hi != 0ull) atomicMax(out + 1, hi);
    if (flags != 0u) atomicOr(out + 2, (unsigned long long)flags);
  }
}

}  // namespace ptg
