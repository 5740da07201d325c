// Elementwise bit-plane kernels over N words (one thread per word): bind, accumulate, harden.
struct Params { total: u32, nx: u32, threshold: u32, pad: u32 };
@group(0) @binding(0) var<uniform> P: Params;
$$ if OP == "bind"
@group(0) @binding(1) var<storage, read> AP: array<u32>;
@group(0) @binding(2) var<storage, read> AN: array<u32>;
@group(0) @binding(3) var<storage, read> BP: array<u32>;
@group(0) @binding(4) var<storage, read> BN: array<u32>;
@group(0) @binding(5) var<storage, read_write> OP: array<u32>;
@group(0) @binding(6) var<storage, read_write> ON: array<u32>;
$$ elif OP == "accumulate"
// sign-magnitude saturating counters, BITS magnitude planes (plane j at j * total), in place
@group(0) @binding(1) var<storage, read_write> S: array<u32>;
@group(0) @binding(2) var<storage, read_write> M: array<u32>;
@group(0) @binding(3) var<storage, read> HP: array<u32>;
@group(0) @binding(4) var<storage, read> HN: array<u32>;
$$ else
@group(0) @binding(1) var<storage, read> S: array<u32>;
@group(0) @binding(2) var<storage, read> M: array<u32>;
@group(0) @binding(3) var<storage, read_write> OP: array<u32>;
@group(0) @binding(4) var<storage, read_write> ON: array<u32>;
$$ endif

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.y * P.nx + wg.x) * {{ WG }}u + lid;
    if (i >= P.total) { return; }
$$ if OP == "bind"
    let ap = AP[i];
    let an = AN[i];
    let bp = BP[i];
    let bn = BN[i];
    OP[i] = (ap & bp) | (an & bn);
    ON[i] = (ap & bn) | (an & bp);
$$ elif OP == "accumulate"
    let s = S[i];
    let hp = HP[i];
    let hn = HN[i];
    let act = hp | hn;
$$ for j in range(BITS)
    var p{{ j }} = M[{{ j }}u * P.total + i];
$$ endfor
    let nz = 0u{$ for j in range(BITS) $} | p{{ j }}{$ endfor $};
    let full = 0xffffffffu{$ for j in range(BITS) $} & p{{ j }}{$ endfor $};
    let opposite = (s ^ hn) & nz & act;
    let same = act & ~opposite;
    var carry = same & ~full;
    var borrow = opposite;
$$ for j in range(BITS)
    {
        let c = p{{ j }} & carry;
        let b = ~p{{ j }} & borrow;
        p{{ j }} = p{{ j }} ^ carry ^ borrow;
        carry = c;
        borrow = b;
    }
$$ endfor
    let nz2 = 0u{$ for j in range(BITS) $} | p{{ j }}{$ endfor $};
    S[i] = ((s & ~same) | (hn & same)) & nz2;
$$ for j in range(BITS)
    M[{{ j }}u * P.total + i] = p{{ j }};
$$ endfor
$$ else
    // |s| >= threshold: no borrow out of |s| - threshold
    var borrow = 0u;
$$ for j in range(BITS)
    {
        let x = M[{{ j }}u * P.total + i];
$$ if j < 32
        let y = select(0u, 0xffffffffu, ((P.threshold >> {{ j }}u) & 1u) == 1u);
$$ else
        let y = 0u;
$$ endif
        borrow = (~x & y) | (~(x ^ y) & borrow);
    }
$$ endfor
    let ge = ~borrow;
    let s = S[i];
    OP[i] = ge & ~s;
    ON[i] = ge & s;
$$ endif
}
