// One-query item-memory search for pytropical_gpu with the memory rows brought into shared memory
// by the copy engine (sm_90 bulk copies, cp.async.bulk + mbarrier): the exact int32 dots of one
// query with M rows (|dot| <= dim < 2^30), as search_scan_cp (cuda/vsa_search_cp.cu) computes
// them. Planes: 32 trits per uint32 word, LSB first, tail bits zero, pos and neg disjoint.
//
// search_scan_cp issues a row as 2 x ceil(W / 4) 16-byte cp.async a warp; here lane 0 issues one
// bulk copy a plane (the aligned 16-byte span covering the row) and the warp waits on the stage's
// mbarrier, so a warp can keep STAGES - 1 rows in flight at no issue cost. Older devices (below
// sm_90) have no bulk copy: the kernel traps there, and search_fused.py never launches it.

namespace ptg {

typedef long long i64;

// From cuda/vsa_topk.cu (search_launch.py appends it to this module; the other lists' declarations
// and the scan's row step are in cuda/vsa_scan_row.cuh, put before it): the floor merge (TF: with
// the tighter floor, search_scan_tmag's).
template <int K, bool TF>
__device__ __forceinline__ void merge_keys_f(const i64* cand, int n, long long* idx,
                                             long long* val, int k, unsigned* counter);

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void bar_init(unsigned long long* b) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_u32(b)) : "memory");
}

// One arrival that also expects `bytes` of copies to complete this phase.
__device__ __forceinline__ void bar_expect(unsigned long long* b, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(b)),
               "r"(bytes) : "memory");
}

__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes,
                                          unsigned long long* b) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
      ::"r"(smem_u32(dst)), "l"(src), "r"(bytes), "r"(smem_u32(b)) : "memory");
}

__device__ __forceinline__ void bar_wait(unsigned long long* b, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 " selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(smem_u32(b)), "r"(parity) : "memory");
}

