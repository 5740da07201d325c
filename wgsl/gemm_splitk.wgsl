// Split-k's second pass: D = (C ⊕) P[0] ⊕ P[1] ⊕ ... ⊕ P[S-1], the S partial layers gemm_tiled
// wrote with SK (each m*n apart). VEC: four outputs a thread (m*n a multiple of 4).
{$ include "semiring_ops.wgsl" $}
$$ set E = "V" if VEC else "T"
$$ set ADDE = "add4" if VEC else "add1"
struct Params { count: u32, layer: u32, nx: u32, pad: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> Pt: array<{{ E }}>;
@group(0) @binding(2) var<storage, read_write> D: array<{{ E }}>;
$$ if HAS_C
@group(0) @binding(3) var<storage, read> C: array<{{ E }}>;
$$ endif

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let i = (wg.y * P.nx + wg.x) * {{ WG }}u + lid;
    if (i >= P.count) { return; }
    var v = Pt[i];
$$ for s in range(1, S)
    v = {{ ADDE }}(v, Pt[i + {{ s }}u * P.layer]);
$$ endfor
$$ if HAS_C
    v = {{ ADDE }}(C[i], v);
$$ endif
    D[i] = v;
}
