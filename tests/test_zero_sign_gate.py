"""The facts that let the cuda backend skip the zero-sign pass (``zero_order.no_negative_zero``) and the
sign facts behind them (``Facts.negzero`` / ``signbit``), on the host: wherever the gate says no
zero term nor ``c`` can be -0, the independent reference (tests/reference.py) has no -0 output, so
the pass could change nothing. Operands mix ±0, negatives, ±inf and values whose products underflow
to a zero of either sign; odd shapes; with and without ``c``. The cuda side (the one-kernel facts,
the pass skipped or run) is in test_cuda_zero_sign.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from reference import ref_matmul

from pytropical_gpu import facts, zero_order
from pytropical_gpu.semirings import get_semiring

SELECTIVE = ["min_plus", "max_plus", "min_times", "max_times", "min_max", "max_min"]
POS = np.array([0.0, 1.0, 2.0, 1e-30, np.inf])  # no sign bit (1e-30 * 1e-30 underflows to +0)
NEG = np.array([-1.0, -2.0, -1e-30, -np.inf])  # sign bit, no -0


def _signs_by_hand(x: np.ndarray) -> tuple[bool, bool]:
    """(a -0 occurs, a sign bit occurs), element by element with math.copysign."""
    vals = [float(v) for v in np.asarray(x, np.float64).ravel() if v == v]
    return (any(v == 0 and math.copysign(1.0, v) < 0 for v in vals),
            any(math.copysign(1.0, v) < 0 for v in vals))


def _operand(rng, shape, dt, negzero: bool, negative: bool):
    """Values of POS, with NEG where ``negative`` and -0 where ``negzero`` (each at least once)."""
    pool = list(POS) + (list(NEG) if negative else []) + ([-0.0] if negzero else [])
    x = rng.choice(np.array(pool), shape).astype(dt)
    if negzero:
        x.flat[rng.integers(x.size)] = -0.0
    if negative:
        x.flat[rng.integers(x.size)] = -1.0
    return x


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_sign_facts_match_a_scan_by_hand(rng, dt):
    """negzero / signbit equal a per-element copysign scan, NaN aside, for host arrays."""
    cases = [np.array([], dt), np.array([np.nan, -np.nan], dt), np.array([-0.0], dt),
             np.array([0.0, np.inf], dt), np.array([-np.inf, 1.0], dt), np.array([np.nan, -0.0], dt)]
    cases += [_operand(rng, (7, 13), dt, bool(z), bool(n)) for z in (0, 1) for n in (0, 1)]
    for x in cases:
        f = facts.Facts(x)
        assert (f.negzero, f.signbit) == _signs_by_hand(x), x


@pytest.mark.parametrize("name", SELECTIVE)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_a_settled_gate_means_no_negative_zero_output(rng, name, dt):
    """Where the gate skips the pass, the reference has no -0 output; both answers of the gate
    occur (the test is not vacuous) and every answer it gives is checked."""
    sr = get_semiring(name)
    seen = set()
    for trial in range(64):  # every combination of the six sign choices once
        m, k, n = 1 + trial % 5, 1 + (trial * 7) % 9, 1 + (trial * 3) % 6
        flags = [bool((trial >> i) & 1) for i in range(6)]
        a = _operand(rng, (m, k), dt, flags[0], flags[1])
        b = _operand(rng, (k, n), dt, flags[2], flags[3])
        c = _operand(rng, (m, n), dt, flags[4], flags[5]) if trial % 3 else None
        known = {"a": facts.Facts(a), "b": facts.Facts(b), "c": None if c is None else facts.Facts(c)}
        for f in known.values():  # learn the facts as the cuda backend's one kernel does
            if f is not None:
                f.signbit  # noqa: B018
        settled = zero_order.no_negative_zero(sr, known)
        seen.add(settled)
        if settled:
            want, _ = ref_matmul(a, b, name, c)
            neg = (want == 0) & np.signbit(want)
            assert not neg.any(), (name, a, b, c, want)
    assert seen == {False, True}, seen


def test_unknown_facts_never_settle():
    """Facts not learned yet (a batch reads them at its end), an unknown c, or a user semiring: the
    pass runs."""
    sr = get_semiring("min_plus")
    a, b = np.ones((2, 2), np.float32), np.ones((2, 2), np.float32)
    fresh = {"a": facts.Facts(a), "b": facts.Facts(b), "c": None}
    assert not zero_order.no_negative_zero(sr, fresh)  # nothing peeked is known
    for f in (fresh["a"], fresh["b"]):
        f.negzero  # noqa: B018
    assert zero_order.no_negative_zero(sr, fresh)
    c = facts.Facts(np.zeros((2, 2), np.float32))
    assert not zero_order.no_negative_zero(sr, dict(fresh, c=c))  # c's -0 not learned
    c.negzero  # noqa: B018
    assert zero_order.no_negative_zero(sr, dict(fresh, c=c))
    assert not zero_order.no_negative_zero(sr, None)
    user = get_semiring("min_plus").__class__  # a user-defined semiring is never settled by facts
    assert not zero_order.no_negative_zero(
        user("u", np.minimum, np.add, np.inf, 0.0, dtypes=("float32",), selective=True), fresh)


def _keys_by_hand(x: np.ndarray) -> np.ndarray:
    """What ``cuda/operand_range.cu`` leaves in its three words for ``x``, written here from the
    values' order (not its bit trick): the key of the k-th distinct non-NaN value of the dtype's
    total order, -0 below +0, is found by ranking the value among all of the dtype's bit patterns."""
    it = np.dtype(f"u{x.itemsize}")
    bits = 8 * x.itemsize
    vals = [v for v in x.ravel() if v == v]

    def key(v):  # negative: -(magnitude bits) below 2^(bits-1); positive: 2^(bits-1) + magnitude
        u = int(np.array([v], x.dtype).view(it)[0])
        mag = u & ((1 << (bits - 1)) - 1)
        return (1 << (bits - 1)) - 1 - mag if math.copysign(1.0, float(v)) < 0 else (1 << (bits - 1)) + mag

    lo = min((key(v) for v in vals), default=None)
    hi = max((key(v) for v in vals), default=0)
    neg, sb = _signs_by_hand(x)
    flags = int(any(v != v for v in x.ravel())) | (2 if neg else 0) | (4 if sb else 0)
    inv = 0 if lo is None else ~lo & ((1 << 64) - 1)
    return np.array([inv, hi, flags], np.uint64)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_one_kernel_words_decode_to_the_host_facts(rng, dt):
    """The facts read from operand_range's words (built here by hand) equal numpy's facts of the same
    values: the decoding the cuda backend uses, checked without a GPU."""
    from pytropical_gpu import _fact_scans

    tiny = np.finfo(dt).smallest_subnormal
    pool = np.array([0.0, -0.0, 1.0, -1.0, tiny, -tiny, np.finfo(dt).max, -np.inf, np.inf], dt)
    cases = [np.full(3, np.nan, dt), np.array([np.nan, -0.0, 2.0], dt), np.array([-tiny], dt)]
    cases += [rng.choice(pool[rng.permutation(pool.size)[:1 + t % pool.size]], 9).astype(dt)
              for t in range(20)]
    for x in cases:
        if not x.size:
            continue
        got = _fact_scans.range_facts(None, np, np.dtype(dt), _keys_by_hand(x), x.size)
        want = facts.Facts(x)
        for name in ("nan", "posinf", "neginf", "absmax", "negzero", "signbit"):
            assert got[name] == want[name], (name, x, got)


def test_signs_asked_after_the_small_end_are_taken_as_present():
    """Once the range and the small end are known the operand is let go (a resident WgpuArray keeps
    its facts for its life, not its host copy); a sign fact asked after that is the conservative
    answer, which runs the pass, never a wrong "absent"."""
    x = np.ones((3, 3), np.float32)
    f = facts.Facts(x)
    assert f.min_abs == 1.0 and f._x is None
    assert f.negzero and f.signbit
    g = facts.Facts(x)
    assert not g.negzero and not g.signbit  # asked first: learned from the values
