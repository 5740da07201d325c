// Vectorised bitsliced ternary VSA kernels (issue 15): the circuits of cuda/vsa.cu (exact, per
// 32-trit word), read and written with 16-byte accesses where every array of a call shares its
// address modulo 16 (scalar words up to the first 16-byte boundary and after the last one), one
// scalar path otherwise (vec = 0). Grid-stride loops over a grid sized to the SM count by the caller
// (pytropical_gpu/backends/cuda/vsa_launch.py). All offsets are 64-bit.

namespace ptg {

typedef long long i64;

__device__ __forceinline__ void ld4(const unsigned* p, unsigned (&r)[4]) {
  const uint4 v = *reinterpret_cast<const uint4*>(p);
  r[0] = v.x; r[1] = v.y; r[2] = v.z; r[3] = v.w;
}

__device__ __forceinline__ void st4(unsigned* p, const unsigned (&r)[4]) {
  *reinterpret_cast<uint4*>(p) = make_uint4(r[0], r[1], r[2], r[3]);
}

// Words [0, nw) split as `head` scalar words up to the first 16-byte boundary of `base`, `nvec`
// groups of 4, then scalar words from `tail0`; vec == 0: every word scalar.
struct Words {
  i64 head, nvec, tail0, nscalar;
  __device__ __forceinline__ Words(const void* base, i64 nw, bool vec) {
    head = vec ? (i64)(((16u - ((unsigned)(unsigned long long)base & 15u)) & 15u) >> 2) : nw;
    if (head > nw) head = nw;
    nvec = vec ? (nw - head) >> 2 : 0;
    tail0 = head + 4 * nvec;
    nscalar = head + (nw - tail0);
  }
  __device__ __forceinline__ i64 scalar(i64 i) const { return i < head ? i : tail0 + (i - head); }
};

// Calls op.quad(first word) for each group of 4 and op.one(word) for each scalar word.
template <class Op>
__device__ __forceinline__ void for_words(const Op& op, const void* base, i64 nw, int vec) {
  const Words w(base, nw, vec != 0);
  const i64 t0 = (i64)blockIdx.x * blockDim.x + threadIdx.x, st = (i64)gridDim.x * blockDim.x;
  for (i64 i = t0; i < w.nvec; i += st) op.quad(w.head + 4 * i);
  for (i64 i = t0; i < w.nscalar; i += st) op.one(w.scalar(i));
}

// ---------------------------------------------------------------------------- bind
struct BindOp {
  const unsigned *ap, *an, *bp, *bn;
  unsigned *p, *n;
  __device__ __forceinline__ void one(i64 e) const {
    const unsigned a = ap[e], b = an[e], c = bp[e], d = bn[e];
    p[e] = (a & c) | (b & d);
    n[e] = (a & d) | (b & c);
  }
  __device__ __forceinline__ void quad(i64 e) const {
    unsigned a[4], b[4], c[4], d[4], x[4], y[4];
    ld4(ap + e, a); ld4(an + e, b); ld4(bp + e, c); ld4(bn + e, d);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      x[k] = (a[k] & c[k]) | (b[k] & d[k]);
      y[k] = (a[k] & d[k]) | (b[k] & c[k]);
    }
    st4(p + e, x); st4(n + e, y);
  }
};

__global__ void __launch_bounds__(256)
vsa_bind_v(const unsigned* __restrict__ AP, const unsigned* __restrict__ AN,
           const unsigned* __restrict__ BP, const unsigned* __restrict__ BN,
           unsigned* __restrict__ OP, unsigned* __restrict__ ON, i64 NW, int vec) {
  for_words(BindOp{AP, AN, BP, BN, OP, ON}, AP, NW, vec);
}

// ---------------------------------------------------------------------------- dot
__device__ __forceinline__ int trit_dot(unsigned ap, unsigned an, unsigned bp, unsigned bn) {
  return __popc((ap & bp) | (an & bn)) - __popc((ap & bn) | (an & bp));
}

