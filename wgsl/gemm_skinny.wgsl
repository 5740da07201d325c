// Skinny semiring GEMM (m >> n, small k): one thread per row of A computes its N outputs; the
// whole K x N of B sits in workgroup memory; K and N are compile-time constants (loops unrolled),
// so nothing is padded to a big tile.
{$ include "gemm_common.wgsl" $}
$$ if HAS_C
@group(0) @binding(4) var<storage, read> C: array<T>;
$$ endif

var<workgroup> Bs: array<T, {{ K * N }}>;

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
$$ for l in range((K * N + WG - 1) // WG)
    if (lid + {{ l * WG }}u < {{ K * N }}u) { Bs[lid + {{ l * WG }}u] = B[wg.z * P.b_bs + lid + {{ l * WG }}u]; }
$$ endfor
    workgroupBarrier();
    let i = (wg.y * P.nx + wg.x) * {{ WG }}u + lid;
    if (i >= P.m) { return; }
    let arow = wg.z * P.a_bs + i * {{ K }}u;
$$ for kk in range(K)
    let a{{ kk }} = A[arow + {{ kk }}u];
$$ endfor
    let o = wg.z * P.d_bs + i * {{ N }}u;
$$ if HAS_C
    let co = wg.z * P.c_bs + i * {{ N }}u;
$$ endif
$$ for j in range(N)
    {
        var acc = zero();
$$ for kk in range(K)
        acc = add1(acc, mul1(a{{ kk }}, Bs[{{ kk * N + j }}u]));
$$ endfor
$$ if HAS_C
        acc = add1(C[co + {{ j }}u], acc);
$$ endif
        D[o + {{ j }}u] = acc;
    }
$$ endfor
}
