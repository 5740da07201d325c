"""One table of bad inputs: each row is (description, a call taking the backend name, the exception
type, a phrase the message must contain). Every row runs on every backend (the ``backend``
fixture): a bad input gets the same clear error wherever it is sent, before any upload or launch.
Below the table: the definitions the sweep of issue 11 settled (dim-0 vectors, 0-d arrays, user
semirings that run exactly or refuse, IEEE overflow without numpy warnings, env vars, the CLI)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

import pytropical_gpu as tg
from pytropical_gpu import HybridContext, PackedCols, PackedRows, Semiring, SoftTernaryVec, TernaryVec
from pytropical_gpu.backends.wgpu import adapters as wgpu_adapters
from pytropical_gpu.backends.wgpu import runtime as wgpu_runtime
from pytropical_gpu.errors import BackendUnavailableError

F32 = np.float32
U32 = np.uint32


def host(x):
    """numpy (or a host TernaryVec) of any backend's result."""
    return tg.get_backend("cpu").to_host(x)


def f32(*shape):
    return np.ones(shape, F32)


def tv(dim=64, seed=1, batch=()):
    return TernaryVec.random(dim, seed=seed, batch=batch)


def mm(a, b, sr="max_plus", **kw):
    return lambda be: tg.matmul(a, b, sr, backend=be, **kw)


def with_nan(shape, where=(0, 0)):
    x = f32(*shape)
    x[where] = np.nan
    return x


def packed_mutated(be, cls):
    """A valid handle whose words are changed in place afterwards: to_device checks again."""
    h = tg.pack_rows(np.ones((2, 3), bool), backend="cpu") if cls is PackedRows else \
        tg.pack_cols(np.ones((3, 2), bool), backend="cpu")
    h.words[0, 0] |= U32(1 << 9)
    return tg.get_backend(be).to_device(h)


def tv_mutated(be, what):
    """A valid TernaryVec whose planes are changed in place afterwards: to_device checks again."""
    v = TernaryVec.from_array(np.array([1, 0, -1], np.int8))
    if what == "both":
        v.neg[0] |= v.pos[0]
    else:
        v.pos[0] |= U32(1 << 7)
    return tg.get_backend(be).to_device(v)


@contextlib.contextmanager
def env(**kv):
    old = {k: os.environ.get(k) for k in kv}
    os.environ.update(kv)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def pick_nomatch(be):
    """PYTROPICAL_WGPU_ADAPTER that matches no adapter: never another adapter, the reason instead."""
    def info(name):
        return wgpu_runtime.AdapterInfo(name=name, vendor="acme", backend="Vulkan",
                                        adapter_type="DiscreteGPU", is_fallback=False)

    with env(PYTROPICAL_WGPU_ADAPTER="nomatch"):
        return wgpu_adapters.pick_adapter(["gpu-one", "gpu-two"], info)


TV64, TV65 = tv(64), tv(65, seed=2)
MEM = tv(64, batch=(3,))
PR1 = tg.pack_rows(np.ones((2, 40), bool), backend="cpu")
PC1 = tg.pack_cols(np.ones((33, 2), bool), backend="cpu")
ONE = (1, 1)
USER = dict(wgsl_add="a + b", wgsl_mul="a * b", cuda_add="a + b", cuda_mul="a * b")

