// Top-k of int32 scores for pytropical_gpu's item-memory search (cuda/vsa_search*.cu make the
// scores): the k best rows per query, best first, ties to the smaller row. Two passes:
// topk_scores (the K best of each block of rows) and topk_merge (the k best of a query's blocks);
// K <= 32 keeps each warp's list across its lanes (the _w kernels), K = 64 one list a thread;
// topk_one_w does both in one launch (the last block of a query merges, last_of below).

namespace ptg {

typedef long long i64;

// ---------------------------------------------------------------------------- top-k
// A candidate is one int64 key: score in the high word, 0xffffffff - row in the low word, so a
// larger key is a larger score or the same score at a smaller row. EMPTY is below every key.
#define PTG_EMPTY (-0x7fffffffffffffffLL - 1)

__device__ __forceinline__ i64 key_of(int score, i64 row) {
  return (i64)(((unsigned long long)(long long)score << 32) | (0xffffffffu - (unsigned)row));
}

// A key's row and score into idx[i], val[i].
__device__ __forceinline__ void put_key(long long* idx, long long* val, int i, i64 key) {
  idx[i] = (i64)(0xffffffffu - (unsigned)(key & 0xffffffffLL));
  val[i] = key >> 32;
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
  // T: the largest K-th key of the warp's lists. A key <= T has K better keys in that one list,
  // so it cannot be in the warp's K best: skipped without the insertion.
  i64 T = PTG_EMPTY;
  const int lane = threadIdx.x & 31;
  for (i64 b = lo + threadIdx.x - lane; b < hi; b += 256 * 8) {  // warp-uniform; 8 loads in flight
    const i64 r0 = b + lane;
    int v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = r0 + 256 * u < hi ? __ldg(s + r0 + 256 * u) : 0;
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const i64 key = key_of(v[u], r0 + 256 * u);
      if (r0 + 256 * u < hi && key > T) insert<K>(l, key);
    }
    T = l[K - 1];
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) T = max(T, __shfl_xor_sync(0xffffffffu, T, off));
  }
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
  if (threadIdx.x < k) put_key(idx + q * k, val + q * k, threadIdx.x, best[threadIdx.x]);
}

// ---------------------------------------------------------------------------- warp lists, K <= 32
// Lane i holds the warp's i-th best key, the 32 lanes in descending order. A key goes in only when
// it beats lane K - 1's (the warp's K-th best): after the first keys almost none does, so a key
// costs a compare and a ballot, with no divergence (the per-thread lists above insert far more).
__device__ __forceinline__ void wl_insert(i64& mine, i64 key, int lane) {
  const int pos = __popc(__ballot_sync(0xffffffffu, mine > key));
  const i64 up = __shfl_up_sync(0xffffffffu, mine, 1);
  if (lane > pos) mine = up;
  else if (lane == pos) mine = key;
}

// Every lane's key (where ok) that beats thr, the list's (k1 + 1)-th best, goes in; thr follows,
// never below floor (keys <= floor cannot be among the k best: see wl_floor). A list kept to its
// first k1 + 1 lanes needs fewer insertions than one of K (the fused kernels pass k - 1: the lanes
// past it hold real keys or EMPTY, just not the block's best, harmless to a merge).
__device__ __forceinline__ void wl_feed_f(i64& mine, i64& thr, i64 key, bool ok, int lane, int k1,
                                          i64 floor) {
  unsigned c = __ballot_sync(0xffffffffu, ok && key > thr);
  while (c) {
    const int src = __ffs(c) - 1;
    c &= c - 1;
    const i64 kk = __shfl_sync(0xffffffffu, key, src);
    if (kk > thr) {
      wl_insert(mine, kk, lane);
      thr = max(floor, __shfl_sync(0xffffffffu, mine, k1));
    }
  }
}

__device__ __forceinline__ void wl_feed_k(i64& mine, i64& thr, i64 key, bool ok, int lane, int k1) {
  wl_feed_f(mine, thr, key, ok, lane, k1, PTG_EMPTY);
}

