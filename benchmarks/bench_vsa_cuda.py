"""The cuda backend's VSA kernels against the device's copy bandwidth (issue 15, cuda rows).

bind, dot, bundle of 8 / 64 / 1,024 vectors, soft accumulate and harden (3 bits) on 2^30 trits
(per vector, or in total for the bundles of 64 and 1,024), planes resident. Each row is timed twice
in the same run, with the vectorised kernels (``vsa_launch.VECTORISED = True``, cuda/vsa_vec.cu)
and the previous ones (False), both checked equal first (a mismatch exits 1), and beside a device
copy of the same byte count: ``ratio`` = copy time / our time = our fraction of copy bandwidth.
"kernel" rows call the backend's kernel method on the planes; "api" rows the public call (its
Python work before the launch lies between the CUDA events). CUDA events via
``cupyx.profiler.benchmark``, median of 20.

Run: ``python -m benchmarks.bench_vsa_cuda [--quick] [--json PATH]`` from the repo root.
"""

from __future__ import annotations

import sys

import numpy as np

try:  # imported as benchmarks.bench_vsa_cuda (python -m, the CLI) or run as a script
    from . import _harness as h
except ImportError:  # pragma: no cover
    import _harness as h

    h.use_checkout()

import pytropical_gpu as tg
from pytropical_gpu.backends.cuda import vsa_launch
from pytropical_gpu.vsa import SoftTernaryVec, TernaryVec

PATHS = {"new": True, "old": False}
REPEATS = 20


def _timing(fn, repeats: int = REPEATS) -> h.Timing:
    from cupyx.profiler import benchmark

    t = np.asarray(benchmark(fn, n_repeat=repeats, n_warmup=3).gpu_times[0])
    q20, med, q80 = np.quantile(t, [0.2, 0.5, 0.8])
    return h.Timing(float(med), float(q20), float(q80), len(t))


def _planes(cp, rows: int, words: int, seed: int):
    """Deterministic valid ternary planes (rows, words): pos = 1/2, neg = 1/4 of the trits."""
    x = (cp.arange(rows * words, dtype=cp.uint64) + np.uint64(seed << 40)) * np.uint64(0x9E3779B97F4A7C15)
    x ^= x >> np.uint64(29)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(32)
    p = (x >> np.uint64(32)).astype(cp.uint32).reshape(rows, words)
    n = x.astype(cp.uint32).reshape(rows, words) & ~p
    return p, n


def _same(what: str, a, b) -> None:
    import cupy as cp

    for x, y in zip(a, b):
        if x.shape != y.shape or not bool(cp.array_equal(x, y)):
            raise h.CheckFailed(f"{what}: the vectorised and the previous kernels differ")


