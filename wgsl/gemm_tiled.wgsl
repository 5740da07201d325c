// Register-blocked semiring GEMM: D[b] = (C[b] ⊕) A[b] ⊗ B[b].
// Workgroup tile BM x BN, k-tile BK, each thread TM x TN outputs held in vec4 accumulators; the
// k-tile body is generated fully unrolled (no dynamically indexed private arrays).
// A thread's vec4 columns (rows) are BN/TN (BM/TM) vec4 apart, so a warp's workgroup-memory reads
// are consecutive (no bank conflicts). PF: 0 loads then computes each k-tile; 1 prefetches the
// next k-tile into registers while computing; 2 does that into a second workgroup buffer (one
// barrier per k-tile). On an H200 PF=0 is as fast as either (benchmarks/results/wgpu_gemm_notes.md).
// BV: B read as vec4 (n a multiple of 4): one 16-byte load for a thread's 4 columns of a k row.
// DV: D (and an argmax's I) written as vec4 (n a multiple of 4, no c): 16-byte stores, a quarter
// of the store instructions (split-k's partial layers: a larger share of a short k-loop).
// AT: argmax by k-tile (a plain ⊕ per k-tile, folded into the running best with the tile's index;
// gemm_argfix finds the k inside it).
// SK: split-k, each z layer of workgroups a slice of k into its own partial D (gemm_splitk folds
// the layers with ⊕; for grids too small to fill the device).
// Guards, padding and tile choice follow KERNELS.md at the repository root (as cuda/ does).
{$ include "gemm_common.wgsl" $}
$$ set nb = 4
$$ if ARGMAX
@group(0) @binding({{ nb }}) var<storage, read_write> I: array<{{ "vec4<i32>" if DV|default(false) else "i32" }}>;
$$ set nb = nb + 1
$$ endif
$$ if HAS_C
@group(0) @binding({{ nb }}) var<storage, read> C: array<T>;
$$ set nb = nb + 1
$$ endif
$$ if FACTS|default(false)
$$ set FBIND = nb
{$ include "gemm_facts.wgsl" $}
$$ endif

$$ if ARGMAX
// strict improvement per lane (ties keep the smaller k, as the k loop runs upwards)
fn better4(v: V, acc: V) -> vec4<bool> {
$$ if ADD_OP == "min"
    return v < acc;
$$ elif ADD_OP == "max"
    return v > acc;
$$ else
    return vec4<bool>(better(v.x, acc.x), better(v.y, acc.y), better(v.z, acc.z), better(v.w, acc.w));
$$ endif
}
$$ endif

