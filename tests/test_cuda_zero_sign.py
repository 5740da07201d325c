"""The cuda backend's zero-sign pass (``backends/cuda/zero_sign.py``, ``cuda/zero_sign.cu``): every
float min/max GEMM path gives zero results the ordered sign (-0 < +0) of ``zero_order.py``.

Host part (no GPU): the module holds an instantiation for exactly the (⊕, ⊗, dtype) the rule covers
(``zero_order.applies``), and the launch's strides and grid for broadcast batches, through a
recording stand-in for ``kernels.function``. Device part, bits against the independent reference
(tests/reference.py): operands of zeros whose common terms carry the sign that does not settle the
output (max: -0, min: +0) and a few elements flipped to the one that does, beside ±inf, ±1, ±2,
±1e-30 (a zero product in float32); through the skinny, wide, small and big tiles, the NZ and the
guarded (ZN) times tiles, split k, the units launch, argmax with ``c``, broadcast batches, float64,
``out=``, cupy operands on a non-default stream, and the one settling term at the end of a long k.
The spy (``roles``) shows which kernels ran, the pass among them.
"""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_matmul

import pytropical_gpu as tg
from conftest import require_backend
from pytropical_gpu import zero_order
from pytropical_gpu.backends.cuda import gemm_units, kernels, zero_sign
from pytropical_gpu.semirings import get_semiring

SELECTIVE = ["min_plus", "max_plus", "min_times", "max_times", "min_max", "max_min"]
#: (a, b) zero signs (1: -0) whose terms have the sign that does not settle the output; flipping
#: an element of b (or, for plus / times / max ⊗, of a) makes a term that settles it
COMMON = {"max_plus": (1, 1), "min_plus": (1, 0), "max_times": (0, 1), "min_times": (0, 0),
          "max_min": (0, 1), "min_max": (1, 0)}
OTHER = np.array([1.0, -1.0, 2.0, -0.5, 1e-30, -1e-30, np.inf, -np.inf])


def _bits(x):
    x = np.asarray(x)
    return x.view(np.int64 if x.itemsize == 8 else np.int32)


def _operands(rng, name, dt, shape_a, shape_b, inf=True):
    """Zeros of COMMON's signs, about one element of b in k (half as many of a) flipped, about one
    in k of each replaced by an OTHER value (without ±inf when ``inf`` is False), and the second
    row of a all OTHER values."""
    k = shape_a[-1]
    na, nb = COMMON[name]
    a = np.full(shape_a, -0.0 if na else 0.0, dt)
    b = np.full(shape_b, -0.0 if nb else 0.0, dt)
    for x, frac in ((a, 0.5 / k), (b, 1.0 / k)):
        flip = rng.random(x.shape) < frac
        x[flip] = -x[flip]
    vals = OTHER if inf else OTHER[:6]
    for x in (a, b):
        put = rng.random(x.shape) < 1.0 / k
        x[put] = rng.choice(vals, int(put.sum()))
    if shape_a[-2] > 1:
        a[..., 1, :] = rng.choice(vals, k)
    return a, b


def _c(rng, name, dt, shape):
    """c: zeros of the sign that does not settle the output, one in ten flipped, one in ten OTHER."""
    c = np.full(shape, -0.0 if name.startswith("max") else 0.0, dt)
    r = rng.random(shape)
    c[r < 0.1] = -c[r < 0.1]
    put = r > 0.9
    c[put] = rng.choice(OTHER, int(put.sum()))
    return c


def _check(got, want, what):
    got, want = np.asarray(got), np.asarray(want)
    bad = _bits(got) != _bits(want)
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {bad.size} outputs differ in bits, first at "
                           f"{np.argwhere(bad)[0].tolist()}: got {got[bad][0]!r}, want {want[bad][0]!r}")


def _role(name, dt):
    return zero_sign.role(*name.split("_"), np.dtype(dt).name)


