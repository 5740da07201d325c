// Search top-k: each workgroup keeps the k best (score, index) pairs of one query over one group
// of TR = 256 * RPT slots, best first, ties to the smaller index; a missing slot is the sentinel
// (i32 min, 0xffffffff), which sorts after every real pair.
//   SRC == "score": the slots are the memory rows c of this chunk; score = SC[q * len + c] from
//                   vsa_search_dot (exact i32), index = m0 + c (global row).
//   SRC == "cand":  the slots are the len candidates of query q from an earlier pass (merge pass).
// Output: (q, groups, k) pairs at OS / OI. Selection: k rounds of a (score, index) max-reduction
// over the workgroup; the winner's owner marks its slot taken. A thread's RPT slots are named
// registers (unrolled), never a dynamically indexed private array.
struct Params { q: u32, len: u32, w: u32, k: u32, groups: u32, nx: u32, m0: u32, pad0: u32 };
@group(0) @binding(0) var<uniform> P: Params;
$$ if SRC == "score"
@group(0) @binding(1) var<storage, read> IS: array<i32>;
@group(0) @binding(2) var<storage, read_write> OS: array<i32>;
@group(0) @binding(3) var<storage, read_write> OI: array<u32>;
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
$$ for j in range(RPT)
    var s{{ j }} = none_score();
    var x{{ j }} = 0xffffffffu;
    {
        let c = g * {{ 256 * RPT }}u + {{ j * 256 }}u + lid;
        if (ok && c < P.len) {
$$ if SRC == "score"
            s{{ j }} = IS[q * P.len + c];
            x{{ j }} = P.m0 + c;
$$ else
            s{{ j }} = IS[q * P.len + c];
            x{{ j }} = II[q * P.len + c];
$$ endif
        }
    }
$$ endfor
    for (var r = 0u; r < P.k; r = r + 1u) {
        var bs = s0;
        var bi = x0;
        var bj = 0u;
$$ for j in range(1, RPT)
        if (better(s{{ j }}, x{{ j }}, bs, bi)) { bs = s{{ j }}; bi = x{{ j }}; bj = {{ j }}u; }
$$ endfor
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
$$ for j in range(RPT)
        if (win == lid * {{ RPT }}u + {{ j }}u) { s{{ j }} = none_score(); x{{ j }} = 0xffffffffu; }
$$ endfor
        workgroupBarrier();
    }
}
