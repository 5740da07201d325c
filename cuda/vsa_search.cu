// Item-memory search for pytropical_gpu: exact int32 dots of Q queries with M memory rows, then
// the k best rows per query, best first, ties to the smaller row. Planes: 32 trits per uint32 word,
// LSB first, tail bits past dim zero, pos and neg disjoint (TernaryVec). All offsets are 64-bit.
//
// Scores: search_mma (1-bit tensor cores, many queries) or search_popc (one warp per row, few
// queries). Top-k: topk_scores (per block of rows) then topk_merge (per query).

namespace ptg {

typedef long long i64;

// ---------------------------------------------------------------------------- 1-bit MMA scores
// D += popc(A & B) over k = 256 bits: A 16 rows x 256 bits (row major), B 256 bits x 8 columns.
__device__ __forceinline__ void mma_and_popc(int* d, const unsigned* a, unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// dot(a, b) = 2 (popc(ap & bp) + popc(an & bn)) - popc(ax & bx) with x = p | n: both non-zero
// counts +1 (same sign) or -1 (opposite), so two accumulators and three MMAs per 256 trits.
//
// A block owns NT * 8 queries (blockIdx.y) and loops over tiles of 16 * MT memory rows, one tile a
// warp. The queries' planes sit in shared memory in fragment order: for k-step s (8 words), column
// tile j and lane l = 4 g + t the uint4 {p[w], p[w + 1], n[w], n[w + 1]} of query 8 j + g at word
// w = 8 s + 2 t (a k-step's words are permuted the same way in A and B, which a dot allows). The
// memory rows go straight from global memory into the A fragments, each word read once per block.
// kc words of the queries fit in shared memory; a longer row is taken in chunks of kc words.
template <int NT, int MT, int WARPS>
__global__ void __launch_bounds__(WARPS * 32, 1)
search_mma(const unsigned* __restrict__ MP, const unsigned* __restrict__ MN,
           const unsigned* __restrict__ QP, const unsigned* __restrict__ QN, int* __restrict__ S,
           i64 M, i64 Q, i64 W, int kc) {
  extern __shared__ uint4 qs[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const i64 q0 = (i64)blockIdx.y * (NT * 8);
  const int steps = (int)((W + 7) / 8), cs = kc / 8;
  const int chunks = (steps + cs - 1) / cs;
  const i64 tiles = (M + 16 * MT - 1) / (16 * MT);
  auto stage = [&](int c) {
    for (int e = threadIdx.x; e < cs * NT * 32; e += WARPS * 32) {
      const int s = e / (NT * 32), j = (e >> 5) % NT, l = e & 31;
      const i64 q = q0 + j * 8 + (l >> 2), w = (i64)(c * cs + s) * 8 + 2 * (l & 3);
      uint4 v = make_uint4(0u, 0u, 0u, 0u);
      if (q < Q && w < W) {
        v.x = QP[q * W + w];
        v.z = QN[q * W + w];
        if (w + 1 < W) { v.y = QP[q * W + w + 1]; v.w = QN[q * W + w + 1]; }
      }
      qs[e] = v;
    }
  };
  if (chunks == 1) {
    stage(0);
    __syncthreads();
  }
  for (i64 base = (i64)blockIdx.x * WARPS; base < tiles; base += (i64)gridDim.x * WARPS) {
    const i64 tile = base + warp;
    const bool active = tile < tiles;
    int c1[MT][NT][4], c2[MT][NT][4];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) { c1[m][j][i] = 0; c2[m][j][i] = 0; }
    // rows r0 + 16 m + g (h = 0) and + 8 (h = 1); a row past M reads as zeros
    const unsigned *rp[MT][2], *rn[MT][2];
    bool rok[MT][2];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const i64 r = tile * 16 * MT + 16 * m + 8 * h + g;
        rok[m][h] = active && r < M;
        const i64 rr = rok[m][h] ? r : 0;
        rp[m][h] = MP + rr * W;
        rn[m][h] = MN + rr * W;
      }
    for (int c = 0; c < chunks; ++c) {
      if (chunks > 1) {
        __syncthreads();
        stage(c);
        __syncthreads();
      }
      if (!active) continue;
      const int send = min(cs, steps - c * cs);
#pragma unroll 4
      for (int s = 0; s < send; ++s) {
        const i64 w = (i64)(c * cs + s) * 8 + 2 * t;
        const bool w0 = w < W, w1 = w + 1 < W;
        unsigned ap[MT][4], an[MT][4], ax[MT][4];
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
          for (int h = 0; h < 2; ++h) {  // a0/a1: word w of rows g/g+8; a2/a3: word w + 1
            ap[m][h] = (rok[m][h] && w0) ? __ldg(rp[m][h] + w) : 0u;
            an[m][h] = (rok[m][h] && w0) ? __ldg(rn[m][h] + w) : 0u;
            ap[m][2 + h] = (rok[m][h] && w1) ? __ldg(rp[m][h] + w + 1) : 0u;
            an[m][2 + h] = (rok[m][h] && w1) ? __ldg(rn[m][h] + w + 1) : 0u;
          }
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
          for (int i = 0; i < 4; ++i) ax[m][i] = ap[m][i] | an[m][i];
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          const uint4 b = qs[(s * NT + j) * 32 + lane];
          const unsigned bx0 = b.x | b.z, bx1 = b.y | b.w;
#pragma unroll
          for (int m = 0; m < MT; ++m) {
            mma_and_popc(c1[m][j], ap[m], b.x, b.y);
            mma_and_popc(c1[m][j], an[m], b.z, b.w);
            mma_and_popc(c2[m][j], ax[m], bx0, bx1);
          }
        }
      }
    }
    if (!active) continue;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) {  // c0, c1: row g, columns 2t, 2t+1; c2, c3: row g + 8
          const i64 r = tile * 16 * MT + 16 * m + g + 8 * (i >> 1), q = q0 + 8 * j + 2 * t + (i & 1);
          if (r < M && q < Q) S[q * M + r] = 2 * c1[m][j][i] - c2[m][j][i];
        }
  }
}

