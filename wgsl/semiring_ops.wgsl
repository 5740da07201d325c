// Semiring operators spliced into the GEMM kernels (included through gemm_common.wgsl).
// add1/mul1 act on scalars, add4/mul4 on vec4 (the register-blocked accumulators).
alias T = {{ T }};
alias V = vec4<{{ T }}>;
// The constants are functions, and float bit patterns pass through f32_bits' parameter: naga cannot
// const-evaluate bitcast, and Tint const-evaluates bitcast<f32>(0x7f800000u) and rejects the inf.
fn f32_bits(b: u32) -> f32 { return bitcast<f32>(b); }
fn zero() -> T { return {{ ZERO }}; }

fn add1(a: T, b: T) -> T { return {{ ADD }}; }
$$ if USER
fn add4(a: V, b: V) -> V { return V(add1(a.x, b.x), add1(a.y, b.y), add1(a.z, b.z), add1(a.w, b.w)); }
fn mul1(a: T, b: T) -> T { return {{ MUL }}; }
fn mul4(a: V, b: V) -> V { return V(mul1(a.x, b.x), mul1(a.y, b.y), mul1(a.z, b.z), mul1(a.w, b.w)); }
$$ elif GUARD == "none"
fn add4(a: V, b: V) -> V { return {{ ADD }}; }
fn mul1(a: T, b: T) -> T { return {{ MUL }}; }
fn mul4(a: V, b: V) -> V { return {{ MUL }}; }
$$ elif GUARD == "float_plus"
// the zero is absorbing; inf + -inf (the only NaN) always involves the zero
fn add4(a: V, b: V) -> V { return {{ ADD }}; }
fn mul1(a: T, b: T) -> T { return select(a + b, zero(), (a == zero()) || (b == zero())); }
fn mul4(a: V, b: V) -> V { let z = V(zero()); return select(a + b, z, (a == z) | (b == z)); }
$$ elif GUARD == "float_times"
// the zero is absorbing and 0 * inf (NaN) becomes the zero; no NaN comparison needed
fn inf() -> T { return f32_bits(0x7f800000u); }
fn add4(a: V, b: V) -> V { return {{ ADD }}; }
fn mul1(a: T, b: T) -> T {
    let bad = (a == zero()) || (b == zero()) || (abs(a) == inf() && b == 0.0) || (abs(b) == inf() && a == 0.0);
    return select(a * b, zero(), bad);
}
fn mul4(a: V, b: V) -> V {
    let z = V(zero());
    let vinf = V(inf());
    let zz = V(0.0);
    let bad = (a == z) | (b == z) | ((abs(a) == vinf) & (b == zz)) | ((abs(b) == vinf) & (a == zz));
    return select(a * b, z, bad);
}
$$ elif GUARD == "int_plus"
// saturating i32 add (WGSL wraps at run time) with the absorbing zero
fn mul1(a: T, b: T) -> T {
    let s = a + b;
    var r = select(s, bitcast<i32>(0x7fffffffu), a > 0i && b > 0i && s < 0i);
    r = select(r, bitcast<i32>(0x80000000u), a < 0i && b < 0i && s >= 0i);
    return select(r, zero(), (a == zero()) || (b == zero()));
}
fn add4(a: V, b: V) -> V { return {{ ADD }}; }
fn mul4(a: V, b: V) -> V {
    let s = a + b;
    let o = V(0i);
    var r = select(s, V(bitcast<i32>(0x7fffffffu)), (a > o) & (b > o) & (s < o));
    r = select(r, V(bitcast<i32>(0x80000000u)), (a < o) & (b < o) & (s >= o));
    let z = V(zero());
    return select(r, z, (a == z) | (b == z));
}
$$ elif GUARD == "int_times"
fn add4(a: V, b: V) -> V { return {{ ADD }}; }
fn mul1(a: T, b: T) -> T { return select(a * b, zero(), (a == zero()) || (b == zero())); }
fn mul4(a: V, b: V) -> V { let z = V(zero()); return select(a * b, z, (a == z) | (b == z)); }
$$ endif

// strict improvement of v over acc under ⊕ (argmax: ties keep the smaller k)
fn better(v: T, acc: T) -> bool {
$$ if ADD_OP == "min"
    return v < acc;
$$ elif ADD_OP == "max"
    return v > acc;
$$ else
    return add1(v, acc) == v && v != acc;
$$ endif
}