# ------------------------------------------------------------------------------ host
def test_module_covers_exactly_the_rule():
    for name in SELECTIVE + ["plus_times", "bor_band"]:
        sr = get_semiring(name)
        for dt in ("float32", "float64", "int32", "int64"):
            covered = sr.add_op is not None and sr.mul_op is not None and (
                zero_sign.role(sr.add_op, sr.mul_op, dt) in zero_sign.SPEC.names)
            assert covered == zero_order.applies(sr, dt), (name, dt)
    assert len(zero_sign.SPEC.names) == 16


@pytest.mark.parametrize(("ba", "bb", "bc"), [(1, 3, 3), (3, 1, None), (3, 3, 1)])
def test_launches_strides_and_flags(monkeypatch, ba, bb, bc):
    """One cooperative zero_pass, with the batch strides, the flag words' count and a grid no larger
    than can be resident."""
    launched = []

    class Fn:
        ptr = 0

        def __init__(self, role):
            self.role = role

        def __call__(self, grid, block, args, **kw):
            launched.append((self.role, grid, block, args, kw))

    monkeypatch.setattr(kernels, "function", lambda spec, role: Fn(role) if spec is zero_sign.SPEC else None)
    monkeypatch.setattr(zero_sign, "_flags", lambda size: np.full(size, 7, np.uint32))
    monkeypatch.setattr(zero_sign, "_resident", lambda fn: 3)
    gate = np.zeros(3, np.uint32)
    monkeypatch.setattr(zero_sign, "_gate", lambda: (gate, np.uint32(5)))
    m, k, n = 17, 5, 70
    batch = max(ba, bb, bc or 1)
    a, b = np.zeros((ba, m, k), np.float32), np.zeros((bb, k, n), np.float32)
    c = None if bc is None else np.zeros((bc, m, n), np.float32)
    d = np.zeros((batch, m, n), np.float32)
    zero_sign.fix(d, a, b, get_semiring("max_min"), c)
    ((r2, g2, b2, x2, kw2),) = launched
    assert r2 == "zero_sign_max_min_float32" and b2 == (zero_sign.THREADS,)
    assert kw2 == {"enable_cooperative_groups": True} and g2 == (3,)  # at most the resident blocks
    assert x2[0] is a and x2[1] is b and x2[3] is d and (x2[2] is c if c is not None else x2[2] == 0)
    assert [int(x) for x in x2[4:13]] == [m, n, k, 0 if ba == 1 else m * k, 0 if bb == 1 else k * n,
                                          0 if bc in (None, 1) else m * n, batch, ba * m, bb * n]
    flags = x2[13]  # a word per row of A, per column of B (zero_pass zeroes them)
    assert flags.shape == (ba * m + bb * n,)
    assert x2[14] is gate and int(x2[15]) == 5  # the gate and the call's epoch
    launched.clear()
    for name, dt in (("min_plus", np.int32), ("plus_times", np.float32)):  # the rule cannot matter
        zero_sign.fix(d.astype(dt), a.astype(dt), b.astype(dt), get_semiring(name), None)
    assert not launched


# ------------------------------------------------------------------------------ device
@pytest.mark.parametrize("name", SELECTIVE)
@pytest.mark.parametrize(("m", "k", "n"), [(200, 20, 12), (201, 21, 13), (3, 40, 1100), (3, 41, 1101),
                                           (9, 64, 1100), (9, 33, 130), (70, 67, 129), (9, 1030, 11),
                                           (131, 20, 36), (131, 21, 64)],
                         ids=["skinny4", "skinny1", "wide4m4", "wide1m4", "wide4", "small", "tiles",
                              "split_k", "mid3", "mid4"])