# (description, call(backend), exception type, phrase the message must contain)
CASES = [
    # ---- semiring GEMM
    ("shape mismatch names both shapes", mm(f32(3, 4), f32(5, 2), "min_plus"), ValueError,
     "(3, 4) and (5, 2) are not aligned (4 != 5)"),
    ("batch mismatch", mm(f32(2, 3, 4), f32(3, 4, 2)), ValueError, "batch dimensions"),
    ("NaN in a", mm(with_nan((2, 2)), f32(2, 2), "min_plus"), ValueError, "a contains NaN"),
    ("NaN in b", mm(f32(2, 2), with_nan((2, 2), (1, 1)), "min_plus"), ValueError, "b contains NaN"),
    ("NaN in c", mm(f32(2, 2), f32(2, 2), c=with_nan((2, 2))), ValueError, "c contains NaN"),
    ("unknown semiring lists the known ones", mm(f32(*ONE), f32(*ONE), "min_pluss"), ValueError,
     "unknown semiring 'min_pluss'; known:"),
    ("semiring of a wrong type", mm(f32(*ONE), f32(*ONE), 5), TypeError,
     "semiring must be a name or a Semiring, got int"),
    ("mixed dtypes", mm(f32(2, 2), np.ones((2, 2), np.int32)), TypeError,
     "mixed dtypes float32 and int32"),
    ("int16 operands", mm(np.ones((2, 2), np.int16), np.ones((2, 2), np.int16), "min_plus"),
     TypeError, "does not accept dtype int16"),
    ("lor_land on float32", mm(f32(2, 2), f32(2, 2), "lor_land"), TypeError, "accepted: bool"),
    ("bor_band on float32", mm(f32(2, 2), f32(2, 2), "bor_band"), TypeError,
     "does not accept dtype float32"),
    ("argmax on plus_times", mm(f32(2, 2), f32(2, 2), "plus_times", return_argmax=True), ValueError,
     "return_argmax needs a min/max-based"),
    ("argmax on lor_land", mm(np.ones((2, 2), bool), np.ones((2, 2), bool), "lor_land",
                              return_argmax=True), ValueError, "return_argmax"),
    ("out of the wrong shape", mm(f32(2, 3), f32(3, 4), out=f32(4, 2)), ValueError,
     "out has shape (4, 2)"),
    ("out of the wrong dtype", mm(f32(2, 3), f32(3, 4), out=np.empty((2, 4), np.float64)),
     ValueError, "dtype float64"),
    ("out given as a list", mm(f32(2, 2), f32(2, 2), out=[[0, 0], [0, 0]]), TypeError,
     "out must be an array (numpy, cupy or torch) of shape (2, 2) and dtype float32, got a list"),
    ("c of the wrong shape", mm(f32(2, 3), f32(3, 4), c=f32(3, 3)), ValueError,
     "c has shape (3, 3)"),
    ("c of the wrong dtype", mm(f32(2, 3), f32(3, 4), c=np.ones((2, 4), np.float64)), TypeError,
     "c has dtype float64"),
    # ---- user-defined semirings: invalid at construction, on every backend
    ("Semiring zero beyond uint32", lambda be: Semiring("z", np.minimum, np.add, 2**40, 0,
                                                        dtypes=("uint32",), **USER),
     ValueError, "zero 1099511627776 is not exactly representable in uint32"),
    ("Semiring one negative on uint32", lambda be: Semiring("o", np.add, np.multiply, 0, -1,
                                                            dtypes=("uint32",)),
     ValueError, "one -1 is not exactly representable in uint32"),
    ("Semiring zero 0.5 on int32", lambda be: Semiring("h", np.add, np.multiply, 0.5, 1,
                                                       dtypes=("int32",)),
     ValueError, "zero 0.5 is not exactly representable in int32"),
    ("Semiring of an unknown dtype", lambda be: Semiring("d", np.add, np.multiply, 0, 1,
                                                         dtypes=("float33",)),
     TypeError, "dtypes must be numpy dtype names"),
    ("Semiring add not callable", lambda be: Semiring("c", "min", np.add, 0, 1), TypeError,
     "add must be a numpy ufunc or a callable, got str"),
    # ---- bit-packed boolean
    ("PackedRows with tail bits", lambda be: PackedRows(np.array([[0xFFFFFFF0]], U32), 3),
     ValueError, "bits past k=3"),
    ("PackedCols with tail bits", lambda be: PackedCols(np.array([[1 << 31]], U32), 31),
     ValueError, "bits past k=31"),
    ("PackedRows words inconsistent with k", lambda be: PackedRows(np.zeros((2, 1), U32), 40),
     ValueError, "k=40 needs 2 words per row"),
    ("PackedCols too many words for k", lambda be: PackedCols(np.zeros((2, 3), U32), 33),
     ValueError, "k=33 needs 2 words per row"),
    ("PackedRows with float words", lambda be: PackedRows(np.ones((1, 1)), 3), TypeError,
     "words must have dtype uint32"),
    ("PackedRows with int64 words", lambda be: PackedRows(np.ones((1, 1), np.int64), 3),
     TypeError, "got int64"),
    ("PackedRows with 1-D words", lambda be: PackedRows(np.zeros(2, U32), 3), ValueError,
     "words must be 2-D"),
    ("PackedRows with 3-D words", lambda be: PackedRows(np.zeros((1, 1, 1), U32), 3), ValueError,
     "words must be 2-D"),
    ("PackedRows with words as a list", lambda be: PackedRows([[1]], 3), TypeError,
     "words must be a uint32 array"),
    ("PackedRows with a negative k", lambda be: PackedRows(np.zeros((1, 0), U32), -1), ValueError,
     "k must be >= 0, got -1"),
    ("PackedRows with k=2.5", lambda be: PackedRows(np.zeros((1, 1), U32), 2.5), TypeError,
     "k must be an integer, got 2.5"),
    ("to_device re-checks PackedRows words", lambda be: packed_mutated(be, PackedRows), ValueError,
     "to_device: PackedRows: bits past k=3"),
    ("to_device re-checks PackedCols words", lambda be: packed_mutated(be, PackedCols), ValueError,
     "to_device: PackedCols: bits past k=3"),
    ("andor_matmul with swapped handles", lambda be: tg.andor_matmul(PC1, PR1, backend=be),
     TypeError, "got PackedCols and PackedRows (swapped?)"),
    ("andor_matmul with a PackedCols as a", lambda be: tg.andor_matmul(
        PC1, np.ones((33, 2), bool), backend=be), TypeError, "(swapped?)"),
    ("andor_matmul with misaligned handles", lambda be: tg.andor_matmul(PR1, PC1, backend=be),
     ValueError, "not aligned (40 != 33)"),
    ("pack_rows of a 3-D array", lambda be: tg.pack_rows(np.ones((1, 2, 3), bool), backend=be),
     ValueError, "pack_rows: expected a 2-D bool array, got shape (1, 2, 3)"),
    ("pack_cols of an int array", lambda be: tg.pack_cols(np.ones((2, 3), np.int32), backend=be),
     TypeError, "pack_cols: expected dtype bool, got int32"),
    # ---- TernaryVec construction and to_device
    ("invalid trit values", lambda be: TernaryVec.from_array(np.array([1, 2, 0], np.int8)),
     ValueError, "invalid trit values [2]"),
    ("float trits", lambda be: TernaryVec.from_array(np.array([0.5])), TypeError,
     "expected integer trits"),
    ("scalar trits", lambda be: TernaryVec.from_array(np.int8(1)), ValueError, "at least 1-D"),
    ("a bit in both planes", lambda be: TernaryVec(np.array([1], U32), np.array([1], U32), 3),
     ValueError, "a bit is set in both pos and neg"),
    ("tail bits past dim", lambda be: TernaryVec(np.array([1 << 5], U32), np.array([0], U32), 3),
     ValueError, "tail bits past dim 3 must be zero"),
    ("planes given as lists", lambda be: TernaryVec([1], [0], 3), TypeError,
     "pos must be a uint32 array"),
    ("neg plane given as a list", lambda be: TernaryVec(np.array([1], U32), [0], 3), TypeError,
     "neg must be a uint32 array"),
    ("float planes", lambda be: TernaryVec(np.ones(1), np.zeros(1), 3), TypeError,
     "pos must have dtype uint32"),
    ("planes of different shapes", lambda be: TernaryVec(np.zeros(1, U32), np.zeros(2, U32), 3),
     ValueError, "plane shapes differ"),
    ("planes inconsistent with dim", lambda be: TernaryVec(np.zeros(1, U32), np.zeros(1, U32), 40),
     ValueError, "dim 40 needs 2 words"),
    ("TernaryVec dim=2.5", lambda be: TernaryVec(np.zeros(1, U32), np.zeros(1, U32), 2.5),
     TypeError, "dim must be an integer, got 2.5"),
    ("to_device re-checks planes: a bit in both", lambda be: tv_mutated(be, "both"), ValueError,
     "a bit is set in both pos and neg"),
    ("to_device re-checks planes: tail bits", lambda be: tv_mutated(be, "tail"), ValueError,
     "tail bits past dim 3"),
    ("random with density 2", lambda be: TernaryVec.random(8, density=2), ValueError,
     "density must be in [0, 1], got 2"),
    ("random with density 'x'", lambda be: TernaryVec.random(8, density="x"), TypeError,
     "density must be a number"),
    ("random with dim -1", lambda be: TernaryVec.random(-1), ValueError, "dim must be >= 0, got -1"),
    ("random with dim 2.5", lambda be: TernaryVec.random(2.5), TypeError,
     "dim must be an integer, got 2.5"),
    # ---- VSA verbs
    ("bind dimension mismatch", lambda be: tg.bind(TV64, TV65, backend=be), ValueError,
     "bind: dimension mismatch (64 != 65)"),
    ("dot dimension mismatch", lambda be: tg.dot(TV64, TV65, backend=be), ValueError,
     "dimension mismatch"),
    ("cosine dimension mismatch", lambda be: tg.cosine(TV64, TV65, backend=be), ValueError,
     "dimension mismatch"),
    ("bundle dimension mismatch", lambda be: tg.bundle([TV64, TV65], backend=be), ValueError,
     "bundle: dimension mismatch"),
    ("bind with an array", lambda be: tg.bind(TV64, np.zeros(64, np.int8), backend=be), TypeError,
     "bind: b must be a TernaryVec"),
    ("permute of an array", lambda be: tg.permute(np.zeros(4, np.int8), backend=be), TypeError,
     "permute: a must be a TernaryVec"),
    ("permute shifts=1.5", lambda be: tg.permute(TV64, 1.5, backend=be), TypeError,
     "permute: shifts must be an integer, got 1.5"),
    ("permute shifts='1'", lambda be: tg.permute(TV64, "1", backend=be), TypeError,
     "shifts must be an integer, got '1'"),
    ("search k=2.5", lambda be: tg.search(MEM[0], MEM, k=2.5, backend=be), TypeError,
     "search: k must be an integer, got 2.5"),
    ("search k out of range", lambda be: tg.search(MEM[0], MEM, k=4, backend=be), ValueError,
     "k=4 must be between 1 and the 3 rows"),
    ("search k=0", lambda be: tg.search(MEM[0], MEM, k=0, backend=be), ValueError, "k=0"),
    ("search in an unbatched memory", lambda be: tg.search(TV64, TV64, backend=be), ValueError,
     "memory must be a batch of vectors"),
    ("empty batched bundle", lambda be: tg.bundle(tv(64, batch=(0,)), backend=be), ValueError,
     "bundle: the batched TernaryVec holds no vectors"),
    ("empty list bundle", lambda be: tg.bundle([], backend=be), ValueError, "no vectors given"),
    ("bundle of one unbatched vector", lambda be: tg.bundle(TV64, backend=be), ValueError,
     "must be batched"),
    ("bundle threshold -1", lambda be: tg.bundle(MEM, threshold=-1, backend=be), ValueError,
     "threshold must be >= 0, got -1"),
    ("bundle threshold 1.5", lambda be: tg.bundle(MEM, threshold=1.5, backend=be), TypeError,
     "threshold must be an integer, got 1.5"),
    # ---- SoftTernaryVec
    ("SoftTernaryVec bits=2.5", lambda be: SoftTernaryVec(8, bits=2.5), TypeError,
     "bits must be an integer, got 2.5"),
    ("SoftTernaryVec bits=40", lambda be: SoftTernaryVec(8, bits=40), ValueError,
     "bits must be between 1 and 31, got 40"),
    ("SoftTernaryVec bits=20000", lambda be: SoftTernaryVec(8, bits=20000), ValueError,
     "between 1 and 31"),
    ("SoftTernaryVec bits=0", lambda be: SoftTernaryVec(8, bits=0), ValueError,
     "between 1 and 31, got 0"),
    ("SoftTernaryVec bits=True", lambda be: SoftTernaryVec(8, bits=True), TypeError,
     "bits must be an integer, got True"),
    ("SoftTernaryVec dim=-1", lambda be: SoftTernaryVec(-1), ValueError, "dim must be >= 0"),
    ("accumulate dimension mismatch", lambda be: SoftTernaryVec(64).accumulate(TV65, backend=be),
     ValueError, "accumulate: dimension mismatch"),
    ("accumulate a non-TernaryVec", lambda be: SoftTernaryVec(4).accumulate(
        np.zeros(4, np.int8), backend=be), TypeError, "accumulate: hard must be a TernaryVec"),
    ("accumulate a wider batch", lambda be: SoftTernaryVec(64).accumulate(MEM, backend=be),
     ValueError, "does not broadcast to the counters'"),
    ("harden threshold -1", lambda be: SoftTernaryVec(8).harden(-1, backend=be), ValueError,
     "harden: threshold must be >= 0"),
    # ---- routing, contexts, environment
    ("HybridContext cpu_threshold='abc'", lambda be: HybridContext(be, cpu_threshold="abc"),
     TypeError, "cpu_threshold (work items, or None) must be an integer, got 'abc'"),
    ("HybridContext cpu_threshold=-5", lambda be: HybridContext(be, cpu_threshold=-5), ValueError,
     "cpu_threshold (work items, or None) must be >= 0"),
    ("HybridContext backend='gpu'", lambda be: HybridContext("gpu"), ValueError,
     "backend must be auto, cpu, wgpu or cuda; got 'gpu'"),
    ("route of an unknown op", lambda be: HybridContext(be).route("matmull", 10), ValueError,
     "route: unknown op 'matmull'; known: accumulate"),
    ("route of an unknown op on auto", lambda be: HybridContext().route("matmull", 10), ValueError,
     "unknown op 'matmull'"),
    ("route with size 'x'", lambda be: HybridContext(be).route("matmul", "x"), TypeError,
     "route: size must be an integer"),
    ("unknown backend", lambda be: tg.get_backend("opencl"), ValueError,
     "unknown backend 'opencl'"),
    ("PYTROPICAL_WGPU_ADAPTER matching no adapter", pick_nomatch, BackendUnavailableError,
     "PYTROPICAL_WGPU_ADAPTER='nomatch' matches no adapter's name or vendor; adapters present: "
     "gpu-one"),
]