// A floor from a key x that has at least k keys >= it among those to be merged: x - 1 (keys are
// distinct), EMPTY where x is EMPTY (fewer than k keys known).
__device__ __forceinline__ i64 wl_floor(i64 x) { return x == PTG_EMPTY ? PTG_EMPTY : x - 1; }

// The (k1 + 1)-th largest of the 32 lanes' keys, in every lane (a bitonic sort, descending).
__device__ __forceinline__ i64 warp_kth(i64 x, int lane, int k1) {
#pragma unroll
  for (int size = 2; size <= 32; size <<= 1)
#pragma unroll
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      const i64 y = __shfl_xor_sync(0xffffffffu, x, stride);
      x = (((lane & stride) == 0) == ((lane & size) == 0)) ? max(x, y) : min(x, y);
    }
  return __shfl_sync(0xffffffffu, x, k1);
}

// The block's k best of every warp's list (each exact in its first k lanes) into out[0..K): exact
// in the first k, the rest real keys or EMPTY (256 threads; lanes < K of warp 0 write). The best
// of the 8 lists' k-th keys floors the feed (that list has k keys >= it).
// Returns the block's list in warp 0's lanes (lane i: its i-th best; EMPTY in the other warps).
template <int K>
__device__ __forceinline__ i64 wl_block(i64 mine, i64* out, int k) {
  __shared__ i64 part[8 * K];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane < K) part[warp * K + lane] = mine;
  __syncthreads();
  if (warp == 0) {
    i64 f = lane < 8 ? part[lane * K + k - 1] : PTG_EMPTY;
#pragma unroll
    for (int off = 4; off > 0; off >>= 1) f = max(f, __shfl_xor_sync(0xffffffffu, f, off));
    const i64 floor = wl_floor(__shfl_sync(0xffffffffu, f, 0));
    i64 best = PTG_EMPTY, thr = floor;
    for (int b = 0; b < 8 * K; b += 32) {
      const bool ok = b + lane < 8 * K;
      wl_feed_f(best, thr, ok ? part[b + lane] : PTG_EMPTY, ok, lane, k - 1, floor);
    }
    if (lane < K) out[lane] = best;
    return best;
  }
  return PTG_EMPTY;
}

// The K best keys (k <= K exact) of scores S[lo, hi) of one query into the warp list mine
// (warp-uniform loop; 8 loads in flight a lane). ST: int, or short where |score| < 2^15.
template <typename ST>
__device__ __forceinline__ void wl_scan(const ST* __restrict__ s, i64 lo, i64 hi, i64& mine, int k) {
  const int lane = threadIdx.x & 31;
  i64 thr = PTG_EMPTY, floor = PTG_EMPTY;
  for (i64 b = lo + threadIdx.x - lane; b < hi; b += 256 * 8) {
    const i64 r0 = b + lane;
    i64 key[8];
#pragma unroll
    for (int u = 0; u < 8; ++u)
      key[u] = r0 + 256 * u < hi ? key_of((int)__ldg(s + r0 + 256 * u), r0 + 256 * u) : PTG_EMPTY;
    if (b == lo + threadIdx.x - lane) {  // the first batch floors the list: the k-th best of the
      i64 mx = PTG_EMPTY;                // lanes' maxima has k keys >= it (one a lane)
#pragma unroll
      for (int u = 0; u < 8; ++u) mx = max(mx, key[u]);
      thr = floor = wl_floor(warp_kth(mx, lane, k - 1));
    }
#pragma unroll
    for (int u = 0; u < 8; ++u) wl_feed_f(mine, thr, key[u], key[u] != PTG_EMPTY, lane, k - 1, floor);
  }
}

