// K-packed boolean product: cell (i, j) = OR_w (A[i, w] & B[j, w]) != 0 (XOR: parity of the
// popcount of XOR_w (A & B)). 64 x 64 cells per workgroup, 4 x 4 per thread (vec4 accumulators),
// KW words per step; the OR kernel leaves the k loop once every cell of the workgroup is true.
// Output: one byte per cell, 4 cells per u32 (rows of ceil(n / 4) words).
struct Params { m: u32, n: u32, w: u32, n4: u32 };
@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> A: array<u32>;
@group(0) @binding(2) var<storage, read> B: array<u32>;
@group(0) @binding(3) var<storage, read_write> O: array<u32>;

var<workgroup> As: array<u32, {{ KW * 64 }}>;
var<workgroup> Bs: array<vec4<u32>, {{ KW * 16 }}>;
$$ if not XOR
var<workgroup> live: u32;
$$ endif

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row0 = wg.y * 64u;
    let col0 = wg.x * 64u;
    let tx = lid % 16u;
    let ty = lid / 16u;
$$ for i in range(4)
    var acc{{ i }} = vec4<u32>(0u);
$$ endfor
    for (var w0 = 0u; w0 < P.w; w0 = w0 + {{ KW }}u) {
$$ if not XOR
        if (lid == 0u) { live = 0u; }
$$ endif
$$ for l in range((KW * 64 + 255) // 256)
        if (lid + {{ l * 256 }}u < {{ KW * 64 }}u) {
            let e = lid + {{ l * 256 }}u;
            let r = e / {{ KW }}u;
            let kw = e % {{ KW }}u;
            var v = 0u;
            if (row0 + r < P.m && w0 + kw < P.w) { v = A[(row0 + r) * P.w + w0 + kw]; }
            As[kw * 64u + r] = v;
        }
$$ endfor
$$ for l in range((KW * 16 + 255) // 256)
        if (lid + {{ l * 256 }}u < {{ KW * 16 }}u) {
            let e = lid + {{ l * 256 }}u;
            let kw = e / 16u;
            let c = col0 + (e % 16u) * 4u;
            var v = vec4<u32>(0u);
            if (w0 + kw < P.w) {
                let o = c * P.w + w0 + kw;
                if (c < P.n) { v.x = B[o]; }
                if (c + 1u < P.n) { v.y = B[o + P.w]; }
                if (c + 2u < P.n) { v.z = B[o + 2u * P.w]; }
                if (c + 3u < P.n) { v.w = B[o + 3u * P.w]; }
            }
            Bs[e] = v;
        }
$$ endfor
        workgroupBarrier();
$$ for kw in range(KW)
        {
            let b = Bs[{{ kw * 16 }}u + tx];
$$ for i in range(4)
            acc{{ i }} = acc{{ i }} {{ "^" if XOR else "|" }} (vec4<u32>(As[{{ kw * 64 + i }}u + ty * 4u]) & b);
$$ endfor
        }
$$ endfor
$$ if XOR
        workgroupBarrier();
$$ else
        let z = vec4<u32>(0u);
        if (!(all(acc0 != z) && all(acc1 != z) && all(acc2 != z) && all(acc3 != z))) { live = 1u; }
        if (workgroupUniformLoad(&live) == 0u) { break; }
$$ endif
    }
    let cw = (col0 >> 2u) + tx;
    if (cw < P.n4) {
$$ for i in range(4)
        {
            let r = row0 + ty * 4u + {{ i }}u;
$$ if XOR
            let bits = countOneBits(acc{{ i }}) & vec4<u32>(1u);
$$ else
            let bits = select(vec4<u32>(0u), vec4<u32>(1u), acc{{ i }} != vec4<u32>(0u));
$$ endif
            if (r < P.m) { O[r * P.n4 + cw] = bits.x | (bits.y << 8u) | (bits.z << 16u) | (bits.w << 24u); }
        }
$$ endfor
    }
}
