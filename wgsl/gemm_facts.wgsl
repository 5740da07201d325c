// Operand facts of a small GEMM's result computed in its own epilogue (FACTS: no separate facts
// dispatch, pytropical_gpu/backends/wgpu/fused_facts.py): the same 8 words as facts.wgsl, one set
// per workgroup at FS[8 * workgroup index], written whole by the workgroup (no initial words, no
// atomics across workgroups); the host folds the workgroups' sets. Words: facts_core.wgsl.
@group(0) @binding({{ FBIND }}) var<storage, read_write> FS: array<u32>;
{$ include "facts_core.wgsl" $}

// one stored value of D (exactly the bits stored)
fn facts_add(v: T) {
    facts_add_bits(bitcast<u32>(v));
}

// every thread of the workgroup calls it (uniform control flow), after its last facts_add
fn facts_store(slot: u32, lid: u32) {
    facts_fold();
    workgroupBarrier();
    if (lid == 0u) {
        for (var j = 0u; j < 8u; j = j + 1u) { FS[slot * 8u + j] = atomicLoad(&FW[j]); }
    }
}