// The k best of n lists of K keys (key i = l k + j of nk: list l's j-th, at cand[l K + j]; loads
// through L2) into idx[0..k), val[0..k), fed by every warp (U loads in flight a lane, index type
// IT) above floor, then merged in best[K] (shared; 256 threads).
// TF: a tighter floor before any key goes in: the first round of loads is made in every warp (the
// block barrier below), and the k-th largest of a warp's 32 lanes' maxima over it has k keys >= it
// (one a lane), so the best of the 8 warps' such keys floors every warp's feed. With a floor from
// the lists' k-th keys alone a few hundred keys of the one-query merge pass it and a warp inserts
// ~30-40 of them one at a time (~4 dependent shuffles each); with this one, a few. wf: 8 keys of
// shared memory for the warps' floors (TF only). Before the fold search_scan_tmag had this TF
// path as a merge of its own; wf declared by the caller after best, and the first round's flags
// and the loop's start written as that merge wrote them, give its kernels the same SASS as then.
template <int K, int U, typename IT, bool TF>
__device__ __forceinline__ void feed_lists(const i64* cand, IT nk, int k, i64 floor, i64* best,
                                           long long* idx, long long* val, i64* wf) {
  const int lane = threadIdx.x & 31;
  IT b = threadIdx.x - lane;  // warp-uniform
  i64 mine = PTG_EMPTY, thr = floor;
  if constexpr (TF) {
    i64 v[U], mx = PTG_EMPTY;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const IT i = b + 256 * u + lane, l = i / k;
      v[u] = i < nk ? __ldcg(cand + l * K + (i - l * k)) : PTG_EMPTY;
      mx = max(mx, v[u]);
    }
    const i64 wk = warp_kth(mx, lane, k - 1);
    if (lane == 0) wf[threadIdx.x >> 5] = wk;
    __syncthreads();
#pragma unroll
    for (int w = 0; w < 8; ++w) floor = max(floor, wl_floor(wf[w]));
    thr = floor;
#pragma unroll
    for (int u = 0; u < U; ++u)
      wl_feed_f(mine, thr, v[u], threadIdx.x + 256 * u < nk, lane, k - 1, floor);
    b = 256 * U + threadIdx.x - lane;
  }
  for (; b < nk; b += 256 * U) {
    i64 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const IT i = b + 256 * u + lane, l = i / k;
      v[u] = i < nk ? __ldcg(cand + l * K + (i - l * k)) : PTG_EMPTY;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) wl_feed_f(mine, thr, v[u], b + 256 * u + lane < nk, lane, k - 1, floor);
  }
  wl_block<K>(mine, best, k);
  __syncthreads();
  if (threadIdx.x < k) put_key(idx, val, threadIdx.x, best[threadIdx.x]);
}

// The k best of n lists of K keys (each exact in its first k lanes; only those are read) at cand
// into idx[0..k), val[0..k) (one block of 256 threads). The best of the lists' k-th keys floors
// the feed. Loads through L2 (__ldcg): the keys may come from other blocks of the same kernel.
template <int K>
__device__ __forceinline__ void merge_keys(const i64* cand, i64 n, long long* idx, long long* val,
                                           int k) {
  __shared__ i64 best[K];
  __shared__ i64 fl[8];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  i64 f = PTG_EMPTY;
  for (i64 i = threadIdx.x; i < n; i += 256) f = max(f, __ldcg(cand + i * K + k - 1));
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) f = max(f, __shfl_xor_sync(0xffffffffu, f, off));
  if (lane == 0) fl[warp] = f;
  __syncthreads();
  f = fl[0];
#pragma unroll
  for (int w = 1; w < 8; ++w) f = max(f, fl[w]);
  feed_lists<K, 4, i64, false>(cand, n * k, k, wl_floor(f), best, idx, val, nullptr);
}

// merge_keys for n k <= 256 keys by warp 0 alone (the other warps return): every key loaded in one
// round (8 a lane), floored by the best of the lists' k-th keys, no block barrier.
template <int K>
__device__ __forceinline__ void merge_keys_warp(const i64* cand, int n, long long* idx,
                                                long long* val, int k) {
  if (threadIdx.x >= 32) return;
  const int lane = threadIdx.x, nk = n * k;
  i64 v[8], f = PTG_EMPTY;
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    const int i = u * 32 + lane, l = i / k, j = i - l * k;
    v[u] = i < nk ? __ldcg(cand + l * K + j) : PTG_EMPTY;
    if (i < nk && j == k - 1) f = max(f, v[u]);
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) f = max(f, __shfl_xor_sync(0xffffffffu, f, off));
  const i64 floor = wl_floor(f);
  i64 mine = PTG_EMPTY, thr = floor;
