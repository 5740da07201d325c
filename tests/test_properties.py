"""Hypothesis properties, one per operation family, on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from reference import ref_bool, ref_bundle, ref_matmul, ref_soft

import pytropical_gpu as tg
from pytropical_gpu import SoftTernaryVec, TernaryVec

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
dims = st.integers(1, 9)
vals = st.sampled_from([-np.inf, np.inf, -2.5, -1.0, 0.0, 1.0, 3.0])


@SETTINGS
@given(m=dims, k=st.integers(0, 9), n=dims, data=st.data(),
       name=st.sampled_from(["min_plus", "max_plus", "min_max", "max_times"]))
def test_matmul_property(backend, m, k, n, data, name):
    a = data.draw(arrays(np.float32, (m, k), elements=vals))
    b = data.draw(arrays(np.float32, (k, n), elements=vals))
    want, want_idx = ref_matmul(a, b, name)
    got, idx = tg.matmul(a, b, name, return_argmax=True, backend=backend)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(idx, want_idx)


@SETTINGS
@given(m=dims, k=st.integers(0, 80), n=dims, data=st.data())
def test_andor_property(backend, m, k, n, data):
    a = data.draw(arrays(np.bool_, (m, k)))
    b = data.draw(arrays(np.bool_, (k, n)))
    np.testing.assert_array_equal(tg.andor_matmul(a, b, backend=backend), ref_bool(a, b, "lor_land"))


trit_rows = st.integers(1, 70).flatmap(
    lambda d: st.integers(1, 6).flatmap(
        lambda v: arrays(np.int8, (v, d), elements=st.sampled_from([-1, 0, 1]))))


@SETTINGS
@given(x=trit_rows, threshold=st.integers(0, 4), shift=st.integers(-100, 100))
def test_vsa_property(backend, x, threshold, shift):
    v = TernaryVec.from_array(x)
    np.testing.assert_array_equal(tg.bundle(v, threshold=threshold, backend=backend).to_array(),
                                  ref_bundle(x, threshold))
    np.testing.assert_array_equal(tg.bind(v, v[0], backend=backend).to_array(), x * x[0])
    np.testing.assert_array_equal(tg.dot(v, v, backend=backend), x.astype(np.int64) @ x.T)
    np.testing.assert_array_equal(tg.permute(v, shift, backend=backend).to_array(),
                                  np.roll(x, shift, axis=-1))


@SETTINGS
@given(x=trit_rows, bits=st.integers(1, 4))
def test_soft_property(backend, x, bits):
    soft = SoftTernaryVec(x.shape[1], bits=bits)
    for row in x:
        soft.accumulate(TernaryVec.from_array(row), backend=backend)
    np.testing.assert_array_equal(soft.to_array(), ref_soft(list(x), bits))


@SETTINGS
@given(x=trit_rows, k=st.integers(1, 6), data=st.data())
def test_search_and_cosine_property(backend, x, k, data):
    k = min(k, x.shape[0])
    q = data.draw(arrays(np.int8, x.shape[1], elements=st.sampled_from([-1, 0, 1])))
    idx, scores = tg.search(TernaryVec.from_array(q), TernaryVec.from_array(x), k=k, backend=backend)
    exact = [int(np.dot(r.astype(np.int64), q)) for r in x]
    order = sorted(range(len(exact)), key=lambda i: (-exact[i], i))[:k]
    assert list(np.asarray(idx)) == order
    assert list(np.asarray(scores)) == [exact[i] for i in order]
    cos = tg.cosine(TernaryVec.from_array(q), TernaryVec.from_array(x[0]), backend=backend)
    nq, nx = int(np.count_nonzero(q)), int(np.count_nonzero(x[0]))
    assert cos == (0.0 if nq * nx == 0 else pytest.approx(exact[0] / np.sqrt(nq * nx), abs=1e-12))


@SETTINGS
@given(bits=arrays(np.bool_, st.tuples(st.integers(0, 5), st.integers(0, 100))))
def test_pack_property(backend, bits):
    words = np.asarray(tg.pack_rows(bits, backend=backend).words)
    assert words.shape == (bits.shape[0], (bits.shape[1] + 31) // 32)
    for r in range(bits.shape[0]):
        for j in range(bits.shape[1]):
            assert bool((int(words[r, j // 32]) >> (j % 32)) & 1) == bool(bits[r, j])
        tail = bits.shape[1] % 32
        if tail:
            assert int(words[r, -1]) >> tail == 0
