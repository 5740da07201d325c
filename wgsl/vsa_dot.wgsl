// Exact ternary dot products, level one: each workgroup sums popcount(same) - popcount(diff) over
// one chunk of CH = 256 * wpt words of one (query, memory-row) pair into an i32 partial (|partial|
// <= 32 * CH, no overflow); the host sums the partials of a pair in int64 (level two).
struct Params { q: u32, m: u32, w: u32, chunks: u32, wpt: u32, nx: u32, pad0: u32, pad1: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> AP: array<u32>;
@group(0) @binding(2) var<storage, read> AN: array<u32>;
@group(0) @binding(3) var<storage, read> BP: array<u32>;
@group(0) @binding(4) var<storage, read> BN: array<u32>;
@group(0) @binding(5) var<storage, read_write> OUT: array<i32>;

var<workgroup> red: array<i32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let wid = wg.y * P.nx + wg.x;
    let pairs = P.q * P.m;
    let pair = wid / P.chunks;
    let chunk = wid % P.chunks;
    var s = 0i;
    if (pair < pairs) {
        let qa = (pair / P.m) * P.w;
        let mb = (pair % P.m) * P.w;
        let w0 = chunk * P.wpt * 256u;
        for (var i = 0u; i < P.wpt; i = i + 1u) {
            let w = w0 + i * 256u + lid;
            if (w < P.w) {
                let ap = AP[qa + w];
                let an = AN[qa + w];
                let bp = BP[mb + w];
                let bn = BN[mb + w];
                s = s + i32(countOneBits((ap & bp) | (an & bn))) - i32(countOneBits((ap & bn) | (an & bp)));
            }
        }
    }
    red[lid] = s;
    workgroupBarrier();
$$ for h in [128, 64, 32, 16, 8, 4, 2, 1]
    if (lid < {{ h }}u) { red[lid] = red[lid] + red[lid + {{ h }}u]; }
    workgroupBarrier();
$$ endfor
    if (lid == 0u && pair < pairs) { OUT[wid] = red[0]; }
}