#pragma unroll
  for (int u = 0; u < 8; ++u) wl_feed_f(mine, thr, v[u], u * 32 + lane < nk, lane, k - 1, floor);
  if (lane < k) put_key(idx, val, lane, mine);
}

// A key as an unsigned integer of the same order (EMPTY -> 0), for atomicMax on a global floor.
#define PTG_SIGN 0x8000000000000000ULL

// merge_keys where every block has put its list's k-th key into the floor at counter + 2 (a
// uint64, atomicMax of the key ^ PTG_SIGN: 0 is EMPTY) before it counted itself: no pass over the
// lists' k-th keys, the keys read with 32-bit index arithmetic, 12 a thread in flight (one round
// up to 3,072 keys). Puts the floor back to 0 for the next launch. TF: feed_lists' tighter floor
// too (search_scan_tmag's "t" merge).
template <int K, bool TF>
__device__ __forceinline__ void merge_keys_f(const i64* cand, int n, long long* idx,
                                             long long* val, int k, unsigned* counter) {
  __shared__ i64 best[K];
  __shared__ i64 wf[8];  // TF: the warps' floors
  unsigned long long* gf = reinterpret_cast<unsigned long long*>(counter + 2);
  feed_lists<K, 12, int, TF>(cand, n * k, k, wl_floor((i64)(__ldcg(gf) ^ PTG_SIGN)), best, idx,
                             val, wf);
  if (threadIdx.x == 0) *gf = 0ull;
}

// True in the block that arrives last of n blocks counting on *counter; every block's global
// writes before the call are then visible to it (fence, barrier, atomic), and it puts the
// counter back to 0 for the next launch on the stream (the launches of one counter are ordered).
__device__ __forceinline__ bool last_of(unsigned* counter, unsigned n) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    last = atomicAdd(counter, 1u) == n - 1;
    if (last) *counter = 0u;
  }
  __syncthreads();
  return last;
}

// As topk_scores, with warp lists (K <= 32) kept to their first k lanes.
template <int K, typename ST = int>
__global__ void __launch_bounds__(256)
topk_scores_w(const ST* __restrict__ S, i64* __restrict__ cand, i64 M, i64 chunk, int k) {
  const i64 q = blockIdx.y, c = blockIdx.x;
  i64 mine = PTG_EMPTY;
  wl_scan<ST>(S + q * M, c * chunk, min(M, c * chunk + chunk), mine, k);
  wl_block<K>(mine, cand + (q * gridDim.x + c) * K, k);
}

// topk_scores_w and topk_merge_w in one launch: the last of a query's blocks (counters[q]) merges
// its candidates into idx, val.
template <int K, typename ST = int>
__global__ void __launch_bounds__(256)
topk_one_w(const ST* __restrict__ S, i64* __restrict__ cand, i64 M, i64 chunk, int k,
           long long* __restrict__ idx, long long* __restrict__ val, unsigned* __restrict__ counters) {
  const i64 q = blockIdx.y, c = blockIdx.x;
  i64 mine = PTG_EMPTY;
  wl_scan<ST>(S + q * M, c * chunk, min(M, c * chunk + chunk), mine, k);
  i64* qc = cand + q * gridDim.x * K;
  wl_block<K>(mine, qc + c * K, k);
  if (last_of(counters + q, gridDim.x)) merge_keys<K>(qc, gridDim.x, idx + q * k, val + q * k, k);
}

