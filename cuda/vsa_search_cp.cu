// Item-memory search scores for pytropical_gpu on 1-bit tensor cores, the memory rows staged
// through shared memory: the exact int32 dots of Q queries with M rows (|dot| <= dim < 2^30).
// Planes: 32 trits per uint32 word, LSB first, tail bits zero, pos and neg disjoint.
//
// search_mma (cuda/vsa_search.cu) loads each A fragment straight from global memory: every
// 4-byte load of a warp touches 8 rows, 8 to 16 cache lines, and the L1 serves one line a cycle.
// Here each warp copies its 16 rows with cp.async, a row's 16 words (two k-steps) per half warp,
// STAGES groups in flight, and reads the fragments from shared memory with 8-byte loads (row
// stride 24 words: no bank conflict).

namespace ptg {

typedef long long i64;

// From cuda/vsa_search.cu (search_launch.py appends it to this module, with cuda/vsa_topk.cu; the
// lists' declarations and the scan's row step are in cuda/vsa_scan_row.cuh, put before it): the
// 1-bit MMA and the query staging.
__device__ __forceinline__ void mma_and_popc(int* d, const unsigned* a, unsigned b0, unsigned b1);
template <int NT, int THREADS>
__device__ __forceinline__ void stage_queries(uint4* qs, const unsigned* __restrict__ QP,
                                              const unsigned* __restrict__ QN, i64 Q, i64 W, i64 q0,
                                              int c, int cs);
template <typename F>
__device__ __forceinline__ void restage(int c, int chunks, const F& stage);

__device__ __forceinline__ void cp_async4(unsigned* dst, const unsigned* src, bool ok) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 4 : 0));
}

__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Shared memory: the queries (as in search_mma: cs k-steps x NT column tiles x 32 lanes of uint4
// {p[w], p[w+1], n[w], n[w+1]}, w = 8 s + 2 t), then per warp STAGES buffers of 2 planes x 16 rows
// x 24 words (16 used: k-steps 2 i and 2 i + 1 of the chunk).
template <int NT, int WARPS, int STAGES>
__global__ void __launch_bounds__(WARPS * 32, 1)
search_mma_cp(const unsigned* __restrict__ MP, const unsigned* __restrict__ MN,
              const unsigned* __restrict__ QP, const unsigned* __restrict__ QN, int* __restrict__ S,
              i64 M, i64 Q, i64 W, int kc) {
  extern __shared__ uint4 smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g8 = lane >> 2, t = lane & 3;
  const i64 q0 = (i64)blockIdx.y * (NT * 8);
  const int steps = (int)((W + 7) / 8), cs = kc / 8;
  const int chunks = (steps + cs - 1) / cs;
  const i64 tiles = (M + 15) / 16;
  uint4* qs = smem;
  unsigned* buf = reinterpret_cast<unsigned*>(smem + cs * NT * 32) + warp * (STAGES * 768);
  auto stage = [&](int c) { stage_queries<NT, WARPS * 32>(qs, QP, QN, Q, W, q0, c, cs); };
  if (chunks == 1) {
    stage(0);
    __syncthreads();
  }
  for (i64 base = (i64)blockIdx.x * WARPS; base < tiles; base += (i64)gridDim.x * WARPS) {
    const i64 tile = base + warp;
    const bool active = tile < tiles;
    int c1[NT][4], c2[NT][4];
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) { c1[j][i] = 0; c2[j][i] = 0; }
    for (int c = 0; c < chunks; ++c) {
      restage(c, chunks, stage);
      if (!active) continue;
      const int send = min(cs, steps - c * cs), groups = (send + 1) / 2;
      const i64 wend = min(W, (i64)(c * cs + send) * 8);
      // group i: rows 2 h + (lane >> 4) (h = 0..7), words 16 i + (lane & 15) of the chunk
      auto issue = [&](int i) {
        if (i < groups) {
          unsigned* b = buf + (i % STAGES) * 768;
          const i64 w = (i64)c * cs * 8 + 16 * i + (lane & 15);
#pragma unroll
          for (int h = 0; h < 8; ++h) {
            const int row = 2 * h + (lane >> 4);
            const i64 r = tile * 16 + row;
            const bool ok = r < M && w < wend;
            const i64 off = ok ? r * W + w : 0;
            cp_async4(b + row * 24 + (lane & 15), MP + off, ok);
            cp_async4(b + 384 + row * 24 + (lane & 15), MN + off, ok);
          }
        }
        cp_commit();
      };
#pragma unroll
      for (int i = 0; i < STAGES - 1; ++i) issue(i);
      for (int i = 0; i < groups; ++i) {
        issue(i + STAGES - 1);
        cp_wait<STAGES - 1>();
        __syncwarp();
        const unsigned* b = buf + (i % STAGES) * 768;
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          if (2 * i + s >= send) break;  // warp-uniform
          // a0/a2: words 8 s + 2 t, + 1 of row g8; a1/a3: of row g8 + 8
          const uint2 p0 = *reinterpret_cast<const uint2*>(b + g8 * 24 + 8 * s + 2 * t);
          const uint2 p1 = *reinterpret_cast<const uint2*>(b + (g8 + 8) * 24 + 8 * s + 2 * t);
          const uint2 n0 = *reinterpret_cast<const uint2*>(b + 384 + g8 * 24 + 8 * s + 2 * t);
          const uint2 n1 = *reinterpret_cast<const uint2*>(b + 384 + (g8 + 8) * 24 + 8 * s + 2 * t);
          const unsigned x0 = p0.x | n0.x, x1 = p1.x | n1.x, x2 = p0.y | n0.y, x3 = p1.y | n1.y;
#pragma unroll
          for (int j = 0; j < NT; ++j) {
            const uint4 q = qs[((2 * i + s) * NT + j) * 32 + lane];
            const unsigned ap[4] = {p0.x, p1.x, p0.y, p1.y}, an[4] = {n0.x, n1.x, n0.y, n1.y},
                           ax[4] = {x0, x1, x2, x3};
            mma_and_popc(c1[j], ap, q.x, q.y);
            mma_and_popc(c1[j], an, q.z, q.w);
            mma_and_popc(c2[j], ax, q.x | q.z, q.y | q.w);
          }
        }
        __syncwarp();  // every lane has read the buffer before it is refilled
      }
      cp_wait<0>();
    }
    if (!active) continue;
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int i = 0; i < 4; ++i) {  // c0, c1: row g8, columns 2t, 2t+1; c2, c3: row g8 + 8
        const i64 r = tile * 16 + g8 + 8 * (i >> 1), q = q0 + 8 * j + 2 * t + (i & 1);
        if (r < M && q < Q) S[q * M + r] = 2 * c1[j][i] - c2[j][i];
      }
  }
}

