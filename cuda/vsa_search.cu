// Item-memory search for pytropical_gpu: the exact int32 dots of Q queries with M memory rows
// (|dot| <= dim < 2^30), for the top-k of cuda/vsa_topk.cu. Planes: 32 trits per uint32 word,
// LSB first, tail bits past dim zero, pos and neg disjoint (TernaryVec). All offsets are 64-bit.
//
// Scores: search_mma (1-bit tensor cores, several queries), search_scan (one query, 16-byte
// reads) or search_popc (any queries, any alignment). search_mma with K > 0 keeps the top-k
// instead: each block writes the K best (score, row) keys of its rows per query, for topk_merge_w.

namespace ptg {

typedef long long i64;

// The warp-wide lists of cuda/vsa_topk.cu (search_launch.py appends that file to this module).
#define PTG_EMPTY (-0x7fffffffffffffffLL - 1)
__device__ __forceinline__ i64 key_of(int score, i64 row);
__device__ __forceinline__ void wl_feed_k(i64& mine, i64& thr, i64 key, bool ok, int lane, int k1);

// ---------------------------------------------------------------------------- 1-bit MMA scores
// D += popc(A & B) over k = 256 bits: A 16 rows x 256 bits (row major), B 256 bits x 8 columns.
__device__ __forceinline__ void mma_and_popc(int* d, const unsigned* a, unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// A[g][m]: the p fragment (a0..a3) then the n fragment of k-step s0 + g for rows 16 m + g8 (+8):
// a0/a1 word w of rows g8 / g8 + 8, a2/a3 word w + 1; zeros past the chunk, the row or the memory.
template <int G, int MT>
__device__ __forceinline__ void load_a(unsigned (&A)[G][MT][8], const unsigned* const (&rp)[MT][2],
                                       const unsigned* const (&rn)[MT][2], const bool (&rok)[MT][2],
                                       i64 w0, int s0, int send, i64 W) {
#pragma unroll
  for (int g = 0; g < G; ++g) {
    const i64 w = w0 + 8 * (s0 + g);
    const bool ok = s0 + g < send, ok0 = ok && w < W, ok1 = ok && w + 1 < W;
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        A[g][m][h] = (ok0 && rok[m][h]) ? __ldg(rp[m][h] + w) : 0u;
        A[g][m][2 + h] = (ok1 && rok[m][h]) ? __ldg(rp[m][h] + w + 1) : 0u;
        A[g][m][4 + h] = (ok0 && rok[m][h]) ? __ldg(rn[m][h] + w) : 0u;
        A[g][m][6 + h] = (ok1 && rok[m][h]) ? __ldg(rn[m][h] + w + 1) : 0u;
      }
  }
}

// dot(a, b) = 2 (popc(ap & bp) + popc(an & bn)) - popc(ax & bx) with x = p | n: both non-zero
// counts +1 (same sign) or -1 (opposite), so two accumulators and three MMAs per 256 trits.
template <int G, int MT, int NT>
__device__ __forceinline__ void mma_group(int (&c1)[MT][NT][4], int (&c2)[MT][NT][4],
                                          const unsigned (&A)[G][MT][8], const uint4* qs, int s0,
                                          int send, int lane) {
#pragma unroll
  for (int g = 0; g < G; ++g) {
    if (s0 + g >= send) break;  // warp-uniform
    unsigned ax[MT][4];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int i = 0; i < 4; ++i) ax[m][i] = A[g][m][i] | A[g][m][4 + i];
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const uint4 b = qs[((s0 + g) * NT + j) * 32 + lane];
      const unsigned bx0 = b.x | b.z, bx1 = b.y | b.w;
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        mma_and_popc(c1[m][j], &A[g][m][0], b.x, b.y);
        mma_and_popc(c1[m][j], &A[g][m][4], b.z, b.w);
        mma_and_popc(c2[m][j], ax[m], bx0, bx1);
      }
    }
  }
}

