"""Issue 14, session 6: the skinny rows (2,097,152x4x4, 4x4x2,097,152, 65536x64x64, min_plus f32)
on wgpu and cuda, each beside a device copy of the same bytes timed in the same run.

wgpu: the backend's choices (``gemm.choose_kernel``) and, at 65536x64x64, candidates for k <= 64
(the skinny kernel with the whole 64x64 B in workgroup memory, one row of A per thread; the 32x32
tile). Each variant is checked bit for bit first (``tests/reference.py``: ±inf, ties, ``c``, odd n
and k, a batch; the timed operands on sampled rows), then timed with GPU timestamps around one
compute pass of R dispatches (median of 5). The copy baseline: a WGSL vec4 copy kernel of half the
GEMM's bytes (read + write = its bytes) timed the same way, the WebGPU buffer copy (host-timed,
R vs 2R differenced) and a CuPy copy (CUDA events). cuda: the backend's kernel (``_gemm``), checked
the same way, CUDA events.

    python benchmarks/bench_wgpu_skinny_s6.py --json $OUT/wgpu_skinny_h200_s6.json [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "tests")]

import _wgpu_timing as timing  # noqa: E402
from _wgpu_timing import log  # noqa: E402
from reference import ref_matmul  # noqa: E402

import pytropical_gpu as ptg  # noqa: E402
from pytropical_gpu import facts  # noqa: E402
from pytropical_gpu.backends.wgpu import gemm  # noqa: E402
from pytropical_gpu.backends.wgpu.device import get_engine  # noqa: E402
from pytropical_gpu.semirings import get_semiring  # noqa: E402

SR = "min_plus"
#: --quick: no K = 64 skinny candidate (lavapipe compiles its 4096 unrolled pairs for minutes)
QUICK = [False]
OUT: dict = {"notes": __doc__, "rows": [], "copies": [], "checks": [], "errors": []}


def variants(m, k, n, wg_storage):
    """(label, kname, kp) at one shape: the backend's choice first."""
    kn, kp = gemm.choose_kernel(m, n, k, False, wg_storage)
    out = [(f"default {kn}", kn, kp)]
    if k == 64 and n == 64 and not QUICK[0]:
        for wg in (64, 256):
            out.append((f"skinny64 WG{wg}", "gemm_skinny",
                        {"K": k, "N": n, "WG": wg, "RPT": 1, "AV": True, "DV": True}))
        out.append(("tile 32x32", "gemm_tiled", dict(gemm.TILE_TINY, ARGMAX=False)))
    return out


def fit(kname, kp, k, n):
    """``kp`` for another (k, n) of the same family (the check shapes)."""
    if kname == "gemm_skinny":
        return dict(kp, K=k, N=n, AV=k % 4 == 0, DV=n % 4 == 0)
    if kname == "gemm_wide":
        return dict(kp, K=k)
    return kp


