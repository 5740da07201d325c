"""Speed of the cuda GEMM kernels compiled exactly (``-ftz=false -fmad=false ...``, the backend's
:data:`kernels.OPTIONS` through nvrtc_cache) against the same kernels compiled the old way (CuPy's
``RawModule``, which appends ``-ftz=true``), in one run, through the same ``matmul`` launch path.

Rows: min_plus and max_times float32 at 8192³ and on the skinny 2,097,152×4×4. Each variant is
checked first (16 sampled rows against CuPy broadcasting on normal data, where both must be exact),
then timed with CUDA events (``cupyx.profiler.benchmark``), two alternating rounds, median and 20/80 %
quantiles. ``ratio`` = old time / new time (> 1: the exact build is faster). The JSON also records
whether each build is exact on subnormal data (``exact_on_subnormals``: the old one is not).

Run: ``python -m benchmarks.bench_ftz [--quick] [--json PATH]`` from the repo root
(default ``benchmarks/results/ftz_<device>.json``).
"""

from __future__ import annotations

import contextlib
import sys

import numpy as np

try:  # imported as benchmarks.bench_ftz (python -m, the CLI) or run as a script
    from . import _harness as h
except ImportError:  # pragma: no cover
    import _harness as h

    h.use_checkout()

import pytropical_gpu as tg
from pytropical_gpu.backends.cuda import kernels

SEED = 20261122
OLD_OPTIONS = ("--std=c++17",)  # + CuPy's own -ftz=true
OPS = {"min_plus": ("min", np.add), "max_times": ("max", np.multiply)}


@contextlib.contextmanager
def old_build():
    """``kernels.function`` served by CuPy RawModules (-ftz=true) while the block runs."""
    import cupy

    new_function = kernels.function
    mods: dict[str, object] = {}

    def function(spec, role):
        mod = mods.get(spec.key)
        if mod is None:
            mod = mods[spec.key] = cupy.RawModule(code=spec.code(), options=OLD_OPTIONS,
                                                  name_expressions=list(spec.names.values()))
        return mod.get_function(spec.names[role])

    kernels.function = function
    try:
        yield
    finally:
        kernels.function = new_function


def _timing(fn, repeats: int, warmup: int = 2) -> np.ndarray:
    from cupyx.profiler import benchmark

    return np.asarray(benchmark(fn, n_repeat=repeats, n_warmup=warmup).gpu_times[0])


def _ref(a, b, op, k_chunk=64):
    """CuPy broadcasting (k chunked); normal data, so no guard or NaN case arises."""
    import cupy as cp

    red, fn = OPS[op]
    acc = None
    for k0 in range(0, a.shape[1], k_chunk):
        p = fn(a[:, k0:k0 + k_chunk, None], b[None, k0:k0 + k_chunk, :])
        t = p.min(axis=1) if red == "min" else p.max(axis=1)
        acc = t if acc is None else (cp.minimum(acc, t) if red == "min" else cp.maximum(acc, t))
    return acc


def _check(what, got, want):
    import cupy as cp

    if got.shape != want.shape or not bool(cp.array_equal(got, want)):
        bad = int(cp.count_nonzero(got != want)) if got.shape == want.shape else -1
        raise h.CheckFailed(f"{what}: {bad} of {want.size} elements differ from the baseline")


def _subnormal_exact(be, op) -> bool:
    """One known answer each: min_plus 3e-39 + 0 = 3e-39; max_times inf * 1e-40 = inf and
    1e-20 * 1e-20 (a subnormal product)."""
    f = np.float32
    if op == "min_plus":
        a, b = np.array([[f(3e-39)]]), np.array([[f(0.0)]])
    else:
        a, b = np.array([[f(np.inf), f(1e-20)]]), np.array([[f(1e-40), f(0)], [f(-1), f(1e-20)]])
    want = np.zeros((a.shape[0], b.shape[1]), np.float32)
    with np.errstate(invalid="ignore"):  # inf * 0 = NaN: not a candidate
        for i in range(want.shape[0]):
            for j in range(want.shape[1]):
                terms = [a[i, t] + b[t, j] if op == "min_plus" else a[i, t] * b[t, j]
                         for t in range(a.shape[1])]
                terms = [x for x in terms if not np.isnan(x)]
                want[i, j] = min(terms) if op == "min_plus" else max(terms)
    got = np.asarray(be.matmul(a, b, op))
    return bool(np.array_equal(got, want))


