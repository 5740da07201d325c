// Operand facts of a device result (pytropical_gpu/facts.py), computed where the result lives so a
// batch never reads the result itself: 8 words of S, initialised by the host to
// [0, 0, 0, 0, 0x7f800000, 0, 0xffffffff, 0] (ONE: a single workgroup, which stores them itself):
//   0: NaN present, 1: +inf present, 2: -inf present (floats; 0/1 flags),
//   3: largest |x| as f32 bits (floats, NaN excluded: non-negative f32 bits order as their values),
//   4: smallest non-zero |x| as f32 bits (floats; 0x7f800000 = inf when there is none),
//   5: subnormal count (floats), 6 / 7: minimum / maximum as order-preserving u32 (integers:
//   i32 bits with the sign bit flipped, u32 as they are).
// Reduced per workgroup in workgroup memory, then one atomic per word and workgroup.
struct Params { n: u32, nx: u32, pad0: u32, pad1: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<u32>;
@group(0) @binding(2) var<storage, read_write> S: array<atomic<u32>, 8>;

var<workgroup> W: array<atomic<u32>, 8>;

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    if (lid == 0u) {
        atomicStore(&W[0], 0u); atomicStore(&W[1], 0u); atomicStore(&W[2], 0u);
        atomicStore(&W[3], 0u); atomicStore(&W[4], 0x7f800000u); atomicStore(&W[5], 0u);
        atomicStore(&W[6], 0xffffffffu); atomicStore(&W[7], 0u);
    }
    workgroupBarrier();
    let stride = nwg.x * nwg.y * {{ WG }}u;
    var nan = 0u; var pinf = 0u; var ninf = 0u; var amax = 0u; var amin = 0x7f800000u;
    var sub = 0u; var lo = 0xffffffffu; var hi = 0u;
    for (var i = (wg.y * P.nx + wg.x) * {{ WG }}u + lid; i < P.n; i = i + stride) {
        let b = X[i];
$$ if KIND == "f32"
        let a = b & 0x7fffffffu;
        if (a > 0x7f800000u) {
            nan = 1u;
        } else {
            if (b == 0x7f800000u) { pinf = 1u; }
            if (b == 0xff800000u) { ninf = 1u; }
            amax = max(amax, a);
            if (a != 0u) { amin = min(amin, a); }
            if (a != 0u && a < 0x00800000u) { sub = sub + 1u; }
        }
$$ elif KIND == "i32"
        let o = b ^ 0x80000000u;
        lo = min(lo, o);
        hi = max(hi, o);
$$ else
        lo = min(lo, b);
        hi = max(hi, b);
$$ endif
    }
    atomicMax(&W[0], nan); atomicMax(&W[1], pinf); atomicMax(&W[2], ninf);
    atomicMax(&W[3], amax); atomicMin(&W[4], amin); atomicAdd(&W[5], sub);
    atomicMin(&W[6], lo); atomicMax(&W[7], hi);
    workgroupBarrier();
    if (lid == 0u) {
$$ if ONE
        // the only workgroup: S needs no initial words (nothing for the host to write first)
        for (var j = 0u; j < 8u; j = j + 1u) { atomicStore(&S[j], atomicLoad(&W[j])); }
$$ else
        atomicMax(&S[0], atomicLoad(&W[0])); atomicMax(&S[1], atomicLoad(&W[1]));
        atomicMax(&S[2], atomicLoad(&W[2])); atomicMax(&S[3], atomicLoad(&W[3]));
        atomicMin(&S[4], atomicLoad(&W[4])); atomicAdd(&S[5], atomicLoad(&W[5]));
        atomicMin(&S[6], atomicLoad(&W[6])); atomicMax(&S[7], atomicLoad(&W[7]));
$$ endif
    }
}
