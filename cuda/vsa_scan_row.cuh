// The row step shared by the one-query scans search_scan_cp (cuda/vsa_search_cp.cu) and
// search_scan_tma (cuda/vsa_search_tma.cu): one warp's dot of a row staged in shared memory with
// the query's planes, and the row's score kept (into S, or the warp's list); with the declarations
// both take from cuda/vsa_topk.cu. search_launch.py puts this file before each of those sources
// (ModuleSpec.head); it is no module of its own.

namespace ptg {

typedef long long i64;

// From cuda/vsa_topk.cu (search_launch.py appends it to both modules): the warp-wide lists and
// the last-block merge.
#define PTG_EMPTY (-0x7fffffffffffffffLL - 1)
__device__ __forceinline__ i64 key_of(int score, i64 row);
__device__ __forceinline__ void wl_insert(i64& mine, i64 key, int lane);
template <int K>
__device__ __forceinline__ i64 wl_block(i64 mine, i64* out, int k);
template <int K>
__device__ __forceinline__ void merge_keys(const i64* cand, i64 n, long long* idx, long long* val,
                                           int k);  // n lists of K keys
__device__ __forceinline__ bool last_of(unsigned* counter, unsigned n);

// One warp's step of a one-query scan for memory row r staged at bp (pos plane; neg at bn) in
// shared memory. PTG_ROW_DOT: the row's dot with the query's planes qsm[0..W) (pos) and
// qsm[W..2 W) (neg), words lane, lane + 32, ..., added to the lane's int s. PTG_KEEP_ROW: the
// lanes' parts summed, the score kept: into S[r] (lists of K = 0), or into the warp's list mine
// where it beats thr, the list kept to its first k lanes. Macros, not functions: inlined functions
// of the same body compile to other code (NVVM optimizes a function before it inlines it: other
// registers, other instructions in the scan's loop), these expand to the code they replaced.
#define PTG_ROW_DOT(s, bp, bn, qsm, W, lane)                                                  \
  for (i64 w = lane; w < W; w += 32) {                                                        \
    const unsigned ap = bp[w], an = bn[w], qp = qsm[w], qn = qsm[W + w];                      \
    s += __popc((ap & qp) | (an & qn)) - __popc((ap & qn) | (an & qp));                       \
  }
#define PTG_KEEP_ROW(K, s, r, S, mine, thr, lane, k)                                          \
  _Pragma("unroll") for (int off = 16; off > 0; off >>= 1)                                    \
      s += __shfl_xor_sync(0xffffffffu, s, off);                                              \
  if constexpr (K == 0) {                                                                     \
    if (lane == 0) S[r] = s;                                                                  \
  } else {                                                                                    \
    const i64 key = key_of(s, r); /* warp-uniform */                                          \
    if (key > thr) {                                                                          \
      wl_insert(mine, key, lane);                                                             \
      thr = __shfl_sync(0xffffffffu, mine, k - 1);                                            \
    }                                                                                         \
  }

}  // namespace ptg
