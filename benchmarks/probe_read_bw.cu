// Read-only streaming floors for the one-query search (benchmarks/bench_search_s4.py): how fast
// the H200 reads n 16-byte vectors (the memory's two planes) when nothing else limits the kernel.
// read_ld<U>: grid-stride 16-byte loads, U a thread in flight, XOR-folded (the fold is written only
// when it equals a value it never takes, so the loads are not optimised away).
// read_bulk<STAGES>: each warp's lane 0 streams CHUNK-byte pieces into STAGES shared-memory
// buffers with sm_90 bulk copies (cp.async.bulk + mbarrier); the warp folds one word a lane.

typedef long long i64;

template <int U>
__global__ void __launch_bounds__(256) read_ld(const uint4* __restrict__ a, i64 n,
                                               unsigned* __restrict__ out) {
  unsigned acc = 0;
  const i64 stride = (i64)gridDim.x * 256;
  for (i64 i = (i64)blockIdx.x * 256 + threadIdx.x; i < n; i += stride * U) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const i64 j = i + u * stride;
      v[u] = j < n ? __ldcs(a + j) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  if (acc == 0x9e3779b9u) out[0] = acc;
}

template <int STAGES, int CHUNK>
__global__ void __launch_bounds__(256) read_bulk(const uint4* __restrict__ a, i64 n,
                                                 unsigned* __restrict__ out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ uint4 smem[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned long long* bar = reinterpret_cast<unsigned long long*>(smem) + warp * STAGES;
  uint4* buf = smem + 4 * STAGES + warp * STAGES * (CHUNK / 16);
  if (lane == 0) {
    for (int s = 0; s < STAGES; ++s)
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(
          (unsigned)__cvta_generic_to_shared(bar + s)) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  const i64 per = CHUNK / 16, pieces = (n + per - 1) / per;
  const i64 first = (i64)blockIdx.x * 8 + warp, nw = (i64)gridDim.x * 8;
  auto issue = [&](int i) {
    const i64 p = first + i * nw;
    if (lane == 0 && p < pieces) {
      const unsigned bytes = (unsigned)(min(per, n - p * per) * 16);
      const unsigned b = (unsigned)__cvta_generic_to_shared(bar + i % STAGES);
      const unsigned d = (unsigned)__cvta_generic_to_shared(buf + (i % STAGES) * per);
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(bytes)
                   : "memory");
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
          ::"r"(d), "l"(a + p * per), "r"(bytes), "r"(b) : "memory");
    }
  };
  unsigned acc = 0;
  for (int i = 0; i < STAGES - 1; ++i) issue(i);
  for (int i = 0; first + i * nw < pieces; ++i) {
    issue(i + STAGES - 1);
    const unsigned b = (unsigned)__cvta_generic_to_shared(bar + i % STAGES);
    unsigned done = 0;
    while (!done)
      asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                   " selp.u32 %0, 1, 0, p;\n}\n"
                   : "=r"(done) : "r"(b), "r"((unsigned)(i / STAGES) & 1u) : "memory");
    acc ^= reinterpret_cast<const unsigned*>(buf + (i % STAGES) * per)[lane];
    __syncwarp();
  }
  if (acc == 0x9e3779b9u) out[0] = acc;
#else
  __trap();
#endif
}
