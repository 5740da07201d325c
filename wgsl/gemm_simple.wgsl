// One thread per output cell: the skinny path (m >> n, small k; k unrolled when KCONST > 0) and
// the argmax kernel (strict improvement, so ties keep the smallest k; no path gives -1).
{$ include "gemm_common.wgsl" $}
$$ set nb = 4
$$ if ARGMAX
@group(0) @binding({{ nb }}) var<storage, read_write> I: array<i32>;
$$ set nb = nb + 1
$$ endif
$$ if HAS_C
@group(0) @binding({{ nb }}) var<storage, read> C: array<T>;
$$ endif

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let idx = (wg.y * P.nx + wg.x) * {{ WG }}u + lid;
    if (idx >= P.m * P.n) { return; }
    let i = idx / P.n;
    let j = idx % P.n;
    let arow = wg.z * P.a_bs + i * P.k;
    let bcol = wg.z * P.b_bs + j;
    var acc = zero();
$$ if ARGMAX
    var best = -1i;
$$ endif
$$ if KCONST > 0
$$ for kk in range(KCONST)
    {
        let v = mul1(A[arow + {{ kk }}u], B[bcol + {{ kk }}u * P.n]);
$$ if ARGMAX
        if (better(v, acc)) { acc = v; best = {{ kk }}i; }
$$ else
        acc = add1(acc, v);
$$ endif
    }
$$ endfor
$$ else
    for (var kk = 0u; kk < P.k; kk = kk + 1u) {
        let v = mul1(A[arow + kk], B[bcol + kk * P.n]);
$$ if ARGMAX
        if (better(v, acc)) { acc = v; best = i32(kk); }
$$ else
        acc = add1(acc, v);
$$ endif
    }
$$ endif
    let o = wg.z * P.d_bs + idx;
$$ if HAS_C
    let cv = C[wg.z * P.c_bs + idx];
$$ if ARGMAX
    if (!better(acc, cv)) { best = -1i; }
$$ endif
    acc = add1(cv, acc);
$$ endif
    D[o] = acc;
$$ if ARGMAX
    I[o] = best;
$$ endif
}
