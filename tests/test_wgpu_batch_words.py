"""A batch's end reads its results' facts words as arrays (``stats.Words``) and skips the deferred
checks that cannot raise (``fastchecks.cleared``); the checks that can still run, in their order.

The same random chains of queued GEMMs run three ways in one test: the words path, every reader
decoded into its dict at the batch's end (``stats.WORDS = False``, the path before) and the generic
path (``fastpath.ENABLED = False``). They must end alike: the same results bit for bit, or the same
exception type with the same message (a NaN made in the batch, on a flushing adapter the subnormal
rule meeting tiny values made in the batch). Results are also checked against numpy's product.
"""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_matmul

from conftest import require_backend
from pytropical_gpu import HybridContext
from pytropical_gpu.backends import get_backend
from pytropical_gpu.backends.wgpu import fastpath, stats

N = 20


@pytest.fixture
def ctx():
    return HybridContext(backend=require_backend("wgpu"))


def _ref(a, b, sr):
    """numpy's product (plus_times in float64); min/max_plus by tests/reference.py, whose ±inf
    absorb under ⊗ as SPEC says (inf + -inf is the semiring's zero, never NaN): a naive numpy
    max of a + b gave NaN there, and failed on the seeds whose chains met +inf with -inf."""
    if sr == "plus_times":
        with np.errstate(invalid="ignore", over="ignore"):
            return a.astype(np.float64) @ b.astype(np.float64)
    return ref_matmul(a, b, sr)[0]


def _pool(ctx):
    """Resident operands: ordinary, tiny normals (2**-110: two of them meet the flushing rule),
    zeros, an inf (times the identity: a NaN row under plus_times) and the identity."""
    ones = np.ones((N, N), np.float32)
    infs = ones.copy()
    infs[3, 0] = np.inf
    host = {"ones": ones, "tiny": np.full((N, N), 2.0**-110, np.float32),
            "zero": np.zeros((N, N), np.float32), "infs": infs, "eye": np.eye(N, dtype=np.float32),
            "small": np.arange(N * N, dtype=np.float32).reshape(N, N) % 7 - 3}
    return host, {k: ctx.to_device(v) for k, v in host.items()}


# Chains that reach each end on every seed (random chains alone reached a NaN end only twice in 40
# for one CI seed): three ending "ok", three raising for a NaN made in the batch and then used as an
# operand (a NaN result alone is no error), three meeting the subnormal rule (raising only on a
# flushing adapter).
FIXED = [
    [("min_plus", "ones", "small"), ("max_plus", "x", "eye")],
    [("plus_times", "small", "ones")],
    [("max_plus", "zero", "small"), ("ask", "x", ""), ("min_plus", "ones", "x")],
    [("plus_times", "infs", "eye"), ("max_plus", "ones", "x")],
    [("plus_times", "infs", "eye"), ("min_plus", "x", "ones")],
    [("min_plus", "small", "ones"), ("plus_times", "infs", "eye"), ("ask", "x", ""),
     ("plus_times", "x", "eye")],
    [("min_plus", "tiny", "zero"), ("max_plus", "x", "tiny")],
    [("min_plus", "tiny", "zero"), ("max_plus", "x", "x")],
    [("max_plus", "ones", "small"), ("min_plus", "tiny", "zero"), ("max_plus", "x", "tiny")],
]


def _plans(rng, count):
    """Chains of steps (semiring, left, right): a pool name, or "x" (the previous result; in both
    places, the batch's end screens two operands from their words); ("ask", "x" or "p", ""): the
    facts of the previous result or of the one before it asked inside the batch (then known, not
    words, at its end)."""
    names = ["ones", "tiny", "zero", "infs", "eye", "small"]
    out = [list(p) for p in FIXED]  # each end reached whatever the seed, then random chains
    for _ in range(count):
        steps = []
        for i in range(int(rng.integers(2, 7))):
            sr = str(rng.choice(["min_plus", "max_plus", "plus_times"], p=[0.45, 0.3, 0.25]))
            left = "x" if i and rng.random() < 0.7 else str(rng.choice(names))
            right = "x" if i and left != "x" and rng.random() < 0.5 else str(rng.choice(names))
            steps.append((sr, left, right))
        if rng.random() < 0.3:  # a NaN made in the batch (row 3: inf * 0), maybe used later
            steps.insert(int(rng.integers(0, len(steps))), ("plus_times", "infs", "eye"))
        if rng.random() < 0.25:  # the last result's facts asked inside the batch (read there)
            steps.insert(int(rng.integers(1, len(steps) + 1)), ("ask", str(rng.choice(["x", "p"])), ""))
        if rng.random() < 0.3:  # tiny values made in the batch, then met by tiny ones (⊗ plus)
            at = int(rng.integers(0, len(steps)))
            steps[at:at] = [("min_plus", "tiny", "zero"),
                            ("max_plus", "x", str(rng.choice(["tiny", "x"])))]
        out.append(steps)
    return out


