// Second pass of the tiled argmax with AT (gemm_tiled): I holds, per output, the k-tile whose ⊕ was
// strictly better than every earlier tile's (or -1). Inside that tile the smallest k whose product
// equals D is the argmax: earlier tiles were all strictly worse, so no smaller k reaches D, and
// D is the product itself (where c won, I is already -1). One thread per output.
{$ include "gemm_common.wgsl" $}
@group(0) @binding(4) var<storage, read_write> I: array<i32>;

@compute @workgroup_size({{ WG }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let idx = (wg.y * P.nx + wg.x) * {{ WG }}u + lid;
    if (idx >= P.m * P.n) { return; }
    let o = wg.z * P.d_bs + idx;
    let t = I[o];
    if (t < 0i) { return; }
    let v = D[o];
    let k0 = u32(t) * {{ BK }}u;
    let arow = wg.z * P.a_bs + (idx / P.n) * P.k;
    let bcol = wg.z * P.b_bs + idx % P.n;
    var found = -1i;
$$ for kk in range(BK - 1, -1, -1)
    {
        let g = k0 + {{ kk }}u;
        if (g < P.k && mul1(A[arow + g], B[bcol + g * P.n]) == v) { found = i32(g); }
    }
$$ endfor
    I[o] = found;
}
