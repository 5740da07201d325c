"""The wgpu zero-sign pass's gate (``wgsl/gemm_zflags.wgsl``, ``backends/wgpu/zsign.py``): the flags
of every row of A and column of B, computed on the device, and the pass's shortcut where no term of
an output can be -0. Every case is compared as bits with the reference (tests/reference.py), which
states the ordered-zero rule on its own: operands where no term can be -0 anywhere (the old worst
case: no scan at all), where only one row of A / one column of B / one batch entry can give a -0,
``c`` holding -0 and +0 at zero outputs, batches with a broadcast operand, odd shapes, k = 0, and
each path that records the pass (generic, blocks, split k, the fast path's records, plans and
separate facts dispatch)."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_matmul
from test_zero_sign import SELECTIVE, _assert_bits

from conftest import require_backend
from pytropical_gpu import HybridContext, zero_order
from pytropical_gpu.backends import get_backend
from pytropical_gpu.backends.wgpu import fastgemm, fastpath, gemm_passes, zsign
from pytropical_gpu.semirings import get_semiring

F32 = np.float32
#: no -0 and no sign bit: no term of any ⊗ can be -0 (every output's gate is shut)
NONNEG = np.array([0.0, 0.0, 1.0, 2.0, 0.5], F32)
#: no -0 (the gate stays shut for plus, min and max ⊗): zero maxima of plus and min ⊗ are common
NONPOS = np.array([0.0, 0.0, -1.0, -2.0, -0.5], F32)
#: what c holds at a zero output: both zeros and values that are not
C_VALUES = np.array([0.0, -0.0, 0.0, -0.0, 3.0, -3.0], F32)


def _draw(rng, name, shape):
    """Operands of ``name`` whose gate is shut everywhere and whose zero outputs are common."""
    x = rng.choice(NONPOS if name in ("max_plus", "max_min") else NONNEG, shape)
    if name == "max_times":  # a zero max of products needs a row of zeros
        x[..., ::3, :] = 0.0
    return x


@pytest.fixture
def ctx():
    return HybridContext(backend=require_backend("wgpu"))


def _check(ctx, a, b, name, c=None, what=""):
    want = ref_matmul(a, b, name, c)[0]
    _assert_bits(ctx.matmul(a, b, name, c=c), want, f"{name} {what}")
    return want


def _with_signs(rng, a, b, name):
    """One row of A and one column of B (and one more row of A with a negative, for times) that
    can give a -0 term; elsewhere the gate stays shut. The -0s sit where they decide: row r's -0
    meets a zero of B in column c (min, max: that term is -0; times: too), and column c's -0 meets
    row r's -0 at one k (plus: -0 + -0)."""
    a, b = a.copy(), b.copy()
    m, k = a.shape[-2:]
    n = b.shape[-1]
    r, col, g = rng.integers(m), rng.integers(n), rng.integers(k)
    a[..., r, :] = np.where(a[..., r, :] == 0, F32(-0.0), a[..., r, :])
    a[..., r, g] = -0.0
    b[..., g, col] = -0.0
    if name.endswith("times") and m > 1:
        a[..., (r + 1) % m, g] = -1.0  # a sign bit without a -0 (times: -1 * 0 is -0)
    return a, b


@pytest.mark.parametrize("name", SELECTIVE)
def test_gate_shut_everywhere(ctx, rng, name):
    """No -0 (and, for times, no sign bit) in either operand: every zero output skips the scan;
    with c, a -0 in c keeps a min's zero -0, and a max's zero whose terms are all negative (only
    max_plus has such terms here) keeps c's -0 through the scan."""
    m, k, n = 37, 53, 29
    a, b = _draw(rng, name, (m, k)), _draw(rng, name, (k, n))
    if name == "max_plus":
        a[:5] = -rng.choice(np.array([1.0, 2.0], F32), (5, k))  # rows whose terms may all be < 0
        b[:, :3] = rng.choice(np.array([0.0, 0.5], F32), (k, 3))
    assert not _can(a, b, name).any()  # (the case is what it says: no output's gate opens)
    want = _check(ctx, a, b, name, what="shut")
    assert (want == 0).any()
    c = rng.choice(C_VALUES, (m, n))
    want = _check(ctx, a, b, name, c, "shut, c")
    if name.startswith("min") or name == "max_plus":  # a -0 c kept (max_plus: through the scan)
        assert ((want == 0) & np.signbit(want)).any()