// A warp's stage: both planes' 16-byte vectors [u0, u1) by one bulk copy each, into dst (pos) and
// dst + span (neg), completing on the stage's mbarrier mbar (lane 0 only; search_scan_tma issues a
// row, search_scan_tmag in cuda/vsa_search_tmag.cu a group of G rows). The fence puts the warp's
// reads of the stage (generic proxy) before the copy engine's writes. A macro, not a function, for
// the reason cuda/vsa_scan_row.cuh gives: as an inlined function it changed both kernels' code
// (other registers and instruction order in all 88 instantiations); as a macro both compile to the
// code they had.
#define PTG_STAGE_ISSUE(dst, mbar, P4, N4, u0, u1, span)                                      \
  {                                                                                           \
    const unsigned bytes = (unsigned)((u1) - (u0)) * 16u;                                     \
    uint4* b = dst;                                                                           \
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");                            \
    bar_expect(mbar, 2 * bytes);                                                              \
    bulk_copy(b, P4 + (u0), bytes, mbar);                                                     \
    bulk_copy(b + span, N4 + (u0), bytes, mbar);                                              \
  }
#endif

// One warp per memory row (grid-stride, 8 warps a block), one query (its planes in shared memory
// after the warps' STAGES mbarriers); row i of a warp lands in stage i % STAGES (2 x span 16-byte
// vectors). K = 0: the scores into S. K > 0 (<= 32): the warp-wide lists, the block's K best into
// C[blockIdx.x][K], and with a counter the last block merges every block's keys into idx, val.
// VQ: the query kept as 4 copies shifted by o = 0..3 words (copy o: 2 planes x 4 span words, word
// 4 j + i = query word 4 j + i - o, zero outside the query), so a row starting o words into its
// first 16-byte vector is multiplied a vector at a time (16-byte shared reads, the neighbours'
// words meeting zeros): a quarter of the shared-memory loads and a shorter chain a row.
// FL (K > 0, with a counter): each block also puts its list's k-th key into a global floor
// (atomicMax at counter + 2, counter: 4 words), so the last block's merge starts from it
// (merge_keys_f: no pass over the lists' k-th keys, one round of loads).
template <int STAGES, int K = 0, bool VQ = false, bool FL = false>
__global__ void __launch_bounds__(256)
search_scan_tma(const unsigned* __restrict__ MP, const unsigned* __restrict__ MN,
                const unsigned* __restrict__ QP, const unsigned* __restrict__ QN,
                int* __restrict__ S, i64 M, i64 W, int span, i64* __restrict__ C, int k,
                long long* __restrict__ idx, long long* __restrict__ val,
                unsigned* __restrict__ counter) {
  static_assert(K <= 32 && STAGES >= 2, "fused top-k: K <= 32; two stages at least");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ uint4 smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned long long* bar = reinterpret_cast<unsigned long long*>(smem) + warp * STAGES;
  unsigned* qsm = reinterpret_cast<unsigned*>(smem + 4 * STAGES);  // after 8 x STAGES barriers
  if constexpr (VQ) {
    for (int i = threadIdx.x; i < 4 * 4 * span; i += 256) {  // copy o, word x of both planes
      const int o = i / (4 * span), x = i - o * 4 * span, w = x - o;
      const bool in = w >= 0 && w < W;
      qsm[o * 8 * span + x] = in ? QP[w] : 0u;
      qsm[o * 8 * span + 4 * span + x] = in ? QN[w] : 0u;
    }
  } else {
    for (i64 i = threadIdx.x; i < W; i += 256) { qsm[i] = QP[i]; qsm[W + i] = QN[i]; }
  }
  if (lane == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) bar_init(bar + s);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  uint4* buf = smem + 4 * STAGES + (VQ ? 8 * span : (2 * W + 3) / 4) + warp * (STAGES * 2 * span);
  const uint4 *P4 = reinterpret_cast<const uint4*>(MP), *N4 = reinterpret_cast<const uint4*>(MN);
  const i64 first = (i64)blockIdx.x * 8 + warp, nw = (i64)gridDim.x * 8;
  auto issue = [&](int i) {
    const i64 r = first + i * nw;
    if (lane == 0 && r < M) {
      const i64 u0 = (r * W) >> 2, u1 = (r * W + W + 3) >> 2;
      PTG_STAGE_ISSUE(buf + (i % STAGES) * 2 * span, bar + i % STAGES, P4, N4, u0, u1, span)
    }
  };
  i64 mine = PTG_EMPTY, thr = PTG_EMPTY;
#pragma unroll
  for (int i = 0; i < STAGES - 1; ++i) issue(i);
  for (int i = 0; first + i * nw < M; ++i) {
    issue(i + STAGES - 1);
    bar_wait(bar + i % STAGES, (unsigned)(i / STAGES) & 1u);
    const i64 r = first + i * nw;
    int s = 0;
    if constexpr (VQ) {
      const int o = (int)((r * W) & 3), nv = (int)(((r * W + W + 3) >> 2) - ((r * W) >> 2));
      const uint4* bp = buf + (i % STAGES) * 2 * span;
      const uint4* qp4 = reinterpret_cast<const uint4*>(qsm) + o * 2 * span;
      for (int j = lane; j < nv; j += 32) {
        const uint4 ap = bp[j], an = bp[span + j], qp = qp4[j], qn = qp4[span + j];
        s += __popc((ap.x & qp.x) | (an.x & qn.x)) - __popc((ap.x & qn.x) | (an.x & qp.x));
        s += __popc((ap.y & qp.y) | (an.y & qn.y)) - __popc((ap.y & qn.y) | (an.y & qp.y));
        s += __popc((ap.z & qp.z) | (an.z & qn.z)) - __popc((ap.z & qn.z) | (an.z & qp.z));
        s += __popc((ap.w & qp.w) | (an.w & qn.w)) - __popc((ap.w & qn.w) | (an.w & qp.w));
      }
    } else {
      const unsigned* bp = reinterpret_cast<const unsigned*>(buf + (i % STAGES) * 2 * span) + ((r * W) & 3);
      const unsigned* bn = bp + 4 * span;
      PTG_ROW_DOT(s, bp, bn, qsm, W, lane)
    }
    PTG_KEEP_ROW(K, s, r, S, mine, thr, lane, k)
    __syncwarp();  // every lane has read the stage before lane 0 refills it
  }
  if constexpr (K > 0) {
    const i64 best = wl_block<K>(mine, C + (i64)blockIdx.x * K, k);
    if constexpr (FL) {
      if (counter && threadIdx.x == k - 1)  // lane k - 1 of warp 0: the block's k-th key
        atomicMax(reinterpret_cast<unsigned long long*>(counter + 2),
                  (unsigned long long)best ^ 0x8000000000000000ULL);
      if (counter && last_of(counter, gridDim.x))
        merge_keys_f<K, false>(C, gridDim.x, idx, val, k, counter);
    } else {
      if (counter && last_of(counter, gridDim.x)) merge_keys<K>(C, gridDim.x, idx, val, k);
    }
  }
#else
  __trap();  // no bulk copies below sm_90 (never launched there)
#endif
}

}  // namespace ptg