def test_the_table_is_large_and_its_rows_distinct():
    assert len(CASES) >= 60
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("desc, call, exc, phrase", CASES, ids=[c[0] for c in CASES])
def test_bad_input(backend, desc, call, exc, phrase):
    with pytest.raises(exc, match=re.escape(phrase)):
        call(backend)


# ------------------------------------------------------------------------------ definitions
def test_dim0_vectors_are_defined(backend):
    """Spec: dim 0 allowed; bind/bundle/permute give dim 0, dot 0, cosine 0.0 (and resident too)."""
    z = TernaryVec.from_array(np.zeros(0, np.int8))
    zb = TernaryVec.random(0, seed=3, batch=(3,))
    assert z.to_array().shape == (0,) and zb.to_array().shape == (3, 0) and zb.dim == 0
    for v in (z, tg.get_backend(backend).to_device(z)):
        for r in (tg.bind(v, v, backend=backend), tg.unbind(v, v, backend=backend),
                  tg.bundle([v, v, v], backend=backend), tg.permute(v, 5, backend=backend)):
            assert r.dim == 0 and r.batch_shape == () and host(r).to_array().shape == (0,)
        d, c = tg.dot(v, v, backend=backend), tg.cosine(v, v, backend=backend)
        assert (d, type(d)) == (0, int) and (c, type(c)) == (0.0, float)
    r = tg.bundle(zb, backend=backend)
    assert r.dim == 0 and r.batch_shape == ()
    dots = np.asarray(host(tg.dot(z, zb, backend=backend)))
    assert dots.shape == (3,) and not dots.any()
    idx, scores = (np.asarray(host(x)) for x in tg.search(z, zb, k=2, backend=backend))
    assert idx.tolist() == [0, 1] and scores.tolist() == [0, 0]  # all tie: smaller index first
    soft = SoftTernaryVec(0, bits=2, batch=(3,))
    soft.accumulate(zb, backend=backend)
    h = soft.harden(1, backend=backend)
    assert h.dim == 0 and h.batch_shape == (3,) and soft.to_array().shape == (3, 0)


