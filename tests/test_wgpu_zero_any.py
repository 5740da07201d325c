"""The zero-sign gate's any word (``wgsl/gemm_zany.wgsl``, ``backends/wgpu/zsign.py``): one read of
D tells whether any output is a zero; none, the flags dispatch and the pass return at once. The
dispatches run here on a D made on the host (the reference's result, with one zero's sign flipped
where the GEMM could have given either), so a gate that misses that zero leaves the wrong sign and
the test fails: a zero first, last (the scalar tail where the count is not a multiple of 4, else the
last vec4 word), in the unrolled and in the single loop of the vec4 read, on a 2-D grid; odd counts,
batches with a broadcast operand, c, k = 0; and shut (no zero output: D unchanged, no flag
computed, the any word 0). Flags buffers start as junk, so every word read must have been written.
"""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_matmul
from test_zero_sign import _assert_bits

from conftest import require_backend
from pytropical_gpu.backends import get_backend
from pytropical_gpu.backends.wgpu import zsign
from pytropical_gpu.semirings import get_semiring

F32 = np.float32
SIGN = np.uint32(0x80000000)


@pytest.fixture
def eng():
    from test_wgpu_engine import _small_engine

    require_backend("wgpu")
    return _small_engine(limit=1 << 26).engine  # 64 workgroups a dimension: 2-D grids


