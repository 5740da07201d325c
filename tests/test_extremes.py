"""Float extremes on every backend (issue 10): subnormal operands and results, sums and products that
overflow to ±inf, ∞ × subnormal, ±FLT_MAX, ±inf (the zero and the other one), ties, for every float
semiring × return_argmax × ``c=`` × 2-D / batched / batch-1 broadcast, odd, tiled and skinny shapes,
float32 everywhere and float64 where the backend has it.

Expected: equal to the independent reference (tests/reference.py: numpy broadcasting in float64,
one rounding to the dtype, which is exact for one + or ×) with ``==`` (a subnormal is not 0; the
sign of a zero is not compared), except float plus_times, which is checked to a rounding bound
(its pools avoid order-dependent overflow). On a wgpu adapter that flushes subnormals
(``flushes_subnormals``, see SPEC.md Exactness) a call must be exact or raise ValueError naming
subnormals, never return a wrong answer, and it must raise when ``a`` or ``b`` holds a subnormal.
Nothing here skips on cuda: benchmarks/device_suite.sh runs it on the GPU with the rest of tests/.
"""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_matmul

import pytropical_gpu as tg
from conftest import supports_f64

SELECTIVE = ["min_plus", "max_plus", "min_times", "max_times", "min_max", "max_min"]
# (1,1,1) (3,1,5) (17,33,9) (4099,4,4): cuda's skinny kernel; the others its tiles, (33,8,20) with
# 16-byte loads (k % 4 == n % 4 == 0), (9,70,17) over several k slabs
SHAPES = [(1, 1, 1), (3, 1, 5), (17, 33, 9), (33, 8, 20), (65, 7, 130), (9, 70, 17), (4099, 4, 4)]
# (a batch, b batch, c batch or None for a 2-D c), [without c, with c]; "2d" also makes b
# non-contiguous; "bcast" broadcasts a batch-1 a without c, a batch-1 b and c with c
LAYOUTS = {"2d": [(None, None, None)] * 2, "batched": [(2, 2, 2)] * 2,
           "bcast": [(1, 3, None), (3, 1, 1)]}
# overflow to ±inf is the point here: numpy's overflow warnings (the cpu backend) are expected
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
CASES = [(name, arg) for name in SELECTIVE for arg in (False, True)] + [("plus_times", False)]


def _pools(dt: np.dtype) -> dict[str, np.ndarray]:
    """Value pools per scenario, from the dtype's limits (float32: tiny 1.2e-38, max 3.4e38)."""
    fi = np.finfo(dt)
    t = dt.type
    sub, tiny, big = t(fi.smallest_subnormal), t(fi.tiny), t(fi.max)
    sub_mid = t(float(tiny) * 0.3)                     # 3.5e-39
    sub_max = np.nextafter(tiny, t(0))                 # the largest subnormal
    half = t(10.0 ** np.floor((np.log10(float(tiny)) - 2) / 2))  # 1e-20: half * half is subnormal
    root = t(10.0 ** np.ceil(np.log10(float(big)) / 2))          # 1e20: root * root overflows
    inf = t(np.inf)
    pools = {
        # subnormal operands, one sign per line so the min/max often lands on a subnormal sum
        # (sub + 0, tiny - sub_max) or product (sub * 1)
        "subnormal+": [sub, sub_mid, sub_max, 0, tiny, 2 * sub, 1],
        "subnormal-": [-sub, -sub_mid, -sub_max, -0.0, -tiny, -2 * sub, -1],
        # normal operands whose products land subnormal (1e-20 * 1e-20, tiny * 0.5)
        "underflow+": [half, 3 * half, half / 7, tiny, 0.5, 2, sub_mid],
        "underflow-": [-half, -3 * half, -half / 7, -tiny, -0.5, -2, -sub_mid],
        # sums and products that overflow to ±inf
        "overflow": [big, -big, big / 2, -big / 2, root, -root, 2, -2, 0.5, 1],
        # ±inf (one is the zero) meeting subnormals (inf * sub = inf), 0 (NaN: no term), ±max
        "inf": [inf, -inf, sub, -sub_mid, 0, -0.0, 1, -1, big, -big, half],
        # few distinct values: ties everywhere (argmax: the smallest k)
        "ties": [0, 1, -1, 2, sub, -0.0],
    }
    return {k: np.array(v, dt) for k, v in pools.items()}