def test_zero_d_arrays_keep_their_shape(backend):
    be = tg.get_backend(backend)
    for x in (np.array(3.5, F32), np.array(-7, np.int32), np.array(True)):
        back = be.to_host(be.to_device(x))
        assert back.shape == () and back.dtype == x.dtype and back == x


def _user(dt, add, mul, zero, one, ufadd, ufmul):
    return Semiring(f"user_{dt}_{add}", ufadd, ufmul, zero, one, dtypes=(dt,), wgsl_add=add,
                    wgsl_mul=mul, cuda_add=add, cuda_mul=mul)


def _reference(a, b, add, mul, zero):
    """Python-int loops: ⊕/⊗ as functions of Python ints, independent of the code under test."""
    m, k = a.shape
    n = b.shape[1]
    out = [[zero] * n for _ in range(m)]
    for i in range(m):
        for j in range(n):
            for t in range(k):
                out[i][j] = add(out[i][j], mul(int(a[i, t]), int(b[t, j])))
    return out


def test_user_semiring_on_uint64_runs_exactly_or_refuses(backend):
    """[[2**33]] x [[3]] gave [[0]] on wgpu (split into 32-bit lanes): exact, or TypeError."""
    sr = _user("uint64", "a + b", "a * b", 0, 1, np.add, np.multiply)
    a = np.array([[2**33, 2**63], [5, 2**40 + 1]], np.uint64)
    b = np.array([[3, 1], [2, 2**30]], np.uint64)
    wrap = 2**64
    if backend == "wgpu":
        with pytest.raises(TypeError, match="WGSL has no 64-bit integers.*backend='cpu' or 'cuda'"):
            tg.matmul(a, b, sr, backend=backend)
        return
    got = host(tg.matmul(a, b, sr, backend=backend))
    ref = _reference(a, b, lambda x, y: (x + y) % wrap, lambda x, y: (x * y) % wrap, 0)
    assert got.dtype == np.uint64 and got.tolist() == ref


