// Wide semiring GEMM (m <= MMAX and k small, n large; n a multiple of 4): each thread computes the
// m x 4 outputs of four adjacent columns from a vec4 of each of the K rows of B (one 16-byte load
// per row, contiguous across a warp); the whole m x K of A sits in workgroup memory. K is a
// compile-time constant; the MMAX rows are unrolled, each behind a uniform m test (one pipeline per
// K, not per (m, K)). The mirror of gemm_skinny (m large, k and n small).
{$ include "gemm_common.wgsl" $}
$$ if HAS_C
@group(0) @binding(4) var<storage, read> C: array<V>;
$$ endif

var<workgroup> As: array<T, {{ MMAX * K }}>;

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
$$ for l in range((MMAX * K + WG - 1) // WG)
    if (lid + {{ l * WG }}u < P.m * {{ K }}u) { As[lid + {{ l * WG }}u] = A[wg.z * P.a_bs + lid + {{ l * WG }}u]; }
$$ endfor
    workgroupBarrier();
    let n4 = P.n / 4u;
    let j = (wg.y * P.nx + wg.x) * {{ WG }}u + lid;
    if (j >= n4) { return; }
    let bo = wg.z * (P.b_bs / 4u) + j;
$$ for kk in range(K)
    let b{{ kk }} = B[bo + {{ kk }}u * n4];
$$ endfor
    let o = wg.z * (P.d_bs / 4u) + j;
$$ if HAS_C
    let co = wg.z * (P.c_bs / 4u) + j;
$$ endif
$$ for i in range(MMAX)
    if ({{ i }}u < P.m) {
        var acc = V(zero());
$$ for kk in range(K)
        acc = add4(acc, mul4(V(As[{{ i * K + kk }}u]), b{{ kk }}));
$$ endfor
$$ if HAS_C
        acc = add4(C[co + {{ i }}u * n4], acc);
$$ endif
        D[o + {{ i }}u * n4] = acc;
    }
$$ endfor
}
