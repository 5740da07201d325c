// Pack bool bytes (rows x k, one byte per bool, 4 per u32) into u32 words along k, LSB first.
struct Params { rows: u32, k: u32, w: u32, nx: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<u32>;
@group(0) @binding(2) var<storage, read_write> O: array<u32>;

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let idx = (wg.y * P.nx + wg.x) * {{ WG }}u + lid;
    if (idx >= P.rows * P.w) { return; }
    let row = idx / P.w;
    let w = idx % P.w;
    let k0 = w * 32u;
    let nb = min(32u, P.k - k0);
    let base = row * P.k + k0;
    var out = 0u;
    for (var j = 0u; j < nb; j = j + 1u) {
        let e = base + j;
        let bit = (X[e >> 2u] >> ((e & 3u) * 8u)) & 1u;
        out = out | (bit << j);
    }
    O[idx] = out;
}
