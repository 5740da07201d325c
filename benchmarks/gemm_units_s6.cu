// A record of session 6's run 1, not the library's kernel (that is cuda/semiring_gemm_units.cu).
// Session 6 experiment (benchmarks/bench_gemm_cuda_s6k.py), compiled after cuda/semiring_gemm.cu
// (run 1's kernel, "v1"; run 2's register-lean "units2" is now cuda/semiring_gemm_units.cu)
// (its functors, V4, slab_mma): the big3 tile over a list of WORK UNITS instead of one tile a
// block, for min_plus / max_plus float32 (plain slab body, no argmax, load/store_map identity).
//
// Units: the first W output tiles are whole units (all of k); the other T - W tiles' KI slabs each
// (KI = ceil(k / BK)) are concatenated into I = (T - W) KI slab iterations and shared out into U
// units, unit j taking [j I / U, (j + 1) I / U) (U a multiple of T - W: plain split k, no unit
// crosses a tile; otherwise stream-k, units cross tile boundaries). A unit holding part of a tile
// writes its accumulators to a workspace slot (tile, contributor order) and adds its slab count to
// the tile's counter; the unit whose count completes the tile folds the others in with ⊕ (min /
// max: associative and commutative, so the bits of one k loop) and stores it (c too), then resets
// the counter to 0. Nobody waits on anybody.
// dyn = 0: one unit a block (grid of W + U blocks, the hardware hands blocks out in order).
// dyn = 1: persistent blocks take unit numbers from CNT[0] (atomicAdd, the next ticket taken while
// the current unit runs); each block leaves on its first ticket >= W + U and counts itself out on
// CNT[1]; the last block out resets both to 0, so the next launch on the stream starts at 0.
// CNT[2 + t]: the counter of split tile t.
namespace ptg {

__device__ __forceinline__ i64 u_start(i64 j, i64 I, i64 U) { return j * I / U; }

template <class SR, int BM, int BN, int BK, int TM, int TN, int MINB>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), MINB)
sr_gemm_units(const typename SR::type* __restrict__ A, const typename SR::type* __restrict__ B,
              const typename SR::type* __restrict__ C, typename SR::type* __restrict__ D,
              typename SR::type* __restrict__ WS, int* __restrict__ CNT, i64 m, i64 n, i64 k,
              int vec, int W, int U, int maxc, int dyn) {
  typedef typename SR::type T;
  static_assert(!SR::kSplit && !SR::kMask && !SR::kPair, "plain slab body only");
  constexpr int NX = BN / TN, NY = BM / TM, NT = NX * NY;
  constexpr int CM = TM / 4, CN = TN / 4, SM = BM / CM, SN = BN / CN;
  constexpr int LA = BM * BK / (4 * NT), LB = BN * BK / (4 * NT);
  static_assert(LA >= 1 && LB >= 1 && LA * 4 * NT == BM * BK && LB * 4 * NT == BN * BK, "even split");
  static_assert((LA == 1 || NT % (BK / 4) == 0) && (LB == 1 || NT % (BN / 4) == 0), "interior path");
  __shared__ __align__(16) T As[2][BK][BM];
  __shared__ __align__(16) T Bs[2][BK][BN];
  __shared__ int last, s_unit, s_next;

  const int tid = threadIdx.x, tx = tid % NX, ty = tid / NX;
  const i64 KI = (k + BK - 1) / BK, tiles_m = (m + BM - 1) / BM;
  const i64 T_all = tiles_m * ((n + BN - 1) / BN), I = (T_all - W) * KI, NU = (i64)W + U;
  const T z = SR::zero(), o = SR::one();
  T acc[TM][TN];
  T ra[LA][4], rb[LB][4];

  auto run_tile = [&](i64 m0, i64 n0, i64 kb, i64 ke, bool tick) {
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
        for (int j = 0; j < 4; ++j) ra[q][j] = kk + j >= ke ? z : row < m ? A[row * k + kk + j] : o;
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
        for (int j = 0; j < 4; ++j) As[buf][c + j][r] = ra[q][j];
      }
#pragma unroll
      for (int q = 0; q < LB; ++q) {
        const int e = tid + q * NT, r = e / (BN / 4), c = (e % (BN / 4)) * 4;
#pragma unroll
        for (int j = 0; j < 4; ++j) Bs[buf][r][c + j] = rb[q][j];
      }
    };
    load(kb);
    // the next ticket, taken while the first slab's loads are in flight (its latency hides
    // behind theirs; read after the unit)
    if (tick && tid == 0) s_next = atomicAdd(CNT, 1);
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
    __syncthreads();  // the shared buffers are free for the next segment
  };

  i64 u;
  if (dyn) {
    if (tid == 0) s_unit = atomicAdd(CNT, 1);
    __syncthreads();
    u = s_unit;
  } else {
    u = blockIdx.x;
  }
  while (u < NU) {
    bool tick = dyn;  // the first segment takes the next ticket
    // the unit's segments: [s, e) over the split tiles' iterations, or one whole tile
    const i64 j = u - W;
    i64 s = u < W ? 0 : u_start(j, I, U), e = u < W ? KI : u_start(j + 1, I, U);
    while (s < e) {
      const i64 t = u < W ? -1 : s / KI;
      const i64 ib = u < W ? 0 : s - t * KI;
      const i64 ie = u < W ? KI : (e < (t + 1) * KI ? e : (t + 1) * KI) - t * KI;
      const i64 tile = u < W ? u : W + t;
      s = u < W ? KI : (t + 1) * KI;
      const i64 m0 = (tile % tiles_m) * BM, n0 = (tile / tiles_m) * BN;  // sr_gemm's grid order
      run_tile(m0, n0, ib * BK, ie * BK < k ? ie * BK : k, tick);
      tick = false;
      if (ib != 0 || ie != KI) {
        // the first unit whose range reaches into tile t: contributor order = j - first
        i64 first = t * KI * U / I;
        while (first > 0 && u_start(first, I, U) > t * KI) --first;
        while (u_start(first + 1, I, U) <= t * KI) ++first;
        T* slot = WS + (t * maxc + (j - first)) * (i64)(BM * BN);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int jj = 0; jj < TN; ++jj) __stcg(slot + (i * TN + jj) * NT + tid, acc[i][jj]);
        __threadfence();
        __syncthreads();
        if (tid == 0) {
          const int add = (int)(ie - ib);
          last = atomicAdd(CNT + 2 + t, add) + add == (int)KI;
        }
        __syncthreads();
        if (!last) continue;
        __threadfence();
        for (i64 b2 = first; u_start(b2, I, U) < (t + 1) * KI; ++b2) {
          if (b2 == j || u_start(b2, I, U) == u_start(b2 + 1, I, U)) continue;
          const T* o2 = WS + (t * maxc + (b2 - first)) * (i64)(BM * BN);
#pragma unroll
          for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int jj = 0; jj < TN; ++jj) acc[i][jj] = SR::add(acc[i][jj], __ldcg(o2 + (i * TN + jj) * NT + tid));
        }
        if (tid == 0) CNT[2 + t] = 0;
      }
#pragma unroll
      for (int i = 0; i < TM; ++i) {
        const i64 row = m0 + (i / 4) * SM + ty * 4 + (i % 4);
        if (row >= m) continue;
#pragma unroll
        for (int jj = 0; jj < TN; ++jj) {
          const i64 col = n0 + (jj / 4) * SN + tx * 4 + (jj % 4);
          if (col >= n) continue;
          T v = acc[i][jj];
          if (C) v = SR::add(C[row * n + col], v);
          D[row * n + col] = v;
        }
      }
    }
    if (!dyn) break;
    __syncthreads();  // s_next was written before the unit's first barrier; this one orders the read
    u = s_next;
    __syncthreads();  // every thread has read s_next before the next unit rewrites it
  }
  if (dyn && tid == 0) {
    __threadfence();
    if (atomicAdd(CNT + 1, 1) == (int)gridDim.x - 1) {  // every block has taken its last ticket
      atomicExch(CNT, 0);
      atomicExch(CNT + 1, 0);
    }
  }
}

}  // namespace ptg