def test_user_semiring_zero_beyond_32_bits(backend):
    """A uint64 zero of 2**40 raised OverflowError on wgpu: exact, or TypeError."""
    sr = Semiring("min_plus_u64", np.minimum, np.add, 2**40, 0, dtypes=("uint64",),
                  wgsl_add="min(a, b)", wgsl_mul="a + b", cuda_add="min(a, b)", cuda_mul="a + b")
    a = np.array([[2**41, 7]], np.uint64)
    b = np.array([[1], [2**39]], np.uint64)
    if backend == "wgpu":
        with pytest.raises(TypeError, match="64-bit"):
            tg.matmul(a, b, sr, backend=backend)
        return
    got = host(tg.matmul(a, b, sr, backend=backend))
    assert got.tolist() == _reference(a, b, min, lambda x, y: x + y, 2**40)
    k0 = host(tg.matmul(np.zeros((2, 0), np.uint64), np.zeros((0, 1), np.uint64), sr,
                              backend=backend))
    assert k0.tolist() == [[2**40], [2**40]]  # k == 0: the zero everywhere


def test_user_semiring_on_bool_runs_exactly_or_refuses(backend):
    """KeyError 'bool' on wgpu, a wrong answer on cuda: exact on cpu, TypeError elsewhere."""
    sr = Semiring("or_and_user", np.logical_or, np.logical_and, False, True, dtypes=("bool",),
                  wgsl_add="a || b", wgsl_mul="a && b", cuda_add="a || b", cuda_mul="a && b")
    rng = np.random.default_rng(5)
    a, b = rng.random((4, 37)) < 0.2, rng.random((37, 3)) < 0.2
    if backend != "cpu":
        with pytest.raises(TypeError, match=f"the {backend} backend cannot run the user-defined "
                                            "semiring 'or_and_user' on bool.*backend='cpu'"):
            tg.matmul(a, b, sr, backend=backend)
        return
    got = tg.matmul(a, b, sr, backend=backend)
    ref = _reference(a, b, lambda x, y: x or y, lambda x, y: x and y, False)
    assert got.dtype == np.bool_ and got.tolist() == [[bool(x) for x in row] for row in ref]


