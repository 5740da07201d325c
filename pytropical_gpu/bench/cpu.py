"""The numpy (``cpu``) backend beside the broadcasting numpy a user would write, timed in one run.

Rows: min_plus float32 and max_plus int32 GEMM vs ``(a[:, :, None] + b[None]).min(1)`` /
``.max(1)``; andor_matmul (bool in, packing included, and pre-packed) vs
``(a[:, :, None] & b[None]).any(1)``; bind / dot / bundle of bitsliced ternary vectors vs int8
numpy (``a * b``, ``(a * b).sum()``, ``np.sign(x.sum(0))``). Every result is checked against its
baseline before timing; a mismatch exits with status 1.

Run: ``python -m pytropical_gpu bench --backend cpu [--quick]`` or ``python -m benchmarks.cpu``
from the repo root (JSON to ``benchmarks/results/cpu_<host>.json``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import pytropical_gpu as tg

from . import harness as h

SEED = 20261121
BASE = "numpy broadcast"
BASE_I8 = "numpy int8"


def _gemm_rows(rng, sizes, dev, t, progress) -> list[h.Result]:
    rows = []
    for sr, dt, red in (("min_plus", np.float32, "min"), ("max_plus", np.int32, "max")):
        for s in sizes:
            if dt is np.float32:
                a = rng.standard_normal((s, s)).astype(dt)
                b = rng.standard_normal((s, s)).astype(dt)
            else:
                a = rng.integers(-1000, 1000, (s, s), dtype=dt)
                b = rng.integers(-1000, 1000, (s, s), dtype=dt)

            def ours(a=a, b=b, sr=sr):
                return tg.matmul(a, b, sr, backend="cpu")

            def base(a=a, b=b, red=red):
                return getattr(a[:, :, None] + b[None], red)(1)

            progress(f"{sr} {np.dtype(dt).name} {s}^3")
            h.check(f"{sr} {s}^3", ours(), base())
            rows.append(h.compare(f"{sr} {np.dtype(dt).name}", "cpu", dev, f"{s}x{s}x{s}", ours, base,
                                  work=2 * s**3, unit="op", baseline=BASE, **t))
    return rows


def _andor_rows(rng, s, dev, t, progress) -> list[h.Result]:
    rows = []
    for dens in (0.01, 0.5):
        a = rng.random((s, s)) < dens
        b = rng.random((s, s)) < dens
        pa, pb = tg.pack_rows(a, backend="cpu"), tg.pack_cols(b, backend="cpu")

        def base(a=a, b=b):
            return (a[:, :, None] & b[None]).any(1)

        progress(f"andor_matmul {s}^3 density {dens}")
        want = base()
        h.check(f"andor_matmul {s}^3 d={dens}", tg.andor_matmul(a, b, backend="cpu"), want)
        h.check(f"andor_matmul packed {s}^3 d={dens}", tg.andor_matmul(pa, pb, backend="cpu"), want)
        rows.append(h.compare("andor_matmul bool", "cpu", dev, f"{s}x{s}x{s} d={dens}",
                              lambda a=a, b=b: tg.andor_matmul(a, b, backend="cpu"), base,
                              work=2 * s**3, unit="op", baseline=BASE, **t))
        rows.append(h.compare("andor_matmul packed", "cpu", dev, f"{s}x{s}x{s} d={dens}",
                              lambda pa=pa, pb=pb: tg.andor_matmul(pa, pb, backend="cpu"), base,
                              work=2 * s**3, unit="op", baseline=BASE, **t))
    return rows


def _vsa_rows(rng, exps, bundle_exps, nvec, dev, t, progress) -> list[h.Result]:
    rows = []
    for e in exps:
        dim = 1 << e
        x = rng.integers(-1, 2, dim, dtype=np.int8)
        y = rng.integers(-1, 2, dim, dtype=np.int8)
        vx, vy = tg.TernaryVec.from_array(x), tg.TernaryVec.from_array(y)
        progress(f"bind/dot 2^{e} trits")
        h.check(f"bind 2^{e}", tg.bind(vx, vy, backend="cpu").to_array(), x * y)
        h.check(f"dot 2^{e}", tg.dot(vx, vy, backend="cpu"), (x * y).sum())
        rows.append(h.compare("bind", "cpu", dev, f"2^{e} trits",
                              lambda vx=vx, vy=vy: tg.bind(vx, vy, backend="cpu"),
                              lambda x=x, y=y: x * y, work=dim, unit="trit", baseline=BASE_I8, **t))
        rows.append(h.compare("dot", "cpu", dev, f"2^{e} trits",
                              lambda vx=vx, vy=vy: tg.dot(vx, vy, backend="cpu"),
                              lambda x=x, y=y: (x * y).sum(), work=dim, unit="trit",
                              baseline=BASE_I8, **t))
    for e in bundle_exps:
        dim = 1 << e
        xs = rng.integers(-1, 2, (nvec, dim), dtype=np.int8)
        vs = tg.TernaryVec.from_array(xs)
        progress(f"bundle {nvec} x 2^{e} trits")

        def base(xs=xs):
            return np.sign(xs.sum(0))

        h.check(f"bundle {nvec}x2^{e}", tg.bundle(vs, backend="cpu").to_array(), base())
        rows.append(h.compare("bundle", "cpu", dev, f"{nvec} x 2^{e} trits",
                              lambda vs=vs: tg.bundle(vs, backend="cpu"), base, work=nvec * dim,
                              unit="trit", baseline=BASE_I8, **t))
    return rows


def run(quick: bool = False, progress: Callable[[str], None] | None = None) -> list[h.Result]:
    """All cpu rows (correctness checked first; raises :class:`.harness.CheckFailed`)."""
    progress = progress or (lambda s: None)
    rng = np.random.default_rng(SEED)
    progress(f"seed {SEED}")
    dev = h.cpu_name()
    t = dict(repeats=3, warmup=1, max_time=0.5) if quick else dict(repeats=7, warmup=1, max_time=2.0)
    rows = _gemm_rows(rng, (128, 256) if quick else (256, 512), dev, t, progress)
    rows += _andor_rows(rng, 256 if quick else 512, dev, t, progress)
    rows += _vsa_rows(rng, (20, 22) if quick else (20, 22, 24), (20,) if quick else (20, 22, 24),
                      16, dev, t, progress)
    return rows
