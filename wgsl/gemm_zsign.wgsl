// Zero-sign pass of a float GEMM whose ⊕ is min or max (pytropical_gpu/zero_order.py): run after
// the GEMM (and split-k's fold, c applied), in place on D. The kernels fold with the hardware's
// min / max, which may return either of two equal zeros; the rule orders them (-0 < +0, IEEE
// 754-2019 maximum / minimum): a zero max is +0 if c or any zero term is +0, else -0; a zero min
// is -0 if c or any zero term is -0, else +0. A thread per output (a grid of at most ZCAP
// workgroups a batch entry strides over them, P.stride threads apart): a non-zero output returns at
// once; a zero one looks at c, then, unless the gate (below) rules out a -0 term, scans its k terms
// until one decides (max: a +0 term, min: a -0 term), so it costs up to k terms (all of k where
// none decides).
// Signs are read from the bits (a compiler need not keep the sign of a zero through arithmetic): a
// term x ⊗ y is a zero where the GEMM's ⊗ gives 0 (a term from the semiring's zero, ±inf, never
// does, so no guard); its sign is IEEE's for plus (-0 only from -0 + -0) and times (the signs'
// XOR), and the ordered one for min (-0 if x or y is -0) and max (+0 if x or y is +0).
// The gate: FL (gemm_zflags.wgsl, run just before in the same submit) holds flags of every row of A
// and column of B (bit 0: a -0 or negative subnormal, bit 1: a sign bit), from which CAN says
// whether any term of output (i, j) can be a -0: plus needs -0 + -0 (NZ of the row and of the
// column), times a sign bit in either (a zero product is -0 only for operands of opposite signs),
// min and max a -0 in either (the ordered min / max of zeros is -0 only with a -0 operand). Where
// none can, every zero term is +0, so a zero min is +0 (c, if it is -0, was taken first) and a zero
// max is +0 unless c is -0 (then the scan: a +0 term, if any, decides): no scan of k.
// First of all the any word FL[P.fs] (gemm_zflags.wgsl stores it: 0 where gemm_zany.wgsl saw no
// zero output): 0, every thread returns before reading D (the common case costs no read of D here,
// and the capped grid makes its launch small).
// Bindings as the GEMM's: A, B, D[, C], then FL; batch strides in elements (0: broadcast); fa_bs,
// fb_bs: FL's batch strides of A's rows (m or 0) and B's columns (n or 0), fb_off where B's start;
// fs: the any word.
$$ if T != "f32"
{{ fail("gemm_zsign: T must be f32, got " ~ T) }}
$$ endif
$$ if ADD_OP not in ("min", "max") or MUL_OP not in ("plus", "times", "min", "max")
{{ fail("gemm_zsign: ADD_OP must be min or max and MUL_OP plus, times, min or max, got " ~ ADD_OP ~ ", " ~ MUL_OP) }}
$$ endif
struct Params { m: u32, n: u32, k: u32, a_bs: u32, b_bs: u32, c_bs: u32, d_bs: u32, nx: u32,
                fa_bs: u32, fb_off: u32, fb_bs: u32, fs: u32, stride: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> A: array<u32>;
@group(0) @binding(2) var<storage, read> B: array<u32>;
@group(0) @binding(3) var<storage, read_write> D: array<u32>;
$$ if HAS_C
@group(0) @binding(4) var<storage, read> C: array<u32>;
$$ endif
@group(0) @binding({{ 5 if HAS_C else 4 }}) var<storage, read> FL: array<u32>;

const SIGN = 0x80000000u;
const MAG = 0x7fffffffu;
// the zero that decides: +0 for max, -0 for min (found, it is the output's sign)
const DECIDES = {{ "0u" if ADD_OP == "max" else "SIGN" }};
const OTHER = {{ "SIGN" if ADD_OP == "max" else "0u" }};

// x ⊗ y is a zero, and that zero is the deciding one
fn decides(x: u32, y: u32) -> bool {
    let fx = bitcast<f32>(x);
    let fy = bitcast<f32>(y);
$$ if MUL_OP == "plus"
    let zero = fx + fy == 0.0;
    let neg = (x & y & SIGN) != 0u;
$$ elif MUL_OP == "times"
    let zero = fx * fy == 0.0;
    let neg = ((x ^ y) & SIGN) != 0u;
$$ elif MUL_OP == "min"
    let zero = min(fx, fy) == 0.0;
    let neg = x == SIGN || y == SIGN;
$$ else
    let zero = max(fx, fy) == 0.0;
    let neg = !(x == 0u || y == 0u);
$$ endif
$$ if ADD_OP == "max"
    return zero && !neg;
$$ else
    return zero && neg;
$$ endif
}

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    if (FL[P.fs] == 0u) { return; }  // no output is zero (gemm_zany.wgsl, gemm_zflags.wgsl)
    for (var idx = (wg.y * P.nx + wg.x) * {{ WG }}u + lid; idx < P.m * P.n; idx = idx + P.stride) {
        fix_output(wg.z, idx);
    }
}

// output idx of batch entry z
fn fix_output(z: u32, idx: u32) {
    let o = z * P.d_bs + idx;
    if ((D[o] & MAG) != 0u) { return; }
    let i = idx / P.n;
    let j = idx % P.n;
$$ if HAS_C
    let cv = C[z * P.c_bs + idx];
    if (cv == DECIDES) {
        D[o] = DECIDES;
        return;
    }
$$ endif
    let fa = FL[z * P.fa_bs + i];
    let fb = FL[P.fb_off + z * P.fb_bs + j];
$$ if MUL_OP == "plus"
    let can = (fa & fb & 1u) != 0u;
$$ elif MUL_OP == "times"
    let can = ((fa | fb) & 2u) != 0u;
$$ else
    let can = ((fa | fb) & 1u) != 0u;
$$ endif
$$ if ADD_OP == "min"
    if (!can) {  // every zero term is +0, and c is not -0
        D[o] = 0u;
        return;
    }
$$ elif HAS_C
    if (!can && cv != SIGN) {  // a zero max without a -0 c: some term is a zero, and it is +0
        D[o] = 0u;
        return;
    }
$$ else
    if (!can) {  // a zero max: some term is a zero, and it is +0
        D[o] = 0u;
        return;
    }
$$ endif
    let arow = z * P.a_bs + i * P.k;
    let bcol = z * P.b_bs + j;
    for (var g = 0u; g < P.k; g = g + 1u) {
        if (decides(A[arow + g], B[bcol + g * P.n])) {
            D[o] = DECIDES;
            return;
        }
    }
    D[o] = OTHER;
}