def test_user_semiring_on_uint32_runs_everywhere(backend):
    """The representable case runs exactly on every backend (bitwise and wrapping arithmetic)."""
    rng = np.random.default_rng(6)
    a = rng.integers(0, 2**32, (5, 9), dtype=np.uint32)
    b = rng.integers(0, 2**32, (9, 4), dtype=np.uint32)
    sr = _user("uint32", "a + b", "a * b", 0, 1, np.add, np.multiply)
    got = host(tg.matmul(a, b, sr, backend=backend))
    m32 = 2**32
    assert got.tolist() == _reference(a, b, lambda x, y: (x + y) % m32, lambda x, y: (x * y) % m32, 0)


def _f32(x: float) -> float:
    """Round a Python float to float32 (IEEE: overflow gives ±inf)."""
    with np.errstate(over="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(np.float32(x))


@pytest.mark.parametrize("sr", ["plus_times", "max_plus", "min_plus", "max_times", "min_times"])
def test_ieee_overflow_raises_no_numpy_warning(backend, sr):
    """Sums and products that overflow to ±inf are the IEEE result: no RuntimeWarning (which is an
    error under -W error). Products of two float32 are exact in a Python float, so rounding once
    to float32 is the IEEE float32 result; no cell meets inf - inf (plus_times may sum in any order)."""
    big = 3e38
    a = np.array([[big, big], [-big, -big]], F32)
    b = np.array([[big, 1], [2, -big]], F32)
    c = np.array([[big, -big], [-big, big]], F32)  # never inf - inf, in whatever order ⊕ runs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = host(tg.matmul(a, b, sr, c=c, backend=backend))
    add = {"plus_times": lambda x, y: _f32(x + y), "max_plus": max, "min_plus": min,
           "max_times": max, "min_times": min}[sr]
    mul = (lambda x, y: x + y) if sr in ("max_plus", "min_plus") else (lambda x, y: x * y)
    ref = np.empty((2, 2), F32)
    for i in range(2):
        for j in range(2):
            prods = [_f32(mul(float(a[i, t]), float(b[t, j]))) for t in range(2)]
            ref[i, j] = add(float(c[i, j]), add(prods[0], prods[1]))
    assert np.isinf(ref).any() and np.array_equal(got, ref)


def test_soft_counters_fit_int32_up_to_31_bits(backend):
    soft = SoftTernaryVec(70, bits=31, batch=(2,))
    h = TernaryVec.random(70, seed=4, batch=(2,))
    soft.accumulate(h, backend=backend)
    s = soft.to_array()
    assert s.dtype == np.int32 and np.array_equal(s, h.to_array().astype(np.int32))
    assert soft.limit == 2**31 - 1
    assert np.array_equal(host(soft.harden(1, backend=backend)).to_array(), h.to_array())


# ------------------------------------------------------------------------------ environment, CLI
def test_bad_webgpu_runtime_name_is_a_probe_reason():
    with env(PYTROPICAL_WEBGPU="nonsense"):
        ok, reason = wgpu_runtime.probe_runtime()
    assert not ok and "PYTROPICAL_WEBGPU must be 'wgpu' or 'dawn', got 'nonsense'" in reason


def _run(args, **extra_env):
    root = os.path.dirname(os.path.dirname(os.path.abspath(tg.__file__)))
    e = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
             **extra_env)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=e,
                          timeout=300)


