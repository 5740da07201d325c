// B (k x n per batch entry, entries P.bs apart) transposed into BT (n x k, same spacing) through a
// TS x TS workgroup tile (reads and writes both coalesced; 256 threads, TS / (256 / TS) rows each),
// so that gemm_argfix reads the winning k-tile of B's column as consecutive words (BT=true) instead
// of BK scattered rows.
$$ set TS = TS|default(16)
$$ set RY = 256 // TS
alias T = {{ T }};
struct Params { k: u32, n: u32, bs: u32, pad: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> B: array<T>;
@group(0) @binding(2) var<storage, read_write> BT: array<T>;
// TS x (TS + 1): the padding column keeps the transposed reads conflict-free
var<workgroup> tile: array<T, {{ TS * (TS + 1) }}>;

@compute @workgroup_size({{ TS }}, {{ RY }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let base = wg.z * P.bs;
$$ for q in range(TS // RY)
    {
        let r = wg.y * {{ TS }}u + l.y + {{ q * RY }}u;  // row of B (k)
        let c = wg.x * {{ TS }}u + l.x;  // column of B (n)
        if (r < P.k && c < P.n) { tile[(l.y + {{ q * RY }}u) * {{ TS + 1 }}u + l.x] = B[base + r * P.n + c]; }
    }
$$ endfor
    workgroupBarrier();
$$ for q in range(TS // RY)
    {
        let tr = wg.x * {{ TS }}u + l.y + {{ q * RY }}u;  // row of BT (n)
        let tc = wg.y * {{ TS }}u + l.x;  // column of BT (k)
        if (tr < P.n && tc < P.k) { BT[base + tr * P.k + tc] = tile[l.x * {{ TS + 1 }}u + l.y + {{ q * RY }}u]; }
    }
$$ endfor
}
