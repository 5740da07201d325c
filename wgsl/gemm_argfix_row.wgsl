// gemm_argfix_coop taken row by row (B transposed, k a multiple of 4, BK = 16): a workgroup takes
// one row i of D and a panel of PW columns (panel-major over the rows, so the workgroups resident
// together read one panel of Bᵀ) and loops over them, WG / 4 outputs a round, four threads an
// output. Every output of the workgroup reads its winning k-tile of the same row of A, so after
// the first rounds A's row (k * 4 bytes) is served by the SM's L1 instead of L2: per output the
// pass moves 64 bytes of Bᵀ (and D, I) through L2, not 64 + 64. (A copy of A's row in workgroup
// memory was 3x slower on an H200: benchmarks/results/wgpu_gemm_notes.md, s5.)
// Same contract as gemm_argfix (I: the winning k-tile or -1 in, the argmax or -1 out).
// P.c_bs: panels per row (ceil(n / PW)); workgroup w = panel * m + row (per batch entry, wg.z).
{$ include "gemm_common.wgsl" $}
@group(0) @binding(4) var<storage, read_write> I: array<i32>;
// the four quarters' matches, two rounds' worth (one barrier a round)
var<workgroup> fw: array<i32, {{ 2 * WG }}>;

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = wg.y * P.nx + wg.x;
    let i = w % P.m;
    let c0 = (w / P.m) * {{ PW }}u;
    let abase = (wg.z * P.a_bs + i * P.k) / 4u;  // in vec4 (k and a_bs are multiples of 4)
    let q = lid % 4u;
    var cols = 0u;  // uniform: the grid may hold more workgroups than rows x panels
    if (w < P.m * P.c_bs) { cols = min({{ PW }}u, P.n - c0); }
    let rounds = (cols + {{ WG // 4 - 1 }}u) / {{ WG // 4 }}u;
    for (var r = 0u; r < rounds; r = r + 1u) {
        let j = c0 + r * {{ WG // 4 }}u + lid / 4u;
        let o = wg.z * P.d_bs + i * P.n + j;
        var found = -1i;
        var t = -1i;
        if (j < c0 + cols) {
            t = I[o];
            if (t >= 0i) {
                let v = D[o];
                let k0 = u32(t) * 16u + q * 4u;
                if (k0 < P.k) {
                    let p = mul4(A[abase + k0 / 4u], B[(wg.z * P.b_bs + j * P.k + k0) / 4u]);
$$ for c in range(3, -1, -1)
                    if (p.{{ "xyzw"[c] }} == v) { found = i32(k0 + {{ c }}u); }
$$ endfor
                }
            }
        }
        let s = (r & 1u) * {{ WG }}u + lid;
        fw[s] = found;
        workgroupBarrier();
        if (t >= 0i && q == 0u) {
            var best = -1i;
$$ for c in range(3, -1, -1)
            if (fw[s + {{ c }}u] >= 0i) { best = fw[s + {{ c }}u]; }
$$ endfor
            I[o] = best;
        }
    }
}