def _run(ctx, dev, steps):
    """``("ok", results on the host)`` or ``("raised", type, message)``."""
    try:
        with ctx.batch():
            got, x = [], None
            for sr, left, right in steps:
                if sr == "ask":  # (a result already used as a pending operand, for "p")
                    got[-2 if left == "p" and len(got) > 1 else -1].stats.as_dict()
                    continue
                a = x if left == "x" else dev[left]
                b = x if right == "x" else dev[right]
                x = ctx.matmul(a, b, sr)
                got.append(x)
        return ("ok", [ctx.to_host(g) for g in got])
    except (ValueError, TypeError) as e:
        return ("raised", type(e), str(e))


@pytest.mark.parametrize("flushing", [False, True])
def test_words_dicts_and_generic_paths_end_alike(ctx, rng, monkeypatch, flushing):
    monkeypatch.setattr(get_backend("wgpu").engine, "flushes_subnormals", flushing)
    host, dev = _pool(ctx)
    seen = {"ok": 0, "raised": 0, "NaN": 0, "subnormal": 0}
    for steps in _plans(rng, 40):
        ends = []
        for words, fast in ((True, True), (False, True), (True, False)):
            monkeypatch.setattr(stats, "WORDS", words)
            monkeypatch.setattr(fastpath, "ENABLED", fast)
            ends.append(_run(ctx, dev, steps))
        first = ends[0]
        seen[first[0]] += 1
        if first[0] == "raised":
            seen["NaN" if "NaN" in first[2] else "subnormal"] += 1
        for other in ends[1:]:
            assert other[0] == first[0], (steps, ends)
            if first[0] == "raised":
                assert other[1:] == first[1:], steps
            else:
                for p, q in zip(first[1], other[1]):
                    np.testing.assert_array_equal(p, q)
        if first[0] == "ok":  # and numpy's product (plus_times: float sums, to tolerance)
            x = None
            for (sr, left, right), got in zip([t for t in steps if t[0] != "ask"], first[1]):
                a = x if left == "x" else host[left]
                b = x if right == "x" else host[right]
                x = _ref(a, b, sr).astype(np.float32)
                if sr == "plus_times":
                    np.testing.assert_allclose(got, x, rtol=1e-5)
                else:
                    np.testing.assert_array_equal(got, x)
                x = got
    assert seen["ok"] >= 5 and seen["NaN"] >= 3, seen  # both ends reached
    assert seen["subnormal"] >= (3 if flushing else 0), seen


def test_a_result_asked_after_the_batch_decodes_from_its_row(ctx, rng, monkeypatch):
    """A result whose facts the batch's end only screened (not decoded) gives the facts numpy's
    values give when asked later, each from its own row of the words."""
    monkeypatch.setattr(get_backend("wgpu").engine, "flushes_subnormals", False)
    a = rng.standard_normal((N, N)).astype(np.float32)
    a[2, 5], a[7, 1] = np.inf, 1e-40
    A, eye = ctx.to_device(a), ctx.to_device(np.eye(N, dtype=np.float32))
    with ctx.batch():
        xs = [ctx.matmul(A, eye, "max_plus")]
        for _ in range(4):
            xs.append(ctx.matmul(xs[-1], eye, "max_plus"))
    r = xs[2].stats._reader
    assert r.values is None and r.words is not None  # screened at the end, not decoded
    for x in xs:
        v = ctx.to_host(x)
        fin = np.abs(v[np.isfinite(v) & (v != 0)])
        assert x.stats.as_dict() == {"nan": False, "inf": True,
                                     "subnormal": int(np.sum(np.abs(v) < 2.0**-126) - np.sum(v == 0)),
                                     "min_abs": float(fin.min())}
