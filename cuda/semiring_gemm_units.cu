// The big3 tile over WORK UNITS (issue 14), compiled after semiring_gemm.cu (its functors, V4,
// slab_load, slab_store, slab_mma; the module's head, backends/cuda/gemm_units.py) for min_plus /
// max_plus float32 only: functors without a per-slab guard, no argmax, load_map / store_map the
// identity.
//
// Units: the first W output tiles (the whole waves: W a multiple of the resident slots) are whole
// units; the other T - W tiles' KI slabs each (KI = ceil(k / BK)) are concatenated into
// I = (T - W) KI slab iterations and shared out into U units (U = the slots: the partial wave
// spread over every slot), unit j taking [j I / U, (j + 1) I / U), crossing tile boundaries. A unit
// holding part of a tile writes its accumulators to the workspace WS (slot: tile, contributor
// order) and adds its slab count to the tile's counter CNT[2 + t]; the unit whose count completes
// the tile folds the other parts in with ⊕ and stores the tile (C included), then resets the
// counter to 0 (the next call finds it zeroed). Nobody waits for anybody. ⊕ (min / max) is
// associative and commutative, so the result is the bits of one k loop, as with split k.
// dyn = 0 (the backend's): one unit a block, a grid of W + U blocks; the hardware starts the split
// units as the whole tiles finish. dyn = 1: persistent blocks take unit numbers from CNT[0]
// (atomicAdd; the next ticket taken while the first slab's loads are in flight); each block leaves
// on its first ticket >= W + U and counts itself out on CNT[1]; the last one out resets both to 0.
// The ticket mode measured 1-4 % slower than the grid on the H200; it stays because this kernel
// compiled without it ran 2-3 % slower in grid mode too (ptxas schedules the k loop differently;
// gemm_cuda_notes.md, session 6, run 3).
// Registers: the unit and segment are read back from shared memory after the k loop (nothing of
// them stays live across it) and the shape's constants come in as parameters: ptxas wants 180
// registers (gets the 168 of 3 blocks/SM, no spill) against 194 with them held in registers, which
// ran 2-3 % slower than sr_gemm's big3 (session 6, run 1).
namespace ptg {

__device__ __forceinline__ i64 u_start(i64 j, i64 I, i64 U) { return j * I / U; }

template <class SR, int BM, int BN, int BK, int TM, int TN, int MINB>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), MINB)
sr_gemm_units(const typename SR::type* __restrict__ A, const typename SR::type* __restrict__ B,
              const typename SR::type* __restrict__ C, typename SR::type* __restrict__ D,
              typename SR::type* __restrict__ WS, int* __restrict__ CNT, i64 m, i64 n, i64 k,
              int vec, int W, int U, int maxc, int dyn, i64 KI, i64 tiles_m, i64 I) {
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
  __shared__ i64 sv[3];  // the unit, its next segment's start and its end (read back after a tile)
  volatile i64* vs = sv;

  const int tid = threadIdx.x, tx = tid % NX, ty = tid / NX;
  const int NU = W + U;
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
      slab_load<T, BK, BN, NT, LA, LB, false>(ra, rb, pa, pb, A, B, m, n, k, m0, n0, k0, ke, step_b,
                                              inside, vec, tid, z, o);
    };
    auto store = [&](int buf) {
      slab_store<SR, BM, BN, BK, NT, LA, LB>(ra, rb, As[buf], Bs[buf], tid);
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

  // the unit's range [s, e): one whole tile, or iterations of the split tiles
  auto set_unit = [&](i64 u) {
    vs[0] = u;
    vs[1] = u < W ? 0 : u_start(u - W, I, U);
    vs[2] = u < W ? KI : u_start(u - W + 1, I, U);
  };
  if (tid == 0) {
    if (dyn) s_unit = atomicAdd(CNT, 1);
    set_unit(dyn ? s_unit : blockIdx.x);
  }
  __syncthreads();
  for (;;) {
    i64 u = vs[0], s = vs[1];
    if (u >= NU) break;
    {
      const i64 e = vs[2];
      const i64 t = u < W ? -1 : s / KI;
      const i64 ib = u < W ? 0 : s - t * KI;
      const i64 ie = u < W ? KI : (e < (t + 1) * KI ? e : (t + 1) * KI) - t * KI;
      const i64 tile = u < W ? u : W + t;
      const bool tick = dyn && s == (u < W ? 0 : u_start(u - W, I, U));  // the unit's first segment
      run_tile((tile % tiles_m) * BM, (tile / tiles_m) * BN, ib * BK, ie * BK < k ? ie * BK : k, tick);
    }
    // the segment again, from shared memory (nothing of it held in registers across the k loop)
    u = vs[0];
    s = vs[1];
    const i64 e = vs[2], j = u - W;
    const i64 t = u < W ? -1 : s / KI;
    const i64 ib = u < W ? 0 : s - t * KI;
    const i64 ie = u < W ? KI : (e < (t + 1) * KI ? e : (t + 1) * KI) - t * KI;
    const i64 tile = u < W ? u : W + t;
    const i64 m0 = (tile % tiles_m) * BM, n0 = (tile / tiles_m) * BN;
    bool store = true;
    if (ib != 0 || ie != KI) {
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
      store = last;
      if (store) {
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
    }
    if (store) {
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
    __syncthreads();  // every thread has read sv (and s_next, written before the tile's first barrier)
    if (tid == 0) {
      const i64 ns = u < W ? KI : (t + 1) * KI;
      if (ns < e) vs[1] = ns;  // the unit's next segment
      else set_unit(dyn ? s_next : NU);
    }
    __syncthreads();
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
