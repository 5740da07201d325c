// Shared head of the GEMM kernels (gemm_tiled, gemm_simple, gemm_skinny): the semiring operators,
// the uniform block and bindings 0-3; each kernel declares its optional bindings (argmax, C) after.
// Guards, padding identity and tile choice: KERNELS.md at the repository root (shared with cuda/).
{$ include "semiring_ops.wgsl" $}

struct Params { m: u32, n: u32, k: u32, a_bs: u32, b_bs: u32, c_bs: u32, d_bs: u32, nx: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> A: array<T>;
@group(0) @binding(2) var<storage, read> B: array<T>;
@group(0) @binding(3) var<storage, read_write> D: array<T>;