def test_info_with_a_bad_webgpu_runtime_name():
    """``info`` printed a traceback: now wgpu is unavailable with the reason, exit 0."""
    r = _run(["-m", "pytropical_gpu", "info", "--backend", "wgpu"], PYTROPICAL_WEBGPU="nonsense")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert re.search(r"wgpu\s+unavailable\s+PYTROPICAL_WEBGPU must be 'wgpu' or 'dawn', got "
                     r"'nonsense'", r.stdout), r.stdout


def test_wgpu_adapter_that_matches_nothing_is_refused():
    """It silently took another adapter; now BackendUnavailableError names the variable, the value
    and the adapters present."""
    from conftest import require_backend

    require_backend("wgpu")
    code = ("import pytropical_gpu as tg\n"
            "try:\n    tg.get_backend('wgpu')\nexcept tg.BackendUnavailableError as e:\n"
            "    print('REFUSED', e)\nelse:\n    print('TOOK AN ADAPTER')\n")
    r = _run(["-c", code], PYTROPICAL_WGPU_ADAPTER="nomatch")
    assert r.returncode == 0, r.stderr
    assert "REFUSED" in r.stdout and "PYTROPICAL_WGPU_ADAPTER='nomatch'" in r.stdout
    assert "adapters present: " in r.stdout, r.stdout


