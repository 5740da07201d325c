// The zero-sign gate's first dispatch (pytropical_gpu/backends/wgpu/zsign.py): is any output of D
// a zero? Run after the GEMM, before gemm_zflags.wgsl and gemm_zsign.wgsl, in the same submit.
// A zero is what the pass calls one: bits & 0x7fffffff == 0 (±0 only; the pass leaves a subnormal
// output alone, so it is no zero here either).
// A grid of P.ng workgroups (at most 2 * WG, so that gemm_zflags's workgroups read them all with
// two loads a thread) strides over D flat: each thread reads vec4<u32> words of D (D4, the first
// P.nvec * 4 elements; a warp reads 512 consecutive bytes) U at a time (U loads in flight before
// the first is used), then the single ones left; workgroup 0 reads the P.ntail (< 4) last
// elements through D1. The lanes meet in a workgroup atomic; thread 0 stores the workgroup's
// answer (1: a zero seen, 0: none) to its own word FL[P.fz + w]: one store a workgroup, and
// every word stored once, so nothing needs clearing first (no grid-wide order exists inside one
// dispatch, and the runtimes record no buffer clears). gemm_zflags ORs the P.ng words.
// It also clears FL's flag words [0, P.nclear) (gemm_zflags ORs chunks of rows and columns into
// them with atomics, one dispatch later: WebGPU orders these stores before that dispatch).
// Bindings: D4, D1 (two read-only views of D: vec4 and u32), FL (read_write).
$$ if WG % 32 != 0 or WG < 64
{{ fail("gemm_zany: WG must be a multiple of 32 of at least 64, got " ~ WG) }}
$$ endif
$$ if U < 1
{{ fail("gemm_zany: U must be at least 1, got " ~ U) }}
$$ endif
struct Params { nvec: u32, ntail: u32, ng: u32, nx: u32, nclear: u32, fz: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> D4: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> D1: array<u32>;
@group(0) @binding(3) var<storage, read_write> FL: array<u32>;

const MAG = 0x7fffffffu;
var<workgroup> hit: atomic<u32>;

// 1 where some lane of v is ±0, else 0
fn zero4(v: vec4<u32>) -> u32 {
    return select(0u, 1u, any((v & vec4<u32>(MAG)) == vec4<u32>(0u)));
}

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = wg.y * P.nx + wg.x;
    if (w >= P.ng) { return; }  // uniform: the whole workgroup
    if (lid == 0u) { atomicStore(&hit, 0u); }
    workgroupBarrier();
    let s = P.ng * {{ WG }}u;  // the grid's stride, in vec4 words
    for (var i = w * {{ WG }}u + lid; i < P.nclear; i = i + s) { FL[i] = 0u; }
    var z = 0u;
    var v = w * {{ WG }}u + lid;
    for (; v + {{ U - 1 }}u * s < P.nvec; v = v + {{ U }}u * s) {
$$ for u in range(U)
        let x{{ u }} = D4[v{{ (" + %du * s" % u) if u else "" }}];
$$ endfor
        z = z{$ for u in range(U) $} | zero4(x{{ u }}){$ endfor $};
    }
    for (; v < P.nvec; v = v + s) { z = z | zero4(D4[v]); }
    if (w == 0u && lid < P.ntail && (D1[P.nvec * 4u + lid] & MAG) == 0u) { z = 1u; }
    if (z != 0u) { atomicOr(&hit, 1u); }
    workgroupBarrier();
    if (lid == 0u) { FL[P.fz + w] = atomicLoad(&hit); }
}
