// Cyclic shift of the first dim bits of each row: output bit i = input bit (i - s) mod dim.
// One thread per output word. Whole rows: XA = XB = the rows, cw = w, o0 = a0 = 0. A row beyond one
// binding runs in output word ranges [o0, o0 + cw) of one row: XA holds the row's words from a0 on,
// XB its first words (the source range wraps past dim to bit 0).
struct Params { total: u32, w: u32, dim: u32, s: u32, nx: u32, cw: u32, o0: u32, a0: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> XA: array<u32>;
@group(0) @binding(2) var<storage, read> XB: array<u32>;
@group(0) @binding(3) var<storage, read_write> O: array<u32>;

// word j of the source row starting at word `base` of the whole-row binding
fn src(base: u32, j: u32) -> u32 {
    if (j >= P.a0) { return XA[base + j - P.a0]; }
    return XB[j];
}

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let idx = (wg.y * P.nx + wg.x) * {{ WG }}u + lid;
    if (idx >= P.total) { return; }
    let base = (idx / P.cw) * P.w;
    let i0 = (idx % P.cw + P.o0) * 32u;
    let nb = min(32u, P.dim - i0);
    // (i0 - s) mod dim without overflow (s < dim)
    var start = i0 - P.s;
    if (i0 < P.s) { start = i0 + (P.dim - P.s); }
    var out = 0u;
    if (start + nb <= P.dim) {
        let sw = start / 32u;
        let sh = start % 32u;
        out = src(base, sw) >> sh;
        if (sh != 0u && sw + 1u < P.w) { out = out | (src(base, sw + 1u) << (32u - sh)); }
    } else {
        for (var j = 0u; j < nb; j = j + 1u) {
            var b = start + j;
            if (b >= P.dim) { b = b - P.dim; }
            out = out | (((src(base, b >> 5u) >> (b & 31u)) & 1u) << j);
        }
    }
    if (nb < 32u) { out = out & ((1u << nb) - 1u); }
    O[idx] = out;
}