def run(quick: bool = False, progress=None) -> list[h.Result]:
    import cupy as cp

    progress = progress or (lambda s: None)
    be = tg.get_backend("cuda")
    dev = be.describe()["device"]
    total = 1 << (24 if quick else 30)  # trits
    words = total // 32
    rows: list[h.Result] = []
    copy_src = cp.zeros(10 * words, cp.uint32)  # the largest row moves 20 planes' worth of bytes
    copy_dst = cp.empty_like(copy_src)
    copies: dict[int, h.Timing] = {}

    def copy_time(nbytes: int) -> h.Timing:
        n = nbytes // 8  # words read (= written)
        if n not in copies:
            copies[n] = _timing(lambda: cp.copyto(copy_dst[:n], copy_src[:n]))
        return copies[n]

    def measure(op: str, sizes: str, nbytes: int, fns: dict, check=None) -> None:
        """fns: {"kernel" / "api": callable}; each timed with the new and the old kernels."""
        progress(f"{op} ({sizes})")
        if check is not None:
            got = {}
            for path, flag in PATHS.items():
                vsa_launch.VECTORISED = flag
                got[path] = check()
            _same(op, got["new"], got["old"])
        tc = copy_time(nbytes)
        for level, fn in fns.items():
            for path, flag in PATHS.items():
                vsa_launch.VECTORISED = flag
                t = _timing(fn)
                rows.append(h.Result(f"{op} [{path}, {level}]", "cuda", dev, sizes, t.median, t.q20,
                                     t.q80, nbytes, "B", "device copy (same bytes)", tc.median,
                                     note=f"floor {nbytes / 4.30e12 * 1e3:.3f} ms at 4.30 TB/s"))
        vsa_launch.VECTORISED = True

    try:
        ap, an = _planes(cp, 1, words, 1)
        bp, bn = _planes(cp, 1, words, 2)
        a, b = TernaryVec._trusted(ap[0], an[0], total), TernaryVec._trusted(bp[0], bn[0], total)
        plane = 4 * words
        measure("bind", f"{total} trits", 6 * plane,
                {"kernel": lambda: be._bind(ap, an, bp, bn), "api": lambda: be.bind(a, b)},
                check=lambda: be._bind(ap, an, bp, bn))
        measure("dot", f"{total} trits", 4 * plane,
                {"kernel": lambda: be._dot(ap, an, bp, bn), "api": lambda: be.dot(a, b)},
                check=lambda: (be._dot(ap, an, bp, bn),))
        for nv in (8, 64, 1024):
            w = words if nv == 8 else words // nv
            p, n = _planes(cp, nv, w, 3 + nv)
            measure(f"bundle of {nv}", f"{nv}x{w * 32} trits", (2 * nv + 2) * 4 * w,
                    {"kernel": lambda p=p, n=n: be._bundle(p, n, 1)},
                    check=lambda p=p, n=n, nv=nv: be._bundle(p, n, 1) + be._bundle(p, n, nv // 4 + 1))
            del p, n
        bits = 3
        soft = SoftTernaryVec(total, bits=bits).to_device()
        soft.accumulate(TernaryVec._trusted(ap[0], an[0], total), backend="cuda")
        sign, mag = soft.sign.reshape(1, words), soft.mag.reshape(bits, 1, words)

        def acc_check():
            s, m = sign.copy(), mag.copy()
            return be._accumulate(s, m, bp, bn)

        measure("soft accumulate (3 bits)", f"{total} trits", (6 + 4) * plane,
                {"kernel": lambda: be._accumulate(sign, mag, bp, bn)}, check=acc_check)
        measure("soft harden (3 bits, t=2)", f"{total} trits", 6 * plane,
                {"kernel": lambda: be._harden(sign, mag, 2)}, check=lambda: be._harden(sign, mag, 2))
    finally:
        vsa_launch.VECTORISED = True
    for tc_n, tc in sorted(copies.items()):
        rows.append(h.Result("device copy (read+write)", "cuda", dev, f"{tc_n * 4 >> 20} MiB",
                             tc.median, tc.q20, tc.q80, 8 * tc_n, "B"))
    return rows


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(description="pytropical_gpu cuda VSA kernels against copy bandwidth")
    p.add_argument("--quick", action="store_true", help="2^24 trits instead of 2^30")
    p.add_argument("--json", metavar="PATH", help="where to write the JSON results "
                   "(default benchmarks/results/vsa_cuda_<device>.json)")
    p.add_argument("--no-json", action="store_true")
    args = p.parse_args(argv)
    try:
        rows = run(quick=args.quick, progress=h.stderr_progress("vsa_cuda"))
    except h.CheckFailed as e:
        print(f"vsa_cuda: correctness check FAILED: {e}", file=sys.stderr)
        return 1
    h.print_table(rows)
    if not args.no_json:
        import cupy

        info = tg.get_backend("cuda").describe()
        tag = "".join(c if c.isalnum() else "_" for c in info["device"].replace("NVIDIA ", ""))
        path = args.json or h.RESULTS_DIR / f"vsa_cuda_{tag}.json"
        path = h.write_json(path, rows, info["device"], quick=args.quick, cupy=cupy.__version__,
                            backend=info, blocks_per_sm=vsa_launch.BLOCKS_PER_SM)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
