"""WGSL backend benchmarks: correctness first, then device-resident timings beside a baseline.

Operands are uploaded once; each timed call submits ``R`` identical dispatches and waits with a
small ``read_buffer`` (wgpu 0.32's ``on_submitted_work_done_sync`` is broken), so the per-dispatch
time excludes host transfers. Baselines are measured in the same run: cuBLAS SGEMM through CuPy for
GEMM (when CuPy sees a CUDA device), a one-byte-per-bool AndOr kernel of ours for the packed AndOr,
and a WebGPU device-to-device copy of the same bytes for the VSA kernels.

Run: ``python -m pytropical_gpu bench --backend wgpu [--quick]`` or ``python benchmarks/bench_wgpu.py``.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from . import harness as h
from .gputime import copy_time, cupy_or_none, cupy_time, queue_time


def _row(op, dev, sizes, t, work, unit, baseline=None, tb=None, note=""):
    return h.Result(op, "wgpu", dev, sizes, t.median, t.q20, t.q80, work, unit, baseline,
                    None if tb is None else tb.median, note)


def bench_gemm(eng, dev, cp, progress, quick, rows, extra):
    from pytropical_gpu import facts
    from pytropical_gpu.backends.wgpu import gemm
    from pytropical_gpu.facts import guard_needed
    from pytropical_gpu.semirings import get_semiring

    rng = np.random.default_rng(0)
    big = 256 if quick else 8192
    cases = [("min_plus", "float32", big, big, big), ("max_plus", "int32", big, big, big),
             ("min_plus", "float32", 1 << (12 if quick else 21), 4, 4)]
    variants = [None]
    if not quick:  # a few tile variants for the big f32 case; the table reports each
        variants += [{"BM": 128, "BN": 128, "BK": 8, "TM": 8, "TN": 8, "ARGMAX": False},
                     {"BM": 128, "BN": 64, "BK": 16, "TM": 8, "TN": 8, "ARGMAX": False},
                     {"BM": 128, "BN": 128, "BK": 32, "TM": 8, "TN": 8, "ARGMAX": False}]
    for name, dts, m, k, n in cases:
        sr = get_semiring(name)
        dt = np.dtype(dts)
        if dt.kind == "f":
            a = rng.integers(-1000, 1000, (m, k)).astype(dt) / np.float32(8)
            b = rng.integers(-1000, 1000, (k, n)).astype(dt) / np.float32(8)
        else:
            a = rng.integers(-(1 << 20), 1 << 20, (m, k), dtype=np.int32)
            b = rng.integers(-(1 << 20), 1 << 20, (k, n), dtype=np.int32)
        A, B = eng.upload(a), eng.upload(b)
        D = eng.alloc(m * n * dt.itemsize)
        code = gemm.semiring_code(sr, dt, guard_needed(sr, dt, facts.of(a), facts.of(b)))
        kname, kp0 = gemm.choose_kernel(m, n, k, False)
        vlist = variants if (kname == "gemm_tiled" and dts == "float32") else [None]
        best = None
        for var in vlist:
            kp = dict(kp0) if var is None else dict(var)
            try:
                pipe = eng.pipeline(kname, **code.params(), **kp, HAS_C=False)
            except RuntimeError as e:
                progress(f"{name} {kp}: compile failed: {e}")
                continue
            disp = gemm.make_dispatch(eng, pipe, kname, kp, [A.binding(), B.binding(), D.binding()],
                                      m, n, k)
            eng.submit([disp])
            got = eng.download(D, dt, (m, n))
            # exact check of sampled rows (all rows for the skinny case) against numpy
            rows_i = np.arange(m) if m * n * k <= (1 << 26) else rng.choice(m, 8, replace=False)
            op = np.minimum if sr.add_op == "min" else np.maximum
            step = max(1, (1 << 25) // (k * n))
            for i0 in range(0, len(rows_i), step):
                ri = rows_i[i0:i0 + step]
                want = op.reduce(a[ri][:, :, None].astype(np.int64 if dt.kind == "i" else dt)
                                 + b[None], axis=1).astype(dt)
                h.check(f"{name} {dts} {m}x{k}x{n} {kp}", got[ri], want)
            reps = 3 if m * n * k >= (1 << 36) else (2 if quick else 50)
            t = queue_time(eng, disp, reps)
            tops = 2 * m * n * k / t.median / 1e12
            progress(f"{name} {dts} {m}x{k}x{n} {kname} {kp}: {t.median * 1e3:.3f} ms, {tops:.2f} TOPS")
            extra.setdefault("gemm_variants", []).append(
                {"op": name, "dtype": dts, "m": m, "k": k, "n": n, "kernel": kname, "params": kp,
                 "median_ms": t.median * 1e3, "tops": tops})
            if best is None or t.median < best[0].median:
                best = (t, kp)
        if best is None:
            raise h.CheckFailed(f"{name}: no kernel variant compiled")
        t, kp = best
        tb = None
        if cp is not None:
            fa = cp.asarray(a.astype(np.float32))
            fb = cp.asarray(b.astype(np.float32))
            tb = cupy_time(cp, lambda fa=fa, fb=fb: cp.matmul(fa, fb), 3 if m * n * k >= (1 << 36) else 50)
            del fa, fb
        rows.append(_row(f"{name} {dts}", dev, f"{m}x{k}x{n}", t, 2 * m * n * k, "op",
                         "cuBLAS SGEMM (cupy)" if tb else None, tb, note=f"{kname} {kp}"))
        eng.release(A, B, D)
    # argmax (tiled kernel with index accumulators), checked on sampled rows
    sz = 256 if quick else 4096
    a = rng.integers(-1000, 1000, (sz, sz)).astype(np.float32)
    b = rng.integers(-1000, 1000, (sz, sz)).astype(np.float32)
    sr = get_semiring("min_plus")
    code = gemm.semiring_code(sr, a.dtype, False)
    kname, kp = gemm.choose_kernel(sz, sz, sz, True, code=code)  # as the library: packed indices
    pipe = eng.pipeline(kname, **code.params(), **kp, HAS_C=False)
    A, B, D, I = eng.upload(a), eng.upload(b), eng.alloc(sz * sz * 4), eng.alloc(sz * sz * 4)
    binds = [x.binding() for x in (A, B, D, I)]
    disp = [gemm.make_dispatch(eng, pipe, kname, kp, binds, sz, sz, sz)]
    tmp = []
    if kp.get("AT"):  # argmax by k-tile: the second pass (and B's transpose) belong to the work
        more, tmp = gemm.passes.argfix_commands(eng, code, kp, binds, sz, sz, sz)
        disp += more
    eng.submit(disp)
    got_d, got_i = eng.download(D, np.float32, (sz, sz)), eng.download(I, np.int32, (sz, sz))
    ri = rng.choice(sz, 8, replace=False)
    t3 = a[ri][:, :, None] + b[None]
    h.check("min_plus argmax values", got_d[ri], t3.min(axis=1))
    h.check("min_plus argmax indices", got_i[ri], t3.argmin(axis=1).astype(np.int32))
    t = queue_time(eng, disp, 3 if not quick else 2)
    rows.append(_row("min_plus f32 + argmax", dev, f"{sz}x{sz}x{sz}", t, 2 * sz ** 3, "op",
                     note=f"{kname} {kp}"))
    progress(f"argmax {sz}^3: {t.median * 1e3:.3f} ms")
    eng.release(A, B, D, I, *tmp)


def bench_andor(eng, dev, cp, progress, quick, rows, extra):
    from pytropical_gpu.backends.bitslice import pack_bits
    from pytropical_gpu.backends.wgpu import boolean

    s = 256 if quick else 4096
    rng = np.random.default_rng(1)
    for dens in (0.05, 0.5):
        a = rng.random((s, s)) < dens
        b = rng.random((s, s)) < dens
        aw, bw = pack_bits(a), pack_bits(np.ascontiguousarray(b.T))
        # one byte per bool: the same product over bytes viewed as u32 words (k multiple of 4)
        ab = np.ascontiguousarray(a).view(np.uint8).view(np.uint32)
        bb = np.ascontiguousarray(b.T).view(np.uint8).view(np.uint32)
        want = (a.astype(np.float32) @ b.astype(np.float32)) > 0 if cp is None else \
            cp.asnumpy((cp.asarray(a, cp.float32) @ cp.asarray(b, cp.float32)) > 0)
        times = {}
        for label, x, y in (("packed", aw, bw), ("bytes", ab, bb)):
            got = boolean.andor(eng, x, y)
            h.check(f"andor {label} {s}^3 density {dens}", got, want)
            m, w = x.shape
            n = y.shape[0]
            X, Y = eng.upload(x), eng.upload(y)
            O = eng.alloc(m * ((n + 3) // 4) * 4)
            pipe = eng.pipeline("andor", KW=boolean.KW, XOR=False)
            from pytropical_gpu.backends.wgpu.engine import pack_params

            disp = eng.dispatch(pipe, [X.binding(), Y.binding(), O.binding()],
                                (-(-n // 64), -(-m // 64), 1), pack_params(m, n, w, (n + 3) // 4))
            times[label] = queue_time(eng, disp, 2 if quick else 20)
            eng.release(X, Y, O)
            progress(f"andor {label} {s}^3 d={dens}: {times[label].median * 1e3:.3f} ms")
        rows.append(_row(f"andor packed d={dens}", dev, f"{s}x{s}x{s}", times["packed"], 2 * s ** 3,
                         "bop", "our 1-byte-per-bool kernel", times["bytes"]))


def bench_vsa(eng, dev, cp, progress, quick, rows, extra):
    from pytropical_gpu.backends.wgpu import vsa
    from pytropical_gpu.backends.wgpu.engine import WG, pack_params

    trits = 1 << (20 if quick else 30)
    words = trits // 32
    rng = np.random.default_rng(2)

    def planes(nw):
        p = rng.integers(0, 1 << 32, nw, dtype=np.uint64).astype(np.uint32)
        n = rng.integers(0, 1 << 32, nw, dtype=np.uint64).astype(np.uint32) & ~p
        return p, n

    ap, an = planes(words)
    bp, bn = planes(words)
    # ---- bind
    op_, on_ = vsa.bind(eng, ap, an, bp, bn)
    h.check("bind pos", op_, (ap & bp) | (an & bn))
    h.check("bind neg", on_, (ap & bn) | (an & bp))
    bufs = [eng.upload(x) for x in (ap, an, bp, bn)] + [eng.alloc(words * 4) for _ in range(2)]
    disp = vsa.elementwise_dispatch(eng, "bind", 0, words, [b.binding() for b in bufs])
    t = queue_time(eng, disp, 20)
    tb = copy_time(eng, 4 * words * 4, 20)
    extra["webgpu_copy_4_planes_ms"] = tb.median * 1e3
    base_name = "WebGPU copy of the 4 input planes"
    if cp is not None:  # CUDA's device-to-device copy of the same bytes, beside WebGPU's
        src = cp.empty(4 * words, cp.uint32)
        dst = cp.empty_like(src)
        tb = cupy_time(cp, lambda: cp.copyto(dst, src), 20)
        extra["cuda_copy_4_planes_ms"] = tb.median * 1e3
        base_name = "CUDA D2D copy of the 4 input planes"
        del src, dst
    rows.append(_row("bind", dev, f"{trits} trits", t, trits, "trit", base_name, tb,
                     note=f"{6 * words * 4 / t.median / 1e9:.0f} GB/s moved"))
    progress(f"bind: {t.median * 1e3:.3f} ms (copy {tb.median * 1e3:.3f} ms)")
    # ---- dot (one pair of 2^30-trit vectors)
    want = int(np.bitwise_count((ap & bp) | (an & bn)).sum(dtype=np.int64)
               - np.bitwise_count((ap & bn) | (an & bp)).sum(dtype=np.int64))
    got = int(vsa.dot(eng, ap[None], an[None], bp[None], bn[None])[0, 0])
    h.check("dot", got, want)
    res = eng.alloc(vsa.dot_plan(words)[3] * 4)
    disp = vsa.dot_dispatch(eng, [b.binding() for b in bufs[:4]] + [res.binding()], 1, 1, words)
    t = queue_time(eng, disp, 20)
    rows.append(_row("dot", dev, f"{trits} trits", t, trits, "trit", base_name, tb,
                     note=f"{4 * words * 4 / t.median / 1e9:.0f} GB/s read"))
    progress(f"dot: {t.median * 1e3:.3f} ms")
    eng.release(*bufs, res)
    # ---- bundle: 16 vectors of 2^26 trits (2^30 trits in all)
    v = 16
    rw = words // v
    pp = np.empty((v, rw), np.uint32)
    nn = np.empty((v, rw), np.uint32)
    for i in range(v):
        pp[i], nn[i] = planes(rw)
    from pytropical_gpu.backends import bitslice

    gp, gn = vsa.bundle(eng, pp, nn, 1)
    sl = slice(0, min(rw, 1 << 16))
    wp, wn = bitslice.bundle(np.ascontiguousarray(pp[:, sl]), np.ascontiguousarray(nn[:, sl]), 1)
    h.check("bundle pos", gp[sl], wp)
    h.check("bundle neg", gn[sl], wn)
    bufs = [eng.upload(pp), eng.upload(nn), eng.alloc(rw * 4), eng.alloc(rw * 4)]
    width = max(v, 1).bit_length() + 2
    pipe = eng.pipeline("vsa_bundle", WIDTH=width, WG=WG)
    gx, gy, _ = eng.grid(-(-rw // WG))
    disp = eng.dispatch(pipe, [b.binding() for b in bufs], (gx, gy, 1), pack_params(v, rw, 1, gx))
    t = queue_time(eng, disp, 20)
    tb2 = copy_time(eng, 2 * v * rw * 4, 20)
    extra["webgpu_copy_bundle_inputs_ms"] = tb2.median * 1e3
    base_name = "WebGPU copy of the input planes"
    if cp is not None:
        src = cp.empty(2 * v * rw, cp.uint32)
        dst = cp.empty_like(src)
        tb2 = cupy_time(cp, lambda: cp.copyto(dst, src), 20)
        extra["cuda_copy_bundle_inputs_ms"] = tb2.median * 1e3
        base_name = "CUDA D2D copy of the input planes"
        del src, dst
    rows.append(_row(f"bundle {v} vectors", dev, f"{trits} trits", t, trits, "trit", base_name,
                     tb2, note=f"{(2 * v + 2) * rw * 4 / t.median / 1e9:.0f} GB/s moved"))
    progress(f"bundle: {t.median * 1e3:.3f} ms")
    eng.release(*bufs)


def run(quick: bool = False, progress=None) -> list:
    progress = progress or (lambda s: None)
    from pytropical_gpu.backends.wgpu.device import get_engine

    eng = get_engine()
    rt = eng.rt
    dev = f"{rt.info.name} ({rt.info.backend}, wgpu)"
    progress(f"device: {dev}; max binding {rt.limits.max_storage_binding >> 20} MiB")
    cp = cupy_or_none()
    rows: list = []
    extra: dict = {"adapter": dict(rt.info.extra), "limits": dataclasses.asdict(rt.limits),
                   "runtime": rt.name}
    failures = []
    for fn in (bench_gemm, bench_andor, bench_vsa):
        try:
            fn(eng, dev, cp, progress, quick, rows, extra)
        except h.CheckFailed:
            raise
        except Exception as e:  # noqa: BLE001 - report and carry on with the other groups
            progress(f"{fn.__name__} failed: {type(e).__name__}: {e}")
            failures.append(f"{fn.__name__}: {type(e).__name__}: {e}")
    run.extra = {**extra, "failures": failures,
                 "source_commit": os.environ.get("PYTROPICAL_GIT_COMMIT")}
    return rows