def operands(rng, shape, special):
    x = (rng.integers(-40, 40, shape) / 4).astype(np.float32)  # few values: many ties
    if special:
        for v in (np.inf, -np.inf):
            x.flat[rng.choice(x.size, max(1, x.size // 40), replace=False)] = v
    return x


def run_wgpu(eng, kname, kp, a, b, c, guard):
    """D of one (batched) GEMM through (kname, kp), launched directly (no routing, no cache)."""
    nbat, m, k = a.shape
    n = b.shape[2]
    dt = a.dtype
    code = gemm.semiring_code(get_semiring(SR), dt, guard)
    bufs = [eng.upload(a), eng.upload(b)]
    D = eng.alloc(nbat * m * n * 4)
    binds = [bufs[0].binding(), bufs[1].binding(), D.binding()]
    if c is not None:
        bufs.append(eng.upload(c))
        binds.append(bufs[-1].binding())
    pipe = eng.pipeline(kname, **code.params(), **kp, HAS_C=c is not None)
    a_bs = m * k if nbat > 1 else 0
    b_bs = k * n if b.shape[0] > 1 else 0
    c_bs = m * n if c is not None and c.shape[0] > 1 else 0
    disp = gemm.make_dispatch(eng, pipe, kname, kp, binds, m, n, k, nbat, a_bs, b_bs, c_bs)
    eng.submit([disp])
    got = eng.download(D, dt, (nbat, m, n))
    eng.release(*bufs, D)
    return got, disp


def check_shapes(m, k, n, kname):
    """Small shapes of the family (odd n / k, a batch with c) and the timed shape itself."""
    if kname == "gemm_wide":
        return [(1, 4, k, 4100), (3, 3, k, 1028), (1, 16, 5, 64), (1, m, k, n)]
    if kname == "gemm_skinny" and k > 16:
        return [(1, 1037, 64, 64), (2, 129, 64, 64), (1, 300, 64, 61), (1, m, k, n)]
    if kname == "gemm_skinny":
        return [(1, 1037, k, n), (3, 517, k, n), (1, 999, 3, 5), (1, m, k, n)]
    return [(1, 37, k, n + 3), (2, 132, k, n), (1, 1000, k - 1, n), (1, m, k, n)]


def sample(got, want_fn, shape):
    """Compare sampled rows (or, for the wide shape, columns) of ``got`` with the reference."""
    nbat, m, k, n = shape
    rng = np.random.default_rng(3)
    if m * k * n <= (1 << 24):
        return np.array_equal(got, want_fn(None, None), equal_nan=True)
    if m <= 16:
        cols = np.sort(rng.choice(n, 4096, replace=False))
        return np.array_equal(got[..., cols], want_fn(None, cols), equal_nan=True)
    rows = np.sort(rng.choice(m, 2048, replace=False))
    return np.array_equal(got[:, rows], want_fn(rows, None), equal_nan=True)


def reference(a, b, c):
    def want(rows, cols):
        aa = a if rows is None else a[:, rows]
        bb = b if cols is None else b[..., cols]
        cc = c
        if c is not None:
            cc = c if rows is None else c[:, rows]
            cc = cc if cols is None else cc[..., cols]
        return ref_matmul(aa, bb, SR, cc)[0]
    return want


def check(label, runner, shapes) -> bool:
    rng = np.random.default_rng(11)
    ok = True
    for nbat, m, k, n in shapes:
        for with_c in (False, True):
            a = operands(rng, (nbat, m, k), True)
            b = operands(rng, (1, k, n), True)
            c = operands(rng, (nbat, m, n), True) if with_c else None
            try:
                same = bool(sample(runner(a, b, c), reference(a, b, c), (nbat, m, k, n)))
            except Exception as e:  # noqa: BLE001
                same = False
                OUT["errors"].append(f"check {label}: {type(e).__name__}: {e}")
            if not same:
                ok = False
                log(f"CHECK FAILED {label}: {nbat}x{m}x{k}x{n} c={with_c}")
    OUT["checks"].append({"label": label, "ok": ok, "shapes": shapes})
    log(f"check {label}: {'ok' if ok else 'FAILED'}")
    return ok


# ---------------------------------------------------------------------------- copy baselines
COPY_WGSL = """
@group(0) @binding(0) var<storage, read> S: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> Dd: array<vec4<f32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    let i = g.y * nw.x * 256u + g.x;
    if (i < arrayLength(&Dd)) { Dd[i] = S[i]; }
}
"""


def wgsl_copy_seconds(eng, nbytes, reps, repeats=5):
    """A vec4 copy kernel of ``nbytes``: GPU timestamps around one pass of ``reps`` dispatches."""
    import wgpu

    dev = eng.rt.device
    use = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
    src, dst = dev.create_buffer(size=nbytes, usage=use), dev.create_buffer(size=nbytes, usage=use)
    pipe = dev.create_compute_pipeline(layout="auto", compute={
        "module": dev.create_shader_module(code=COPY_WGSL), "entry_point": "main"})
    bg = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
        {"binding": 0, "resource": {"buffer": src, "offset": 0, "size": nbytes}},
        {"binding": 1, "resource": {"buffer": dst, "offset": 0, "size": nbytes}}])
    nwg = -(-(nbytes // 16) // 256)
    gx = min(nwg, 32768)
    gy = -(-nwg // gx)
    qs = dev.create_query_set(type="timestamp", count=2)
    rb = dev.create_buffer(size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
    ts = []
    for _ in range(repeats + 1):
        enc = dev.create_command_encoder()
        p = enc.begin_compute_pass(timestamp_writes={
            "query_set": qs, "beginning_of_pass_write_index": 0, "end_of_pass_write_index": 1})
        p.set_pipeline(pipe)
        p.set_bind_group(0, bg)
        for _ in range(reps):
            p.dispatch_workgroups(gx, gy, 1)
        p.end()
        enc.resolve_query_set(qs, 0, 2, rb, 0)
        dev.queue.submit([enc.finish()])
        t0, t1 = np.frombuffer(bytes(dev.queue.read_buffer(rb)), np.uint64)[:2]
        ts.append(float(t1 - t0) * 1e-9 / reps)
    src.destroy()
    dst.destroy()
    return float(np.median(ts[1:]))


def copies(eng, cp, tag, nbytes, reps):
    r = {"shape": tag, "bytes": nbytes, "copied": nbytes // 2}
    for name, fn in (("wgsl_ms", lambda: wgsl_copy_seconds(eng, nbytes // 2, reps)),
                     ("webgpu_copy_host_ms", lambda: timing.copy_seconds(eng, nbytes // 2, reps))):
        try:
            r[name] = fn() * 1e3
        except Exception as e:  # noqa: BLE001
            OUT["errors"].append(f"copy {tag} {name}: {type(e).__name__}: {e}")
    if cp is not None:
        s, d = cp.empty(nbytes // 8, cp.float32), cp.empty(nbytes // 8, cp.float32)
        r["cuda_ms"] = timing.cupy_seconds(cp, lambda: cp.copyto(d, s), reps) * 1e3
        del s, d
    log(f"copy {tag} ({nbytes // 2 >> 20} MiB read + written): {r}")
    OUT["copies"].append(r)
    return r


# ---------------------------------------------------------------------------- timed rows
def wgpu_rows(eng, tag, m, k, n, reps, base):
    rng = np.random.default_rng(0)
    a = (rng.integers(-1000, 1000, (1, m, k)) / 8).astype(np.float32)
    b = (rng.integers(-1000, 1000, (1, k, n)) / 8).astype(np.float32)
    sr = get_semiring(SR)
    guard = facts.guard_needed(sr, a.dtype, facts.of(a[0]), facts.of(b[0]))
    nbytes = (m * k + k * n + m * n) * 4
    for label, kname, kp in variants(m, k, n, eng.limits.max_workgroup_storage):
        label = f"wgpu {label}"

        def runner(a_, b_, c_, kname=kname, kp=kp):
            return run_wgpu(eng, kname, fit(kname, kp, a_.shape[2], b_.shape[2]), a_, b_, c_,
                            True)[0]

        if not check(f"{label} {tag}", runner, check_shapes(m, k, n, kname)):
            continue
        got, disp = run_wgpu(eng, kname, kp, a, b, None, guard)
        if not sample(got, reference(a, b, None), (1, m, k, n)):
            OUT["errors"].append(f"{label} {tag}: timed operands differ")
            continue
        t = timing.kernel_time(eng, disp, reps)
        r = {"label": label, "shape": [m, k, n], "kernel": kname, "params": kp, "guard": guard,
             "median_ms": t * 1e3, "TB_s": nbytes / t / 1e12,
             "of_wgsl_copy": base.get("wgsl_ms", np.nan) / (t * 1e3),
             "of_cuda_copy": base.get("cuda_ms", np.nan) / (t * 1e3)}
        log(f"{tag} {label}: {t * 1e3:.4f} ms ({r['of_wgsl_copy']:.2f} of the wgsl copy, "
            f"{r['of_cuda_copy']:.2f} of the cuda copy)")
        OUT["rows"].append(r)


def cuda_rows(cp, tag, m, k, n, reps, base):
    be = ptg.get_backend("cuda")
    sr = get_semiring(SR)

    def runner(a_, b_, c_):
        d, _ = be._gemm(cp.asarray(a_), cp.asarray(b_), sr, None if c_ is None else cp.asarray(c_),
                        False, None)
        return d.get()

    if m <= 16:
        shapes = [(1, 4, k, 4100), (3, 3, k, 1028), (1, m, k, n)]
    else:
        shapes = [(1, 1037, k, n), (2, 517, k, n + 1), (1, m, k, n)]
    if not check(f"cuda {tag}", runner, shapes):
        return
    rng = np.random.default_rng(0)
    a = cp.asarray((rng.integers(-1000, 1000, (1, m, k)) / 8).astype(np.float32))
    b = cp.asarray((rng.integers(-1000, 1000, (1, k, n)) / 8).astype(np.float32))
    t = timing.cupy_seconds(cp, lambda: be._gemm(a, b, sr, None, False, None), reps)
    nbytes = (m * k + k * n + m * n) * 4
    r = {"label": "cuda default", "shape": [m, k, n], "median_ms": t * 1e3,
         "TB_s": nbytes / t / 1e12, "of_cuda_copy": base.get("cuda_ms", np.nan) / (t * 1e3),
         "of_wgsl_copy": base.get("wgsl_ms", np.nan) / (t * 1e3)}
    log(f"{tag} cuda default: {t * 1e3:.4f} ms ({r['of_cuda_copy']:.2f} of the cuda copy)")
    OUT["rows"].append(r)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small shapes (lavapipe smoke)")
    ap.add_argument("--json", default="wgpu_skinny_s6.json")
    args = ap.parse_args(argv)
    QUICK[0] = args.quick
    eng = get_engine()
    OUT["device"] = f"{eng.rt.info.name} ({eng.rt.info.backend}, {eng.rt.name})"
    log(f"device {OUT['device']}; package {ptg.__file__}")
    cp = None if args.quick else timing.cupy_or_none()
    t0 = time.time()
    big = 1 << (14 if args.quick else 21)
    shapes = [("skinny", big, 4, 4), ("wide", 4, 4, big), ("k64", 4096 if args.quick else 65536,
                                                           64, 64)]
    reps = 10 if args.quick else 100
    steps = []
    for tag, m, k, n in shapes:
        nbytes = (m * k + k * n + m * n) * 4
        base: dict = {}

        def s_copy(tag=tag, nbytes=nbytes, base=base):
            base.update(copies(eng, cp, tag, nbytes, reps))

        def s_wgpu(tag=tag, m=m, k=k, n=n, base=base):
            wgpu_rows(eng, tag, m, k, n, reps, base)

        def s_cuda(tag=tag, m=m, k=k, n=n, base=base):
            if cp is not None:
                cuda_rows(cp, tag, m, k, n, reps, base)

        steps += [s_copy, s_wgpu, s_cuda]
    timing.run_steps(steps, OUT, args.json, t0, untimed="wall (R vs 2R)")
    return 0 if all(c["ok"] for c in OUT["checks"]) and not OUT["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