def _plus_times_pools(dt: np.dtype) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Small-magnitude pools (signed), and positive large ones (sums overflow in any order)."""
    p = _pools(dt)
    big, root = np.finfo(dt).max, p["overflow"][4]
    large = np.array([big, big / 2, root, 2, 1, np.inf], dt)
    return [p["subnormal+"], p["subnormal-"], p["underflow+"], p["underflow-"], p["ties"]], [large]


def _fill(rng, shape, pools, axis):
    """Values drawn per row (axis=-2) or per column (axis=-1) from a rotating choice of pools."""
    x = np.empty(shape, pools[0].dtype)
    offset = int(rng.integers(len(pools)))
    for i in range(shape[axis]):
        view = x[..., i, :] if axis == -2 else x[..., i]
        view[...] = rng.choice(pools[(i + offset) % len(pools)], size=view.shape)
    return x


def _operands(rng, name, dtype, shape, layout, with_c):
    dt = np.dtype(dtype)
    m, k, n = shape
    ba, bb, bc = LAYOUTS[layout][with_c]
    sa = (m, k) if ba is None else (ba, m, k)
    sb = (k, n) if bb is None else (bb, k, n)
    if name == "plus_times":
        small, large = _plus_times_pools(dt)
        pools = small if rng.integers(2) else large
    else:
        pools = list(_pools(dt).values())
    a = _fill(rng, sa, pools, -2)
    b = _fill(rng, sb, pools, -1)
    if layout == "2d":
        b = np.asfortranarray(b)  # not C-contiguous: the backends copy it first
    c = None
    if with_c:
        every = np.concatenate(pools)
        c = rng.choice(every, size=(m, n) if bc is None else (bc, m, n)).astype(dt)
    return a, b, c


def _has_subnormal(x) -> bool:
    x = np.asarray(x)
    return bool(np.any((x != 0) & (np.abs(x) < np.finfo(x.dtype).tiny)))


def _call(backend, a, b, name, c=None, argmax=False):
    """The backend's answer, or None where a flushing wgpu adapter refused (as the spec asks)."""
    flushes = getattr(tg.get_backend(backend), "flushes_subnormals", False)
    try:
        res = tg.matmul(a, b, name, c=c, return_argmax=argmax, backend=backend)
    except ValueError as e:
        if flushes and "subnormal" in str(e):
            return None
        raise
    if flushes:
        assert not (_has_subnormal(a) or _has_subnormal(b)), (
            "an adapter that flushes subnormals must refuse subnormal operands (SPEC Exactness)")
    return res


def _close_plus_times(got, want, a, b, c):
    """Finite entries within a rounding bound of the float64 reference; ±inf and NaN identical."""
    dt = want.dtype
    fin = np.isfinite(want)
    assert np.array_equal(got[~fin], want[~fin], equal_nan=True), "inf/NaN entries differ"
    k = a.shape[-1]
    aa = np.where(np.isfinite(a), np.abs(a.astype(np.float64)), 0)
    bb = np.where(np.isfinite(b), np.abs(b.astype(np.float64)), 0)
    with np.errstate(over="ignore"):
        scale = np.matmul(aa, bb) + (0 if c is None else np.abs(c.astype(np.float64)))
    fi = np.finfo(dt)
    bound = 4 * (k + 1) * (float(fi.eps) * scale + float(fi.tiny))
    err = np.abs(got.astype(np.float64) - np.where(fin, want, 0).astype(np.float64))
    assert np.all(err[fin] <= np.broadcast_to(bound, err.shape)[fin]), (
        f"plus_times off by more than rounding: max error {err[fin].max()}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("with_c", [False, True], ids=["", "c"])
@pytest.mark.parametrize("name,argmax", CASES, ids=[f"{n}{'-argmax' if g else ''}" for n, g in CASES])
def test_extremes_match_reference(backend, rng, name, argmax, with_c, layout, shape, dtype):
    if dtype == "float64" and not supports_f64(backend):
        pytest.skip(f"{backend} has no float64")
    a, b, c = _operands(rng, name, dtype, shape, layout, with_c)
    a0, b0, c0 = a.copy(), b.copy(), None if c is None else c.copy()
    want, want_idx = ref_matmul(a, b, name, c)
    res = _call(backend, a, b, name, c, argmax)
    assert np.array_equal(a, a0) and np.array_equal(b, b0) and (c is None or np.array_equal(c, c0))
    if res is None:
        return
    got, idx = res if argmax else (res, None)
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == want.dtype
    if name == "plus_times":
        _close_plus_times(got, want, a, b, c)
        return
    bad = got != want
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} differ; first: got {got[bad][:4]}, "
                           f"want {want[bad][:4]}")
    if argmax:
        idx = np.asarray(idx)
        assert idx.dtype == np.int32
        np.testing.assert_array_equal(idx, want_idx)


