"""Host transfers and operand scans of a resident chain (the APSP step D ⊕ D ⊗ D, issue 13):

* large cupy arrays come back through pinned memory (``_pinned``): the same bits as ``x.get()``,
  a writeable array of its own, pool sizes in few classes; small, empty and non-contiguous arrays
  take ``x.get()``. Without a GPU a stand-in cupy module (``sys.modules["cupy"]``) plays the device;
  on cuda (the device suite) the real path is checked, the memory asked whether it is page-locked.
* one array passed as several operands of ``matmul`` is converted and scanned once (one Facts),
  checked for NaN once, eagerly or at a batch's end, with the eager message; distinct operands are
  still scanned one by one. Results against ``tests/reference.py``.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from reference import ref_matmul

from conftest import require_backend
from pytropical_gpu import HybridContext, _arrays, _pinned, batch, facts
from pytropical_gpu.backends import get_backend

# ------------------------------------------------------------------ pinned downloads


def test_size_classes_are_few_and_tight():
    for nbytes in [1, 7, 8, 9, 15, 16, 17, 1000, 4 << 20, (4 << 20) + 1, 64 << 20, (64 << 20) - 4,
                   3 * (1 << 22) + 12345, (1 << 31) + 1]:
        got = _pinned.size_class(nbytes)
        assert nbytes <= got <= nbytes * 1.125 + 1, nbytes
    assert _pinned.size_class(64 << 20) == 64 << 20  # a power of two is its own class
    classes = {_pinned.size_class(n) for n in range(1 << 20, 1 << 21, 997)}
    assert len(classes) <= 9  # eight per power of two (and the next power itself)


class _FakeDevice:
    """A stand-in cupy ndarray: numpy values behind ``get(out=...)``; counts the copies."""

    def __init__(self, values: np.ndarray):
        self._v = values
        self.shape, self.dtype, self.size, self.nbytes = values.shape, values.dtype, values.size, \
            values.nbytes
        self.flags = values.flags
        self.gets: list = []

    def get(self, out=None):
        self.gets.append(out is not None)
        if out is None:
            return self._v.copy()
        assert out.shape == self.shape and out.dtype == self.dtype and out.flags.c_contiguous
        out[...] = self._v
        return out


@pytest.fixture
def fake_cupy(monkeypatch):
    """``sys.modules["cupy"]`` replaced by a stand-in whose ``alloc_pinned_memory`` records sizes."""
    asked: list[int] = []

    def alloc_pinned_memory(n):
        asked.append(n)
        return bytearray(n)  # writable, supports the buffer protocol like PinnedMemoryPointer

    mod = types.ModuleType("cupy")
    mod.ndarray = _FakeDevice
    mod.cuda = types.SimpleNamespace(alloc_pinned_memory=alloc_pinned_memory)
    monkeypatch.setitem(sys.modules, "cupy", mod)
    monkeypatch.setattr(_pinned, "MIN_BYTES", 4 << 20)
    return asked


def _specials(shape, rng) -> np.ndarray:
    """float32 with ±inf, ±0, a subnormal, the largest finite value and NaN payloads."""
    x = rng.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[:8] = [np.inf, -np.inf, 0.0, -0.0, 1e-45, np.finfo(np.float32).max, np.nan, -np.nan]
    flat.view(np.uint32)[8] = 0x7FC0_1234  # a NaN with a payload
    return x


@pytest.mark.parametrize("verb", ["to_numpy", "to_kind", "to_host"])
def test_large_download_goes_through_pinned_memory(fake_cupy, rng, verb):
    want = _specials((1100, 1000), rng)  # 4.4 MB: over MIN_BYTES
    dev = _FakeDevice(want.copy())
    got = {"to_numpy": lambda: _arrays.to_numpy(dev),
           "to_kind": lambda: _arrays.to_kind(dev, (_arrays.NUMPY, None)),
           "to_host": lambda: get_backend("cpu").to_host(dev)}[verb]()
    assert dev.gets == [True] and fake_cupy == [_pinned.size_class(want.nbytes)]
    assert isinstance(got, np.ndarray) and got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))  # the bits, NaN payloads too
    assert got.flags.writeable and got.flags.c_contiguous
    got[0, 0] = 5.0
    assert dev._v[0, 0] == np.inf  # its own memory


@pytest.mark.parametrize("case", ["small", "empty", "fortran", "strided", "off"])
def test_other_downloads_take_the_plain_path(fake_cupy, rng, monkeypatch, case):
    big = rng.integers(-2**31, 2**31, (1200, 1000), dtype=np.int64).astype(np.int32)
    v = {"small": big[:10], "empty": big[:0], "fortran": np.asfortranarray(big),
         "strided": big[:, ::2], "off": big}[case]
    if case == "off":
        monkeypatch.setattr(_pinned, "MIN_BYTES", None)
    dev = _FakeDevice(v)
    got = _arrays.to_numpy(dev)
    assert dev.gets == [False] and fake_cupy == []
    assert got.shape == v.shape and np.array_equal(got, v)


def test_cuda_download_is_pinned_and_bit_identical(rng):
    require_backend("cuda")
    import cupy

    want = _specials((1100, 1000), rng)
    x = cupy.asarray(want)
    got = HybridContext(backend="cuda").to_host(x)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    attrs = cupy.cuda.runtime.pointerGetAttributes(got.ctypes.data)
    assert attrs.type == cupy.cuda.runtime.memoryTypeHost  # page-locked: the DMA went straight in
    got[0, 0] = 1.0
    assert np.isinf(float(x[0, 0]))
    for view in (x[:, ::3], x[:10], cupy.asfortranarray(x)):  # the plain path, same values
        assert np.array_equal(_arrays.to_numpy(view).view(np.uint32), view.get().view(np.uint32))


# ------------------------------------------------------------------ one operand, one scan


def _graph(rng, n=37) -> np.ndarray:
    w = rng.integers(1, 60, (n, n)).astype(np.float32)
    w[rng.random((n, n)) < 0.6] = np.inf
    np.fill_diagonal(w, 0)
    return w


@pytest.fixture
def scans(monkeypatch):
    """How many operand range scans ran (``facts._range``: one per Facts, on any backend)."""
    count = {"n": 0}
    orig = facts._range

    def counted(*a, **k):
        count["n"] += 1
        return orig(*a, **k)

    monkeypatch.setattr(facts, "_range", counted)
    return count


def test_same_operand_is_scanned_once(rng, scans):
    ctx = HybridContext(backend="cpu")
    d = _graph(rng)
    got, k = ctx.matmul(d, d, "min_plus", c=d, return_argmax=True)
    assert scans["n"] == 1
    want, want_k = ref_matmul(d, d, "min_plus", c=d)
    assert np.array_equal(got, want) and np.array_equal(k, want_k)
    e = _graph(rng)
    got = ctx.matmul(d, e, "max_plus", c=d)
    assert scans["n"] == 3  # d once (as a and c), e once
    assert np.array_equal(got, ref_matmul(d, e, "max_plus", c=d)[0])
    ctx.matmul(d, d.copy(), "min_plus", c=d.copy())  # equal values, distinct arrays: three scans
    assert scans["n"] == 6


@pytest.mark.parametrize("where", ["a", "b", "c"])
def test_nan_in_a_shared_operand_names_the_first_place(rng, where):
    ctx = HybridContext(backend="cpu")
    d, e = _graph(rng), _graph(rng)
    d[3, 5] = np.nan
    ops = {"a": (d, d, d), "b": (e, d, d), "c": (e, e, d)}[where]
    with pytest.raises(ValueError, match=f"^matmul: {where} contains NaN$"):
        ctx.matmul(ops[0], ops[1], "min_plus", c=ops[2])


def test_shared_device_operand_defers_one_check(rng, monkeypatch):
    """The cuda path of a batch without a GPU (as tests/test_batch.py): operand facts made with a
    stand-in array module count as device facts, so their checks wait for the batch's end. One
    array as a, b and c queues one check; its NaN raises there with the eager message."""
    dev = types.SimpleNamespace(stack=np.stack)
    monkeypatch.setattr(facts, "of", lambda x, xp=None: facts.Facts(x, dev))
    ctx = HybridContext(backend="cpu")
    d = _graph(rng)
    with batch.Batch(None) as b:
        got, k = ctx.matmul(d, d, "min_plus", c=d, return_argmax=True)
        assert len(b.checks) == 1 and len(b.facts) == 1
        ctx.matmul(d, _graph(rng), "min_plus")
        assert len(b.checks) == 3
    want, want_k = ref_matmul(d, d, "min_plus", c=d)
    assert np.array_equal(got, want) and np.array_equal(k, want_k)
    d[0, 1] = np.nan
    with pytest.raises(ValueError, match="^matmul: a contains NaN$"):
        with batch.Batch(None) as b:
            ctx.matmul(d, d, "min_plus", c=d, return_argmax=True)
            assert len(b.checks) == 1


# ------------------------------------------------------------------ the APSP breakdown


def _apsp():
    root = __import__("pathlib").Path(__file__).resolve().parent.parent
    if str(root / "examples") not in sys.path:
        sys.path.insert(0, str(root / "examples"))
    import apsp_resident

    return apsp_resident


@pytest.mark.parametrize("in_batch", [True, False])
def test_apsp_marks_every_phase_in_order(in_batch):
    ap = _apsp()
    w = ap.random_network(20, 3, seed=4)
    seen: list[str] = []
    ctx = HybridContext(backend="cpu")
    dist, nxt, _ = ap.square(ap.start(w)[0], None, ctx, batch=in_batch, mark=seen.append)
    assert seen == ["upload", "first_hops"] + ["gemm", "next_hop"] * 5 + [  # ceil(log2(19)) = 5
        "batch_end", "download_d", "download_nxt"]
    want, want_nxt, _ = ap.all_pairs(w, ctx)
    assert np.array_equal(dist, want) and np.array_equal(nxt, want_nxt)
    assert ap.check(w, dist, nxt, range(20))[0]


def test_breakdown_script_on_cpu(tmp_path):
    """benchmarks/bench_apsp_breakdown.py end to end on a small graph (cpu: no events)."""
    import json

    from benchmarks import bench_apsp_breakdown as bd

    out = tmp_path / "bd.json"
    assert bd.main(["--backend", "cpu", "--n", "40", "--check-n", "30", "--repeats", "2",
                    "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["backend"]["name"] == "cpu" and doc["transfers"] == {} and len(doc["rows"]) == 2
    for r in doc["rows"]:
        assert r["repeats"] == 2 and r["ratio"] == r["end_to_end_s"] / r["kernel_sum_s"]
        assert len(r["per_squaring_wall_ms"]) == 6 and r["gemm_gpu_s"] is None  # ceil(log2(39))
        assert 0 < r["gemm_wall_s"] < r["end_to_end_s"]


def test_no_pinned_memory_left_takes_the_plain_copy(fake_cupy, rng, monkeypatch, caplog):
    class CUDARuntimeError(RuntimeError):
        pass

    cuda = sys.modules["cupy"].cuda

    def refuse(n):
        raise CUDARuntimeError("cudaErrorMemoryAllocation: out of memory")

    monkeypatch.setattr(cuda, "runtime", types.SimpleNamespace(CUDARuntimeError=CUDARuntimeError),
                        raising=False)
    monkeypatch.setattr(cuda, "alloc_pinned_memory", refuse)
    want = rng.standard_normal((1100, 1000)).astype(np.float32)
    dev = _FakeDevice(want)
    with caplog.at_level("INFO", logger="pytropical_gpu"):
        got = _arrays.to_numpy(dev)
    assert dev.gets == [False] and np.array_equal(got, want) and "pageable copy" in caplog.text


def test_live_pinned_results_are_bounded(fake_cupy, rng, monkeypatch):
    """Page-locked memory held by live results stays under MAX_LIVE_BYTES: past it, downloads are
    plain; dropping a result (and its views) gives its share back."""
    import gc

    v = rng.standard_normal((1100, 1000)).astype(np.float32)
    size = _pinned.size_class(v.nbytes)
    base = _pinned.live_bytes()
    monkeypatch.setattr(_pinned, "MAX_LIVE_BYTES", base + 2 * size)
    first, second = _arrays.to_numpy(_FakeDevice(v)), _arrays.to_numpy(_FakeDevice(v))
    assert len(fake_cupy) == 2 and _pinned.live_bytes() == base + 2 * size
    third = _arrays.to_numpy(_FakeDevice(v))
    assert len(fake_cupy) == 2 and np.array_equal(third, v)  # over the bound: the plain copy
    view = first[5:]
    del first
    gc.collect()
    assert _pinned.live_bytes() == base + 2 * size  # the view keeps its base alive
    del view, second
    gc.collect()
    assert _pinned.live_bytes() == base
    assert np.array_equal(_arrays.to_numpy(_FakeDevice(v)), v) and len(fake_cupy) == 3
