"""WGSL GEMM issue 14 rows: the argmax by k-tile split into its passes, and split-k for small grids.

Checks first (every variant exact against the cpu backend on odd shapes with ±inf, ``c``, batches,
k = 0, argmax ties), then GPU timestamps (median of 5) of:

* min_plus f32 argmax 4096³ by k-tile, per tile: the first pass alone, + ``gemm_argfix`` reading B
  in place, + ``gemm_transpose`` and ``gemm_argfix`` reading B transposed (each pass's cost is the
  difference), the transpose alone, and the same tile without argmax;
* min_plus f32 1024³ (and a few shapes the split-k rule reaches): the old choice against split-k
  over several tiles and layer counts (the fold ``gemm_splitk`` alone too);
* the CUDA backend's min_plus (and argmax) on the same shapes, CUDA events, where CuPy sees a device.

    python benchmarks/bench_wgpu_argmax.py --json wgpu_argmax_h200.json [--quick]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

os.environ.setdefault("PYTROPICAL_WEBGPU", "wgpu")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _wgpu_timing as timing  # noqa: E402
import bench_wgpu_sweep as sweep  # noqa: E402
from _wgpu_timing import cupy_or_none, cupy_seconds, kernel_time, log  # noqa: E402

import pytropical_gpu as ptg  # noqa: E402
from pytropical_gpu import facts  # noqa: E402
from pytropical_gpu.backends.wgpu import gemm  # noqa: E402
from pytropical_gpu.backends.wgpu import gemm_passes as passes  # noqa: E402
from pytropical_gpu.backends.wgpu.device import get_engine  # noqa: E402
from pytropical_gpu.semirings import get_semiring  # noqa: E402

OUT: dict = {"checks": [], "argmax": [], "split": [], "cuda": [], "errors": []}
T64 = {"BM": 64, "BN": 64, "BK": 16, "TM": 4, "TN": 4, "PF": 0}
T128x64 = {"BM": 128, "BN": 64, "BK": 16, "TM": 8, "TN": 4, "PF": 0}
T128 = {"BM": 128, "BN": 128, "BK": 16, "TM": 8, "TN": 8, "PF": 0}
T64x8 = {"BM": 64, "BN": 64, "BK": 16, "TM": 8, "TN": 8, "PF": 0}  # 64 threads


def checks(quick):
    """Every variant through the backend (bench_wgpu_sweep.check_gemm: forced tile, vs cpu)."""
    ok = True
    for tile in ([T64] if quick else [T64, T128x64, T128, dict(T64, BK=32)]):
        for bt in (False, True):
            passes.ARGFIX_BT = bt
            ok &= sweep.check_gemm("gemm_tiled", dict(tile, AT=True), True, f"AT {tile} BT={bt}")
    passes.ARGFIX_BT = True
    min_k, split_tile, work = passes.SPLIT_MIN_K, passes.SPLIT_TILE, passes.SPLIT_MIN_WORK
    passes.SPLIT_MIN_K, passes.SPLIT_MIN_WORK = 16, 0  # 37x70x129 in 3 layers (the last 6 long)
    for tile in ([T128] if quick else [T128, T128x64, T64, T64x8]):
        passes.SPLIT_TILE = tile
        ok &= sweep.check_gemm("gemm_tiled", dict(tile), False, f"split-k {tile}")
    passes.SPLIT_MIN_K, passes.SPLIT_TILE, passes.SPLIT_MIN_WORK = min_k, split_tile, work
    OUT["checks"] = sweep.OUT["checks"]
    OUT["errors"] += sweep.OUT["errors"]
    return ok


class Problem:
    """Operands resident on the device and a cpu check of sampled rows."""

    def __init__(self, eng, m, k, n, argmax, sname="min_plus"):
        rng = np.random.default_rng(0)
        self.a = (rng.integers(-1000, 1000, (m, k)) / 8).astype(np.float32)
        self.b = (rng.integers(-1000, 1000, (k, n)) / 8).astype(np.float32)
        self.eng, self.m, self.k, self.n, self.sname = eng, m, k, n, sname
        sr = get_semiring(sname)
        self.code = gemm.semiring_code(sr, np.dtype(np.float32), facts.guard_needed(
            sr, np.dtype(np.float32), facts.of(self.a), facts.of(self.b)))
        self.A, self.B = eng.upload(self.a), eng.upload(self.b)
        self.D = eng.alloc(m * n * 4)
        self.I = eng.alloc(m * n * 4) if argmax else None
        self.binds = [self.A.binding(), self.B.binding(), self.D.binding()] + (
            [self.I.binding()] if argmax else [])

    def upload(self):
        """Upload ``a`` and ``b`` again after the caller changed them; the bindings follow."""
        self.eng.release(self.A, self.B)
        self.A, self.B = self.eng.upload(self.a), self.eng.upload(self.b)
        self.binds[:2] = [self.A.binding(), self.B.binding()]

    def tiled(self, kp):
        pipe = self.eng.pipeline("gemm_tiled", **self.code.params(), **kp, HAS_C=False)
        return gemm.make_dispatch(self.eng, pipe, "gemm_tiled", kp, self.binds, self.m, self.n,
                                  self.k)

    def check(self, cmds) -> bool:
        self.eng.submit(cmds)
        rows = np.random.default_rng(1).choice(self.m, min(self.m, 4), replace=False)
        got = self.eng.download(self.D, np.float32, (self.m, self.n))[rows]
        want = ptg.matmul(self.a[rows], self.b, self.sname, backend="cpu",
                          return_argmax=self.I is not None)
        if self.I is None:
            return bool(np.array_equal(got, want))
        gi = self.eng.download(self.I, np.int32, (self.m, self.n))[rows]
        return bool(np.array_equal(got, want[0]) and np.array_equal(gi, want[1]))

    def release(self, *more):
        self.eng.release(self.A, self.B, self.D, *([self.I] if self.I is not None else []), *more)


def time_argmax(eng, size, tiles):
    """Per tile: first pass, + each second pass (B in place, B transposed), the transpose alone,
    the per-pair kernel, the same tile without argmax (run 2 also timed 16 x 16 output blocks in
    bands of SW block rows: slower, removed; commit 55681d4)."""
    reps = 5 if size >= 4096 else 20
    for tile in tiles:
        p = Problem(eng, size, size, size, True)
        plain = Problem(eng, size, size, size, False)
        try:
            kp = dict(tile, ARGMAX=True, AT=True)
            first = p.tiled(kp)
            old = passes.argfix_dispatch(eng, p.code, kp, p.binds, size, size, size)
            new, tmp = passes.argfix_commands(eng, p.code, kp, p.binds, size, size, size, bt=True)
            pair = p.tiled(dict(tile, ARGMAX=True))
            r = {"tile": tile, "m": size,
                 "ok_old": p.check([first, old]), "ok_new": p.check([first] + new),
                 "ok_pair": p.check([pair])}
            r["first_ms"] = kernel_time(eng, first, reps) * 1e3
            r["old_total_ms"] = kernel_time(eng, [first, old], reps) * 1e3
            r["new_total_ms"] = kernel_time(eng, [first] + new, reps) * 1e3
            r["transpose_ms"] = kernel_time(eng, new[0], reps) * 1e3
            r["per_pair_ms"] = kernel_time(eng, pair, reps) * 1e3
            np_ = plain.tiled(dict(tile, ARGMAX=False))
            r["ok_plain"] = plain.check([np_])
            r["no_argmax_ms"] = kernel_time(eng, np_, reps) * 1e3
            r["old_fix_ms"] = r["old_total_ms"] - r["first_ms"]
            r["new_fix_ms"] = r["new_total_ms"] - r["first_ms"]
            r["ratio_new"] = r["no_argmax_ms"] / min(v for x, v in r.items() if x.endswith("total_ms"))
            log(f"argmax {size}^3 {tile}: " + ", ".join(
                f"{x} {y:.3f}" if isinstance(y, float) else f"{x} {y}"
                for x, y in r.items() if x not in ("tile", "m")))
            OUT["argmax"].append(r)
            eng.release(*tmp)
        except Exception as e:  # noqa: BLE001
            log(f"argmax {tile}: {type(e).__name__}: {e}")
            OUT["errors"].append(f"argmax {tile}: {type(e).__name__}: {e}")
        finally:
            p.release()
            plain.release()


def time_split(eng, shapes, variants):
    for (m, k, n) in shapes:
        p = Problem(eng, m, k, n, False)
        reps = 50 if m * n * k <= 1 << 32 else 10
        kn, kp = gemm.choose_kernel(m, n, k, False, eng.limits.max_workgroup_storage)
        base = p.tiled(kp)
        r0 = {"shape": [m, k, n], "variant": "old choice", "params": kp, "ok": p.check([base]),
              "ms": kernel_time(eng, base, reps) * 1e3}
        rule = passes.split_plan(m, n, k, eng.max_binding, 4)
        rows = [r0]
        for tile, layers in variants + [(passes.SPLIT_TILE, None)]:
            try:
                s, ks = passes.split_plan(m, n, k, eng.max_binding, 4, tile, layers)
                if layers is None:
                    if s == 1:
                        continue
                    label = "new rule"
                elif s == 1:
                    label = "no split"
                else:
                    label = f"split {s}"
                kpx = dict(tile, ARGMAX=False, SK=s > 1)
                if s > 1:
                    cmds, tmp = passes.splitk_commands(eng, p.code, kpx, s, ks, p.binds, m, n, k, 4)
                else:
                    cmds, tmp = [p.tiled(dict(tile, ARGMAX=False))], []
                r = {"shape": [m, k, n], "variant": label, "params": tile, "layers": s, "ks": ks,
                     "ok": p.check(cmds), "ms": kernel_time(eng, cmds, reps) * 1e3}
                if s > 1:
                    r["fold_ms"] = kernel_time(eng, cmds[1], reps) * 1e3
                rows.append(r)
                eng.release(*tmp)
            except Exception as e:  # noqa: BLE001
                OUT["errors"].append(f"split {m}x{k}x{n} {tile} {layers}: {type(e).__name__}: {e}")
        for r in rows:
            r["tops"] = 2 * m * n * k / r["ms"] / 1e9
            r["rule"] = list(rule)
            log(f"{m}x{k}x{n} {r['variant']} {r['params']} layers {r.get('layers', 1)}: "
                f"{r['ms']:.4f} ms {r['tops']:.2f} TOPS ok={r['ok']}"
                + (f" (fold {r['fold_ms']:.4f})" if "fold_ms" in r else ""))
        OUT["split"] += rows
        p.release()


def time_cuda(cp, shapes):
    be = ptg.get_backend("cuda")
    rng = cp.random.default_rng(3)
    for m, k, n, argmax in shapes:
        try:
            a = rng.standard_normal((m, k), dtype=cp.float32)
            b = rng.standard_normal((k, n), dtype=cp.float32)
            t = cupy_seconds(cp, lambda a=a, b=b, am=argmax: be.matmul(
                a, b, "min_plus", return_argmax=am), 10 if m * n * k <= 1 << 32 else 3)
            OUT["cuda"].append({"shape": [m, k, n], "argmax": argmax, "ms": t * 1e3,
                                "tops": 2 * m * n * k / t / 1e12})
            log(f"cuda min_plus {m}x{k}x{n} argmax={argmax}: {t * 1e3:.4f} ms")
        except Exception as e:  # noqa: BLE001
            OUT["errors"].append(f"cuda {m}x{k}x{n}: {type(e).__name__}: {e}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default="wgpu_argmax.json")
    args = ap.parse_args(argv)
    eng = get_engine()
    OUT["device"] = f"{eng.rt.info.name} ({eng.rt.info.backend}, {eng.rt.name})"
    log(f"device {OUT['device']}; package {ptg.__file__}")
    t0 = time.time()
    ok = checks(args.quick)
    log(f"checks {'passed' if ok else 'FAILED'} ({time.time() - t0:.0f} s)")
    q = args.quick
    steps = [
        lambda: time_argmax(eng, 256 if q else 4096, [T64] if q else
                            [T64, dict(T64, BK=32), T128x64, dict(T128x64, BK=32), T128]),
        lambda: time_split(eng, [(256, 256, 256)] if q else
                           [(1024, 1024, 1024), (512, 512, 512), (768, 768, 768),
                            (1536, 1536, 1536), (2048, 2048, 2048), (2560, 2560, 2560),
                            (3072, 3072, 3072), (1024, 4096, 1024), (256, 8192, 256)],
                           [(T128, 2), (T128, 4), (T128, 8), (dict(T128, BK=8), 4),
                            (dict(T128, BK=32), 4), (dict(T128, PF=2), 4), (T128x64, 4)]
                           if not q else [(T128, 2), (T64, 1)]),
    ]
    cp = cupy_or_none() if os.environ.get("BENCH_CUDA") else None
    if cp is not None:  # be.matmul per call: host-bound below a few ms (run 1: 1024^3 0.72 ms)
        steps.append(lambda: time_cuda(cp, [(1024, 1024, 1024, False), (2048, 2048, 2048, False),
                                            (4096, 4096, 4096, False), (4096, 4096, 4096, True)]))
    timing.run_steps(steps, OUT, args.json, t0, untimed="wall")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