// Long rows: block (pair, y) of gridDim.y covers a 1/gridDim.y share of row q of a against row j of
// b (pair = q * M + j) and adds its int64 sum atomically into out[pair] (zeroed by the caller).
// 16-byte loads when vec and the four rows share their address mod 16, else scalar.
__global__ void __launch_bounds__(256)
vsa_dot_v(const unsigned* __restrict__ AP, const unsigned* __restrict__ AN,
          const unsigned* __restrict__ BP, const unsigned* __restrict__ BN,
          long long* __restrict__ out, i64 M, i64 W, int vec) {
  const i64 pair = blockIdx.x, q = pair / M, j = pair - q * M;
  const unsigned *ap = AP + q * W, *an = AN + q * W, *bp = BP + j * W, *bn = BN + j * W;
  const unsigned off = (unsigned)(unsigned long long)ap & 15u;
  const bool same = ((unsigned)(unsigned long long)an & 15u) == off &&
                    ((unsigned)(unsigned long long)bp & 15u) == off &&
                    ((unsigned)(unsigned long long)bn & 15u) == off;
  const Words w(ap, W, vec != 0 && same);
  const i64 ny = gridDim.y, y = blockIdx.y;
  long long s = 0;
  const i64 cv = (w.nvec + ny - 1) / ny, v1 = min(w.nvec, (y + 1) * cv);
  for (i64 i = y * cv + threadIdx.x; i < v1; i += 256) {
    unsigned a[4], b[4], c[4], d[4];
    const i64 e = w.head + 4 * i;
    ld4(ap + e, a); ld4(an + e, b); ld4(bp + e, c); ld4(bn + e, d);
    s += trit_dot(a[0], b[0], c[0], d[0]) + trit_dot(a[1], b[1], c[1], d[1]) +
         trit_dot(a[2], b[2], c[2], d[2]) + trit_dot(a[3], b[3], c[3], d[3]);
  }
  const i64 cs = (w.nscalar + ny - 1) / ny, s1 = min(w.nscalar, (y + 1) * cs);
  for (i64 i = y * cs + threadIdx.x; i < s1; i += 256) {
    const i64 e = w.scalar(i);
    s += trit_dot(ap[e], an[e], bp[e], bn[e]);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  __shared__ long long part[8];
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    long long tot = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) tot += part[i];
    atomicAdd(reinterpret_cast<unsigned long long*>(out + pair), (unsigned long long)tot);
  }
}

// ---------------------------------------------------------------------------- bundle
// Carry-save adder: lo = a ^ b ^ c, hi = majority(a, b, c) (each one LOP3).
__device__ __forceinline__ void csa(unsigned& hi, unsigned& lo, unsigned a, unsigned b, unsigned c) {
  const unsigned u = a ^ b;
  hi = (a & b) | (u & c);
  lo = u ^ c;
}

// Exact bit-sliced count of one plane (Harley-Seal): c[0..2] = ones, twos, fours; c[3..] count
// the eights. WIDTH planes hold any count below 2^WIDTH.
template <int WIDTH>
__device__ __forceinline__ void add8(unsigned (&c)[WIDTH], const unsigned (&x)[8]) {
  unsigned ta, tb, fa, fb, e;
  csa(ta, c[0], c[0], x[0], x[1]);
  csa(tb, c[0], c[0], x[2], x[3]);
  csa(fa, c[1], c[1], ta, tb);
  csa(ta, c[0], c[0], x[4], x[5]);
  csa(tb, c[0], c[0], x[6], x[7]);
  csa(fb, c[1], c[1], ta, tb);
  csa(e, c[2], c[2], fa, fb);
#pragma unroll
  for (int j = 3; j < WIDTH; ++j) {
    const unsigned cy = c[j] & e;
    c[j] ^= e;
    e = cy;
  }
}

// a += b, both WIDTH-bit bit-sliced.
template <int WIDTH>
__device__ __forceinline__ void add_counts(unsigned (&a)[WIDTH], const unsigned* b, int stride) {
  unsigned cy = 0u;
#pragma unroll
  for (int j = 0; j < WIDTH; ++j) csa(cy, a[j], a[j], b[j * stride], cy);
}

template <int WIDTH>
__device__ __forceinline__ void add_const(const unsigned (&x)[WIDTH], i64 t, unsigned (&out)[WIDTH]) {
  unsigned carry = 0u;
#pragma unroll
  for (int j = 0; j < WIDTH; ++j) {
    const unsigned y = ((t >> j) & 1) ? 0xffffffffu : 0u;
    csa(carry, out[j], x[j], y, carry);
  }
}

