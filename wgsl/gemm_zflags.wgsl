// Operand flags of the zero-sign pass's gate (gemm_zsign.wgsl, pytropical_gpu/backends/wgpu/zsign.py):
// for every row of A (each batch entry of A: nbat_a * m rows) and every column of B (each batch
// entry of B: nbat_b * n columns) one u32 of FL, rows first, then columns:
//   bit 0 (NZ): the row / column holds a -0 or a negative subnormal (sign set, exponent 0: what an
//               adapter that flushes subnormals reads as -0);
//   bit 1 (SB): it holds a value with the sign bit set (a negative, -0, -inf).
// From them the pass knows, per output, whether any of its terms can be a -0 (zsign.py says how).
// First the any word: every workgroup ORs the P.ng words gemm_zany.wgsl stored (FL[P.fz ..], two
// loads a thread, read through a workgroup atomic and workgroupUniformLoad so that the exit below
// is uniform); workgroup 0 stores the answer to FL[P.fs] (the pass's any word: stored once, by
// one thread). No output is zero: every workgroup returns at once (nothing else read).
// Else two roles chosen by the (uniform) workgroup index g of a 2-D grid, k cut into chunks so
// that many warps share a row or column (the reads are not one long chain a thread):
//   g < P.rgroups: (row of A, chunk of KA = 1024 of k) a warp, R = WG / 32 warps a workgroup;
//                  32 lanes stride along the chunk (a warp reads 32 consecutive words: coalesced);
//   else:          (32 columns of B, chunk of KB = 32 * R rows of k) a workgroup, R lanes a column
//                  striding down the chunk by R rows (a warp reads 32 consecutive words of a row).
// Each thread ORs its words' flags, U loads in flight at a time; the lanes of a row / column meet
// in a workgroup atomicOr, and one thread per row / column atomicOrs a non-zero result into FL
// (gemm_zany.wgsl cleared the flag words one dispatch before).
// Out-of-range threads mask their loads and stores; the barriers stay in uniform control flow.
// Bindings: A, B (the GEMM's), FL (read_write); batch strides in elements (0: broadcast).
$$ if T != "f32"
{{ fail("gemm_zflags: T must be f32, got " ~ T) }}
$$ endif
$$ if WG % 32 != 0 or WG < 64
{{ fail("gemm_zflags: WG must be a multiple of 32 of at least 64, got " ~ WG) }}
$$ endif
struct Params { m: u32, n: u32, k: u32, a_bs: u32, b_bs: u32, rows: u32, rgroups: u32, ctiles: u32,
                total: u32, nx: u32, ca: u32, cb: u32, ng: u32, fz: u32, fs: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> A: array<u32>;
@group(0) @binding(2) var<storage, read> B: array<u32>;
@group(0) @binding(3) var<storage, read_write> FL: array<atomic<u32>>;

const SIGN = 0x80000000u;
const EXP = 0x7f800000u;
const R = {{ WG // 32 }}u;  // warps (rows of A) a workgroup; lanes of a column of B
const KA = {{ KA }}u;       // a chunk of a row of A
const KB = {{ KB }}u;       // a chunk of a column of B
var<workgroup> acc: array<atomic<u32>, 32>;
var<workgroup> hit: atomic<u32>;
var<workgroup> on: u32;

// the flags of one word: NZ (bit 0) for -0 and negative subnormals, SB (bit 1) for the sign bit
fn flags(v: u32) -> u32 {
    return select(0u, 1u, (v & EXP) == 0u && v >= SIGN) | ((v >> 30u) & 2u);
}

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let g = wg.y * P.nx + wg.x;
    if (g >= P.total) { return; }  // uniform: the whole workgroup
    let x = lid % 32u;
    let y = lid / 32u;
    if (lid < 32u) { atomicStore(&acc[lid], 0u); }
    if (lid == 0u) { atomicStore(&hit, 0u); }
    workgroupBarrier();
    var z = 0u;
    if (lid < P.ng) { z = atomicLoad(&FL[P.fz + lid]); }
    if (lid + {{ WG }}u < P.ng) { z = z | atomicLoad(&FL[P.fz + lid + {{ WG }}u]); }
    if (z != 0u) { atomicOr(&hit, 1u); }
    workgroupBarrier();
    if (lid == 0u) { on = atomicLoad(&hit); }
    let any = workgroupUniformLoad(&on);
    if (g == 0u && lid == 0u) { atomicStore(&FL[P.fs], any); }
    if (any == 0u) { return; }  // uniform: no output is zero, no flags needed
    var f = 0u;
    let rows = g < P.rgroups;  // uniform
    let h = g - P.rgroups;     // (columns) a chunk of a tile of B
    let tile = h / max(P.cb, 1u);
    let j = (tile % max(P.ctiles, 1u)) * 32u + x;
    let item = g * R + y;      // (rows) a chunk of a row of A, this warp's
    let r = item / max(P.ca, 1u);
    if (rows) {
        if (r < P.rows) {
            let base = (r / P.m) * P.a_bs + (r % P.m) * P.k;
            let t0 = (item % P.ca) * KA;
            let t1 = min(P.k, t0 + KA);
            var t = t0 + x;
            for (; t + {{ 32 * (U - 1) }}u < t1; t = t + {{ 32 * U }}u) {
$$ for u in range(U)
                let a{{ u }} = A[base + t{{ (" + %du" % (32 * u)) if u else "" }}];
$$ endfor
                f = f{$ for u in range(U) $} | flags(a{{ u }}){$ endfor $};
            }
            for (; t < t1; t = t + 32u) { f = f | flags(A[base + t]); }
        }
        if (f != 0u) { atomicOr(&acc[y], f); }
    } else {
        if (j < P.n) {
            let base = (tile / P.ctiles) * P.b_bs + j;
            let t0 = (h % P.cb) * KB;
            let t1 = min(P.k, t0 + KB);
            var t = t0 + y;
            for (; t + {{ U - 1 }}u * R < t1; t = t + {{ U }}u * R) {
$$ for u in range(U)
                let b{{ u }} = B[base + (t{{ (" + %du * R" % u) if u else "" }}) * P.n];
$$ endfor
                f = f{$ for u in range(U) $} | flags(b{{ u }}){$ endfor $};
            }
            for (; t < t1; t = t + R) { f = f | flags(B[base + t * P.n]); }
        }
        if (f != 0u) { atomicOr(&acc[x], f); }
    }
    workgroupBarrier();
    if (rows) {
        let rr = (g * R + lid) / max(P.ca, 1u);
        if (lid < R && rr < P.rows) {
            let v = atomicLoad(&acc[lid]);
            if (v != 0u) { atomicOr(&FL[rr], v); }
        }
    } else if (lid < 32u && j < P.n) {
        let v = atomicLoad(&acc[lid]);
        if (v != 0u) { atomicOr(&FL[P.rows + (tile / P.ctiles) * P.n + j], v); }
    }
}
