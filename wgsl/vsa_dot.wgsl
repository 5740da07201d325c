// Exact ternary dot products, level one: each workgroup sums popcount(same) - popcount(diff) over
// one chunk of CH = 256 * wpt words of one (query, memory-row) pair into an i32 partial (|partial|
// <= 32 * CH, no overflow); the host sums the partials of a pair in int64 (level two).
// VEC: an element is a vec4<u32> (w, wpt and CH then count vec4s: |partial| <= 128 * CH); UNROLL
// elements of a thread are loaded before any is used (loads in flight).
$$ set VEC = VEC|default(false)
$$ set UNROLL = UNROLL|default(1)
alias W = {{ "vec4<u32>" if VEC else "u32" }};
struct Params { q: u32, m: u32, w: u32, chunks: u32, wpt: u32, nx: u32, pad0: u32, pad1: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> AP: array<W>;
@group(0) @binding(2) var<storage, read> AN: array<W>;
@group(0) @binding(3) var<storage, read> BP: array<W>;
@group(0) @binding(4) var<storage, read> BN: array<W>;
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
        for (var i0 = 0u; i0 < P.wpt; i0 = i0 + {{ UNROLL }}u) {
$$ for u in range(UNROLL)
            let wi{{ u }} = w0 + (i0 + {{ u }}u) * 256u + lid;
            var ap{{ u }} = W(0u);
            var an{{ u }} = W(0u);
            var bp{{ u }} = W(0u);
            var bn{{ u }} = W(0u);
            if (wi{{ u }} < P.w && i0 + {{ u }}u < P.wpt) {
                ap{{ u }} = AP[qa + wi{{ u }}];
                an{{ u }} = AN[qa + wi{{ u }}];
                bp{{ u }} = BP[mb + wi{{ u }}];
                bn{{ u }} = BN[mb + wi{{ u }}];
            }
$$ endfor
$$ for u in range(UNROLL)
            {
                let d = countOneBits((ap{{ u }} & bp{{ u }}) | (an{{ u }} & bn{{ u }})) - countOneBits((ap{{ u }} & bn{{ u }}) | (an{{ u }} & bp{{ u }}));
$$ if VEC
                s = s + i32(d.x) + i32(d.y) + i32(d.z) + i32(d.w);
$$ else
                s = s + i32(d);
$$ endif
            }
$$ endfor
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
