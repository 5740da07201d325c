// Search pass one: exact ternary dots of a block of QB queries with a block of memory rows, written
// as i32 scores SC[q * len + row] (|dot| <= 32 * w < 2^31, checked on the host).
// A workgroup of 256 threads = SLOTS row slots of L lanes. The L lanes of a slot read consecutive
// words of one memory row (coalesced: L = 8 reads one 32 B sector per row and load); each thread
// covers R rows (slot g: rows g, g + SLOTS, ...) and keeps R x QB partial dots in named registers
// (unrolled: no private array is indexed). Query words come from the query planes (small, cached).
// The memory is read once per block of QB queries. The L partials of a (row, query) pair are summed
// in workgroup memory, lane-major with a padded stride, CAP pairs per thread per round.
// Grid: rblocks x ceil(nq / QB) workgroups (flattened, nx per row of the grid); threads of a
// workgroup past the end clamp their reads and skip their writes, so every barrier is uniform.
struct Params { nq: u32, len: u32, w: u32, nx: u32, rblocks: u32, pad0: u32, pad1: u32, pad2: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> AP: array<u32>;
@group(0) @binding(2) var<storage, read> AN: array<u32>;
@group(0) @binding(3) var<storage, read> BP: array<u32>;
@group(0) @binding(4) var<storage, read> BN: array<u32>;
@group(0) @binding(5) var<storage, read_write> SC: array<i32>;
$$ set SLOTS = 256 // L
$$ set BR = SLOTS * R
$$ set RS = L * (SLOTS + 1)
$$ set NV = R * QB

var<workgroup> red: array<i32, {{ CAP * RS }}>;

fn tdot(ap: u32, an: u32, bp: u32, bn: u32) -> i32 {
    return i32(countOneBits((ap & bp) | (an & bn))) - i32(countOneBits((ap & bn) | (an & bp)));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let wid = wg.y * P.nx + wg.x;
    let rb = wid % P.rblocks;
    let q0 = (wid / P.rblocks) * {{ QB }}u;
    let g = lid / {{ L }}u;
    let l = lid % {{ L }}u;
    let r0 = rb * {{ BR }}u + g;
$$ for j in range(R)
    let m{{ j }} = min(r0 + {{ j * SLOTS }}u, P.len - 1u) * P.w;
$$ endfor
$$ for q in range(QB)
    let o{{ q }} = min(q0 + {{ q }}u, P.nq - 1u) * P.w;
$$ endfor
$$ for j in range(R)
$$ for q in range(QB)
    var s{{ j }}_{{ q }} = 0i;
$$ endfor
$$ endfor
    for (var t = l; t < P.w; t = t + {{ L }}u) {
$$ for j in range(R)
        let bp{{ j }} = BP[m{{ j }} + t];
        let bn{{ j }} = BN[m{{ j }} + t];
$$ endfor
$$ for q in range(QB)
        let ap{{ q }} = AP[o{{ q }} + t];
        let an{{ q }} = AN[o{{ q }} + t];
$$ for j in range(R)
        s{{ j }}_{{ q }} = s{{ j }}_{{ q }} + tdot(ap{{ q }}, an{{ q }}, bp{{ j }}, bn{{ j }});
$$ endfor
$$ endfor
    }
    // pair n = j * QB + q; round c holds pairs [c * CAP, c * CAP + CAP)
$$ for c in range((NV + CAP - 1) // CAP)
$$ set n0 = c * CAP
$$ set cnt = [CAP, NV - n0] | min
$$ for i in range(cnt)
    red[{{ i * RS }}u + l * {{ SLOTS + 1 }}u + g] = s{{ (n0 + i) // QB }}_{{ (n0 + i) % QB }};
$$ endfor
    workgroupBarrier();
    for (var e = lid; e < {{ cnt * SLOTS }}u; e = e + 256u) {
        let i = e / {{ SLOTS }}u;
        let gs = e % {{ SLOTS }}u;
        let b = i * {{ RS }}u + gs;
        var sum = 0i;
$$ for x in range(L)
        sum = sum + red[b + {{ x * (SLOTS + 1) }}u];
$$ endfor
        let n = {{ n0 }}u + i;
        let row = rb * {{ BR }}u + (n / {{ QB }}u) * {{ SLOTS }}u + gs;
        let qq = q0 + n % {{ QB }}u;
        if (row < P.len && qq < P.nq) { SC[qq * P.len + row] = sum; }
    }
    workgroupBarrier();
$$ endfor
}