// As wl_scan for int16 scores read 8 at a time: V 16-byte vectors a lane in flight (a warp's
// batch: 256 V scores, the block's 2,048 V). s + lo 16-byte aligned, lo and hi multiples of 8
// (search_two.py checks M and the chunk). A lane's keys go to the list only when its batch's best
// score (a packed max of the int16 pairs, __vmaxs2) reaches the score of the list's threshold: a
// key beating the threshold has at least its score. The first batch floors the list as in wl_scan.
template <int V>
__device__ __forceinline__ void wl_scan_v(const short* __restrict__ s, i64 lo, i64 hi, i64& mine,
                                          int k) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  i64 thr = PTG_EMPTY, floor = PTG_EMPTY;
  bool first = true;
  for (i64 b = lo + (i64)warp * (256 * V); b < hi; b += 2048 * V) {  // warp-uniform
    uint4 v[V];
    unsigned m2 = 0x80008000u;  // both halves -32768
#pragma unroll
    for (int u = 0; u < V; ++u) {
      const i64 e = b + (i64)(u * 32 + lane) * 8;
      v[u] = e < hi ? __ldcs(reinterpret_cast<const uint4*>(s + e))
                    : make_uint4(0x80008000u, 0x80008000u, 0x80008000u, 0x80008000u);
      m2 = __vmaxs2(m2, __vmaxs2(__vmaxs2(v[u].x, v[u].y), __vmaxs2(v[u].z, v[u].w)));
    }
    const int ms = max((int)(short)(m2 & 0xffffu), (int)m2 >> 16);  // lane's best score
    if (first) {  // the k-th best of the lanes' best keys has k keys >= it (one a lane)
      i64 mx = PTG_EMPTY;
#pragma unroll
      for (int u = 0; u < V; ++u) {
        const i64 e = b + (i64)(u * 32 + lane) * 8;
        const unsigned wd[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const int sc = (j & 1) ? ((int)wd[j >> 1] >> 16) : (int)(short)(wd[j >> 1] & 0xffffu);
          if (e < hi) mx = max(mx, key_of(sc, e + j));
        }
      }
      thr = floor = wl_floor(warp_kth(mx, lane, k - 1));
      first = false;
    }
    if (!__any_sync(0xffffffffu, ms >= (int)(thr >> 32))) continue;
#pragma unroll
    for (int u = 0; u < V; ++u) {
      const i64 e = b + (i64)(u * 32 + lane) * 8;
      const unsigned wd[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const int sc = (j & 1) ? ((int)wd[j >> 1] >> 16) : (int)(short)(wd[j >> 1] & 0xffffu);
        wl_feed_f(mine, thr, key_of(sc, e + j), e < hi && ms >= (int)(thr >> 32), lane, k - 1,
                  floor);
      }
    }
  }
}

// topk_one_w for int16 scores with wl_scan_v (M and the chunk multiples of 8). WM: a query's last
// block merges by one warp where its blocks' lists hold at most 256 keys (merge_keys_warp).
template <int K, int V, bool WM = false>
__global__ void __launch_bounds__(256)
topk_one_v(const short* __restrict__ S, i64* __restrict__ cand, i64 M, i64 chunk, int k,
           long long* __restrict__ idx, long long* __restrict__ val, unsigned* __restrict__ counters) {
  const i64 q = blockIdx.y, c = blockIdx.x;
  i64 mine = PTG_EMPTY;
  wl_scan_v<V>(S + q * M, c * chunk, min(M, c * chunk + chunk), mine, k);
  i64* qc = cand + q * gridDim.x * K;
  wl_block<K>(mine, qc + c * K, k);
  if (last_of(counters + q, gridDim.x)) {
    if (WM && gridDim.x * k <= 256)
      merge_keys_warp<K>(qc, gridDim.x, idx + q * k, val + q * k, k);
    else
      merge_keys<K>(qc, gridDim.x, idx + q * k, val + q * k, k);
  }
}

// As topk_merge, with warp lists (K <= 32) kept to their first k lanes.
template <int K>
__global__ void __launch_bounds__(256)
topk_merge_w(const i64* __restrict__ cand, i64 n, long long* __restrict__ idx,
             long long* __restrict__ val, int k) {
  const i64 q = blockIdx.x;
  merge_keys<K>(cand + q * n, n / K, idx + q * k, val + q * k, k);
}

}  // namespace ptg