// ---------------------------------------------------------------------------- one query
// One warp per memory row (grid-stride), one query: the aligned 16-byte vectors covering a row
// (MP, MN 16-aligned) copied by cp.async into the warp's STAGES buffers of span vectors a plane,
// STAGES - 1 rows in flight, then each lane takes words lane, lane + 32, ... of the row from there;
// the query's planes in shared memory (the first 2 W words). K = 0: the scores into S. K > 0
// (<= 32): each warp keeps a warp-wide list of its rows' k (<= K) best keys (a row's score is the
// same in every lane, so a row costs one compare), and the block's K best go to C[blockIdx.x][K];
// with a counter, the last block to finish merges every block's keys into idx, val (one launch).
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src));
}

template <int STAGES, int K = 0>
__global__ void __launch_bounds__(256)
search_scan_cp(const unsigned* __restrict__ MP, const unsigned* __restrict__ MN,
               const unsigned* __restrict__ QP, const unsigned* __restrict__ QN, int* __restrict__ S,
               i64 M, i64 W, int span, i64* __restrict__ C, int k, long long* __restrict__ idx,
               long long* __restrict__ val, unsigned* __restrict__ counter) {
  static_assert(K <= 32, "fused top-k: K <= 32");
  i64 mine = PTG_EMPTY, thr = PTG_EMPTY;
  extern __shared__ uint4 smem[];
  unsigned* qsm = reinterpret_cast<unsigned*>(smem);
  for (i64 i = threadIdx.x; i < W; i += 256) { qsm[i] = QP[i]; qsm[W + i] = QN[i]; }
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  uint4* buf = smem + (2 * W + 3) / 4 + warp * (STAGES * 2 * span);
  const uint4 *P4 = reinterpret_cast<const uint4*>(MP), *N4 = reinterpret_cast<const uint4*>(MN);
  const i64 first = (i64)blockIdx.x * 8 + warp, nw = (i64)gridDim.x * 8;
  auto issue = [&](i64 i) {
    const i64 r = first + i * nw;
    if (r < M) {
      const i64 u0 = (r * W) >> 2, u1 = (r * W + W + 3) >> 2;
      uint4* b = buf + (i % STAGES) * 2 * span;
      for (i64 u = u0 + lane; u < u1; u += 32) {
        cp_async16(b + (u - u0), P4 + u);
        cp_async16(b + span + (u - u0), N4 + u);
      }
    }
    cp_commit();
  };
#pragma unroll
  for (int i = 0; i < STAGES - 1; ++i) issue(i);
  for (i64 i = 0; first + i * nw < M; ++i) {
    issue(i + STAGES - 1);
    cp_wait<STAGES - 1>();
    __syncwarp();
    const i64 r = first + i * nw;
    const unsigned* bp = reinterpret_cast<const unsigned*>(buf + (i % STAGES) * 2 * span) + ((r * W) & 3);
    const unsigned* bn = bp + 4 * span;
    int s = 0;
    PTG_ROW_DOT(s, bp, bn, qsm, W, lane)
    PTG_KEEP_ROW(K, s, r, S, mine, thr, lane, k)
    __syncwarp();  // every lane has read the buffer before it is refilled
  }
  cp_wait<0>();
  if constexpr (K > 0) {
    wl_block<K>(mine, C + (i64)blockIdx.x * K, k);
    if (counter && last_of(counter, gridDim.x)) merge_keys<K>(C, gridDim.x, idx, val, k);
  }
}

}  // namespace ptg
