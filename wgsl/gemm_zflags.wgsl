// Operand flags of the zero-sign pass's gate (gemm_zsign.wgsl, pytropical_gpu/backends/wgpu/zsign.py):
// for every row of A (each batch entry of A: nbat_a * m rows) and every column of B (each batch
// entry of B: nbat_b * n columns) one u32 of FL, rows first, then columns:
//   bit 0 (NZ): the row / column holds a -0 or a negative subnormal (sign set, exponent 0: what an
//               adapter that flushes subnormals reads as -0);
//   bit 1 (SB): it holds a value with the sign bit set (a negative, -0, -inf).
// From them the pass knows, per output, whether any of its terms can be a -0 (zsign.py says how).
// One dispatch, two roles chosen by the (uniform) workgroup index g of a 2-D grid:
//   g < P.rgroups: rows of A, R = WG / 32 rows a workgroup, 32 lanes a row striding along k (a
//                  warp reads 32 consecutive words: coalesced);
//   else:          columns of B, 32 columns a workgroup, R lanes a column striding along k by R
//                  rows (a warp reads 32 consecutive words of one row: coalesced).
// Each thread ORs its words' flags; the lanes of a row / column meet in a workgroup atomicOr, and
// one thread per row / column stores the result (every word of FL that the pass reads is written).
// Out-of-range threads mask their loads and stores; the barriers stay in uniform control flow.
// Bindings: A, B (the GEMM's), FL (read_write); batch strides in elements (0: broadcast).
$$ if T != "f32"
{{ fail("gemm_zflags: T must be f32, got " ~ T) }}
$$ endif
$$ if WG % 32 != 0 or WG < 64
{{ fail("gemm_zflags: WG must be a multiple of 32 of at least 64, got " ~ WG) }}
$$ endif
struct Params { m: u32, n: u32, k: u32, a_bs: u32, b_bs: u32, rows: u32, rgroups: u32, ctiles: u32,
                total: u32, nx: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> A: array<u32>;
@group(0) @binding(2) var<storage, read> B: array<u32>;
@group(0) @binding(3) var<storage, read_write> FL: array<u32>;

const SIGN = 0x80000000u;
const EXP = 0x7f800000u;
const R = {{ WG // 32 }}u;  // rows of A a workgroup; lanes of a column of B
var<workgroup> acc: array<atomic<u32>, 32>;

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
    workgroupBarrier();
    var f = 0u;
    let rows = g < P.rgroups;  // uniform
    let h = g - P.rgroups;     // (columns) tile of B
    let j = (h % max(P.ctiles, 1u)) * 32u + x;
    if (rows) {
        let r = g * R + y;
        if (r < P.rows) {
            let base = (r / P.m) * P.a_bs + (r % P.m) * P.k;
            for (var t = x; t < P.k; t = t + 32u) { f = f | flags(A[base + t]); }
        }
        if (f != 0u) { atomicOr(&acc[y], f); }
    } else {
        if (j < P.n) {
            let base = (h / P.ctiles) * P.b_bs + j;
            for (var t = y; t < P.k; t = t + R) { f = f | flags(B[base + t * P.n]); }
        }
        if (f != 0u) { atomicOr(&acc[x], f); }
    }
    workgroupBarrier();
    if (rows) {
        let r = g * R + lid;
        if (lid < R && r < P.rows) { FL[r] = atomicLoad(&acc[lid]); }
    } else if (lid < 32u && j < P.n) {
        FL[P.rows + (h / P.ctiles) * P.n + j] = atomicLoad(&acc[lid]);
    }
}
