// B (k x n per batch entry, entries P.bs apart) transposed into BT (n x k, same spacing) through a
// 16 x 16 workgroup tile (reads and writes both coalesced), so that gemm_argfix reads the winning
// k-tile of B's column as consecutive words (BT=true) instead of BK scattered rows.
alias T = {{ T }};
struct Params { k: u32, n: u32, bs: u32, pad: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> B: array<T>;
@group(0) @binding(2) var<storage, read_write> BT: array<T>;
var<workgroup> tile: array<T, 272>;  // 16 x 17: the padding column keeps the transposed reads conflict-free

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
    let base = wg.z * P.bs;
    let r = wg.y * 16u + l.y;  // row of B (k)
    let c = wg.x * 16u + l.x;  // column of B (n)
    if (r < P.k && c < P.n) { tile[l.y * 17u + l.x] = B[base + r * P.n + c]; }
    workgroupBarrier();
    let tr = wg.x * 16u + l.y;  // row of BT (n)
    let tc = wg.y * 16u + l.x;  // column of BT (k)
    if (tr < P.n && tc < P.k) { BT[base + tr * P.k + tc] = tile[l.x * 17u + l.y]; }
}