@pytest.mark.parametrize("name", SELECTIVE)
@pytest.mark.parametrize("shape", [(37, 53, 29), (9, 70, 40), (1, 1, 1), (8, 33, 64)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gate_open_in_one_row_and_column(ctx, rng, name, shape):
    """-0 (and a negative) in one row of A and one column of B only: outputs there can take a -0
    term, all others cannot; with and without c."""
    m, k, n = shape
    a, b = _with_signs(rng, _draw(rng, name, (m, k)), _draw(rng, name, (k, n)), name)
    can = _can(a, b, name)
    assert can.any() and (m * n == 1 or not can.all())  # open for some outputs only
    want = _check(ctx, a, b, name, what="open")
    if name.startswith("min") and m * n > 1:
        assert ((want == 0) & np.signbit(want)).any() and ((want == 0) & ~np.signbit(want)).any()
    _check(ctx, a, b, name, rng.choice(C_VALUES, (m, n)), "open, c")


@pytest.mark.parametrize("name", SELECTIVE)
def test_batches_with_a_broadcast_operand(ctx, rng, name):
    """A batched and B shared, then A shared and B batched: the -0 sits in one batch entry only,
    so the flags of each entry must be read at its own offset (and the shared one's at 0)."""
    m, k, n = 11, 21, 13
    a3 = _draw(rng, name, (3, m, k))
    b = _draw(rng, name, (k, n))
    a1, b1 = _with_signs(rng, a3[1], b, name)
    a3[1] = a1
    c = rng.choice(C_VALUES, (3, m, n))
    for cc in (None, c, c[0]):
        _assert_bits(ctx.matmul(a3, b1, name, c=cc), ref_matmul(a3, b1[None], name, cc)[0],
                     f"{name} A batched, c {None if cc is None else cc.shape}")
    b3 = _draw(rng, name, (3, k, n))
    a, b2 = _with_signs(rng, _draw(rng, name, (m, k)), b3[2], name)
    b3[2] = b2
    for cc in (None, c):
        _assert_bits(ctx.matmul(a, b3, name, c=cc), ref_matmul(a[None], b3, name, cc)[0],
                     f"{name} B batched, c {cc is not None}")


@pytest.mark.parametrize("name", SELECTIVE)
def test_k_zero(ctx, rng, name):
    """k = 0: every output is c (or the semiring's zero, never 0); a zero c keeps its sign."""
    a, b = np.zeros((6, 0), F32), np.zeros((0, 5), F32)
    c = rng.choice(C_VALUES, (6, 5))
    want = _check(ctx, a, b, name, c, "k=0")
    _assert_bits(want, c, f"{name} k=0 is c")


@pytest.mark.parametrize("route", ["eager", "plans", "records", "separate_facts"])
@pytest.mark.parametrize("name", ["min_times", "max_plus", "min_max", "max_min"])
def test_resident_routes(ctx, rng, monkeypatch, name, route):
    """The gate on resident operands: kept on the device (generic path, eager) and queued through
    the fast path's plans (fastgemm), its records (fastpath) and its separate facts dispatch, each
    record reusing its own flags buffer for two products in one submit."""
    if route == "records":
        monkeypatch.setattr(fastgemm, "PLANS", False)
    if route == "separate_facts":
        monkeypatch.setattr(fastpath, "FUSED_FACTS_GROUPS", 0)
    m, k, n = 12, 40, 33
    a0, b0 = _draw(rng, name, (m, k)), _draw(rng, name, (k, n))
    a1, b1 = _with_signs(rng, a0, b0, name)
    A0, B0, A1, B1 = (ctx.to_device(x) for x in (a0, b0, a1, b1))
    eng = get_backend("wgpu").engine
    before = eng.stats.get("fast_calls", 0)
    if route == "eager":
        got = [ctx.matmul(A1, B1, name), ctx.matmul(A0, B0, name), ctx.matmul(A1, B1, name)]
    else:
        with ctx.batch():  # one record, one flags buffer: open, shut, open again
            got = [ctx.matmul(A1, B1, name), ctx.matmul(A0, B0, name), ctx.matmul(A1, B1, name)]
        assert eng.stats.get("fast_calls", 0) - before == 3
    for x, (a, b) in zip(got, ((a1, b1), (a0, b0), (a1, b1))):
        _assert_bits(ctx.to_host(x), ref_matmul(a, b, name)[0], f"{name} {route}")


@pytest.mark.parametrize("name", ["min_plus", "max_times", "min_max"])
def test_split_k_and_blocks(ctx, rng, monkeypatch, name):
    """Split k (the pass after the layers' fold) and blocks beyond one binding (a gate per block
    on the block's own bindings), gate open in one row and column."""
    from test_wgpu_engine import _small_engine

    monkeypatch.setattr(gemm_passes, "SPLIT_MIN_K", 16)
    monkeypatch.setattr(gemm_passes, "SPLIT_MIN_WORK", 0)
    a, b = _with_signs(rng, _draw(rng, name, (37, 70)), _draw(rng, name, (70, 129)), name)
    assert gemm_passes.split_plan(37, 129, 70, 1 << 30, 4)[0] > 1
    c = rng.choice(C_VALUES, (37, 129))
    _check(ctx, a, b, name, what="split")
    _check(ctx, a, b, name, c, "split, c")
    be = _small_engine()
    a3, b3 = _with_signs(rng, _draw(rng, name, (2, 300, 70)), _draw(rng, name, (70, 90)), name)
    _assert_bits(be.matmul(a3, b3, name), ref_matmul(a3, b3[None], name)[0], f"{name} blocks")


def _host_flags(x: np.ndarray, axis: int) -> np.ndarray:
    """The flags zflags writes, from numpy: bit 0 a -0 or negative subnormal, bit 1 a sign bit."""
    u = x.view(np.uint32)
    nz = ((u & 0x7F800000) == 0) & (u >= 0x80000000)
    return (nz.any(axis=axis).astype(np.uint32) | (np.signbit(x).any(axis=axis) << 1)).astype(
        np.uint32)


def _can(a: np.ndarray, b: np.ndarray, name: str) -> np.ndarray:
    """(m, n): a term of the output can be -0, by the gate's rule from the host flags."""
    fa, fb = _host_flags(a, -1)[:, None], _host_flags(b, 0)[None, :]
    mul = name.split("_")[1]
    if mul == "plus":
        return (fa & fb & 1) != 0
    return ((fa | fb) & (2 if mul == "times" else 1)) != 0


@pytest.mark.parametrize("shape", [(3, 1, 300, 70, 90), (1, 2, 37, 53, 29), (2, 2, 9, 1000, 33),
                                   (1, 1, 1, 1, 1), (1, 1, 5, 2100, 7)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("open_", [True, False], ids=["open", "shut"])
def test_flags_kernel(rng, shape, open_):
    """The any-zero and flags dispatches alone, against numpy, on an engine of 64 workgroups a
    dimension (2-D grids), rows not a multiple of 8, columns not of 32, k not of 32 or 8 and over
    two chunks of a row (2100 > 2 KA), a negative subnormal (bit 0 too) and a broadcast operand;
    FL starts as junk, so every word read must have been written. Open (one zero output in D):
    the flags are numpy's, the any word 1. Shut (no zero output): the flags are not computed
    (every flag word cleared, though A and B hold -0 and signs) and the any word is 0."""
    from test_wgpu_engine import _small_engine

    require_backend("wgpu")
    na, nb, m, k, n = shape
    eng = _small_engine(limit=1 << 26).engine
    vals = np.array([0.0, 1.0, 2.0, 0.5, 3.0], F32)
    a, b = rng.choice(vals, (na, m, k)), rng.choice(vals, (nb, k, n))
    for x, t in ((a, -0.0), (a, -1.0), (b, -0.0), (b, -np.inf), (a, -1e-40), (b, -1e-40)):
        idx = tuple(rng.integers(s) for s in x.shape)
        x[idx] = t
    nbat = max(na, nb)
    d = rng.choice(np.array([1.0, -2.0, 1e-40, -1e-40], F32), nbat * m * n)  # subnormals: no zero
    if open_:
        d[rng.integers(d.size)] = rng.choice(np.array([0.0, -0.0], F32))
    rec = zsign.record(eng, get_semiring("min_plus"), np.dtype(F32), m, n, k, nbat,
                       m * k if na > 1 else 0, k * n if nb > 1 else 0)
    A, B, D, FL = eng.upload(a), eng.upload(b), eng.upload(d), eng.alloc(rec.nbytes)
    eng.rt.write(FL.handle, np.full(rec.nbytes // 4, 0xFFFF, np.uint32))
    eng.submit(rec.dispatches(A.binding(), B.binding(), D.binding(), fl=FL.binding())[:2])
    got = eng.download(FL, np.uint32, (rec.nbytes // 4,))
    want = np.concatenate([_host_flags(a, 2).reshape(-1), _host_flags(b, 1).reshape(-1)])
    assert want.any()  # (computed, the flags would not be 0)
    np.testing.assert_array_equal(got[:rec.fz], want if open_ else 0 * want)
    assert set(got[rec.fz:rec.fs].tolist()) <= {0, 1} and got[rec.fs] == int(open_)
    eng.release(A, B, D, FL)


def test_fix_host_agrees(rng):
    """The reference and zero_order.fix_host (the cpu backend's rule) agree on the gate's cases,
    so the tests above hold the wgpu pass to the library's own rule."""
    for name in SELECTIVE:
        sr = get_semiring(name)
        a, b = _with_signs(rng, _draw(rng, name, (9, 17)), _draw(rng, name, (17, 8)), name)
        c = rng.choice(C_VALUES, (1, 9, 8))
        want = ref_matmul(a, b, name, c[0])[0]
        d = want.copy()[None]
        d[d == 0] = 0.0  # every zero +0: fix_host recomputes each sign
        zero_order.fix_host(d, a[None], b[None], sr, c)
        _assert_bits(d[0], want, f"{name} fix_host")
