"""Every GEMM kernel path cuda can pick (issue 14), on every backend, against the independent
reference (tests/reference.py), bit for bit, with and without argmax and ``c``:

* the skinny kernel (n <= 16, k <= 64) with 4 outputs a thread (n % 4 == 0) and 1;
* the mid kernel (16 < n <= 64, n % 4 == 0, k <= 64, float32, no argmax): 8, 12 and 16
  columns a thread (J 2, 3, 4), m not a multiple of its rows, k % 4 == 0 (16-byte A loads, the next
  4 terms prefetched) and not;
* the wide kernel (m <= 16, n >= 1024, k <= 64), 4 and 1 outputs a thread;
* split k (a grid that does not fill the SMs and k >= 512: parts combined in k order);
* the tiles, where max_min/min_max fold two terms with one 3-input instruction (float32 through
  order-preserving int keys, ±0 and ±inf included) and the guards are decided per k-slab: the
  zero, INT_MIN/INT_MAX, ±2^30 and ±inf sit only in the first half of k, so later slabs take the
  guard-free path (int32 plus through DPX max(a + b, acc)) while earlier ones keep the guard.
"""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_matmul

import pytropical_gpu as tg

I32 = np.iinfo(np.int32)
#: (m, k, n): skinny 4-wide, skinny 1-wide, wide 1-wide, wide 4-wide, split k, tiles (n odd: no
#: mid), mid J 2 (k % 4 == 0), mid J 4 (k odd), mid J 3, tiles (k > 64)
SHAPES = [(4100, 12, 16), (301, 7, 5), (5, 3, 1031), (4, 8, 1028), (17, 530, 9), (67, 45, 37),
          (33, 64, 20), (259, 9, 64), (130, 36, 44), (33, 68, 20)]
CASES = [("max_plus", "int32"), ("min_plus", "int32"), ("max_times", "int32"), ("min_times", "int32"),
         ("max_min", "int32"), ("min_max", "int32"), ("min_plus", "float32"), ("max_times", "float32"),
         ("min_times", "float32"), ("max_min", "float32"), ("min_max", "float32")]


def _operands(rng, name, dtype, m, k, n):
    dt = np.dtype(dtype)
    if dt.kind == "i":
        a = rng.integers(-1000, 1000, (m, k)).astype(dt)
        b = rng.integers(-1000, 1000, (k, n)).astype(dt)
        special = np.array([I32.min, I32.max, 2**30, -2**30, 2**30 - 1, 1 - 2**30, I32.max - 1,
                            I32.min + 1, 0, -1], dt)
    else:
        a = rng.integers(-8, 8, (m, k)).astype(dt)
        b = rng.integers(-8, 8, (k, n)).astype(dt)
        special = np.array([np.inf, -np.inf, 0.0, -0.0, 3e38, -3e38, 0.5, -0.5], dt)
    half = max(1, k // 2)
    for view in (a[:, :half], b[:half]):
        mask = rng.random(view.shape) < 0.1
        view[mask] = rng.choice(special, int(mask.sum()))
    c = rng.choice(np.concatenate([special, a.ravel()[:50]]), (m, n)).astype(dt)
    return a, b, c


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name,dtype", CASES, ids=lambda x: str(x))
@pytest.mark.parametrize("argmax", [False, True], ids=["value", "argmax"])
@pytest.mark.parametrize("with_c", [False, True], ids=["", "c"])
def test_gemm_paths_exact(backend, rng, shape, name, dtype, argmax, with_c):
    sr = tg.get_semiring(name)
    if np.dtype(dtype).name not in sr.dtypes:
        pytest.skip(f"{name} has no {dtype}")
    m, k, n = shape
    a, b, c = _operands(rng, name, dtype, m, k, n)
    c = c if with_c else None
    got = tg.matmul(a, b, name, c=c, return_argmax=argmax, backend=backend)
    want, widx = ref_matmul(a, b, name, c)
    if argmax:
        got, gidx = got
        np.testing.assert_array_equal(np.asarray(gidx), widx)
    np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("name", ["min_plus", "max_times", "max_min", "min_max"])
@pytest.mark.parametrize("kn", [(8, 20), (64, 64), (9, 44)], ids=["cp_j2", "cp_j4", "regs_j3"])
def test_mid_kernel_loops_over_many_rounds_a_warp(roles, rng, name, kn):
    """cuda's mid kernel launches at most 2 blocks an SM, so m = 70001 gives each warp 2 or 3
    rounds of 16 rows: with k % 4 == 0 the rows come through the warp's two cp.async buffers in
    turn (a round that read a buffer the next copy overwrote, or a wait for the wrong group, shows
    here and not on the small shapes above); k = 9 takes the register-load kernel. With ``c``."""
    k, n = kn
    a, b, c = _operands(rng, name, "float32", 70001, k, n)
    got = tg.matmul(a, b, name, c=c, backend="cuda")
    want, _ = ref_matmul(a, b, name, c)
    np.testing.assert_array_equal(np.asarray(got).view(np.uint32), want.view(np.uint32))
    assert [r for r in roles if r.startswith("mid")] == [f"mid{'cp' if k % 4 == 0 else ''}{-(-n // 16)}"]