// 1 bits where x < y (the final borrow of x - y).
template <int WIDTH>
__device__ __forceinline__ unsigned borrow_out(const unsigned (&x)[WIDTH], const unsigned (&y)[WIDTH]) {
  unsigned b = 0u;
#pragma unroll
  for (int j = 0; j < WIDTH; ++j) b = (~x[j] & y[j]) | (~(x[j] ^ y[j]) & b);
  return b;
}

// Exact majority of V vectors (P, N: V rows of R words): pos where #pos >= #neg + t, neg where
// #neg >= #pos + t. A block of 256 threads covers 256 / S consecutive words; its S slices of threads
// each count `vchunk` vectors (a multiple of 8) and add their counters through shared memory
// (dynamic: 128 x 2 WIDTH words when S > 1). WIDTH >= bit length of max(V, t) + 2.
template <int WIDTH>
__global__ void __launch_bounds__(256)
vsa_bundle_v(const unsigned* __restrict__ P, const unsigned* __restrict__ N, unsigned* __restrict__ OP,
             unsigned* __restrict__ ON, i64 V, i64 R, i64 t, int S, i64 vchunk) {
  extern __shared__ unsigned part[];
  const int lanes = 256 / S, lane = threadIdx.x % lanes, slice = threadIdx.x / lanes;
  const i64 v0 = slice * vchunk, v1 = min(V, v0 + vchunk);
  for (i64 base = (i64)blockIdx.x * lanes; base < R; base += (i64)gridDim.x * lanes) {
    const i64 r = base + lane;
    unsigned cp[WIDTH], cn[WIDTH];
#pragma unroll
    for (int j = 0; j < WIDTH; ++j) { cp[j] = 0u; cn[j] = 0u; }
    if (r < R) {
      i64 v = v0;
      for (; v + 8 <= v1; v += 8) {
        unsigned xp[8], xn[8];
        const unsigned *p = P + v * R + r, *n = N + v * R + r;
#pragma unroll
        for (int k = 0; k < 8; ++k) { xp[k] = p[k * R]; xn[k] = n[k * R]; }
        add8<WIDTH>(cp, xp);
        add8<WIDTH>(cn, xn);
      }
      if (v < v1) {  // the last partial group, zero-padded
        unsigned xp[8], xn[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const bool in = v + k < v1;
          xp[k] = in ? P[(v + k) * R + r] : 0u;
          xn[k] = in ? N[(v + k) * R + r] : 0u;
        }
        add8<WIDTH>(cp, xp);
        add8<WIDTH>(cn, xn);
      }
    }
    for (int half = S >> 1; half >= 1; half >>= 1) {  // tree over the slices (S uniform)
      __syncthreads();
      if (slice >= half && slice < 2 * half) {
        const int idx = (slice - half) * lanes + lane;
#pragma unroll
        for (int j = 0; j < WIDTH; ++j) { part[j * 128 + idx] = cp[j]; part[(WIDTH + j) * 128 + idx] = cn[j]; }
      }
      __syncthreads();
      if (slice < half) {
        const int idx = slice * lanes + lane;
        add_counts<WIDTH>(cp, part + idx, 128);
        add_counts<WIDTH>(cn, part + WIDTH * 128 + idx, 128);
      }
    }
    if (slice == 0 && r < R) {
      unsigned tmp[WIDTH];
      add_const<WIDTH>(cn, t, tmp);
      const unsigned ge_p = ~borrow_out<WIDTH>(cp, tmp);
      add_const<WIDTH>(cp, t, tmp);
      OP[r] = ge_p;
      ON[r] = ~borrow_out<WIDTH>(cn, tmp);
    }
  }
}

// ---------------------------------------------------------------------------- soft counters
// Saturating s <- clamp(s + h) on sign-magnitude counters, the `bits` <= MAXB magnitude planes held
// in registers (read once). mag plane j of word e at mag[j * NW + e].
template <int MAXB>
__device__ __forceinline__ void acc_word(unsigned& s, unsigned (&m)[MAXB], unsigned p, unsigned n, int bits) {
  const unsigned active = p | n;
  unsigned nz = 0u, full = 0xffffffffu;
#pragma unroll
  for (int j = 0; j < MAXB; ++j)
    if (j < bits) { nz |= m[j]; full &= m[j]; }
  const unsigned opposite = (s ^ n) & nz & active, same = active & ~opposite;
  unsigned carry = same & ~full, borrow = opposite, nz_new = 0u;
#pragma unroll
  for (int j = 0; j < MAXB; ++j)
    if (j < bits) {
      const unsigned pl = m[j], c_next = pl & carry, b_next = ~pl & borrow;
      m[j] = pl ^ carry ^ borrow;
      nz_new |= m[j];
      carry = c_next;
      borrow = b_next;
    }
  s = ((s & ~same) | (n & same)) & nz_new;
}

