"""KERNELS.md: guards, padding and tile choice follow one rule in wgsl/ and cuda/, so a user-defined
semiring answers the same on every backend, whichever kernel and tile the shape picks.

Two user semirings, each compared with an independent numpy loop (not the cpu backend's code):

* ``max_plus_wrap`` on int32: ⊗ is wrapping ``a + b``, so its zero INT_MIN is *not* absorbing
  (INT_MIN ⊗ INT_MIN wraps to 0, INT_MIN ⊗ -5 to INT_MAX - 4). A kernel that padded both operands
  with the zero would put a 0 into every padded cell's maximum (all real products here are
  negative); a kernel that guarded a user ⊗ would turn INT_MIN ⊗ x into INT_MIN.
* ``min_plus_user`` on float32 with +inf: its zero is absorbing under IEEE ``a + b``.

Shapes are odd in m, n and k and cross every kernel family: skinny on both GPU families, skinny on
cuda but tiled on wgpu, the small tile, and the big tile (cuda picks it when the output tiles fill
the device's SMs; wgpu when m * n > 2**20).
"""

from __future__ import annotations

import numpy as np
import pytest

import pytropical_gpu as tg

MAX_PLUS_WRAP = tg.Semiring(
    "max_plus_wrap", np.maximum, np.add, -np.inf, 0, dtypes=("int32",),
    wgsl_add="max(a, b)", wgsl_mul="a + b",
    cuda_add="max(a, b)", cuda_mul="(int)((unsigned)a + (unsigned)b)", selective=True)
MIN_PLUS_USER = tg.Semiring(
    "min_plus_user", np.minimum, np.add, np.inf, 0, dtypes=("float32",),
    wgsl_add="min(a, b)", wgsl_mul="a + b", cuda_add="fminf(a, b)", cuda_mul="a + b",
    selective=True)

#: (m, k, n): skinny everywhere; skinny on cuda, tiled on wgpu; small tile; big tile
SHAPES = [(301, 5, 3), (257, 37, 7), (67, 45, 37), (1501, 19, 1499)]


def _reference(a: np.ndarray, b: np.ndarray, add, mul, zero) -> np.ndarray:
    """⊕ over k of a[:, k] ⊗ b[k, :], one k at a time, starting from the zero."""
    acc = np.full((a.shape[0], b.shape[1]), zero, a.dtype)
    with np.errstate(over="ignore"):
        for kk in range(a.shape[1]):
            acc = add(acc, mul(a[:, kk, None], b[None, kk, :]))
    return acc


def _operands(rng, m, k, n, sr):
    if sr is MAX_PLUS_WRAP:
        a = rng.integers(-1000, 0, (m, k), dtype=np.int32)
        b = rng.integers(-1000, 0, (k, n), dtype=np.int32)
        zero = np.iinfo(np.int32).min
    else:
        a = rng.integers(-1000, 1000, (m, k)).astype(np.float32) / 8
        b = rng.integers(-1000, 1000, (k, n)).astype(np.float32) / 8
        zero = np.inf
    # a few zeros in a: products with them follow the user's ⊗ (wrap / inf), never a guard
    a[rng.random(a.shape) < 0.02] = zero
    return a, b


def _refused_here(backend, dtype) -> bool:
    """The spec: on an adapter that flushes subnormals a user float semiring is refused (TypeError),
    never approximated."""
    return np.dtype(dtype).kind == "f" and getattr(tg.get_backend(backend), "flushes_subnormals", False)


@pytest.mark.parametrize("sr", [MAX_PLUS_WRAP, MIN_PLUS_USER], ids=lambda s: s.name)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_user_semiring_same_answer_everywhere(backend, rng, sr, shape):
    m, k, n = shape
    a, b = _operands(rng, m, k, n, sr)
    want = _reference(a, b, sr.add, sr.mul, sr.zero_for(a.dtype))
    if sr is MAX_PLUS_WRAP:  # the rule is visible: real products are negative or wrap upwards
        assert (want != 0).all()
    if _refused_here(backend, a.dtype):
        with pytest.raises(TypeError, match="flushes subnormal"):
            tg.matmul(a, b, sr, backend=backend)
        return
    got = np.asarray(tg.matmul(a, b, sr, backend=backend))
    assert got.dtype == want.dtype
    assert np.array_equal(got, want), f"{int((got != want).sum())} of {want.size} cells differ"


@pytest.mark.parametrize("sr", [MAX_PLUS_WRAP, MIN_PLUS_USER], ids=lambda s: s.name)
def test_user_semiring_epilogue_and_argmax_padding(backend, rng, sr):
    """The padded k terms never win the argmax (strict improvement, ties keep the smaller k) and
    C ⊕ (A ⊗ B) follows the same rule."""
    m, k, n = 67, 45, 37
    a, b = _operands(rng, m, k, n, sr)
    c = _operands(rng, m, 1, n, sr)[0][:, :1].repeat(n, axis=1)
    zero = sr.zero_for(a.dtype)
    ab = _reference(a, b, sr.add, sr.mul, zero)
    with np.errstate(over="ignore"):
        terms = sr.mul(a[:, :, None], b[None, :, :])  # (m, k, n)
    want_idx = np.full((m, n), -1, np.int32)
    best = np.full((m, n), zero, a.dtype)
    for kk in range(k):
        better = (sr.add(terms[:, kk], best) == terms[:, kk]) & (terms[:, kk] != best)
        best = np.where(better, terms[:, kk], best)
        want_idx[better] = kk
    want_idx[~((sr.add(ab, c) == ab) & (ab != c))] = -1
    if _refused_here(backend, a.dtype):
        with pytest.raises(TypeError, match="flushes subnormal"):
            tg.matmul(a, b, sr, c=c, return_argmax=True, backend=backend)
        return
    d, idx = tg.matmul(a, b, sr, c=c, return_argmax=True, backend=backend)
    assert np.array_equal(np.asarray(d), sr.add(c, ab))
    assert np.array_equal(np.asarray(idx), want_idx)
