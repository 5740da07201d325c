// gemm_argfix with four threads per output (B transposed, k a multiple of 4, BK = 16): thread q of
// an output reads the q-th 16 bytes of the winning k-tile's A row and Bᵀ column, so one vec4 load
// instruction of a warp touches 8 cache lines (8 outputs) instead of 32, and finds the smallest k
// in its quarter whose product equals D; the output's first thread keeps the smallest of the four.
// Same contract as gemm_argfix (I: the winning k-tile or -1 in, the argmax or -1 out).
// PW: the outputs in panels of PW columns, row-major inside a panel (as gemm_argfix).
{$ include "gemm_common.wgsl" $}
@group(0) @binding(4) var<storage, read_write> I: array<i32>;
var<workgroup> fw: array<i32, {{ WG }}>;

// (row, column) of output number g
fn out_ij(g: u32) -> vec2<u32> {
$$ if PW|default(0)
    let full = (P.n / {{ PW }}u) * {{ PW }}u;  // columns in whole panels
    if (g < P.m * full) {
        let p = g / (P.m * {{ PW }}u);
        let rem = g - p * P.m * {{ PW }}u;
        return vec2<u32>(rem / {{ PW }}u, p * {{ PW }}u + rem % {{ PW }}u);
    }
    let w = P.n - full;
    let rem = g - P.m * full;
    return vec2<u32>(rem / w, full + rem % w);
$$ else
    return vec2<u32>(g / P.n, g % P.n);
$$ endif
}

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let q = lid % 4u;
    let g = (wg.y * P.nx + wg.x) * {{ WG // 4 }}u + lid / 4u;
    var found = -1i;
    var live = g < P.m * P.n;
    var o = 0u;
    if (live) {
        let ij = out_ij(g);
        o = wg.z * P.d_bs + ij.x * P.n + ij.y;
        let t = I[o];
        live = t >= 0i;
        if (live) {
            let v = D[o];
            let k0 = u32(t) * 16u + q * 4u;
            if (k0 < P.k) {
                // k0, the row and column starts are multiples of 4 (k is)
                let p = mul4(A[(wg.z * P.a_bs + ij.x * P.k + k0) / 4u],
                             B[(wg.z * P.b_bs + ij.y * P.k + k0) / 4u]);
$$ for c in range(3, -1, -1)
                if (p.{{ "xyzw"[c] }} == v) { found = i32(k0 + {{ c }}u); }
$$ endfor
            }
        }
    }
    fw[lid] = found;
    workgroupBarrier();
    if (live && q == 0u) {
        var best = -1i;
$$ for r in range(3, -1, -1)
        if (fw[lid + {{ r }}u] >= 0i) { best = fw[lid + {{ r }}u]; }
$$ endfor
        I[o] = best;
    }
}
