// Non-zero trits per row: popcount(pos | neg) summed over the row's w words (<= 32 * w < 2^32,
// checked on the host).
struct Params { rows: u32, w: u32, nx: u32, pad0: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> XP: array<u32>;
@group(0) @binding(2) var<storage, read> XN: array<u32>;
@group(0) @binding(3) var<storage, read_write> O: array<u32>;

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = (wg.y * P.nx + wg.x) * {{ WG }}u + lid;
    if (row >= P.rows) { return; }
    let b = row * P.w;
    var c = 0u;
    for (var t = 0u; t < P.w; t = t + 1u) {
        c = c + countOneBits(XP[b + t] | XN[b + t]);
    }
    O[row] = c;
}
