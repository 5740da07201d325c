// Stream-k tiled GEMM, compiled after semiring_gemm.cu (its functors, V4, slab_mma; the module's
// head, backends/cuda/gemm_streamk.py) for min_plus / max_plus float32 only: functors without a
// per-slab guard, no argmax, load_map / store_map the identity.
//
// One launch of G persistent blocks (G = resident slots, e.g. 132 SMs x 3). The output tiles split
// into dp_tiles whole tiles (block b takes tiles b, b + G, ...) and the last sk_tiles tiles (the
// partial wave), whose sk_tiles x KI k-iterations (KI = ceil(k / BK) slabs a tile) are shared out
// evenly: block b takes iterations [b I / G, (b + 1) I / G) of I = sk_tiles KI, which cross tile
// boundaries. A block holding only part of a tile writes its accumulators to the workspace WS
// (slot: tile, contributor order) and adds its iteration count to the tile's counter CNT; the block
// whose count completes the tile folds the other parts into its registers with ⊕ and stores the
// tile (C included), then resets the counter to 0 (so the next call finds it zeroed). No block
// waits for another (no co-residency needed). ⊕ (min / max) is associative and commutative: the
// result is the same bits as one k loop, as with split k (sr_combine).
namespace ptg {

// iteration where block b's share starts (I = total iterations, G = blocks)
__device__ __forceinline__ i64 sk_start(i64 b, i64 I, i64 G) { return b * I / G; }

template <class SR, int BM, int BN, int BK, int TM, int TN, int MINB>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), MINB)
sr_gemm_sk(const typename SR::type* __restrict__ A, const typename SR::type* __restrict__ B,
           const typename SR::type* __restrict__ C, typename SR::type* __restrict__ D,
           typename SR::type* __restrict__ WS, int* __restrict__ CNT, i64 m, i64 n, i64 k, int vec,
           int dp_tiles, int sk_tiles, int maxc, int whole_first) {
  typedef typename SR::type T;
  static_assert(!SR::kSplit && !SR::kMask && !SR::kPair, "stream-k: plain slab body only");
  constexpr int NX = BN / TN, NY = BM / TM, NT = NX * NY;
  constexpr int CM = TM / 4, CN = TN / 4, SM = BM / CM, SN = BN / CN;
  constexpr int LA = BM * BK / (4 * NT), LB = BN * BK / (4 * NT);
  static_assert(LA >= 1 && LB >= 1 && LA * 4 * NT == BM * BK && LB * 4 * NT == BN * BK, "even split");
  static_assert((LA == 1 || NT % (BK / 4) == 0) && (LB == 1 || NT % (BN / 4) == 0), "interior path");
  __shared__ __align__(16) T As[2][BK][BM];
  __shared__ __align__(16) T Bs[2][BK][BN];
  __shared__ int last;

  const int tid = threadIdx.x, tx = tid % NX, ty = tid / NX;
  const i64 KI = (k + BK - 1) / BK;
  const i64 G = gridDim.x, bid = blockIdx.x;
  const T z = SR::zero(), o = SR::one();
  T acc[TM][TN];
  T ra[LA][4], rb[LB][4];

  // acc = ⊕ over k in [kb, ke) of the tile at (m0, n0): sr_gemm's loop (one slab prefetched in
  // registers, double-buffered shared memory, one barrier a slab) without guards or argmax
  auto run_tile = [&](i64 m0, i64 n0, i64 kb, i64 ke) {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = SR::acc_init();
    const bool inside = vec && m0 + BM <= m && n0 + BN <= n;
    const T* pa = A + (m0 + tid / (BK / 4)) * k + (tid % (BK / 4)) * 4 + kb;
    const T* pb = B + (kb + tid / (BN / 4)) * n + n0 + (tid % (BN / 4)) * 4;
    const i64 step_b = BK * n;
    auto load = [&](i64 k0) {
      const T* a0 = pa;
      const T* b0 = pb;
      pa += BK;
      pb += step_b;
      if (inside && k0 + BK <= ke) {
#pragma unroll
        for (int q = 0; q < LA; ++q) V4<T>::load(a0 + q * (NT / (BK / 4)) * k, ra[q]);
#pragma unroll
        for (int q = 0; q < LB; ++q) V4<T>::load(b0 + q * (NT / (BN / 4)) * n, rb[q]);
        return;
      }
#pragma unroll
      for (int q = 0; q < LA; ++q) {
        const int e = tid + q * NT;
        const i64 row = m0 + e / (BK / 4), kk = k0 + (e % (BK / 4)) * 4;
#pragma unroll
        for (int j = 0; j < 4; ++j)
          ra[q][j] = kk + j >= ke ? z : row < m ? A[row * k + kk + j] : o;
      }
#pragma unroll
      for (int q = 0; q < LB; ++q) {
        const int e = tid + q * NT;
        const i64 krow = k0 + e / (BN / 4), col = n0 + (e % (BN / 4)) * 4;
#pragma unroll
        for (int j = 0; j < 4; ++j) rb[q][j] = (krow < ke && col + j < n) ? B[krow * n + col + j] : o;
      }
    };
    auto store = [&](int buf) {
#pragma unroll
      for (int q = 0; q < LA; ++q) {
        const int e = tid + q * NT, r = e / (BK / 4), c = (e % (BK / 4)) * 4;
#pragma unroll
        for (int j = 0; j < 4; ++j) As[buf][c + j][r] = SR::load_map(ra[q][j]);
      }
#pragma unroll
      for (int q = 0; q < LB; ++q) {
        const int e = tid + q * NT, r = e / (BN / 4), c = (e % (BN / 4)) * 4;
#pragma unroll
        for (int j = 0; j < 4; ++j) Bs[buf][r][c + j] = SR::load_map(rb[q][j]);
      }
    };
    load(kb);
    store(0);
    __syncthreads();
    int cur = 0;
    for (i64 k0 = kb; k0 < ke; k0 += BK) {
      const bool next = k0 + BK < ke;
      if (next) load(k0 + BK);
      slab_mma<SR, 0, BK, BM, BN, TM, TN, false>(acc, As[cur], Bs[cur], nullptr, nullptr, T(), ty, tx);
      if (next) {
        store(cur ^ 1);
        __syncthreads();
        cur ^= 1;
      }
    }
    __syncthreads();  // the shared buffers are free for the next tile
  };
  auto epilogue = [&](i64 m0, i64 n0) {
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const i64 row = m0 + (i / 4) * SM + ty * 4 + (i % 4);
      if (row >= m) continue;
#pragma unroll
      for (int j = 0; j < TN; ++j) {
        const i64 col = n0 + (j / 4) * SN + tx * 4 + (j % 4);
        if (col >= n) continue;
        T v = SR::store_map(acc[i][j]);
        if (C) v = SR::add(C[row * n + col], v);
        D[row * n + col] = v;
      }
    }
  };

  // the work items, one call site each for the loop and the epilogue (two inlined copies of the
  // unrolled slab loop measured 3.6 % slower at 4096³): first the stream-k share, iterations
  // [s, e) of I, a segment a tile; then the whole tiles bid, bid + G, ... (whole_first: the
  // other way round)
  const i64 I = (i64)sk_tiles * KI, tiles_m = (m + BM - 1) / BM;
  i64 s = sk_start(bid, I, G);
  const i64 e = sk_start(bid + 1, I, G);
  i64 whole = bid;
  for (;;) {
    i64 t = -1, tile, ib = 0, ie = KI;
    if (s < e && (!whole_first || whole >= dp_tiles)) {
      t = s / KI;
      ib = s - t * KI;
      ie = (e < (t + 1) * KI ? e : (t + 1) * KI) - t * KI;
      tile = dp_tiles + t;
      s = (t + 1) * KI;
    } else if (whole < dp_tiles) {
      tile = whole;
      whole += G;
    } else {
      break;
    }
    const i64 m0 = (tile % tiles_m) * BM, n0 = (tile / tiles_m) * BN;  // sr_gemm's grid order
    run_tile(m0, n0, ib * BK, ie * BK < k ? ie * BK : k);
    const bool part = ib != 0 || ie != KI;
    i64 first = 0;
    if (part) {
      // the first block whose share reaches into tile t: contributor order = bid - first
      first = t * KI * G / I;
      while (first > 0 && sk_start(first, I, G) > t * KI) --first;
      while (sk_start(first + 1, I, G) <= t * KI) ++first;
      T* slot = WS + (t * maxc + (bid - first)) * (i64)(BM * BN);
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) __stcg(slot + (i * TN + j) * NT + tid, acc[i][j]);
      __threadfence();
      __syncthreads();
      if (tid == 0) {
        const int add = (int)(ie - ib);
        last = atomicAdd(CNT + t, add) + add == (int)KI;
      }
      __syncthreads();
      if (!last) continue;
      __threadfence();
      for (i64 b2 = first; sk_start(b2, I, G) < (t + 1) * KI; ++b2) {
        if (b2 == bid || sk_start(b2, I, G) == sk_start(b2 + 1, I, G)) continue;
        const T* o2 = WS + (t * maxc + (b2 - first)) * (i64)(BM * BN);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] = SR::add(acc[i][j], __ldcg(o2 + (i * TN + j) * NT + tid));
      }
      if (tid == 0) CNT[t] = 0;
    }
    epilogue(m0, n0);
  }
}

}  // namespace ptg