def test_paths_give_the_ordered_sign(roles, rng, name, m, k, n):
    """Every path's zeros have the ordered sign: the small-k kernels (skinny, wide, mid) without
    argmax fold them in order themselves and run no pass (so a wrong fold fails here), every other
    path and argmax run the pass last."""
    signs = set()
    na, nb = COMMON[name]
    for dt in (np.float32, np.float64):
        mid = dt == np.float32 and n % 4 == 0 and n <= 64  # sr_gemm_mid: 4-byte types only
        small_k = k <= kernels.SMALL_K and (n <= 16 or n >= 1024 or mid)
        a, b = _operands(rng, name, dt, (m, k), (k, n))
        a[0], b[:, 0] = (-0.0 if na else 0.0), (-0.0 if nb else 0.0)  # output (0, 0): the sign
        # that does not settle (the other is all but certain elsewhere: the test is never vacuous)
        c = _c(rng, name, dt, (m, n))
        for cc in (None, c):
            for argmax in (False, True):
                roles.clear()
                got = tg.matmul(a, b, name, c=cc, return_argmax=argmax, backend="cuda")
                want, widx = ref_matmul(a, b, name, cc)
                d, idx = got if argmax else (got, None)
                _check(d, want, f"{name} {dt.__name__} c={cc is not None} argmax={argmax}")
                if argmax:
                    np.testing.assert_array_equal(idx, widx)
                if small_k and not argmax:
                    assert not any(r.startswith("zero_") for r in roles), roles
                    assert roles[-1].startswith(("skinny", "wide", "mid")), roles
                else:
                    assert roles[-1] == _role(name, dt), roles
                if k == 1030:
                    assert any(r.startswith("combine") for r in roles), roles
                signs |= {bool(s) for s in np.signbit(want[want == 0])}
    assert signs == {False, True}, "the operands gave no zero of one sign: the test is vacuous"


@pytest.mark.parametrize("name", ["min_times", "max_times"])
@pytest.mark.parametrize("inf", [False, True], ids=["nz", "guarded"])
def test_times_tiles(roles, rng, name, inf):
    """9x33x130 (small tiles): the NZ tiles where the facts show no ±inf, else the guarded ones."""
    a, b = _operands(rng, name, np.float32, (9, 33), (33, 130), inf=inf)
    if inf:
        b[5, 7] = np.inf if name == "min_times" else -np.inf
    for argmax in (False, True):
        roles.clear()
        got = tg.matmul(a, b, name, return_argmax=argmax, backend="cuda")
        want, widx = ref_matmul(a, b, name)
        d, idx = got if argmax else (got, None)
        _check(d, want, f"{name} argmax={argmax}")
        if argmax:
            np.testing.assert_array_equal(idx, widx)
        assert any(r.startswith("nz_") for r in roles) == (not inf), roles


@pytest.mark.parametrize("name", ["min_plus", "max_plus"])
def test_units_launch(monkeypatch, roles, rng, name):
    be = tg.get_backend("cuda")
    monkeypatch.setattr(be, "_sm_count", lambda: 4)  # a small shape then plans big3 over units
    a, b = _operands(rng, name, np.float32, (300, 1030), (1030, 260))
    _check(tg.matmul(a, b, name, backend="cuda"), ref_matmul(a, b, name)[0], name)
    assert roles == [gemm_units.ROLE, _role(name, np.float32)], roles


@pytest.mark.parametrize("name", ["max_plus", "min_max"])
def test_big_tile_sampled_rows(roles, rng, name):
    m, k, n = 1536, 72, 1540  # >= 132 tiles of 128 x 128: the big tile
    a, b = _operands(rng, name, np.float32, (m, k), (k, n))
    d = tg.matmul(a, b, name, backend="cuda")
    rows = np.r_[0:4, rng.integers(4, m - 70, 24), m - 70:m]
    _check(d[rows], ref_matmul(a[rows], b, name)[0], name)
    assert any(r.startswith("big") for r in roles), roles


