// Bitsliced ternary VSA kernels for pytropical_gpu: 32 trits per uint32 word in two planes
// (pos, neg), LSB first. Every kernel works per word with the same bit-sliced circuits as
// pytropical_gpu/backends/bitslice.py, so results are exact; all offsets are 64-bit.
// (bind and the nnz popcount sum are CuPy Elementwise/Reduction kernels in kernels.py.)

namespace ptg {

typedef long long i64;

// ---------------------------------------------------------------------------- bundle
// Exact per-element majority of V vectors: bit-sliced counters P, N (WIDTH planes, enough for
// max(V, t) plus two bits); pos where P >= N + t, neg where N >= P + t.
template <int WIDTH>
__device__ __forceinline__ void add_const(const unsigned* x, i64 t, unsigned* out) {
  unsigned carry = 0u;
#pragma unroll
  for (int j = 0; j < WIDTH; ++j) {
    if ((t >> j) & 1) {
      out[j] = ~(x[j] ^ carry);
      carry = x[j] | carry;
    } else {
      out[j] = x[j] ^ carry;
      carry = x[j] & carry;
    }
  }
}

// 1 bits where x < y (the final borrow of x - y), both unsigned WIDTH-bit.
template <int WIDTH>
__device__ __forceinline__ unsigned borrow_out(const unsigned* x, const unsigned* y) {
  unsigned b = 0u;
#pragma unroll
  for (int j = 0; j < WIDTH; ++j) b = (~x[j] & y[j]) | (~(x[j] ^ y[j]) & b);
  return b;
}

template <int WIDTH>
__global__ void __launch_bounds__(256)
vsa_bundle(const unsigned* __restrict__ P, const unsigned* __restrict__ N, unsigned* __restrict__ OP,
           unsigned* __restrict__ ON, i64 V, i64 R, i64 t) {
  for (i64 r = (i64)blockIdx.x * blockDim.x + threadIdx.x; r < R; r += (i64)gridDim.x * blockDim.x) {
    unsigned cp[WIDTH], cn[WIDTH];
#pragma unroll
    for (int j = 0; j < WIDTH; ++j) { cp[j] = 0u; cn[j] = 0u; }
    for (i64 v = 0; v < V; ++v) {
      unsigned x = P[v * R + r], y = N[v * R + r];
#pragma unroll
      for (int j = 0; j < WIDTH; ++j) {  // ripple-carry add of the 0/1 planes x and y
        const unsigned cx = cp[j] & x, cy = cn[j] & y;
        cp[j] ^= x;
        cn[j] ^= y;
        x = cx;
        y = cy;
        if (!(x | y)) break;
      }
    }
    unsigned tmp[WIDTH];
    add_const<WIDTH>(cn, t, tmp);
    const unsigned ge_p = ~borrow_out<WIDTH>(cp, tmp);
    add_const<WIDTH>(cp, t, tmp);
    const unsigned ge_n = ~borrow_out<WIDTH>(cn, tmp);
    OP[r] = ge_p;
    ON[r] = ge_n;
  }
}

// ---------------------------------------------------------------------------- dot
__device__ __forceinline__ int trit_dot(unsigned ap, unsigned an, unsigned bp, unsigned bn) {
  return __popc((ap & bp) | (an & bn)) - __popc((ap & bn) | (an & bp));
}

// One 256-thread block per (pair, chunk of words); int64 partial sums added atomically into
// out[pair] (zeroed by the caller). pair = q * M + j: row q of a against row j of b.
__global__ void __launch_bounds__(256)
vsa_dot_block(const unsigned* __restrict__ AP, const unsigned* __restrict__ AN,
              const unsigned* __restrict__ BP, const unsigned* __restrict__ BN,
              long long* __restrict__ out, i64 M, i64 W, i64 chunk) {
  const i64 pair = blockIdx.x, q = pair / M, j = pair - q * M;
  const i64 w0 = (i64)blockIdx.y * chunk;
  const i64 w1 = (w0 + chunk < W) ? w0 + chunk : W;
  const unsigned *ap = AP + q * W, *an = AN + q * W, *bp = BP + j * W, *bn = BN + j * W;
  long long s = 0;
#pragma unroll 4
  for (i64 w = w0 + threadIdx.x; w < w1; w += 256) s += trit_dot(ap[w], an[w], bp[w], bn[w]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
  __shared__ long long part[8];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) part[warp] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    long long tot = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) tot += part[i];
    atomicAdd(reinterpret_cast<unsigned long long*>(out + pair), (unsigned long long)tot);
  }
}

