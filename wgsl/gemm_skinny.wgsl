// Skinny semiring GEMM (m >> n, small k): each thread computes the N outputs of RPT rows of A
// (rows WG apart, so a warp's reads stay contiguous); the whole K x N of B sits in workgroup memory;
// K and N are compile-time constants (loops unrolled), so nothing is padded to a big tile.
// AV / DV: rows of A read, rows of D written, as vec4 (K resp. N a multiple of 4 and batch
// strides too: one 16-byte access instead of four).
{$ include "gemm_common.wgsl" $}
$$ set RPT = RPT|default(1)
$$ set AV = AV|default(false)
$$ set DV = DV|default(false)
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
$$ for rr in range(RPT)
    {
        let i = (wg.y * P.nx + wg.x) * {{ WG * RPT }}u + {{ rr * WG }}u + lid;
        if (i < P.m) {
$$ if AV
            let arow = (wg.z * P.a_bs + i * {{ K }}u) / 4u;
$$ for q in range(K // 4)
            let aq{{ q }} = A[arow + {{ q }}u];
$$ endfor
$$ for kk in range(K)
            let a{{ kk }} = aq{{ kk // 4 }}.{{ "xyzw"[kk % 4] }};
$$ endfor
$$ else
            let arow = wg.z * P.a_bs + i * {{ K }}u;
$$ for kk in range(K)
            let a{{ kk }} = A[arow + {{ kk }}u];
$$ endfor
$$ endif
            let o = wg.z * P.d_bs + i * {{ N }}u;
$$ if HAS_C
            let co = wg.z * P.c_bs + i * {{ N }}u;
$$ endif
$$ for j in range(N)
            var acc{{ j }} = zero();
$$ for kk in range(K)
            acc{{ j }} = add1(acc{{ j }}, mul1(a{{ kk }}, Bs[{{ kk * N + j }}u]));
$$ endfor
$$ if HAS_C
            acc{{ j }} = add1(C[co + {{ j }}u], acc{{ j }});
$$ endif
$$ if not DV
            D[o + {{ j }}u] = acc{{ j }};
$$ endif
$$ endfor
$$ if DV
$$ for q in range(N // 4)
            D[o / 4u + {{ q }}u] = V(acc{{ 4 * q }}, acc{{ 4 * q + 1 }}, acc{{ 4 * q + 2 }}, acc{{ 4 * q + 3 }});
$$ endfor
$$ endif
        }
    }
$$ endfor
}