@pytest.mark.parametrize("name", ["max_plus", "min_times", "max_min"])
def test_batched_broadcast(roles, rng, name):
    for dt in (np.float32, np.float64):
        a, b = _operands(rng, name, dt, (3, 9, 21), (1, 21, 10))
        c = _c(rng, name, dt, (1, 9, 10))
        _check(tg.matmul(a, b, name, c=c, backend="cuda"), ref_matmul(a, b, name, c)[0], "a batched")
        a1 = a[:1].copy()
        b3 = np.concatenate([b, -b, b[:, ::-1]])  # three different b
        _check(tg.matmul(a1, b3, name, backend="cuda"), ref_matmul(a1, b3, name)[0], "b batched")
        c3 = np.concatenate([c, -c, c])
        got = tg.matmul(a1, b, name, c=c3, backend="cuda")
        _check(got, ref_matmul(a1, b, name, c3)[0], "c batched")


@pytest.mark.parametrize("name", ["min_plus", "max_times"])
def test_cupy_operands_out_and_stream(roles, rng, name):
    import cupy as cp

    a, b = _operands(rng, name, np.float64, (40, 90), (90, 50))
    want = ref_matmul(a, b, name)[0]
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        got = tg.matmul(cp.asarray(a), cp.asarray(b), name, backend="cuda")
        out = cp.full((40, 50), 7.0)
        tg.matmul(cp.asarray(a), cp.asarray(b), name, out=out, backend="cuda")
    s.synchronize()
    assert isinstance(got, cp.ndarray)
    _check(got.get(), want, "cupy in and out")
    _check(out.get(), want, "out= (cupy)")
    host = np.full((40, 50), 7.0)
    tg.matmul(a, b, name, out=host, backend="cuda")
    _check(host, want, "out= (numpy)")


@pytest.mark.parametrize("name", ["max_plus", "min_max"])
def test_the_settling_term_is_the_last(roles, rng, name):
    """Every term of a long k has the sign that does not settle the output but the last one of some
    columns: the scan reaches the end (split k as well)."""
    m, k, n = 7, 5000, 45
    na, nb = COMMON[name]
    a = np.full((m, k), -0.0 if na else 0.0, np.float32)
    b = np.full((k, n), -0.0 if nb else 0.0, np.float32)
    b[-1, ::3] = -b[-1, ::3]
    want = ref_matmul(a, b, name)[0]
    assert np.signbit(want[:, 1]).all() != np.signbit(want[:, 0]).all()  # the flip settles
    _check(tg.matmul(a, b, name, backend="cuda"), want, name)


#: base values a semiring's operands take so that most outputs are zeros whose terms cannot be -0
#: (the flags then skip the scan), and what is planted in a few rows of A and columns of B
BASE = {"min_plus": [0.0, 1.0, 2.0], "max_plus": [0.0, -1.0, -2.0], "min_times": [0.0, 1.0, 2.0],
        "max_times": [0.0, 0.0, 0.0, 1.0], "min_max": [0.0, 1.0], "max_min": [0.0, 0.0, 0.0, 1.0]}
PLANT = [-0.0, -0.0, -1.0]


@pytest.mark.parametrize("name", SELECTIVE)
@pytest.mark.parametrize(("ba", "bb"), [(1, 1), (3, 1), (1, 3)])
def test_row_and_column_flags_gate_the_scan(roles, rng, name, ba, bb):
    """Most rows of A and columns of B hold no -0 (nor, for times, a negative): their zero outputs
    are settled from the flags alone (min: c's sign, max: +0); a few rows and columns get -0 or
    -1 planted, some late in a long k (past the first chunk of A's rows and of B's columns), so
    the flags of a row or column reach it across chunks and its outputs are scanned."""
    m, k, n = 37, 1300, 45
    for dt in (np.float32, np.float64):
        a = rng.choice(BASE[name], (ba, m, k)).astype(dt)
        b = rng.choice(BASE[name], (bb, k, n)).astype(dt)
        for z in range(ba):
            for row in rng.choice(m, 3, replace=False):
                a[z, row, rng.choice([3, 1299, int(rng.integers(k))])] = rng.choice(PLANT)
        for z in range(bb):
            for col in rng.choice(n, 3, replace=False):
                b[z, rng.choice([5, 1299, int(rng.integers(k))]), col] = rng.choice(PLANT)
        if name.startswith("max"):  # a zero row of each kind: every term of its outputs a zero
            a[0, 0] = 0.0
            a[0, 1] = -0.0
        if name == "max_plus":  # -0 + -0 is its only -0 term: a column of -0 meets the -0 row
            b[0, :, 0] = -0.0
        c = rng.choice([0.0, -0.0, 5.0, -5.0], (max(ba, bb), m, n)).astype(dt)
        signs = set()
        for cc in (None, c):
            want = ref_matmul(a, b, name, cc)[0]
            _check(tg.matmul(a, b, name, c=cc, backend="cuda"), want, f"{name} {dt.__name__}")
            signs |= {bool(s) for s in np.signbit(want[want == 0])}
        assert signs == {False, True}, "no zero of one sign: the test is vacuous"
        assert roles[-1] == _role(name, dt), roles


