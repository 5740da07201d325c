// Second pass of the tiled argmax with AT (gemm_tiled): I holds, per output, the k-tile whose ⊕ was
// strictly better than every earlier tile's (or -1). Inside that tile the smallest k whose product
// equals D is the argmax: earlier tiles were all strictly worse, so no smaller k reaches D, and
// D is the product itself (where c won, I is already -1). One thread per output.
// BT: binding 2 holds B transposed (gemm_transpose, n x k per entry): the tile's BK values of B's
// column are consecutive, as A's row's are, instead of BK rows apart (one memory sector each).
// VEC (with BT, k a multiple of 4): A and BT read as vec4 (AV, BV).
{$ include "gemm_common.wgsl" $}
@group(0) @binding(4) var<storage, read_write> I: array<i32>;

$$ if PW|default(0)
// PW: the outputs taken in panels of PW columns, row-major inside a panel (a workgroup's threads
// share a row of A), so the threads resident together read one panel's PW columns of Bᵀ (L2-sized)
// and not every column at random.
@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let q = (wg.y * P.nx + wg.x) * {{ WG }}u + lid;
    if (q >= P.m * P.n) { return; }
    let full = (P.n / {{ PW }}u) * {{ PW }}u;  // columns in whole panels
    var i: u32;
    var j: u32;
    if (q < P.m * full) {
        let p = q / (P.m * {{ PW }}u);
        let rem = q - p * P.m * {{ PW }}u;
        i = rem / {{ PW }}u;
        j = p * {{ PW }}u + rem % {{ PW }}u;
    } else {
        let w = P.n - full;
        let rem = q - P.m * full;
        i = rem / w;
        j = full + rem % w;
    }
    let idx = i * P.n + j;
$$ else
@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let idx = (wg.y * P.nx + wg.x) * {{ WG }}u + lid;
    if (idx >= P.m * P.n) { return; }
    let i = idx / P.n;
    let j = idx % P.n;
$$ endif
    let o = wg.z * P.d_bs + idx;
    let t = I[o];
    if (t < 0i) { return; }
    let v = D[o];
    let k0 = u32(t) * {{ BK }}u;
    let arow = wg.z * P.a_bs + i * P.k;
$$ if BT|default(false)
    let bcol = wg.z * P.b_bs + j * P.k;
$$ else
    let bcol = wg.z * P.b_bs + j;
$$ endif
    var found = -1i;
$$ if VEC|default(false)
    // k0, arow and bcol are multiples of 4 (k is): element g of a row is vec4 g / 4, lane g % 4
$$ for q in range(BK // 4 - 1, -1, -1)
    {
        let g = k0 + {{ q * 4 }}u;
        if (g < P.k) {
            let p = mul4(A[(arow + g) / 4u], B[(bcol + g) / 4u]);
$$ for c in range(3, -1, -1)
            if (p.{{ "xyzw"[c] }} == v) { found = i32(g + {{ c }}u); }
$$ endfor
        }
    }
$$ endfor
$$ else
$$ for kk in range(BK - 1, -1, -1)
    {
        let g = k0 + {{ kk }}u;
$$ if BT|default(false)
        if (g < P.k && mul1(A[arow + g], B[bcol + g]) == v) { found = i32(g); }
$$ else
        if (g < P.k && mul1(A[arow + g], B[bcol + g * P.n]) == v) { found = i32(g); }
$$ endif
    }
$$ endfor
$$ endif
    I[o] = found;
}
