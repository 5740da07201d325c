// Operand facts of a device result (pytropical_gpu/facts.py), computed where the result lives so a
// batch never reads the result itself: 8 words of S, initialised by the host to
// [0, 0, 0, 0, 0x7f800000, 0, 0xffffffff, 0] (ONE: a single workgroup, which stores them itself):
//   the words of facts_core.wgsl (KIND: "f32", "i32" or "u32").
// Reduced per workgroup in workgroup memory, then one atomic per word and workgroup.
struct Params { n: u32, nx: u32, pad0: u32, pad1: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> X: array<u32>;
@group(0) @binding(2) var<storage, read_write> S: array<atomic<u32>, 8>;

$$ set FKIND = KIND
{$ include "facts_core.wgsl" $}

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    facts_init(lid);
    workgroupBarrier();
    let stride = nwg.x * nwg.y * {{ WG }}u;
    for (var i = (wg.y * P.nx + wg.x) * {{ WG }}u + lid; i < P.n; i = i + stride) {
        facts_add_bits(X[i]);
    }
    facts_fold();
    workgroupBarrier();
    if (lid == 0u) {
$$ if ONE
        // the only workgroup: S needs no initial words (nothing for the host to write first)
        for (var j = 0u; j < 8u; j = j + 1u) { atomicStore(&S[j], atomicLoad(&FW[j])); }
$$ else
        atomicMax(&S[0], atomicLoad(&FW[0])); atomicMax(&S[1], atomicLoad(&FW[1]));
        atomicMax(&S[2], atomicLoad(&FW[2])); atomicMax(&S[3], atomicLoad(&FW[3]));
        atomicMin(&S[4], atomicLoad(&FW[4])); atomicAdd(&S[5], atomicLoad(&FW[5]));
        atomicMin(&S[6], atomicLoad(&FW[6])); atomicMax(&S[7], atomicLoad(&FW[7]));
$$ endif
    }
}