def test_gate_word_holds_the_epoch_only_after_a_zero(roles):
    """The stream's gate word takes a call's epoch where its output holds a zero and keeps the last
    one otherwise, so a call without a zero after one with finds the gate shut (its epoch is new)."""
    import cupy as cp

    sr = get_semiring("min_plus")
    a, b = cp.asarray(np.full((1, 5, 70), 1.0, np.float32)), cp.asarray(np.ones((1, 70, 6), np.float32))
    for zero in (True, False, False, True, True, False):
        d = cp.full((1, 5, 6), 2.0, np.float32)
        if zero:
            d[0, 4, 5] = -0.0  # a zero that no term makes (every term is 2): the pass sets +0
        zero_sign.fix(d, a, b, sr, None)
        gate, epoch = zero_sign._gates[zero_sign.stream_key(cp)]
        assert (int(gate.get()[0]) == epoch) == zero, (zero, int(gate.get()[0]), epoch)
        assert int(gate.get()[1]) == 0  # the pass's grid barrier leaves its count at 0
        assert int(d[0, 4, 5].get().view(np.int32)) == (0 if zero else 0x40000000)


def test_unaligned_output(roles, rng):
    """The pass on an output 4 bytes past a 16-byte boundary (its zero check reads element-wise)."""
    import cupy as cp

    a = rng.choice([0.0, -0.0, 1.0], (1, 9, 40)).astype(np.float32)
    b = rng.choice([0.0, -0.0, 1.0], (1, 40, 13)).astype(np.float32)
    a[0, 0], b[0, :, 0] = 0.0, 0.0  # output (0, 0) is +0 and (1, 1) -0, whatever the seed (with 40
    a[0, 1], b[0, :, 1] = -0.0, -0.0  # random terms almost every zero output is -0)
    want = ref_matmul(a, b, "min_plus")[0]
    assert set(np.signbit(want[want == 0]).tolist()) == {False, True}
    raw = cp.empty(1 + want.size, np.float32)
    d = raw[1:].reshape(want.shape)
    d[...] = cp.asarray(np.abs(want))  # every zero +0: the -0 ones are the pass's to set
    assert d.data.ptr % 16 != 0
    zero_sign.fix(d, cp.asarray(a), cp.asarray(b), get_semiring("min_plus"), None)
    _check(d.get(), want, "unaligned")


