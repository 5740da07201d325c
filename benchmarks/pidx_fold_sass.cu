// The argmax-by-k-tile fold of 16 vec4 outputs a k-tile in CUDA, in the index forms of PIDX
// (wgpu_gemm_notes.md, session 7, PIDX): only to count the SASS NVIDIA's compiler makes of each, as
// the Vulkan driver's cannot be read. Count the loop body's opcodes:
//   nvcc -arch=sm_90 -cubin -O3 -Xptxas -v -o f.cubin benchmarks/pidx_fold_sass.cu && cuobjdump -sass f.cubin
// PX 0: unpacked (one i32 a lane); 8: byte mask, one merge; 9: per-lane byte insert; 16: 16-bit.
#include <cstdint>
template <int PX>
__global__ void fold(const float4* __restrict__ tin, float4* dout, uint32_t* iout, int ntiles) {
    float4 acc[16];
    int4 idx[16];
    uint32_t w8[16];
    uint2 w16[16];
    for (int q = 0; q < 16; q++) {
        acc[q] = make_float4(INFINITY, INFINITY, INFINITY, INFINITY);
        idx[q] = make_int4(-1, -1, -1, -1); w8[q] = 0; w16[q] = make_uint2(0, 0);
    }
    for (int t = 0; t < ntiles; t++) {
        uint32_t kt8 = (uint32_t)t * 0x01010101u;
        uint32_t kt16 = (uint32_t)t * 0x00010001u;
        #pragma unroll
        for (int q = 0; q < 16; q++) {
            float4 ta = tin[(t * 16 + q) * 256 + threadIdx.x];
            bool bx = ta.x < acc[q].x, by = ta.y < acc[q].y, bz = ta.z < acc[q].z, bw = ta.w < acc[q].w;
            acc[q].x = bx ? ta.x : acc[q].x; acc[q].y = by ? ta.y : acc[q].y;
            acc[q].z = bz ? ta.z : acc[q].z; acc[q].w = bw ? ta.w : acc[q].w;
            if (PX == 0) {
                idx[q].x = bx ? t : idx[q].x; idx[q].y = by ? t : idx[q].y;
                idx[q].z = bz ? t : idx[q].z; idx[q].w = bw ? t : idx[q].w;
            } else if (PX == 8) {
                uint32_t mm = ((bx ? 0xFFu : 0u) | (by ? 0xFF00u : 0u)) | ((bz ? 0xFF0000u : 0u) | (bw ? 0xFF000000u : 0u));
                w8[q] = (w8[q] & ~mm) | (kt8 & mm);
            } else if (PX == 9) {  // per lane: replace the byte where the compare holds
                w8[q] = bx ? ((w8[q] & 0xFFFFFF00u) | (kt8 & 0xFFu)) : w8[q];
                w8[q] = by ? ((w8[q] & 0xFFFF00FFu) | (kt8 & 0xFF00u)) : w8[q];
                w8[q] = bz ? ((w8[q] & 0xFF00FFFFu) | (kt8 & 0xFF0000u)) : w8[q];
                w8[q] = bw ? ((w8[q] & 0x00FFFFFFu) | (kt8 & 0xFF000000u)) : w8[q];
            } else {
                uint32_t m0 = (bx ? 0xFFFFu : 0u) | (by ? 0xFFFF0000u : 0u);
                uint32_t m1 = (bz ? 0xFFFFu : 0u) | (bw ? 0xFFFF0000u : 0u);
                w16[q].x = (w16[q].x & ~m0) | (kt16 & m0);
                w16[q].y = (w16[q].y & ~m1) | (kt16 & m1);
            }
        }
    }
    for (int q = 0; q < 16; q++) {
        dout[q * 256 + threadIdx.x] = acc[q];
        uint32_t v = PX == 0 ? (uint32_t)(idx[q].x + idx[q].y * 3 + idx[q].z * 5 + idx[q].w * 7)
                   : PX == 16 ? w16[q].x ^ w16[q].y : w8[q];
        iout[q * 256 + threadIdx.x] = v;
    }
}
template __global__ void fold<0>(const float4*, float4*, uint32_t*, int);
template __global__ void fold<8>(const float4*, float4*, uint32_t*, int);
template __global__ void fold<9>(const float4*, float4*, uint32_t*, int);
template __global__ void fold<16>(const float4*, float4*, uint32_t*, int);