fn pad_b() -> T { return {{ ONE }}; }
$$ set AT = ARGMAX and AT|default(false)
$$ set PAIR = ARGMAX and not AT
{# PIDX (AT; 16 or 0, gemm_passes.argmax_pidx says where the library takes 16): the k-tile indices
   packed 16 bits each, two outputs an u32: 32 registers for the 8x8 tile's 64 indices instead of
   64, updated from the fold's compare with a mask. The field holds the k-tile t itself (t < 2^16,
   k <= 2^20 at BK 16); "no k-tile improved" (I = -1) is read at the store from the result: acc
   still equals the zero exactly when no tile was strictly better (the zero is ⊕'s identity, so any
   improvement moves acc off it for good). Where the k-tiles outnumber the field, I is -2
   everywhere (gemm_passes.check_pidx never queues that). Until session 8 PIDX 8 (four indices an
   u32) and TACC (AT's tile accumulator without the index) were benchmark-only options: the s7 and
   s8 runs that used them render at commit 41db6f3 (wgpu_gemm_notes.md, "Session 8 (s8tpl)"). #}
$$ if PIDX|default(0) is not integer or PIDX|default(0) not in (0, 16)
$$ set _ = fail("gemm_tiled: PIDX must be 0 or 16, got %r (PIDX 8 is at commit 41db6f3 only)" % (PIDX,))
$$ endif
$$ set PX = PIDX|default(0) if AT else 0
$$ if PX
// PIDX: the packed k-tile indices of one vec4 of outputs -> the I values of the unpacked kernel
// (-1: no k-tile improved on the zero; -2: more k-tiles than the 16-bit field holds)
fn pidx_unpack(w: vec2<u32>, acc: V, ntiles: u32) -> vec4<i32> {
    let t = vec4<i32>((vec4<u32>(w.xx, w.yy) >> vec4<u32>(0u, 16u, 0u, 16u)) & vec4<u32>(0xFFFFu));
    let r = select(t, vec4<i32>(-1i), acc == V(zero()));
    return select(r, vec4<i32>(-2i), ntiles > 65536u);
}
$$ endif
$$ set NTX = BN // TN
$$ set NTY = BM // TM
$$ set NT = NTX * NTY
$$ set TN4 = TN // 4
$$ set TM4 = TM // 4
$$ set BN4 = BN // 4
$$ set BM4 = BM // 4
$$ set NBUF = 2 if PF == 2 else 1
$$ set SA = BK * BM4
$$ set SB = BK * BN4
$$ set NLA = (BM4 * BK + NT - 1) // NT
$$ set NUA = BM4 * BK
$$ set NLB = (BN4 * BK + NT - 1) // NT
$$ set NUB = BN4 * BK
$$ set WA = WA|default(false)
$$ if WA
// WA: k rows of vec4; a read's dynamic index (its column: q * NTY + ty) is the same for every kk,
// so the bounds clamp naga adds to a dynamic index is computed once, not once per read
var<workgroup> As: array<array<V, {{ BM4 }}>, {{ BK * NBUF }}>;
var<workgroup> Bs: array<array<V, {{ BN4 }}>, {{ BK * NBUF }}>;
$$ else
var<workgroup> As: array<V, {{ SA * NBUF }}>;
var<workgroup> Bs: array<V, {{ SB * NBUF }}>;
$$ endif

$$ macro guard(l, per, total)
{{ "true" if (l + 1) * per <= total else "lid < %du" % (total - l * per) }}
$$- endmacro

$$ macro load_tile(k0)
        // global -> registers; padding: A = zero, B = one, so pad ⊗ pad = zero
$$ for l in range(NLA)
        if ({{ guard(l, NT, NUA) }}) {
            let e = lid + {{ l * NT }}u;
            let gk = {{ k0 }} + e % {{ BK }}u;
            let r = row0 + (e / {{ BK }}u) * 4u;
            la{{ l }} = V(zero());
            if (gk < klen) {
                let o = abase + r * P.k + gk;
                if (r < P.m) { la{{ l }}.x = A[o]; }
                if (r + 1u < P.m) { la{{ l }}.y = A[o + P.k]; }
                if (r + 2u < P.m) { la{{ l }}.z = A[o + 2u * P.k]; }
                if (r + 3u < P.m) { la{{ l }}.w = A[o + 3u * P.k]; }
            }
        }
$$ endfor
$$ for l in range(NLB)
        if ({{ guard(l, NT, NUB) }}) {
            let e = lid + {{ l * NT }}u;
            let gk = {{ k0 }} + e / {{ BN4 }}u;
            let c = col0 + (e % {{ BN4 }}u) * 4u;
            lb{{ l }} = V(pad_b());
            if (gk < klen) {
                let o = bbase + gk * P.n + c;
$$ if BV|default(false)
                // BV (n a multiple of 4): 4 columns are one aligned vec4, in or out as a whole
                if (c < P.n) { lb{{ l }} = B[o / 4u]; }
$$ else
                if (c + 3u < P.n) {
                    lb{{ l }} = V(B[o], B[o + 1u], B[o + 2u], B[o + 3u]);
                } else {
                    if (c < P.n) { lb{{ l }}.x = B[o]; }
                    if (c + 1u < P.n) { lb{{ l }}.y = B[o + 1u]; }
                    if (c + 2u < P.n) { lb{{ l }}.z = B[o + 2u]; }
                }
$$ endif
            }
        }
$$ endfor
$$- endmacro

$$ macro store_tile(abuf, bbuf)
        // registers -> workgroup memory: As[kk * BM4 + r / 4] holds rows r..r+3 at k-offset kk
$$ for l in range(NLA)
        if ({{ guard(l, NT, NUA) }}) {
            let e = lid + {{ l * NT }}u;
$$ if WA
            As[{{ abuf }} + e % {{ BK }}u][e / {{ BK }}u] = la{{ l }};
$$ else
            As[{{ abuf }} + (e % {{ BK }}u) * {{ BM4 }}u + e / {{ BK }}u] = la{{ l }};
$$ endif
        }
$$ endfor
$$ for l in range(NLB)
$$ if WA
        if ({{ guard(l, NT, NUB) }}) {
            let e = lid + {{ l * NT }}u;
            Bs[{{ bbuf }} + e / {{ BN4 }}u][e % {{ BN4 }}u] = lb{{ l }};
        }
$$ else
        if ({{ guard(l, NT, NUB) }}) { Bs[{{ bbuf }} + lid + {{ l * NT }}u] = lb{{ l }}; }
$$ endif
$$ endfor
$$- endmacro

$$ macro compute(abuf, bbuf)
$$ if AT
        // AT: a plain ⊕ over each k-tile (two instructions a pair; the first product starts it,
        // as zero ⊕ x = x), folded into the running best with the k-tile's index once per tile;
        // gemm_argfix finds the k inside the winning tile
$$ endif
$$ for kk in range(BK)
        {
$$ for q in range(TM4)
$$ if WA
            let aq{{ q }} = As[{{ abuf }} + {{ kk }}u][{{ q * NTY }}u + ty];
$$ else
            let aq{{ q }} = As[{{ abuf }} + {{ kk * BM4 + q * NTY }}u + ty];
$$ endif
$$ endfor
$$ for i in range(TM)
            let a{{ i }} = V(aq{{ i // 4 }}.{{ "xyzw"[i % 4] }});
$$ endfor
$$ for j in range(TN4)
$$ if WA
            let b{{ j }} = Bs[{{ bbuf }} + {{ kk }}u][{{ j * NTX }}u + tx];
$$ else
            let b{{ j }} = Bs[{{ bbuf }} + {{ kk * BN4 + j * NTX }}u + tx];
$$ endif
$$ endfor
$$ if PAIR
            let kv{{ kk }} = vec4<i32>(i32(k0 + {{ kk }}u));
$$ endif
$$ for i in range(TM)
$$ for j in range(TN4)
$$ if AT and kk == 0
            tacc_{{ i }}_{{ j }} = mul4(a{{ i }}, b{{ j }});
$$ elif AT
            tacc_{{ i }}_{{ j }} = add4(tacc_{{ i }}_{{ j }}, mul4(a{{ i }}, b{{ j }}));
$$ elif PAIR
            {
                let v = mul4(a{{ i }}, b{{ j }});
                let bt = better4(v, acc_{{ i }}_{{ j }});
                acc_{{ i }}_{{ j }} = select(acc_{{ i }}_{{ j }}, v, bt);
                idx_{{ i }}_{{ j }} = select(idx_{{ i }}_{{ j }}, kv{{ kk }}, bt);
            }
$$ else
            acc_{{ i }}_{{ j }} = add4(acc_{{ i }}_{{ j }}, mul4(a{{ i }}, b{{ j }}));
$$ endif
$$ endfor
$$ endfor
        }
$$ endfor
$$ if AT
        {
$$ if PX
            let kt = vec2<u32>(t * 0x00010001u);
$$ else
            let kt = vec4<i32>(i32(t));
$$ endif
$$ for i in range(TM)
$$ for j in range(TN4)
            {
                let bt = better4(tacc_{{ i }}_{{ j }}, acc_{{ i }}_{{ j }});
                acc_{{ i }}_{{ j }} = select(acc_{{ i }}_{{ j }}, tacc_{{ i }}_{{ j }}, bt);
$$ if PX
                let m = select(vec4<u32>(0u), vec4<u32>(0xFFFFu, 0xFFFF0000u, 0xFFFFu, 0xFFFF0000u), bt);
                let mm = m.xz | m.yw;
                pidx_{{ i }}_{{ j }} = (pidx_{{ i }}_{{ j }} & ~mm) | (kt & mm);
$$ else
                idx_{{ i }}_{{ j }} = select(idx_{{ i }}_{{ j }}, kt, bt);
$$ endif
            }
$$ endfor
$$ endfor
        }
$$ endif
$$- endmacro

@compute @workgroup_size({{ NT }})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32{{
        ", @builtin(num_workgroups) nwg: vec3<u32>" if FACTS|default(false) else "" }}) {
    let row0 = wg.y * {{ BM }}u;
    let col0 = wg.x * {{ BN }}u;
    let abase = wg.z * P.a_bs;
    let bbase = wg.z * P.b_bs;
    let tx = lid % {{ NTX }}u;
    let ty = lid / {{ NTX }}u;
$$ for i in range(TM)
$$ for j in range(TN4)
    var acc_{{ i }}_{{ j }} = V(zero());
$$ if PX
    var pidx_{{ i }}_{{ j }} = vec2<u32>(0u);
$$ elif ARGMAX
    var idx_{{ i }}_{{ j }} = vec4<i32>(-1i);
$$ endif
$$ if AT
    var tacc_{{ i }}_{{ j }}: V;
$$ endif
$$ endfor
$$ endfor
$$ for l in range(NLA)
    var la{{ l }}: V;
$$ endfor
$$ for l in range(NLB)
    var lb{{ l }}: V;
$$ endfor
$$ if SK|default(false)
    // split-k: workgroup layer z covers k in [z * KS, z * KS + klen) (KS = P.c_bs; a_bs = KS and
    // b_bs = KS * n offset A's columns and B's rows there) and writes its partial D layer
    let klen = min(P.c_bs, P.k - min(P.k, wg.z * P.c_bs));
$$ else
    let klen = P.k;
$$ endif
    let ntiles = (klen + {{ BK - 1 }}u) / {{ BK }}u;
$$ if PF == 0
    for (var t = 0u; t < ntiles; t = t + 1u) {
        let k0 = t * {{ BK }}u;
{{ load_tile("k0") }}
{{ store_tile("0u", "0u") }}
        workgroupBarrier();
{{ compute("0u", "0u") }}
        workgroupBarrier();
    }
$$ elif PF == 1
    if (ntiles > 0u) {
{{ load_tile("0u") }}
    }
    for (var t = 0u; t < ntiles; t = t + 1u) {
        let k0 = t * {{ BK }}u;
{{ store_tile("0u", "0u") }}
        workgroupBarrier();
        if (t + 1u < ntiles) {
{{ load_tile("k0 + %du" % BK) }}
        }
{{ compute("0u", "0u") }}
        workgroupBarrier();
    }
$$ else
    if (ntiles > 0u) {
{{ load_tile("0u") }}
{{ store_tile("0u", "0u") }}
    }
    workgroupBarrier();
    for (var t = 0u; t < ntiles; t = t + 1u) {
        let k0 = t * {{ BK }}u;
        let cur = t & 1u;
        let more = t + 1u < ntiles;
        if (more) {
{{ load_tile("k0 + %du" % BK) }}
        }
        // a buffer's offset: in vec4 (WA: in k rows)
        let ca = cur * {{ BK if WA else SA }}u;
        let cb = cur * {{ BK if WA else SB }}u;
{{ compute("ca", "cb") }}
        if (more) {
            let na = {{ BK if WA else SA }}u - ca;
            let nbb = {{ BK if WA else SB }}u - cb;
{{ store_tile("na", "nbb") }}
        }
        workgroupBarrier();
    }
$$ endif
    let dbase = wg.z * P.d_bs;
$$ if PX
$$ for i in range(TM)
$$ for j in range(TN4)
    let idx_{{ i }}_{{ j }} = pidx_unpack(pidx_{{ i }}_{{ j }}, acc_{{ i }}_{{ j }}, ntiles);
$$ endfor
$$ endfor
$$ endif
$$ if FACTS|default(false)
    facts_init(lid);
    workgroupBarrier();
$$ endif
$$ if HAS_C
    let cbase = wg.z * P.c_bs;
$$ endif
$$ for i in range(TM)
    {
        let r = row0 + ({{ i // 4 * NTY }}u + ty) * 4u + {{ i % 4 }}u;
        if (r < P.m) {
$$ if DV|default(false)
            // DV (n a multiple of 4, no c): each vec4 accumulator is 4 whole columns
$$ for j in range(TN4)
            {
                let col = col0 + ({{ j * NTX }}u + tx) * 4u;
                if (col < P.n) {
                    D[(dbase + r * P.n + col) / 4u] = acc_{{ i }}_{{ j }};
$$ if ARGMAX
                    I[(dbase + r * P.n + col) / 4u] = idx_{{ i }}_{{ j }};
$$ endif
$$ if FACTS|default(false)
$$ for c in range(4)
                    facts_add(acc_{{ i }}_{{ j }}.{{ "xyzw"[c] }});
$$ endfor
$$ endif
                }
            }
$$ endfor
$$ else
$$ for j in range(TN4)
$$ for c in range(4)
            {
                let col = col0 + ({{ j * NTX }}u + tx) * 4u + {{ c }}u;
                if (col < P.n) {
                    let o = r * P.n + col;
                    var v = acc_{{ i }}_{{ j }}.{{ "xyzw"[c] }};
$$ if ARGMAX
                    var bi = idx_{{ i }}_{{ j }}.{{ "xyzw"[c] }};
$$ endif
$$ if HAS_C
                    let cv = C[cbase + o];
$$ if ARGMAX
                    if (!better(v, cv)) { bi = -1i; }
$$ endif
                    v = add1(cv, v);
$$ endif
                    D[dbase + o] = v;
$$ if FACTS|default(false)
                    facts_add(v);
$$ endif
$$ if ARGMAX
                    I[dbase + o] = bi;
$$ endif
                }
            }
$$ endfor
$$ endfor
$$ endif
        }
    }
$$ endfor
$$ if FACTS|default(false)
    facts_store((wg.z * nwg.y + wg.y) * nwg.x + wg.x, lid);
$$ endif
}