# ------------------------------------------------------------------------------ the facts' gate
def _facts_of(f):
    return (f.nan, f["posinf"], f["neginf"], f.absmax, f.negzero, f.signbit)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_one_kernel_facts_equal_the_host_facts(rng, dt):
    """operand_range's one read gives the range and sign facts numpy gives the same values:
    NaN, ±inf, subnormals, ±0, odd sizes, an empty and an all-NaN operand, and a strided view
    (which takes CuPy's two reductions and learns the signs on demand)."""
    require_backend("cuda")
    import cupy as cp

    from pytropical_gpu import facts
    from pytropical_gpu.backends.cuda import operand_range

    tiny = np.finfo(dt).smallest_subnormal
    pool = np.array([0.0, -0.0, 1.0, -1.0, tiny, -tiny, 3e38, -3e38, np.inf, -np.inf], dt)
    cases = [np.array([], dt), np.full(5, np.nan, dt), np.array([np.nan, -0.0, 2.0], dt),
             np.array([tiny], dt), np.array([-tiny], dt), np.array([-0.0], dt)]
    for size in (1, 257, 1023, 300_007):
        for pick in (pool, pool[[0, 2, 4, 6]], pool[[1, 3, 5]], pool[[2, 8]]):
            cases.append(rng.choice(pick, size).astype(dt))
    for x in cases:
        d = cp.asarray(x)
        assert operand_range.applies(d)
        assert _facts_of(facts.Facts(d, cp)) == _facts_of(facts.Facts(x)), x[:8]
        if x.size > 1:
            v = cp.asarray(np.repeat(x, 2))[::2]  # strided: not the one kernel
            assert not operand_range.applies(v)
            assert _facts_of(facts.Facts(v, cp)) == _facts_of(facts.Facts(x)), x[:8]


@pytest.mark.parametrize("name", SELECTIVE)
@pytest.mark.parametrize(("m", "k", "n"), [(70, 67, 129), (9, 1030, 11), (201, 21, 13), (3, 41, 1101)],
                         ids=["tiles", "split_k", "skinny", "wide"])
def test_the_pass_runs_only_where_a_zero_term_can_be_negative(monkeypatch, rng, name, m, k, n):
    """cupy operands whose facts show no zero term can be -0 (for plus: -0 in a only; times: no
    sign bit in either; min / max ⊗: no -0 in either) skip the pass, and every output still equals
    the reference bit for bit; -0 in both operands, or in c, runs it. With and without argmax."""
    require_backend("cuda")
    import cupy as cp

    calls = []
    real = zero_sign.fix
    monkeypatch.setattr(zero_sign, "fix", lambda *a, **k: calls.append(1) or real(*a, **k))
    mul = name.split("_")[1]
    for dt in (np.float32, np.float64):
        pos = np.array([0.0, 0.0, 1.0, 2.0, 1e-30, np.inf], dt)  # 1e-30 ** 2 underflows to +0
        a = rng.choice(pos, (m, k)).astype(dt)
        b = rng.choice(pos, (k, n)).astype(dt)
        if mul == "plus":
            a[rng.random(a.shape) < 0.3] = -0.0  # -0 + +0 = +0: no -0 term
        c_neg = rng.choice(np.array([-0.0, 0.0, 5.0], dt), (m, n))
        for cc, settled in ((None, True), (c_neg, False)):
            for argmax in (False, True):
                calls.clear()
                got = tg.matmul(cp.asarray(a), cp.asarray(b), name, return_argmax=argmax,
                                c=None if cc is None else cp.asarray(cc), backend="cuda")
                d = got[0] if argmax else got
                want, widx = ref_matmul(a, b, name, cc)
                _check(d.get(), want, f"{name} {dt.__name__} c={cc is not None} argmax={argmax}")
                if argmax:
                    np.testing.assert_array_equal(got[1].get(), widx)
                small_k = k <= kernels.SMALL_K and not argmax  # orders zeros itself: no pass
                assert bool(calls) == (not settled and not small_k), (calls, settled)
        neg = a.copy()
        neg[rng.random(neg.shape) < 0.3] = -0.0 if mul != "times" else -1.0
        nb = b.copy()
        nb[0, :] = -0.0
        calls.clear()
        got = tg.matmul(cp.asarray(neg), cp.asarray(nb), name, return_argmax=True, backend="cuda")
        _check(got[0].get(), ref_matmul(neg, nb, name)[0], f"{name} {dt.__name__} -0 in both")
        assert calls, "the facts allow a -0 term: the pass runs"
