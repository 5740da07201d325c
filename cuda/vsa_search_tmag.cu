// One-query item-memory search (issue 15, session 5): search_scan_tma (cuda/vsa_search_tma.cu,
// put before this file with its bulk-copy helpers) with each warp scanning a contiguous run of rows,
// G rows at a time: one bulk copy a plane brings G adjacent rows (G x W words, one piece of
// ~G x 1.25 KB at 10,000 trits instead of G pieces), one mbarrier wait serves G rows, the query's
// words are read once for the G rows, and the G rows' 5-step shuffle reductions run interleaved
// (G independent chains): the fixed per-row chain (wait, reduction, key) that bounds
// search_scan_tma at 16 warps a SM is paid once per G rows. The lists, the floor (FL) and the
// last-block merge are search_scan_tma's (K > 0 only).

namespace ptg {

// TF: the last block's merge_keys_f (cuda/vsa_topk.cu) starts from its tighter floor ("t").
// XS: the memory's groups of G rows dealt to the warps in turn (warp w: groups w, w + warps, ...;
// the GPU's reads at any time then lie in one narrow window of each plane, as in the read probe)
// instead of a contiguous run of rows a warp (~2,000 windows a plane, spread over the memory).
template <int STAGES, int G, int K, bool TF = false, bool XS = false>
__global__ void __launch_bounds__(256)
search_scan_tmag(const unsigned* __restrict__ MP, const unsigned* __restrict__ MN,
                 const unsigned* __restrict__ QP, const unsigned* __restrict__ QN,
                 int* __restrict__ S, i64 M, i64 W, int span, i64* __restrict__ C, int k,
                 long long* __restrict__ idx, long long* __restrict__ val,
                 unsigned* __restrict__ counter) {
  static_assert(K > 0 && K <= 32 && STAGES >= 2 && G >= 1, "lists of 1..32; two stages at least");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ uint4 smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, w32 = (int)W;
  unsigned long long* bar = reinterpret_cast<unsigned long long*>(smem) + warp * STAGES;
  unsigned* qsm = reinterpret_cast<unsigned*>(smem + 4 * STAGES);  // after 8 x STAGES barriers
  for (int i = threadIdx.x; i < w32; i += 256) { qsm[i] = QP[i]; qsm[w32 + i] = QN[i]; }
  if (lane == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) bar_init(bar + s);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  uint4* buf = smem + 4 * STAGES + (2 * W + 3) / 4 + warp * (STAGES * 2 * span);
  const uint4 *P4 = reinterpret_cast<const uint4*>(MP), *N4 = reinterpret_cast<const uint4*>(MN);
  const i64 nw = (i64)gridDim.x * 8, gw = (i64)blockIdx.x * 8 + warp, per = (M + nw - 1) / nw;
  const i64 groups = (M + G - 1) / G;  // XS: the memory's groups of G rows
  const i64 lo = XS ? 0 : min(M, gw * per), hi = XS ? M : min(M, lo + per);
  const int ng = XS ? (gw < groups ? (int)((groups - 1 - gw) / nw + 1) : 0)
                    : (int)((hi - lo + G - 1) / G);  // this warp's groups of G rows
  auto first_row = [&](int i) -> i64 { return XS ? (gw + (i64)i * nw) * G : lo + (i64)i * G; };
  auto issue = [&](int i) {
    if (lane == 0 && i < ng) {
      const i64 r0 = first_row(i), r1 = min(hi, r0 + G);
      const i64 u0 = (r0 * W) >> 2, u1 = (r1 * W + 3) >> 2;
      PTG_STAGE_ISSUE(buf + (i % STAGES) * 2 * span, bar + i % STAGES, P4, N4, u0, u1, span)
    }
  };
  i64 mine = PTG_EMPTY, thr = PTG_EMPTY;
#pragma unroll
  for (int i = 0; i < STAGES - 1; ++i) issue(i);
  for (int i = 0; i < ng; ++i) {
    issue(i + STAGES - 1);
    bar_wait(bar + i % STAGES, (unsigned)(i / STAGES) & 1u);
    const i64 r0 = first_row(i);
    const int nr = (int)min((i64)G, hi - r0);  // warp-uniform
    const unsigned* bp = reinterpret_cast<const unsigned*>(buf + (i % STAGES) * 2 * span) + ((r0 * W) & 3);
    const unsigned* bn = bp + 4 * span;
    int s[G];
#pragma unroll
    for (int g = 0; g < G; ++g) s[g] = 0;
    if (nr == G) {
      for (int w = lane; w < w32; w += 32) {
        const unsigned qp = qsm[w], qn = qsm[w32 + w];
#pragma unroll
        for (int g = 0; g < G; ++g) {
          const unsigned ap = bp[g * w32 + w], an = bn[g * w32 + w];
          s[g] += __popc((ap & qp) | (an & qn)) - __popc((ap & qn) | (an & qp));
        }
      }
    } else {  // the run's last group: fewer rows
      for (int w = lane; w < w32; w += 32) {
        const unsigned qp = qsm[w], qn = qsm[w32 + w];
#pragma unroll
        for (int g = 0; g < G; ++g)
          if (g < nr) {
            const unsigned ap = bp[g * w32 + w], an = bn[g * w32 + w];
            s[g] += __popc((ap & qp) | (an & qn)) - __popc((ap & qn) | (an & qp));
          }
      }
    }
#pragma unroll
    for (int off = 16; off > 0; off >>= 1)
#pragma unroll
      for (int g = 0; g < G; ++g) s[g] += __shfl_xor_sync(0xffffffffu, s[g], off);
#pragma unroll
    for (int g = 0; g < G; ++g)
      if (g < nr) {
        const i64 key = key_of(s[g], r0 + g);  // warp-uniform
        if (key > thr) {
          wl_insert(mine, key, lane);
          thr = __shfl_sync(0xffffffffu, mine, k - 1);
        }
      }
    __syncwarp();  // every lane has read the stage before lane 0 refills it
  }
  const i64 best = wl_block<K>(mine, C + (i64)blockIdx.x * K, k);
  if (counter && threadIdx.x == k - 1)  // lane k - 1 of warp 0: the block's k-th key
    atomicMax(reinterpret_cast<unsigned long long*>(counter + 2),
              (unsigned long long)best ^ 0x8000000000000000ULL);
  if (counter && last_of(counter, gridDim.x)) merge_keys_f<K, TF>(C, gridDim.x, idx, val, k, counter);
#else
  __trap();  // no bulk copies below sm_90 (never launched there)
#endif
}

}  // namespace ptg

// its last user: the macro from cuda/vsa_search_tma.cu (this module's head) ends here
#undef PTG_STAGE_ISSUE
