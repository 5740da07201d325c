// Bit-packed boolean products for pytropical_gpu (AndOr and GF(2)), K packed 32 per uint32.
//
// A: (m, W) words packed along k, B: (n, W) words packed along k (B transposed). A 64 x 64 output
// tile per 256-thread block, 4 x 4 outputs per thread, k streamed through shared memory KW words at
// a time. OR: the block leaves the k loop as soon as every one of its outputs is known true
// (__syncthreads_and), so dense inputs cost one slab. XOR: a running XOR of a & b, parity at the end.
// 64-bit offsets throughout.

namespace ptg {

typedef long long i64;

template <bool XOR>
__global__ void __launch_bounds__(256)
bool_mm(const unsigned* __restrict__ Aw, const unsigned* __restrict__ Bw, bool* __restrict__ D,
        i64 m, i64 n, i64 W) {
  constexpr int BM = 64, BN = 64, KW = 16;
  __shared__ unsigned As[BM][KW + 1];
  __shared__ unsigned Bs[BN][KW + 1];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const i64 m0 = (i64)blockIdx.x * BM, n0 = (i64)blockIdx.y * BN;
  unsigned acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0u;

  for (i64 w0 = 0; w0 < W; w0 += KW) {
#pragma unroll
    for (int q = 0; q < (BM * KW) / 256; ++q) {
      const int e = tid + 256 * q, r = e / KW, c = e % KW;
      const i64 ra = m0 + r, rb = n0 + r, w = w0 + c;
      As[r][c] = (ra < m && w < W) ? Aw[ra * W + w] : 0u;
      Bs[r][c] = (rb < n && w < W) ? Bw[rb * W + w] : 0u;
    }
    __syncthreads();
#pragma unroll
    for (int c = 0; c < KW; ++c) {
      unsigned a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[ty + 16 * i][c];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[tx + 16 * j][c];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if (XOR) acc[i][j] ^= a[i] & b[j];
          else acc[i][j] |= a[i] & b[j];
        }
    }
    if (XOR) {
      __syncthreads();
    } else {
      int done = 1;
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const bool inside = (m0 + ty + 16 * i < m) && (n0 + tx + 16 * j < n);
          done &= (!inside || acc[i][j] != 0u);
        }
      if (__syncthreads_and(done)) break;  // also the barrier before the next slab
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const i64 r = m0 + ty + 16 * i;
    if (r >= m) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const i64 c = n0 + tx + 16 * j;
      if (c >= n) continue;
      D[r * n + c] = XOR ? (bool)(__popc(acc[i][j]) & 1) : (acc[i][j] != 0u);
    }
  }
}

// bool (rows, k) -> uint32 (rows, W = ceil(k / 32)), LSB first, zero tail; one thread per word.
__global__ void __launch_bounds__(256)
pack_bits(const unsigned char* __restrict__ bits, unsigned* __restrict__ out, i64 rows, i64 k, i64 W) {
  const i64 total = rows * W;
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (i64)gridDim.x * blockDim.x) {
    const i64 r = e / W, w = e - r * W;
    const unsigned char* src = bits + r * k + w * 32;
    const i64 left = k - w * 32;
    const int cnt = left < 32 ? (int)left : 32;
    unsigned v = 0u;
    for (int j = 0; j < cnt; ++j) v |= (unsigned)(src[j] != 0) << j;
    out[e] = v;
  }
}

}  // namespace ptg
