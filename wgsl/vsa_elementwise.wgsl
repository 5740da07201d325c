// Elementwise bit-plane kernels over N words: bind, accumulate, harden. A thread handles PER
// elements WG apart (a warp's accesses stay contiguous); an element W is one u32 word, or, with VEC,
// four (vec4<u32>: one 16-byte access; total then counts vec4s).
struct Params { total: u32, nx: u32, threshold: u32, pad: u32 };
@group(0) @binding(0) var<uniform> P: Params;
$$ set VEC = VEC|default(false)
$$ set PER = PER|default(1)
alias W = {{ "vec4<u32>" if VEC else "u32" }};
$$ if OP == "bind"
@group(0) @binding(1) var<storage, read> AP: array<W>;
@group(0) @binding(2) var<storage, read> AN: array<W>;
@group(0) @binding(3) var<storage, read> BP: array<W>;
@group(0) @binding(4) var<storage, read> BN: array<W>;
@group(0) @binding(5) var<storage, read_write> OP: array<W>;
@group(0) @binding(6) var<storage, read_write> ON: array<W>;
$$ elif OP == "accumulate"
// sign-magnitude saturating counters, BITS magnitude planes (plane j at j * total), in place
@group(0) @binding(1) var<storage, read_write> S: array<W>;
@group(0) @binding(2) var<storage, read_write> M: array<W>;
@group(0) @binding(3) var<storage, read> HP: array<W>;
@group(0) @binding(4) var<storage, read> HN: array<W>;
$$ else
@group(0) @binding(1) var<storage, read> S: array<W>;
@group(0) @binding(2) var<storage, read> M: array<W>;
@group(0) @binding(3) var<storage, read_write> OP: array<W>;
@group(0) @binding(4) var<storage, read_write> ON: array<W>;
$$ endif

// one element
fn element(i: u32) {
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
    let nz = W(0u){$ for j in range(BITS) $} | p{{ j }}{$ endfor $};
    let full = W(0xffffffffu){$ for j in range(BITS) $} & p{{ j }}{$ endfor $};
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
    let nz2 = W(0u){$ for j in range(BITS) $} | p{{ j }}{$ endfor $};
    S[i] = ((s & ~same) | (hn & same)) & nz2;
$$ for j in range(BITS)
    M[{{ j }}u * P.total + i] = p{{ j }};
$$ endfor
$$ else
    // |s| >= threshold: no borrow out of |s| - threshold
    var borrow = W(0u);
$$ for j in range(BITS)
    {
        let x = M[{{ j }}u * P.total + i];
$$ if j < 32
        let y = W(select(0u, 0xffffffffu, ((P.threshold >> {{ j }}u) & 1u) == 1u));
$$ else
        let y = W(0u);
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

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
$$ for pp in range(PER)
    {
        let i = ((wg.y * P.nx + wg.x) * {{ PER }}u + {{ pp }}u) * {{ WG }}u + lid;
        if (i < P.total) { element(i); }
    }
$$ endfor
}