def run(quick: bool = False, progress=None) -> list[dict]:
    import cupy as cp

    progress = progress or (lambda s: None)
    be = tg.get_backend("cuda")
    dev = be.describe()["device"]
    rs = cp.random.default_rng(SEED)
    R = 5 if quick else 10
    s = 2048 if quick else 8192
    m = 1 << (17 if quick else 21)
    cases = [(op, f"{s}x{s}x{s}", rs.standard_normal((s, s), dtype=cp.float32),
              rs.standard_normal((s, s), dtype=cp.float32), 2 * s**3) for op in OPS]
    cases += [(op, f"{m}x4x4", rs.standard_normal((m, 4), dtype=cp.float32),
               rs.standard_normal((4, 4), dtype=cp.float32), 2 * m * 16) for op in OPS]
    rows: list[dict] = []
    for op, sizes, a, b, work in cases:
        sample = cp.arange(0, a.shape[0], max(1, a.shape[0] // 16))
        want = _ref(a[sample], b, op)
        exact = {}
        for build in ("new", "old"):
            with old_build() if build == "old" else contextlib.nullcontext():
                progress(f"{op} float32 {sizes}: check [{build}]")
                _check(f"{op} {sizes} [{build}] (sampled rows)", be.matmul(a, b, op)[sample], want)
                exact[build] = _subnormal_exact(be, op)
        if not exact["new"]:
            raise h.CheckFailed(f"{op}: the exact build loses a subnormal or an inf")
        times = {"new": [], "old": []}
        for _ in range(2):  # alternate, so drift (clocks, temperature) hits both alike
            for build in ("old", "new"):
                with old_build() if build == "old" else contextlib.nullcontext():
                    progress(f"{op} float32 {sizes}: time [{build}]")
                    times[build].append(_timing(lambda a=a, b=b, op=op: be.matmul(a, b, op), R))
        t_new, t_old = (np.concatenate(times[k]) for k in ("new", "old"))
        q20, med, q80 = np.quantile(t_new, [0.2, 0.5, 0.8])
        r = h.Result(f"{op} float32", "cuda", dev, sizes, float(med), float(q20), float(q80), work,
                     "op", "same kernel, CuPy RawModule (-ftz=true)", float(np.median(t_old)),
                     note="new: " + " ".join(kernels.OPTIONS)).as_dict()
        r.update(old_q20_s=float(np.quantile(t_old, 0.2)), old_q80_s=float(np.quantile(t_old, 0.8)),
                 exact_on_subnormals={k: v for k, v in exact.items()})
        rows.append(r)
    return rows


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(description="pytropical_gpu cuda: exact (-ftz=false) vs -ftz=true")
    p.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    p.add_argument("--json", metavar="PATH", help="where to write the JSON results "
                   "(default benchmarks/results/ftz_<device>.json)")
    p.add_argument("--no-json", action="store_true")
    args = p.parse_args(argv)
    try:
        rows = run(quick=args.quick, progress=h.stderr_progress("ftz"))
    except h.CheckFailed as e:
        print(f"ftz: correctness check FAILED: {e}", file=sys.stderr)
        return 1
    h.print_table(rows)
    if not args.no_json:
        import cupy

        info = tg.get_backend("cuda").describe()
        tag = "".join(c if c.isalnum() else "_" for c in info["device"].replace("NVIDIA ", ""))
        path = h.write_json(args.json or h.RESULTS_DIR / f"ftz_{tag}.json", rows, info["device"],
                            quick=args.quick, cupy=cupy.__version__, backend=info,
                            options_new=list(kernels.OPTIONS), options_old=list(OLD_OPTIONS))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
