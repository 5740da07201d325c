// The facts' reduction shared by facts.wgsl (a pass over a result) and gemm_facts.wgsl (a small
// GEMM's epilogue): the 8 words of pytropical_gpu/facts.py gathered per invocation in private
// variables, then per workgroup in FW. FKIND: "f32", "i32" or "u32". Words:
//   0: NaN present, 1: +inf present, 2: -inf present (floats; 0/1 flags),
//   3: largest |x| as f32 bits (floats, NaN excluded: non-negative f32 bits order as their values),
//   4: smallest non-zero |x| as f32 bits (floats; 0x7f800000 = inf when there is none),
//   5: subnormal count (floats), 6 / 7: minimum / maximum as order-preserving u32 (integers:
//   i32 bits with the sign bit flipped, u32 as they are).
var<workgroup> FW: array<atomic<u32>, 8>;
var<private> f_nan: u32 = 0u;
var<private> f_pinf: u32 = 0u;
var<private> f_ninf: u32 = 0u;
var<private> f_amax: u32 = 0u;
var<private> f_amin: u32 = 0x7f800000u;
var<private> f_sub: u32 = 0u;
var<private> f_lo: u32 = 0xffffffffu;
var<private> f_hi: u32 = 0u;

// the workgroup's initial words; the caller puts a workgroupBarrier between this and facts_fold
fn facts_init(lid: u32) {
    if (lid == 0u) {
        atomicStore(&FW[0], 0u); atomicStore(&FW[1], 0u); atomicStore(&FW[2], 0u);
        atomicStore(&FW[3], 0u); atomicStore(&FW[4], 0x7f800000u); atomicStore(&FW[5], 0u);
        atomicStore(&FW[6], 0xffffffffu); atomicStore(&FW[7], 0u);
    }
}

// one value, as its bits (exactly the bits stored)
fn facts_add_bits(b: u32) {
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

// every thread of the workgroup calls it (uniform control flow) after its last facts_add_bits,
// then a workgroupBarrier before FW is read
fn facts_fold() {
    atomicMax(&FW[0], f_nan); atomicMax(&FW[1], f_pinf); atomicMax(&FW[2], f_ninf);
    atomicMax(&FW[3], f_amax); atomicMin(&FW[4], f_amin); atomicAdd(&FW[5], f_sub);
    atomicMin(&FW[6], f_lo); atomicMax(&FW[7], f_hi);
}
