// Operand facts of a small GEMM's result computed in its own epilogue (FACTS: no separate facts
// dispatch, pytropical_gpu/backends/wgpu/fused_facts.py): the same 8 words as facts.wgsl, one set
// per workgroup at FS[8 * workgroup index], written whole by the workgroup (no initial words, no
// atomics across workgroups); the host folds the workgroups' sets. Words:
//   0: NaN present, 1: +inf present, 2: -inf present (floats; 0/1 flags),
//   3: largest |x| as f32 bits (floats, NaN excluded), 4: smallest non-zero |x| as f32 bits
//   (0x7f800000 = inf when there is none), 5: subnormal count (floats),
//   6 / 7: minimum / maximum as order-preserving u32 (i32 with the sign bit flipped, u32 as is).
@group(0) @binding({{ FBIND }}) var<storage, read_write> FS: array<u32>;
var<workgroup> FW: array<atomic<u32>, 8>;
var<private> f_nan: u32 = 0u;
var<private> f_pinf: u32 = 0u;
var<private> f_ninf: u32 = 0u;
var<private> f_amax: u32 = 0u;
var<private> f_amin: u32 = 0x7f800000u;
var<private> f_sub: u32 = 0u;
var<private> f_lo: u32 = 0xffffffffu;
var<private> f_hi: u32 = 0u;

fn facts_init(lid: u32) {
    if (lid == 0u) {
        atomicStore(&FW[0], 0u); atomicStore(&FW[1], 0u); atomicStore(&FW[2], 0u);
        atomicStore(&FW[3], 0u); atomicStore(&FW[4], 0x7f800000u); atomicStore(&FW[5], 0u);
        atomicStore(&FW[6], 0xffffffffu); atomicStore(&FW[7], 0u);
    }
}

// one stored value of D (exactly the bits stored)
fn facts_add(v: T) {
    let b = bitcast<u32>(v);
$$ if FKIND == "f32"
    let a = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
        f_nan = 1u;
    } else {
        if (b == 0x7f800000u) { f_pinf = 1u; }
        if (b == 0xff800000u) { f_ninf = 1u; }
        f_amax = max(f_amax, a);
        if (a != 0u) { f_amin = min(f_amin, a); }
        if (a != 0u && a < 0x00800000u) { f_sub = f_sub + 1u; }
    }
$$ elif FKIND == "i32"
    let o = b ^ 0x80000000u;
    f_lo = min(f_lo, o);
    f_hi = max(f_hi, o);
$$ else
    f_lo = min(f_lo, b);
    f_hi = max(f_hi, b);
$$ endif
}

// every thread of the workgroup calls it (uniform control flow), after its last facts_add
fn facts_store(slot: u32, lid: u32) {
    atomicMax(&FW[0], f_nan); atomicMax(&FW[1], f_pinf); atomicMax(&FW[2], f_ninf);
    atomicMax(&FW[3], f_amax); atomicMin(&FW[4], f_amin); atomicAdd(&FW[5], f_sub);
    atomicMin(&FW[6], f_lo); atomicMax(&FW[7], f_hi);
    workgroupBarrier();
    if (lid == 0u) {
        for (var j = 0u; j < 8u; j = j + 1u) { FS[slot * 8u + j] = atomicLoad(&FW[j]); }
    }
}
