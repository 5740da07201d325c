// Shared head of the GEMM kernels (gemm_tiled, gemm_simple, gemm_skinny): the semiring operators,
// the uniform block and bindings 0-3; each kernel declares its optional bindings (argmax, C) after.
// Guards, padding identity and tile choice: KERNELS.md at the repository root (shared with cuda/).
{$ include "semiring_ops.wgsl" $}

struct Params { m: u32, n: u32, k: u32, a_bs: u32, b_bs: u32, c_bs: u32, d_bs: u32, nx: u32 };
@group(0) @binding(0) var<uniform> P: Params;
// AV / BV / DV: A, B, D are read or written as vec4 (rows of a multiple of 4 elements: gemm_skinny
// reads A rows and writes D rows so, gemm_wide reads B and writes D so).
@group(0) @binding(1) var<storage, read> A: array<{{ "V" if AV|default(false) else "T" }}>;
@group(0) @binding(2) var<storage, read> B: array<{{ "V" if BV|default(false) else "T" }}>;
@group(0) @binding(3) var<storage, read_write> D: array<{{ "V" if DV|default(false) else "T" }}>;