template <int MAXB>
struct AccOp {
  unsigned *sign, *mag;
  const unsigned *hp, *hn;
  i64 NW;
  int bits;
  __device__ __forceinline__ void one(i64 e) const {
    unsigned m[MAXB], s = sign[e];
#pragma unroll
    for (int j = 0; j < MAXB; ++j) m[j] = j < bits ? mag[j * NW + e] : 0u;
    acc_word<MAXB>(s, m, hp[e], hn[e], bits);
#pragma unroll
    for (int j = 0; j < MAXB; ++j)
      if (j < bits) mag[j * NW + e] = m[j];
    sign[e] = s;
  }
  __device__ __forceinline__ void quad(i64 e) const {
    if constexpr (MAXB > 8) {  // 4 x MAXB planes would not fit the registers: word by word
      one(e); one(e + 1); one(e + 2); one(e + 3);
      return;
    }
    unsigned s[4], p[4], n[4], m4[MAXB][4];
    ld4(sign + e, s); ld4(hp + e, p); ld4(hn + e, n);
#pragma unroll
    for (int j = 0; j < MAXB; ++j)
      if (j < bits) ld4(mag + j * NW + e, m4[j]);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      unsigned m[MAXB];
#pragma unroll
      for (int j = 0; j < MAXB; ++j) m[j] = j < bits ? m4[j][k] : 0u;
      acc_word<MAXB>(s[k], m, p[k], n[k], bits);
#pragma unroll
      for (int j = 0; j < MAXB; ++j) m4[j][k] = m[j];
    }
#pragma unroll
    for (int j = 0; j < MAXB; ++j)
      if (j < bits) st4(mag + j * NW + e, m4[j]);
    st4(sign + e, s);
  }
};

// In place; vec only when sign, every mag plane, hp and hn share their address mod 16.
template <int MAXB>
__global__ void __launch_bounds__(256)
vsa_accumulate_v(unsigned* __restrict__ sign, unsigned* __restrict__ mag, const unsigned* __restrict__ hp,
                 const unsigned* __restrict__ hn, i64 NW, int bits, int vec) {
  for_words(AccOp<MAXB>{sign, mag, hp, hn, NW, bits}, sign, NW, vec);
}

// pos/neg planes where |s| >= t (1 <= t <= 2^bits - 1): the final borrow of |s| - t, streamed.
struct HardenOp {
  const unsigned *sign, *mag;
  unsigned *op, *on;
  i64 NW, t;
  int bits;
  __device__ __forceinline__ void one(i64 e) const {
    unsigned b = 0u;
#pragma unroll 4
    for (int j = 0; j < bits; ++j) {
      const unsigned x = mag[j * NW + e], y = ((t >> j) & 1) ? 0xffffffffu : 0u;
      b = (~x & y) | (~(x ^ y) & b);
    }
    const unsigned s = sign[e];
    op[e] = ~b & ~s;
    on[e] = ~b & s;
  }
  __device__ __forceinline__ void quad(i64 e) const {
    unsigned b[4] = {0u, 0u, 0u, 0u}, x[4], s[4], p[4], n[4];
#pragma unroll 4
    for (int j = 0; j < bits; ++j) {
      ld4(mag + j * NW + e, x);
      const unsigned y = ((t >> j) & 1) ? 0xffffffffu : 0u;
#pragma unroll
      for (int k = 0; k < 4; ++k) b[k] = (~x[k] & y) | (~(x[k] ^ y) & b[k]);
    }
    ld4(sign + e, s);
#pragma unroll
    for (int k = 0; k < 4; ++k) { p[k] = ~b[k] & ~s[k]; n[k] = ~b[k] & s[k]; }
    st4(op + e, p); st4(on + e, n);
  }
};

__global__ void __launch_bounds__(256)
vsa_harden_v(const unsigned* __restrict__ sign, const unsigned* __restrict__ mag, unsigned* __restrict__ OP,
             unsigned* __restrict__ ON, i64 NW, int bits, i64 t, int vec) {
  for_words(HardenOp{sign, mag, OP, ON, NW, t, bits}, sign, NW, vec);
}

}  // namespace ptg
