// Fused search top-k: each workgroup keeps the k best (score, index) pairs of one query over one
// group of TR = 256 * RPT slots, best first, ties to the smaller index; a missing slot is the
// sentinel (i32 min, 0xffffffff), which sorts after every real pair.
//   SRC == "dot":  the slots are memory rows c of this dispatch; score = exact ternary dot of query q
//                  with row c, summed per thread in i32 (|dot| <= 32 * w < 2^31, checked on the
//                  host), index = m0 + c (global row).
//   SRC == "cand": the slots are the len candidates of query q from an earlier pass (merge pass).
// Output: (q, groups, k) pairs at OS / OI. Selection: k rounds of a (score, index) max-reduction
// over the workgroup; the winner's owner marks its slot taken.
struct Params { q: u32, len: u32, w: u32, k: u32, groups: u32, nx: u32, m0: u32, pad0: u32 };
@group(0) @binding(0) var<uniform> P: Params;
$$ if SRC == "dot"
@group(0) @binding(1) var<storage, read> AP: array<u32>;
@group(0) @binding(2) var<storage, read> AN: array<u32>;
@group(0) @binding(3) var<storage, read> BP: array<u32>;
@group(0) @binding(4) var<storage, read> BN: array<u32>;
@group(0) @binding(5) var<storage, read_write> OS: array<i32>;
@group(0) @binding(6) var<storage, read_write> OI: array<u32>;
$$ else
@group(0) @binding(1) var<storage, read> IS: array<i32>;
@group(0) @binding(2) var<storage, read> II: array<u32>;
@group(0) @binding(3) var<storage, read_write> OS: array<i32>;
@group(0) @binding(4) var<storage, read_write> OI: array<u32>;
$$ endif

var<workgroup> rs: array<i32, 256>;
var<workgroup> ri: array<u32, 256>;
var<workgroup> rl: array<u32, 256>;

fn none_score() -> i32 { return bitcast<i32>(0x80000000u); }

fn better(xs: i32, xi: u32, ys: i32, yi: u32) -> bool {
    return xs > ys || (xs == ys && xi < yi);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let wid = wg.y * P.nx + wg.x;
    let ok = wid < P.q * P.groups;
    let q = wid / P.groups;
    let g = wid % P.groups;
    var s: array<i32, {{ RPT }}>;
    var ix: array<u32, {{ RPT }}>;
    for (var j = 0u; j < {{ RPT }}u; j = j + 1u) {
        let c = g * {{ 256 * RPT }}u + j * 256u + lid;
        var sc = none_score();
        var id = 0xffffffffu;
        if (ok && c < P.len) {
$$ if SRC == "dot"
            let qa = q * P.w;
            let mb = c * P.w;
            var acc = 0i;
            for (var t = 0u; t < P.w; t = t + 1u) {
                let ap = AP[qa + t];
                let an = AN[qa + t];
                let bp = BP[mb + t];
                let bn = BN[mb + t];
                acc = acc + i32(countOneBits((ap & bp) | (an & bn))) - i32(countOneBits((ap & bn) | (an & bp)));
            }
            sc = acc;
            id = P.m0 + c;
$$ else
            sc = IS[q * P.len + c];
            id = II[q * P.len + c];
$$ endif
        }
        s[j] = sc;
        ix[j] = id;
    }
    for (var r = 0u; r < P.k; r = r + 1u) {
        var bs = s[0];
        var bi = ix[0];
        var bj = 0u;
        for (var j = 1u; j < {{ RPT }}u; j = j + 1u) {
            if (better(s[j], ix[j], bs, bi)) { bs = s[j]; bi = ix[j]; bj = j; }
        }
        rs[lid] = bs;
        ri[lid] = bi;
        rl[lid] = lid * {{ RPT }}u + bj;
        workgroupBarrier();
$$ for h in [128, 64, 32, 16, 8, 4, 2, 1]
        if (lid < {{ h }}u && better(rs[lid + {{ h }}u], ri[lid + {{ h }}u], rs[lid], ri[lid])) {
            rs[lid] = rs[lid + {{ h }}u];
            ri[lid] = ri[lid + {{ h }}u];
            rl[lid] = rl[lid + {{ h }}u];
        }
        workgroupBarrier();
$$ endfor
        let win = rl[0];
        if (lid == 0u && ok) {
            let o = wid * P.k + r;
            OS[o] = rs[0];
            OI[o] = ri[0];
        }
        if (win / {{ RPT }}u == lid) {
            s[win % {{ RPT }}u] = none_score();
            ix[win % {{ RPT }}u] = 0xffffffffu;
        }
        workgroupBarrier();
    }
}
