// Cyclic shift of the first dim bits of each row: output bit i = input bit (i - s) mod dim.
struct Params { total: u32, w: u32, dim: u32, s: u32, nx: u32, pad0: u32, pad1: u32, pad2: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<u32>;
@group(0) @binding(2) var<storage, read_write> O: array<u32>;

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let idx = (wg.y * P.nx + wg.x) * {{ WG }}u + lid;
    if (idx >= P.total) { return; }
    let base = (idx / P.w) * P.w;
    let i0 = (idx % P.w) * 32u;
    let nb = min(32u, P.dim - i0);
    let start = (i0 + (P.dim - P.s)) % P.dim;
    var out = 0u;
    if (start + nb <= P.dim) {
        let sw = start / 32u;
        let sh = start % 32u;
        out = X[base + sw] >> sh;
        if (sh != 0u && sw + 1u < P.w) { out = out | (X[base + sw + 1u] << (32u - sh)); }
    } else {
        for (var j = 0u; j < nb; j = j + 1u) {
            var src = start + j;
            if (src >= P.dim) { src = src - P.dim; }
            out = out | (((X[base + (src >> 5u)] >> (src & 31u)) & 1u) << j);
        }
    }
    if (nb < 32u) { out = out & ((1u << nb) - 1u); }
    O[idx] = out;
}
