// gemm_argfix_coop with A's row in workgroup memory (B transposed, k a multiple of 4, BK = 16,
// k <= 4 * KV): a workgroup takes one row i of D and a panel of PW columns (panel-major over the
// rows, so the workgroups resident together read one panel of Bᵀ), loads A's row once (k * 4
// bytes, coalesced) and then, four threads an output, WG / 4 outputs a round, reads each output's
// winning k-tile of A from workgroup memory and of Bᵀ from global memory: per output 64 bytes of
// Bᵀ and k * 4 / PW of A instead of 64 + 64 (the pass is bound by its memory sectors).
// ASH = false reads A's row from global memory instead (the L1 then holds it: the same loop).
// Same contract as gemm_argfix (I: the winning k-tile or -1 in, the argmax or -1 out).
// P.c_bs: panels per row (ceil(n / PW)); workgroup w = panel * m + row (per batch entry, wg.z).
{$ include "gemm_common.wgsl" $}
@group(0) @binding(4) var<storage, read_write> I: array<i32>;
$$ set ASH = ASH|default(true)
$$ if ASH
var<workgroup> ar: array<V, {{ KV }}>;
$$ endif
// the four quarters' matches, two rounds' worth (one barrier a round)
var<workgroup> fw: array<i32, {{ 2 * WG }}>;

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let w = wg.y * P.nx + wg.x;
    let live_wg = w < P.m * P.c_bs;  // uniform: the grid may hold more workgroups than outputs
    let i = w % P.m;
    let c0 = (w / P.m) * {{ PW }}u;
    let abase = (wg.z * P.a_bs + i * P.k) / 4u;  // in vec4 (k and a_bs are multiples of 4)
$$ if ASH
    if (live_wg) {
        for (var e = lid; e < P.k / 4u; e = e + {{ WG }}u) { ar[e] = A[abase + e]; }
    }
    workgroupBarrier();
$$ endif
    let q = lid % 4u;
    var cols = 0u;
    if (live_wg) { cols = min({{ PW }}u, P.n - c0); }
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
$$ if ASH
                    let x = ar[k0 / 4u];
$$ else
                    let x = A[abase + k0 / 4u];
$$ endif
                    let p = mul4(x, B[(wg.z * P.b_bs + j * P.k + k0) / 4u]);
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