def _known(dt):
    """Hand-written cases (semiring, a, b, expected d): the failures issue 10 saw on GPUs."""
    t = dt.type
    fi = np.finfo(dt)
    sub = t(float(fi.tiny) * 0.25)                     # 2.9e-39 (3e-39 in the issue)
    half = t(10.0 ** np.floor((np.log10(float(fi.tiny)) - 2) / 2))  # 1e-20
    sq = half * half                                   # 1e-40: a subnormal product (numpy IEEE)
    inf, big = t(np.inf), t(fi.max)
    assert sub != 0 and sq != 0 and abs(sq) < fi.tiny
    return [
        ("min_plus", [[sub]], [[0]], [[sub]]),                       # 3e-39 + 0
        ("max_plus", [[-sub, 1]], [[0], [-2]], [[-sub]]),
        ("min_max", [[sub]], [[-sub]], [[sub]]),                     # nothing computed
        ("max_min", [[sub, -1]], [[2 * sub], [5]], [[sub]]),
        ("max_times", [[half]], [[half]], [[sq]]),                   # 1e-20 * 1e-20
        ("min_times", [[half, 1]], [[-half], [0]], [[-sq]]),
        ("max_times", [[inf, 1]], [[sub], [-5.34]], [[inf]]),        # inf * sub = inf, not NaN
        ("min_times", [[-inf, 1]], [[sub], [-5.34]], [[-inf]]),      # expected -inf, got -5.34
        ("max_times", [[inf]], [[0]], [[-inf]]),                     # inf * 0 = NaN: no term
        ("max_times", [[big, 1]], [[2], [1]], [[inf]]),              # overflow to +inf
        ("min_times", [[big]], [[-2]], [[-inf]]),
        ("min_plus", [[-big]], [[-big]], [[-inf]]),
        ("max_plus", [[big, -inf]], [[big], [inf]], [[inf]]),        # -inf + inf: no term
        ("min_max", [[inf, sub]], [[-inf], [-sub]], [[sub]]),
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_known_answers(backend, dtype):
    """Each case also with argmax and with a c that does not win, so every path sees it."""
    if dtype == "float64" and not supports_f64(backend):
        pytest.skip(f"{backend} has no float64")
    dt = np.dtype(dtype)
    for name, a, b, want in _known(dt):
        a, b, want = (np.array(x, dt) for x in (a, b, want))
        zero = tg.get_semiring(name).zero_for(dt)
        for c in (None, np.full(want.shape, zero, dt)):
            for argmax in (False, True):
                res = _call(backend, a, b, name, c, argmax)
                if res is None:
                    continue
                got = np.asarray(res[0] if argmax else res)
                assert np.array_equal(got, want), f"{name} {a.tolist()} x {b.tolist()}: {got} != {want}"


@pytest.mark.parametrize("with_c", [False, True], ids=["", "c"])
@pytest.mark.parametrize("name", SELECTIVE)
def test_extremes_large_tiles(backend, rng, name, with_c):
    """Enough output tiles that cuda picks its 128x128 kernels (and the tuned variants for
    min_plus/max_plus): 40 x 2 x 2 tiles > 132 SMs; k % 4 == n % 4 == 0 (16-byte loads)."""
    pools = list(_pools(np.dtype(np.float32)).values())
    a = _fill(rng, (40, 129, 12), pools, -2)
    b = _fill(rng, (1, 12, 132), pools, -1)
    c = rng.choice(np.concatenate(pools), size=(129, 132)) if with_c else None
    want, _ = ref_matmul(a, b, name, c)
    got = _call(backend, a, b, name, c)
    if got is None:
        return
    got = np.asarray(got)
    assert got.shape == want.shape
    bad = got != want
    assert not bad.any(), f"{int(bad.sum())} differ; got {got[bad][:4]}, want {want[bad][:4]}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_copies_keep_subnormals(backend, dtype):
    """The paths that only move floats: k == 0 returns c, ``out=`` receives the result, a
    transposed (non-contiguous) operand is copied first. None may flush a subnormal."""
    if dtype == "float64" and not supports_f64(backend):
        pytest.skip(f"{backend} has no float64")
    dt = np.dtype(dtype)
    sub = dt.type(float(np.finfo(dt).tiny) * 0.3)
    c = np.array([[sub, -sub, 0], [1, sub, -2 * sub]], dt)
    got = _call(backend, np.zeros((2, 0), dt), np.zeros((0, 3), dt), "min_plus", c)
    assert got is None or np.array_equal(np.asarray(got), c)
    a = np.array([[sub, 1], [2, -sub]], dt)
    b = np.zeros((2, 2), dt)
    want = np.array([[sub, sub], [-sub, -sub]], dt)  # min(a[i, :] + 0) per row
    for x in (a, np.ascontiguousarray(a.T).T):
        out = np.full((2, 2), 7, dt)
        try:
            res = tg.matmul(x, b, "min_plus", out=out, backend=backend)
        except ValueError as e:
            assert getattr(tg.get_backend(backend), "flushes_subnormals", False), e
            assert "subnormal" in str(e)
            continue
        assert res is out and np.array_equal(out, want), out
