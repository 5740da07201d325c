// Register-blocked semiring GEMM: D[b] = (C[b] ⊕) A[b] ⊗ B[b].
// Workgroup tile BM x BN, k-tile BK, each thread TM x TN outputs held in vec4 accumulators; the
// k-tile body is generated fully unrolled (no dynamically indexed private arrays).
// Guards, padding and tile choice follow KERNELS.md at the repository root (as cuda/ does).
{$ include "gemm_common.wgsl" $}
$$ set nb = 4
$$ if ARGMAX
@group(0) @binding({{ nb }}) var<storage, read_write> I: array<i32>;
$$ set nb = nb + 1
$$ endif
$$ if HAS_C
@group(0) @binding({{ nb }}) var<storage, read> C: array<T>;
$$ endif

$$ if ARGMAX
// strict improvement per lane (ties keep the smaller k, as the k loop runs upwards)
fn better4(v: V, acc: V) -> vec4<bool> {
$$ if ADD_OP == "min"
    return v < acc;
$$ elif ADD_OP == "max"
    return v > acc;
$$ else
    return vec4<bool>(better(v.x, acc.x), better(v.y, acc.y), better(v.z, acc.z), better(v.w, acc.w));
$$ endif
}
$$ endif

fn pad_b() -> T { return {{ ONE }}; }
$$ set NT = (BM // TM) * (BN // TN)
$$ set TN4 = TN // 4
$$ set BN4 = BN // 4
$$ set BM4 = BM // 4
var<workgroup> As: array<V, {{ BK * BM4 }}>;
var<workgroup> Bs: array<V, {{ BK * BN4 }}>;

@compute @workgroup_size({{ NT }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row0 = wg.y * {{ BM }}u;
    let col0 = wg.x * {{ BN }}u;
    let abase = wg.z * P.a_bs;
    let bbase = wg.z * P.b_bs;
    let tx = lid % {{ BN // TN }}u;
    let ty = lid / {{ BN // TN }}u;
    let arow = ty * {{ TM }}u;
    let arow4 = ty * {{ TM // 4 }}u;
    let bcol4 = tx * {{ TN4 }}u;
$$ for i in range(TM)
$$ for j in range(TN4)
    var acc_{{ i }}_{{ j }} = V(zero());
$$ if ARGMAX
    var idx_{{ i }}_{{ j }} = vec4<i32>(-1i);
$$ endif
$$ endfor
$$ endfor
    for (var k0 = 0u; k0 < P.k; k0 = k0 + {{ BK }}u) {
        // A tile (BM x BK) -> As[kk * BM4 + r / 4] as vec4 of 4 rows; padding: A = zero, B = one, so pad ⊗ pad = zero
$$ for l in range((BM4 * BK + NT - 1) // NT)
        if ({{ "true" if (l + 1) * NT <= BM4 * BK else "lid < %du" % (BM4 * BK - l * NT) }}) {
            let e = lid + {{ l * NT }}u;
            let kk = e % {{ BK }}u;
            let r = row0 + (e / {{ BK }}u) * 4u;
            let gk = k0 + kk;
            var v = V(zero());
            if (gk < P.k) {
                let o = abase + r * P.k + gk;
                if (r < P.m) { v.x = A[o]; }
                if (r + 1u < P.m) { v.y = A[o + P.k]; }
                if (r + 2u < P.m) { v.z = A[o + 2u * P.k]; }
                if (r + 3u < P.m) { v.w = A[o + 3u * P.k]; }
            }
            As[kk * {{ BM4 }}u + e / {{ BK }}u] = v;
        }
$$ endfor
        // B tile (BK x BN) -> Bs[kk * BN4 + c4] as vec4
$$ for l in range((BN4 * BK + NT - 1) // NT)
        if ({{ "true" if (l + 1) * NT <= BN4 * BK else "lid < %du" % (BN4 * BK - l * NT) }}) {
            let e = lid + {{ l * NT }}u;
            let kk = e / {{ BN4 }}u;
            let c = col0 + (e % {{ BN4 }}u) * 4u;
            let gk = k0 + kk;
            var v = V(pad_b());
            if (gk < P.k) {
                let o = bbase + gk * P.n + c;
                if (c + 3u < P.n) {
                    v = V(B[o], B[o + 1u], B[o + 2u], B[o + 3u]);
                } else {
                    if (c < P.n) { v.x = B[o]; }
                    if (c + 1u < P.n) { v.y = B[o + 1u]; }
                    if (c + 2u < P.n) { v.z = B[o + 2u]; }
                }
            }
            Bs[e] = v;
        }
$$ endfor
        workgroupBarrier();
$$ for kk in range(BK)
        {
$$ for q in range(TM // 4)
            let aq{{ q }} = As[{{ kk * BM4 + q }}u + arow4];
$$ endfor
$$ for i in range(TM)
            let a{{ i }} = V(aq{{ i // 4 }}.{{ "xyzw"[i % 4] }});
$$ endfor
$$ for j in range(TN4)
            let b{{ j }} = Bs[{{ kk * BN4 + j }}u + bcol4];
$$ endfor
$$ if ARGMAX
            let kv{{ kk }} = vec4<i32>(i32(k0 + {{ kk }}u));
$$ endif
$$ for i in range(TM)
$$ for j in range(TN4)
$$ if ARGMAX
            {
                let v = mul4(a{{ i }}, b{{ j }});
                let bt = better4(v, acc_{{ i }}_{{ j }});
                acc_{{ i }}_{{ j }} = select(acc_{{ i }}_{{ j }}, v, bt);
                idx_{{ i }}_{{ j }} = select(idx_{{ i }}_{{ j }}, kv{{ kk }}, bt);
            }
$$ else
            acc_{{ i }}_{{ j }} = add4(acc_{{ i }}_{{ j }}, mul4(a{{ i }}, b{{ j }}));
$$ endif
$$ endfor
$$ endfor
        }
$$ endfor
        workgroupBarrier();
    }
    let dbase = wg.z * P.d_bs;
$$ if HAS_C
    let cbase = wg.z * P.c_bs;
$$ endif
$$ for i in range(TM)
    {
        let r = row0 + arow + {{ i }}u;
        if (r < P.m) {
$$ for j in range(TN4)
$$ for c in range(4)
            {
                let col = col0 + (bcol4 + {{ j }}u) * 4u + {{ c }}u;
                if (col < P.n) {
                    let o = r * P.n + col;
                    var v = acc_{{ i }}_{{ j }}.{{ "xyzw"[c] }};
$$ if ARGMAX
                    var bi = idx_{{ i }}_{{ j }}.{{ "xyzw"[c] }};
$$ endif
$$ if HAS_C
                    let cv = C[cbase + o];
$$ if ARGMAX
                    if (!better(v, cv)) { bi = -1i; }
$$ endif
                    v = add1(cv, v);
$$ endif
                    D[dbase + o] = v;
$$ if ARGMAX
                    I[dbase + o] = bi;
$$ endif
                }
            }
$$ endfor
$$ endfor
        }
    }
$$ endfor
}