// ---------------------------------------------------------------------------- popcount scores
// One warp per memory row (grid-stride), every query in turn: for one query, a bandwidth kernel.
__global__ void __launch_bounds__(256)
search_popc(const unsigned* __restrict__ MP, const unsigned* __restrict__ MN,
            const unsigned* __restrict__ QP, const unsigned* __restrict__ QN, int* __restrict__ S,
            i64 M, i64 Q, i64 W) {
  const int lane = threadIdx.x & 31;
  const i64 nw = (i64)gridDim.x * 8;
  for (i64 r = (i64)blockIdx.x * 8 + (threadIdx.x >> 5); r < M; r += nw) {
    const unsigned *mp = MP + r * W, *mn = MN + r * W;
    for (i64 q = 0; q < Q; ++q) {
      const unsigned *qp = QP + q * W, *qn = QN + q * W;
      int s = 0;
#pragma unroll 4
      for (i64 w = lane; w < W; w += 32) {
        const unsigned ap = __ldg(mp + w), an = __ldg(mn + w), bp = __ldg(qp + w), bn = __ldg(qn + w);
        s += __popc((ap & bp) | (an & bn)) - __popc((ap & bn) | (an & bp));
      }
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
      if (lane == 0) S[q * M + r] = s;
    }
  }
}

// ---------------------------------------------------------------------------- top-k
// A candidate is one int64 key: score in the high word, 0xffffffff - row in the low word, so a
// larger key is a larger score or the same score at a smaller row. EMPTY is below every key.
#define PTG_EMPTY (-0x7fffffffffffffffLL - 1)

__device__ __forceinline__ i64 key_of(int score, i64 row) {
  return (i64)(((unsigned long long)(long long)score << 32) | (0xffffffffu - (unsigned)row));
}

// l: descending, K long; key goes in if it beats the last.
template <int K>
__device__ __forceinline__ void insert(i64 (&l)[K], i64 key) {
  if (key <= l[K - 1]) return;
  l[K - 1] = key;
#pragma unroll
  for (int j = K - 1; j > 0; --j)
    if (l[j] > l[j - 1]) { const i64 x = l[j]; l[j] = l[j - 1]; l[j - 1] = x; }
}

// The K largest heads of a warp's lists, in order, into out[0..K) (lane 0 writes).
template <int K>
__device__ __forceinline__ void warp_merge(i64 (&l)[K], i64* out) {
  const int lane = threadIdx.x & 31;
  for (int i = 0; i < K; ++i) {
    i64 m = l[0];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, off));
    if (lane == 0) out[i] = m;
    if (l[0] == m) {  // keys are distinct (EMPTY aside): one lane pops
#pragma unroll
      for (int j = 0; j < K - 1; ++j) l[j] = l[j + 1];
      l[K - 1] = PTG_EMPTY;
    }
  }
}

// The block's K best of every thread's list l into out[0..K) (256 threads; visible to thread 0).
template <int K>
__device__ __forceinline__ void block_merge(i64 (&l)[K], i64* out) {
  __shared__ i64 part[8][K];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  warp_merge<K>(l, part[warp]);
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int j = 0; j < K; ++j) l[j] = lane < 8 ? part[lane][j] : PTG_EMPTY;
    warp_merge<K>(l, out);
  }
}

// grid (chunks, queries): the K best keys of S[q, chunk] into cand[(q * chunks + c) * K ..].
template <int K>
__global__ void __launch_bounds__(256)
topk_scores(const int* __restrict__ S, i64* __restrict__ cand, i64 M, i64 chunk) {
  const i64 q = blockIdx.y, c = blockIdx.x;
  const i64 lo = c * chunk, hi = min(M, lo + chunk);
  i64 l[K];
#pragma unroll
  for (int j = 0; j < K; ++j) l[j] = PTG_EMPTY;
  const int* s = S + q * M;
  for (i64 r = lo + threadIdx.x; r < hi; r += 256) insert<K>(l, key_of(__ldg(s + r), r));
  block_merge<K>(l, cand + (q * gridDim.x + c) * K);
}

// grid (queries): the k best of a query's n candidate keys -> idx, val (int64, k <= K).
template <int K>
__global__ void __launch_bounds__(256)
topk_merge(const i64* __restrict__ cand, i64 n, long long* __restrict__ idx,
           long long* __restrict__ val, int k) {
  __shared__ i64 best[K];
  const i64 q = blockIdx.x;
  i64 l[K];
#pragma unroll
  for (int j = 0; j < K; ++j) l[j] = PTG_EMPTY;
  for (i64 i = threadIdx.x; i < n; i += 256) insert<K>(l, __ldg(cand + q * n + i));
  block_merge<K>(l, best);
  __syncthreads();
  if (threadIdx.x < k) {
    const i64 key = best[threadIdx.x];
    idx[q * k + threadIdx.x] = (i64)(0xffffffffu - (unsigned)(key & 0xffffffffLL));
    val[q * k + threadIdx.x] = key >> 32;
  }
}

}  // namespace ptg
