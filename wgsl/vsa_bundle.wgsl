// Exact bundle of V vectors: per word, bit-sliced counters (WIDTH planes, ripple carry) of the
// +1 and -1 trits; pos where P >= N + t, neg where N >= P + t.
struct Params { v: u32, r: u32, t: u32, nx: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> XP: array<u32>;
@group(0) @binding(2) var<storage, read> XN: array<u32>;
@group(0) @binding(3) var<storage, read_write> OP: array<u32>;
@group(0) @binding(4) var<storage, read_write> ON: array<u32>;

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let r = (wg.y * P.nx + wg.x) * {{ WG }}u + lid;
    if (r >= P.r) { return; }
$$ for j in range(WIDTH)
    var cp{{ j }} = 0u;
    var cn{{ j }} = 0u;
$$ endfor
    for (var i = 0u; i < P.v; i = i + 1u) {
        var x = XP[i * P.r + r];
        var y = XN[i * P.r + r];
$$ for j in range(WIDTH)
        {
            let c = cp{{ j }} & x;
            cp{{ j }} = cp{{ j }} ^ x;
            x = c;
            let d = cn{{ j }} & y;
            cn{{ j }} = cn{{ j }} ^ y;
            y = d;
        }
$$ endfor
    }
    // q = c + t for both counters (t as all-ones/zero masks per bit), then the borrow of x - q
    var cap = 0u;
    var can = 0u;
    var bp = 0u;
    var bn = 0u;
$$ for j in range(WIDTH)
    {
$$ if j < 32
        let tj = select(0u, 0xffffffffu, ((P.t >> {{ j }}u) & 1u) == 1u);
$$ else
        let tj = 0u;  // t is a u32 (a constant shift by >= 32 is a WGSL error in naga and Tint)
$$ endif
        let qn = cn{{ j }} ^ tj ^ can;
        can = (cn{{ j }} & tj) | (can & (cn{{ j }} ^ tj));
        let qp = cp{{ j }} ^ tj ^ cap;
        cap = (cp{{ j }} & tj) | (cap & (cp{{ j }} ^ tj));
        bp = (~cp{{ j }} & qn) | (~(cp{{ j }} ^ qn) & bp);
        bn = (~cn{{ j }} & qp) | (~(cn{{ j }} ^ qp) & bn);
    }
$$ endfor
    OP[r] = ~bp;
    ON[r] = ~bn;
}