@pytest.mark.parametrize("where", ["under_a_file", "a_directory"])
def test_bench_json_path_that_cannot_be_written(tmp_path, capsys, where):
    from pytropical_gpu import cli

    (tmp_path / "file").write_text("x")
    path = tmp_path / "file" / "sub" / "out.json" if where == "under_a_file" else tmp_path
    rc = cli.main(["bench", "--backend", "cpu", "--quick", "--json", str(path)])
    err = capsys.readouterr().err
    assert rc == 2 and f"cannot write --json {path}" in err
    assert ("is not a directory" if where == "under_a_file" else "is a directory") in err


def test_context_to_device_rechecks_handles_on_cpu_too():
    """HybridContext.to_device on cpu (or with no GPU) returns x unchanged, after the same checks."""
    ctx = HybridContext("cpu")
    v = TernaryVec.from_array(np.array([1, 0, -1], np.int8))
    assert ctx.to_device(v) is v
    v.neg[0] |= v.pos[0]
    with pytest.raises(ValueError, match="both pos and neg"):
        ctx.to_device(v)
    h = tg.pack_rows(np.ones((2, 3), bool), backend="cpu")
    assert ctx.to_device(h) is h
    h.words[1, 0] |= U32(1 << 31)
    with pytest.raises(ValueError, match="to_device: PackedRows: bits past k=3"):
        ctx.to_device(h)
