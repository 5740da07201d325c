"""The VSA part of bench_wgpu_sweep.py: bind / accumulate / harden (vec4 or not, elements per
thread, workgroup size) and dot (vec4, loads ahead, elements per thread) on 2^30 trits, each variant
checked against numpy and the bit-slice reference first."""

from __future__ import annotations

import numpy as np

from pytropical_gpu.backends.wgpu.engine import pack_params

try:  # imported as benchmarks._wgpu_sweep_vsa or from the script's directory
    from ._wgpu_timing import copy_seconds, cupy_seconds, kernel_time, log
except ImportError:  # pragma: no cover
    from _wgpu_timing import copy_seconds, cupy_seconds, kernel_time, log


def _planes(rng, n):
    p = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    q = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32) & ~p
    return p, q


def _ew_dispatch(eng, op, bits, wg, vec, per, bufs, total_words, threshold=0):
    pipe = eng.pipeline("vsa_elementwise", OP=op, BITS=bits, WG=wg, VEC=vec, PER=per)
    units = total_words // 4 if vec else total_words
    gx, gy, _ = eng.grid(-(-units // (wg * per)))
    return eng.dispatch(pipe, [b.binding() for b in bufs], (gx, gy, 1),
                        pack_params(units, gx, threshold, 0))


def _ew_variants(quick):
    vs = [(256, False, 1), (256, True, 1), (256, True, 2), (256, True, 4), (128, True, 1),
          (512, True, 1), (256, False, 4), (1024, True, 1)]
    return vs[:3] if quick else vs


def sweep_vsa(eng, cp, quick, OUT):  # noqa: N803 - the script's result dict
    from pytropical_gpu.backends import bitslice

    rng = np.random.default_rng(2)
    words = 1 << (15 if quick else 25)
    # --- checks on an odd multiple of 4 words (vec variants) and an odd count (scalar variants)
    for wg, vec, per in _ew_variants(quick):
        nw = 4 * 5003 if vec else 20011
        ap, an = _planes(rng, nw)
        bp, bn = _planes(rng, nw)
        bufs = [eng.upload(x) for x in (ap, an, bp, bn)] + [eng.alloc(nw * 4) for _ in range(2)]
        eng.submit([_ew_dispatch(eng, "bind", 0, wg, vec, per, bufs, nw)])
        ok = (np.array_equal(eng.download(bufs[4], np.uint32, (nw,)), (ap & bp) | (an & bn))
              and np.array_equal(eng.download(bufs[5], np.uint32, (nw,)), (ap & bn) | (an & bp)))
        eng.release(*bufs)
        bits = 4
        s = rng.integers(0, 1 << 32, nw, dtype=np.uint64).astype(np.uint32)
        mag = rng.integers(0, 1 << 32, (bits, nw), dtype=np.uint64).astype(np.uint32)
        mag[:, :50] = 0xFFFFFFFF
        hp, hn = _planes(rng, nw)
        ws, wm = bitslice.accumulate(s.copy(), mag.copy(), hp, hn)
        bufs = [eng.upload(s), eng.upload(mag), eng.upload(hp), eng.upload(hn)]
        eng.submit([_ew_dispatch(eng, "accumulate", bits, wg, vec, per, bufs, nw)])
        ok = ok and np.array_equal(eng.download(bufs[0], np.uint32, (nw,)), ws)
        ok = ok and np.array_equal(eng.download(bufs[1], np.uint32, (bits, nw)), wm)
        eng.release(*bufs)
        for thr in (1, 5, 15):
            wp, wn = bitslice.harden(s, mag, thr)
            bufs = [eng.upload(s), eng.upload(mag), eng.alloc(nw * 4), eng.alloc(nw * 4)]
            eng.submit([_ew_dispatch(eng, "harden", bits, wg, vec, per, bufs, nw, thr)])
            ok = ok and np.array_equal(eng.download(bufs[2], np.uint32, (nw,)), wp)
            ok = ok and np.array_equal(eng.download(bufs[3], np.uint32, (nw,)), wn)
            eng.release(*bufs)
        OUT["checks"].append({"label": f"elementwise wg={wg} vec={vec} per={per}", "ok": ok})
        if not ok:
            log(f"CHECK FAILED elementwise wg={wg} vec={vec} per={per}")
    # --- timing
    ap, an = _planes(rng, words)
    bp, bn = _planes(rng, words)
    planes = [eng.upload(x) for x in (ap, an, bp, bn)]
    outs = [eng.alloc(words * 4) for _ in range(2)]
    plane_bytes = words * 4
    reps = 5 if quick else 40
    tc = copy_seconds(eng, 4 * plane_bytes, reps)
    OUT["webgpu_copy_4_planes_ms"] = tc * 1e3
    log(f"WebGPU copy of 4 planes: {tc * 1e3:.4f} ms")
    if cp is not None:
        src = cp.empty(4 * words, cp.uint32)
        dst = cp.empty_like(src)
        OUT["cuda_copy_4_planes_ms"] = cupy_seconds(cp, lambda: cp.copyto(dst, src), 20) * 1e3
        log(f"CUDA copy of 4 planes: {OUT['cuda_copy_4_planes_ms']:.4f} ms")
        del src, dst
    for wg, vec, per in _ew_variants(quick):
        d = _ew_dispatch(eng, "bind", 0, wg, vec, per, planes + outs, words)
        t = kernel_time(eng, d, reps)
        OUT["vsa"].append({"op": "bind", "wg": wg, "vec": vec, "per": per, "ms": t * 1e3,
                           "gbs": 6 * plane_bytes / t / 1e9})
        log(f"bind wg={wg} vec={vec} per={per}: {t * 1e3:.4f} ms, {6 * plane_bytes / t / 1e9:.0f} GB/s")
    # dot, one pair
    want = int(np.bitwise_count((ap & bp) | (an & bn)).sum(dtype=np.int64)
               - np.bitwise_count((ap & bn) | (an & bp)).sum(dtype=np.int64))
    for vec, unroll, wpt in ((False, 1, 64), (True, 1, 16), (True, 2, 16), (True, 4, 16),
                             (True, 4, 32), (True, 2, 8), (True, 4, 64), (True, 8, 32)):
        units = words // 4 if vec else words
        chunks = -(-units // (256 * wpt))
        res = eng.alloc(chunks * 4)
        gx, gy, _ = eng.grid(chunks)
        pipe = eng.pipeline("vsa_dot", VEC=vec, UNROLL=unroll)
        d = eng.dispatch(pipe, [b.binding() for b in planes] + [res.binding()], (gx, gy, 1),
                         pack_params(1, 1, units, chunks, wpt, gx, 0, 0))
        eng.submit([d])
        got = int(eng.download(res, np.int32, (chunks,)).sum(dtype=np.int64))
        ok = got == want
        OUT["checks"].append({"label": f"dot vec={vec} unroll={unroll} wpt={wpt}", "ok": ok})
        if not ok:
            log(f"CHECK FAILED dot vec={vec} unroll={unroll} wpt={wpt}: {got} != {want}")
            eng.release(res)
            continue
        t = kernel_time(eng, d, reps)
        OUT["vsa"].append({"op": "dot", "vec": vec, "unroll": unroll, "wpt": wpt, "ms": t * 1e3,
                           "gbs": 4 * plane_bytes / t / 1e9})
        log(f"dot vec={vec} unroll={unroll} wpt={wpt}: {t * 1e3:.4f} ms, "
            f"{4 * plane_bytes / t / 1e9:.0f} GB/s")
        eng.release(res)
    eng.release(*outs)
    # accumulate / harden, 4-bit counters over the same 2^30 trits
    bits = 4
    s_buf = planes[0]
    m_buf = eng.alloc(bits * plane_bytes)
    for wg, vec, per in _ew_variants(quick):
        d = _ew_dispatch(eng, "accumulate", bits, wg, vec, per, [s_buf, m_buf, planes[2], planes[3]],
                         words)
        t = kernel_time(eng, d, reps)
        moved = (2 * (1 + bits) + 2) * plane_bytes
        OUT["vsa"].append({"op": "accumulate", "bits": bits, "wg": wg, "vec": vec, "per": per,
                           "ms": t * 1e3, "gbs": moved / t / 1e9})
        log(f"accumulate bits={bits} wg={wg} vec={vec} per={per}: {t * 1e3:.4f} ms, "
            f"{moved / t / 1e9:.0f} GB/s")
        outs = [eng.alloc(plane_bytes) for _ in range(2)]
        d = _ew_dispatch(eng, "harden", bits, wg, vec, per, [s_buf, m_buf] + outs, words, 5)
        t = kernel_time(eng, d, reps)
        moved = (1 + bits + 2) * plane_bytes
        OUT["vsa"].append({"op": "harden", "bits": bits, "wg": wg, "vec": vec, "per": per,
                           "ms": t * 1e3, "gbs": moved / t / 1e9})
        log(f"harden bits={bits} wg={wg} vec={vec} per={per}: {t * 1e3:.4f} ms, {moved / t / 1e9:.0f} GB/s")
        eng.release(*outs)
    eng.release(*planes, m_buf)