// Chunk c (cs k-steps) of the planes of queries q0 .. q0 + 8 NT - 1 into qs in fragment order
// (below; search_mma_cp in cuda/vsa_search_cp.cu too), zeros past Q and W; THREADS threads.
template <int NT, int THREADS>
__device__ __forceinline__ void stage_queries(uint4* qs, const unsigned* __restrict__ QP,
                                              const unsigned* __restrict__ QN, i64 Q, i64 W, i64 q0,
                                              int c, int cs) {
  for (int e = threadIdx.x; e < cs * NT * 32; e += THREADS) {
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
}

// Where a row takes several chunks of the query planes: chunk c into shared memory, between
// barriers (every thread of the block calls it).
template <typename F>
__device__ __forceinline__ void restage(int c, int chunks, const F& stage) {
  if (chunks > 1) {
    __syncthreads();
    stage(c);
    __syncthreads();
  }
}

// A block owns NT * 8 queries (blockIdx.y) and loops over tiles of 16 * MT memory rows, one tile a
// warp. The queries' planes sit in shared memory in fragment order: for k-step s (8 words), column
// tile j and lane l = 4 g + t the uint4 {p[w], p[w + 1], n[w], n[w + 1]} of query 8 j + g at word
// w = 8 s + 2 t (a k-step's words are permuted the same way in A and B, which a dot allows). The
// memory rows go straight from global memory into the A fragments, each word read once per block,
// G k-steps a group, the next group loading while this one multiplies.
// kc words of the queries fit in shared memory; a longer row is taken in chunks of kc words.
// K = 0: the scores into S (Q x M; ST = short where |score| <= dim < 2^15, half the bytes).
// K > 0 (<= 32; 8 NT a multiple of WARPS): each round of tiles
// puts its scores in shared memory after the query planes (8 NT rows of R + 4 ints, R = the rows
// of a round: no bank conflict on the writes), and warp w keeps the warp-wide lists (lane i: the
// i-th best key; kept to the first k lanes) of queries w QPW .. w QPW + QPW - 1 of the block; at
// the end C[q][blockIdx.x][K]. dbl: two score buffers, alternate rounds (one barrier a round).
// narrow: the round's scores as int16 (|score| <= dim < 2^15): half the shared memory, more L1.
template <int NT, int MT, int WARPS, int G, int K = 0, typename ST = int>
__global__ void __launch_bounds__(WARPS * 32, 1)
search_mma(const unsigned* __restrict__ MP, const unsigned* __restrict__ MN,
           const unsigned* __restrict__ QP, const unsigned* __restrict__ QN, ST* __restrict__ S,
           i64 M, i64 Q, i64 W, int kc, i64* __restrict__ C, int k, int dbl, int narrow) {
  static_assert(K == 0 || (K <= 32 && (8 * NT) % WARPS == 0), "fused top-k: K <= 32, 8 NT % WARPS");
  constexpr int R = WARPS * 16 * MT, RS = R + 4, QPW = K ? (8 * NT) / WARPS : 1;
  extern __shared__ uint4 qs[];
  i64 mine[QPW], thr[QPW];
#pragma unroll
  for (int i = 0; i < QPW; ++i) { mine[i] = PTG_EMPTY; thr[i] = PTG_EMPTY; }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g8 = lane >> 2, t = lane & 3;
  const i64 q0 = (i64)blockIdx.y * (NT * 8);
  const int steps = (int)((W + 7) / 8), cs = kc / 8;
  const int chunks = (steps + cs - 1) / cs;
  const i64 tiles = (M + 16 * MT - 1) / (16 * MT);
  auto stage = [&](int c) { stage_queries<NT, WARPS * 32>(qs, QP, QN, Q, W, q0, c, cs); };
  if (chunks == 1) {
    stage(0);
    __syncthreads();
  }
  int round = 0;
  for (i64 base = (i64)blockIdx.x * WARPS; base < tiles; base += (i64)gridDim.x * WARPS, ++round) {
    const i64 tile = base + warp;
    const bool active = tile < tiles;
    int c1[MT][NT][4], c2[MT][NT][4];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) { c1[m][j][i] = 0; c2[m][j][i] = 0; }
    const unsigned *rp[MT][2], *rn[MT][2];
    bool rok[MT][2];
#pragma unroll
    for (int m = 0; m < MT; ++m)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const i64 r = tile * 16 * MT + 16 * m + 8 * h + g8;
        rok[m][h] = active && r < M;
        rp[m][h] = MP + (rok[m][h] ? r : 0) * W;
        rn[m][h] = MN + (rok[m][h] ? r : 0) * W;
      }
    for (int c = 0; c < chunks; ++c) {
      restage(c, chunks, stage);
      if (!active) continue;
      const int send = min(cs, steps - c * cs);
      const i64 w0 = (i64)c * cs * 8 + 2 * t;
      unsigned A0[G][MT][8], A1[G][MT][8];
      load_a<G, MT>(A0, rp, rn, rok, w0, 0, send, W);
      for (int s0 = 0; s0 < send; s0 += 2 * G) {
        load_a<G, MT>(A1, rp, rn, rok, w0, s0 + G, send, W);
        mma_group<G, MT, NT>(c1, c2, A0, qs, s0, send, lane);
        load_a<G, MT>(A0, rp, rn, rok, w0, s0 + 2 * G, send, W);
        mma_group<G, MT, NT>(c1, c2, A1, qs, s0 + G, send, lane);
      }
    }
    if constexpr (K == 0) {
      if (!active) continue;
#pragma unroll
      for (int m = 0; m < MT; ++m)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
          for (int i = 0; i < 4; ++i) {  // c0, c1: row g8, columns 2t, 2t+1; c2, c3: row g8 + 8
            const i64 r = tile * 16 * MT + 16 * m + g8 + 8 * (i >> 1), q = q0 + 8 * j + 2 * t + (i & 1);
            if (r < M && q < Q) S[q * M + r] = (ST)(2 * c1[m][j][i] - c2[m][j][i]);
          }
    } else {
      const int off = dbl ? (round & 1) * (8 * NT * RS) : 0;
      int* st = reinterpret_cast<int*>(qs + cs * NT * 32) + off;
      short* sh = reinterpret_cast<short*>(qs + cs * NT * 32) + off;
      // st: [8 NT][RS], local query by local row
      if (active) {
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
          for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
              const int e = (8 * j + 2 * t + (i & 1)) * RS + warp * 16 * MT + 16 * m + g8 + 8 * (i >> 1);
              const int v = 2 * c1[m][j][i] - c2[m][j][i];
              if (narrow) sh[e] = (short)v;
              else st[e] = v;
            }
      }
      __syncthreads();
      const i64 r0 = base * 16 * MT;  // row of local row 0 (rows of tiles past the end: >= M)
#pragma unroll
      for (int qq = 0; qq < QPW; ++qq)
#pragma unroll
        for (int u = 0; u < R; u += 32) {
          const i64 r = r0 + u + lane;
          const bool ok = r < M;
          const int e = (warp * QPW + qq) * RS + u + lane;
          const int v = narrow ? (int)sh[e] : st[e];
          wl_feed_k(mine[qq], thr[qq], key_of(ok ? v : 0, r), ok, lane, k - 1);
        }
      if (!dbl) __syncthreads();  // read before the next round writes (dbl: the round after)
    }
  }
  if constexpr (K > 0) {
#pragma unroll
    for (int qq = 0; qq < QPW; ++qq) {
      const i64 q = q0 + warp * QPW + qq;
      if (q < Q && lane < K) C[(q * gridDim.x + blockIdx.x) * K + lane] = mine[qq];
    }
  }
}