// One warp per pair (short vectors, many pairs: batched dot, search); writes out[pair].
__global__ void __launch_bounds__(256)
vsa_dot_warp(const unsigned* __restrict__ AP, const unsigned* __restrict__ AN,
             const unsigned* __restrict__ BP, const unsigned* __restrict__ BN,
             long long* __restrict__ out, i64 pairs, i64 M, i64 W) {
  const i64 pair = (i64)blockIdx.x * 8 + (threadIdx.x >> 5);
  if (pair >= pairs) return;
  const int lane = threadIdx.x & 31;
  const i64 q = pair / M, j = pair - q * M;
  const unsigned *ap = AP + q * W, *an = AN + q * W, *bp = BP + j * W, *bn = BN + j * W;
  long long s = 0;
  for (i64 w = lane; w < W; w += 32) s += trit_dot(ap[w], an[w], bp[w], bn[w]);
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
  if (lane == 0) out[pair] = s;
}

// ---------------------------------------------------------------------------- permute
// len (1..32) bits of a row starting at bit pos (pos + len <= dim).
__device__ __forceinline__ unsigned get_bits(const unsigned* row, i64 pos, int len) {
  const i64 w = pos >> 5;
  const int off = (int)(pos & 31);
  unsigned v = row[w] >> off;
  if (off && off + len > 32) v |= row[w + 1] << (32 - off);
  return len >= 32 ? v : (v & ((1u << len) - 1u));
}

// trit i moves to (i + s) % dim, 0 < s < dim; one thread per output word of both planes.
__global__ void __launch_bounds__(256)
vsa_permute(const unsigned* __restrict__ P, const unsigned* __restrict__ N, unsigned* __restrict__ OP,
            unsigned* __restrict__ ON, i64 rows, i64 W, i64 dim, i64 s) {
  const i64 total = rows * W;
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (i64)gridDim.x * blockDim.x) {
    const i64 r = e / W, w = e - r * W;
    const i64 o = w * 32;
    const int nbits = (dim - o < 32) ? (int)(dim - o) : 32;
    i64 src = o - s;
    if (src < 0) src += dim;
    const int L = (dim - src < nbits) ? (int)(dim - src) : nbits;
    const unsigned *p = P + r * W, *n = N + r * W;
    unsigned vp = get_bits(p, src, L), vn = get_bits(n, src, L);
    if (nbits > L) {
      vp |= get_bits(p, 0, nbits - L) << L;
      vn |= get_bits(n, 0, nbits - L) << L;
    }
    OP[e] = vp;
    ON[e] = vn;
  }
}

// ---------------------------------------------------------------------------- soft counters
// Saturating s <- clamp(s + h) on sign-magnitude bit-sliced counters, in place.
// sign, hp, hn: NW words; mag: bits planes of NW words.
__global__ void __launch_bounds__(256)
vsa_accumulate(unsigned* __restrict__ sign, unsigned* __restrict__ mag, const unsigned* __restrict__ hp,
               const unsigned* __restrict__ hn, i64 NW, int bits) {
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < NW; e += (i64)gridDim.x * blockDim.x) {
    const unsigned s = sign[e], p = hp[e], n = hn[e];
    const unsigned active = p | n;
    unsigned nz = 0u, full = 0xffffffffu;
    for (int j = 0; j < bits; ++j) {
      const unsigned pl = mag[(i64)j * NW + e];
      nz |= pl;
      full &= pl;
    }
    const unsigned opposite = (s ^ n) & nz & active;
    const unsigned same = active & ~opposite;
    unsigned carry = same & ~full, borrow = opposite, nz_new = 0u;
    for (int j = 0; j < bits; ++j) {
      const unsigned pl = mag[(i64)j * NW + e];
      const unsigned c_next = pl & carry, b_next = ~pl & borrow;
      const unsigned np = pl ^ carry ^ borrow;
      mag[(i64)j * NW + e] = np;
      nz_new |= np;
      carry = c_next;
      borrow = b_next;
    }
    sign[e] = ((s & ~same) | (n & same)) & nz_new;
  }
}

// pos/neg planes where |s| >= t (1 <= t <= 2^bits - 1).
__global__ void __launch_bounds__(256)
vsa_harden(const unsigned* __restrict__ sign, const unsigned* __restrict__ mag, unsigned* __restrict__ OP,
           unsigned* __restrict__ ON, i64 NW, int bits, i64 t) {
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < NW; e += (i64)gridDim.x * blockDim.x) {
    unsigned b = 0u;
    for (int j = 0; j < bits; ++j) {
      const unsigned x = mag[(i64)j * NW + e];
      const unsigned y = (j < 63 && ((t >> j) & 1)) ? 0xffffffffu : 0u;
      b = (~x & y) | (~(x ^ y) & b);
    }
    const unsigned ge = ~b, s = sign[e];
    OP[e] = ge & ~s;
    ON[e] = ge & s;
  }
}

}  // namespace ptg