def _run(eng, rec, a, b, d, c=None, which=slice(None), fl=None):
    """Submit ``rec``'s dispatches (``which``) on host arrays; (D after, the flags words after).
    ``fl``: the flags buffer's words before (default: junk)."""
    bufs = [eng.upload(x) for x in (a, b, d)] + ([] if c is None else [eng.upload(c)])
    FL = eng.alloc(rec.nbytes)
    eng.rt.write(FL.handle, np.full(rec.nbytes // 4, 0xFFFF, np.uint32) if fl is None else fl)
    binds = [x.binding() for x in bufs]
    eng.submit(rec.dispatches(*binds[:3], c=binds[3] if c is not None else None,
                              fl=FL.binding())[which])
    got = eng.download(bufs[2], F32, d.shape), eng.download(FL, np.uint32, (rec.nbytes // 4,))
    eng.release(*bufs, FL)
    return got


def _any_word(eng, d: np.ndarray) -> int:
    """The any word the first two dispatches give for a flat D (an (m, N / m) product, k = 1; m
    the largest divisor up to 64, so the flags grid fits the small engine where it can)."""
    m = max(x for x in range(1, 65) if d.size % x == 0)
    if d.size > 1 << 20:  # the pass's grid would not: the backend's own engine
        eng = get_backend("wgpu").engine
    rec = zsign.record(eng, get_semiring("min_plus"), np.dtype(F32), m, d.size // m, 1)
    _, fl = _run(eng, rec, np.ones((m, 1), F32), np.ones((1, d.size // m), F32), d,
                 which=slice(2))
    assert set(fl[rec.fz:rec.fs].tolist()) <= {0, 1}
    return int(fl[rec.fs])


# counts: < 4 (no vec4 word), multiples of 4, tails of 1-3; 4 * 4101 + 3: some threads run the
# unrolled loop, the rest the single one; 4 * 70001 + 1: a 2-D grid of any-zero workgroups;
# 4 * 600001 + 2: the most workgroups (ZMAX), each thread unrolled once, some then single
@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 7, 8, 4 * 4096, 4 * 4101 + 3, 4 * 70001 + 1,
                                  4 * 600001 + 2])
def test_any_word(eng, rng, size):
    """The any word is 1 exactly where D holds a ±0: none (only nonzeros and subnormals of both
    signs, which the pass does not touch either); one at the start, at the end, anywhere."""
    d = rng.choice(np.array([1.0, -3.0, 1e-40, -1e-40, np.inf], F32), size)
    assert _any_word(eng, d) == 0
    for at in sorted({0, size - 1, int(rng.integers(size)), max(size - 4, 0)}):
        for z in (0.0, -0.0):
            e = d.copy()
            e[at] = z
            assert _any_word(eng, e) == 1, (size, at, z)


def _case(rng, name, na, nb, m, k, n, with_c, zero):
    """Operands of ``name`` (min_plus, max_plus) whose outputs are nonzero but for one (bt, i, j)
    when ``zero``: a pair of zeros (signs drawn) at one k in A's row and B's column there (k = 0:
    c's zero); else a -0 in A that meets only nonzeros (its row's flags would be set)."""
    s = 1.0 if name.startswith("min") else -1.0
    a = (s * rng.choice(np.array([1.0, 2.0, 3.0], F32), (na, m, k))).astype(F32)
    b = (s * rng.choice(np.array([1.0, 2.0], F32), (nb, k, n))).astype(F32)
    nbat = max(na, nb)
    c = np.full((nbat, m, n), F32(s * 100.0)) if with_c or k == 0 else None
    if k and not zero:
        a[0, 0, 0] = -0.0
    bt, i, j = int(rng.integers(nbat)), int(rng.integers(m)), int(rng.integers(n))
    if zero and k:
        g = int(rng.integers(k))
        za, zb = rng.choice(np.array([0.0, -0.0], F32), 2)
        a[bt % na, i, g], b[bt % nb, g, j] = za, zb
    elif zero:
        c[bt, i, j] = rng.choice(np.array([0.0, -0.0], F32))
    return a, b, c


@pytest.mark.parametrize("name", ["min_plus", "max_plus"])
@pytest.mark.parametrize("shape", [(1, 1, 37, 53, 29), (1, 1, 1, 1, 1), (1, 1, 7, 3, 5),
                                   (3, 1, 11, 21, 13), (1, 3, 5, 9, 7), (2, 2, 4, 6, 4),
                                   (1, 1, 6, 0, 5), (2, 1, 3, 0, 3)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("with_c", [False, True], ids=["", "c"])
def test_one_zero_fixed(eng, rng, name, shape, with_c):
    """One zero output with the wrong sign: the gate opens and the pass gives it the reference's
    sign (first, last and a drawn output, each in turn); nothing else changes."""
    na, nb, m, k, n = shape
    nbat = max(na, nb)
    sr = get_semiring(name)
    for _ in range(3):
        a, b, c = _case(rng, name, na, nb, m, k, n, with_c, True)
        want = ref_matmul(a, b, name, c)[0].reshape(nbat, m, n)
        assert (want == 0).sum() == 1, want
        d = want.copy()
        d.view(np.uint32)[d == 0] ^= SIGN  # the GEMM's other zero
        rec = zsign.record(eng, sr, np.dtype(F32), m, n, k, nbat, m * k if na > 1 else 0,
                           k * n if nb > 1 else 0, m * n if c is not None else 0, c is not None)
        got, fl = _run(eng, rec, a, b, d, c)
        _assert_bits(got, want, f"{name} {shape} c={c is not None}")
        assert fl[rec.fs] == 1


@pytest.mark.parametrize("name", ["min_plus", "max_plus"])
@pytest.mark.parametrize("shape", [(1, 1, 37, 53, 29), (3, 1, 11, 2100, 13), (1, 1, 6, 0, 5)],
                         ids=lambda s: "x".join(map(str, s)))
def test_shut(eng, rng, name, shape):
    """No zero output: D comes back unchanged, no flag word was computed (A holds a -0, so its
    row's word would be set), the any word is 0."""
    na, nb, m, k, n = shape
    a, b, c = _case(rng, name, na, nb, m, k, n, k == 0, False)
    nbat = max(na, nb)
    d = ref_matmul(a, b, name, c)[0].reshape(nbat, m, n)
    assert not (d == 0).any()
    rec = zsign.record(eng, get_semiring(name), np.dtype(F32), m, n, k, nbat,
                       m * k if na > 1 else 0, 0, 0, c is not None)
    got, fl = _run(eng, rec, a, b, d, c)
    _assert_bits(got, d, f"{name} shut")
    assert not fl[:rec.fz].any() and fl[rec.fs] == 0


@pytest.mark.parametrize("any_word", [0, 1])
def test_pass_reads_the_any_word(eng, rng, any_word):
    """The pass alone on flags written by the host: any word 0, it returns before looking at D (a
    wrong-signed zero stays); 1, it gives the zero its sign (the flags say a -0 term can occur)."""
    name, m, k, n = "min_plus", 9, 17, 11
    a, b, _ = _case(rng, name, 1, 1, m, k, n, False, True)
    want = ref_matmul(a[0], b[0], name)[0][None]
    d = want.copy()
    d.view(np.uint32)[d == 0] ^= SIGN
    rec = zsign.record(eng, get_semiring(name), np.dtype(F32), m, n, k)
    fl = np.full(rec.nbytes // 4, 3, np.uint32)
    fl[rec.fs] = any_word
    got, _ = _run(eng, rec, a, b, d, which=slice(2, 3), fl=fl)
    _assert_bits(got, want if any_word else d, f"any word {any_word}")


@pytest.mark.parametrize("na", [1, 2])
def test_pass_strides_over_outputs(eng, rng, na):
    """More outputs a batch entry than the pass's capped grid has threads (ZCAP * WG): zeros at
    the first output, in the first stride's last thread, and at the last output (its thread's
    second turn; the rows' and columns' -0s also meet across: 9 zeros), each with the wrong sign,
    are all fixed; A batched or shared."""
    m, k, n = 1030, 2, 521
    assert m * n > zsign.ZCAP * 256
    a = rng.choice(np.array([1.0, 2.0], F32), (na, m, k))
    b = rng.choice(np.array([1.0, 2.0], F32), (1, k, n))
    for at in (0, zsign.ZCAP * 256 - 1, m * n - 1):
        i, j = divmod(at, n)
        a[-1, i, 0] = b[0, 0, j] = -0.0  # (i, j) of the last batch entry: -0 + -0
    want = ref_matmul(a, b, "min_plus")[0].reshape(na, m, n)
    assert all(want[-1].reshape(-1)[t] == 0 for t in (0, zsign.ZCAP * 256 - 1, m * n - 1))
    d = want.copy()
    d.view(np.uint32)[d == 0] ^= SIGN
    rec = zsign.record(eng, get_semiring("min_plus"), np.dtype(F32), m, n, k, na,
                       m * k if na > 1 else 0)
    got, fl = _run(eng, rec, a, b, d)
    _assert_bits(got, want, f"strided, A batch {na}")