// ---------------------------------------------------------------------------- one query, 16 B
// One warp per memory row (grid-stride), one query: the row is read as the aligned 16-byte
// vectors of the flat plane that cover it (the neighbours' words masked to zero), U vectors a lane
// in flight per plane; the query from shared memory (QSH) or global memory. MP, MN 16-aligned.
__device__ __forceinline__ int trit_dot(unsigned ap, unsigned an, unsigned bp, unsigned bn) {
  return __popc((ap & bp) | (an & bn)) - __popc((ap & bn) | (an & bp));
}

template <int U, bool QSH>
__global__ void __launch_bounds__(256)
search_scan(const unsigned* __restrict__ MP, const unsigned* __restrict__ MN,
            const unsigned* __restrict__ QP, const unsigned* __restrict__ QN, int* __restrict__ S,
            i64 M, i64 W) {
  extern __shared__ unsigned qsm[];
  if (QSH) {
    for (i64 i = threadIdx.x; i < W; i += 256) { qsm[i] = QP[i]; qsm[W + i] = QN[i]; }
    __syncthreads();
  }
  const uint4 *P4 = reinterpret_cast<const uint4*>(MP), *N4 = reinterpret_cast<const uint4*>(MN);
  const int lane = threadIdx.x & 31;
  const i64 nw = (i64)gridDim.x * 8;
  for (i64 r = (i64)blockIdx.x * 8 + (threadIdx.x >> 5); r < M; r += nw) {
    const i64 f0 = r * W, u1 = (f0 + W + 3) >> 2;
    int s = 0;
    for (i64 ub = (f0 >> 2) + lane; ub < u1; ub += 32 * U) {
      uint4 p[U], n[U];
#pragma unroll
      for (int j = 0; j < U; ++j) {  // every load issued first: a vector past the row repeats
        const i64 u = min(ub + 32 * j, u1 - 1);  // the row's last one, masked below
        p[j] = __ldcs(P4 + u);
        n[j] = __ldcs(N4 + u);
      }
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const i64 o = 4 * (ub + 32 * j) - f0;  // row offset of p[j].x
        const unsigned pw[4] = {p[j].x, p[j].y, p[j].z, p[j].w}, nw4[4] = {n[j].x, n[j].y, n[j].z, n[j].w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const bool in = o + i >= 0 && o + i < W;
          const i64 oi = in ? o + i : 0;
          const unsigned bp = QSH ? qsm[oi] : __ldg(QP + oi), bn = QSH ? qsm[W + oi] : __ldg(QN + oi);
          s += trit_dot(in ? pw[i] : 0u, in ? nw4[i] : 0u, bp, bn);
        }
      }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) S[r] = s;
  }
}

// ---------------------------------------------------------------------------- popcount scores
// One warp per memory row (grid-stride), every query in turn, 4-byte reads: any alignment, any Q.
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
        s += trit_dot(ap, an, bp, bn);
      }
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
      if (lane == 0) S[q * M + r] = s;
    }
  }
}

}  // namespace ptg
