"""Large host-to-cuda uploads staged through pinned memory by several threads (``_pinned.put``, the
path of ``_arrays.to_cupy`` and so of ``to_device`` and every numpy-in cuda call): the same bits
as ``cupy.asarray``, every byte in one DMA piece in order on the caller's stream, the staging block
kept until an event after its DMA has passed; small, odd-layout, foreign-endian, over-bound and
switched-off uploads, and a pinned allocation that fails, take ``cupy.asarray``. Without a GPU a
stand-in cupy module (``sys.modules["cupy"]``) plays the device; on cuda (the device suite) the
real path is checked against ``cupy.asarray`` and across streams."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from test_transfers import _specials  # float32 with every special value

from conftest import require_backend
from pytropical_gpu import _arrays, _pinned


class _Dev(np.ndarray):
    """A stand-in cupy array: numpy memory; ``set`` records (offset, bytes, stream) in its log."""

    log: list

    def set(self, arr, stream=None):
        assert isinstance(arr, np.ndarray) and arr.shape == self.shape and arr.dtype == self.dtype
        base = self.base
        while isinstance(base, _Dev) and base.base is not None:
            base = base.base
        off = self.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        self.log.append((off, arr.nbytes, stream))
        self[...] = arr


class _Event:
    def __init__(self):
        self.done = False


@pytest.fixture
def fake(monkeypatch):
    """A stand-in cupy: what was pinned, which uploads went through ``asarray``, the DMA pieces."""
    rec = types.SimpleNamespace(pinned=[], asarray=[], sets=[], events=[], stream=object())

    def alloc_pinned_memory(n):
        rec.pinned.append(n)
        return bytearray(n)

    def empty(shape, dtype):
        return np.empty(shape, dtype).view(_Dev)

    def asarray(x):
        rec.asarray.append(x.shape)
        return np.array(x).view(_Dev)

    def record():
        rec.events.append(_Event())
        return rec.events[-1]

    class CUDARuntimeError(RuntimeError):
        pass

    stream = types.SimpleNamespace(record=record, ident=rec.stream)
    mod = types.ModuleType("cupy")
    mod.ndarray, mod.empty, mod.asarray = type("ndarray", (), {}), empty, asarray
    mod.cuda = types.SimpleNamespace(alloc_pinned_memory=alloc_pinned_memory,
                                     get_current_stream=lambda: stream,
                                     runtime=types.SimpleNamespace(CUDARuntimeError=CUDARuntimeError))
    rec.stream = stream
    monkeypatch.setattr(_Dev, "log", rec.sets, raising=False)
    monkeypatch.setitem(sys.modules, "cupy", mod)
    monkeypatch.setattr(_pinned, "MIN_BYTES", 4 << 20)
    monkeypatch.setattr(_pinned, "UP_MIN_BYTES", 4 << 20)
    monkeypatch.setattr(_pinned, "CHUNK", 1 << 20)  # several pieces per upload
    monkeypatch.setattr(_pinned, "_staged", [])
    return rec


@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "bool", "float64"])
def test_large_upload_is_staged_in_pieces_on_the_stream(fake, rng, dtype):
    if dtype == "float32":
        want = _specials((1100, 1001), rng)  # 4.4 MB, not a whole number of pieces
    elif dtype == "bool":
        want = rng.random((4500, 1001)) < 0.5
    else:
        info = np.iinfo(dtype) if dtype != "float64" else None
        rows = 4500 if dtype == "uint8" else 700  # over 4 MiB
        want = (rng.integers(info.min, info.max, (rows, 1001), dtype=dtype, endpoint=True) if info
                else rng.standard_normal((700, 1001)))
        if info:
            want.reshape(-1)[:2] = [info.min, info.max]
    host = want.copy()
    got = _arrays.to_cupy(host)
    assert fake.asarray == [] and fake.pinned == [_pinned.size_class(want.nbytes)]
    assert isinstance(got, _Dev) and got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))  # every bit, NaN payloads too
    pieces = [(off, n) for off, n, _ in fake.sets]
    chunk = _pinned.CHUNK
    assert pieces == [(a, min(chunk, want.nbytes - a)) for a in range(0, want.nbytes, chunk)]
    assert all(s is fake.stream for *_, s in fake.sets)  # the caller's current stream
    host[...] = 0  # the host array is the caller's again once put returns
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_the_staging_block_is_kept_until_its_dma_has_passed(fake, rng):
    a = rng.standard_normal((1200, 1000)).astype(np.float32)
    _arrays.to_cupy(a)
    assert len(_pinned._staged) == 1 and _pinned._staged[0][0] is fake.events[0]
    _arrays.to_cupy(a)
    assert len(_pinned._staged) == 2  # the first event has not passed: its block stays
    fake.events[0].done = True
    _arrays.to_cupy(a)
    assert [ev for ev, _ in _pinned._staged] == fake.events[1:]  # the first one released


@pytest.mark.parametrize("case", ["small", "under_upload_min", "fortran", "strided", "big_endian",
                                  "complex_be", "over_bound", "off"])
def test_other_uploads_take_cupy_asarray(fake, rng, monkeypatch, case):
    big = rng.standard_normal((1200, 1000))
    if case == "under_upload_min":  # over the download threshold, under the upload one
        monkeypatch.setattr(_pinned, "UP_MIN_BYTES", big.nbytes + 1)
    v = {"small": big[:10], "under_upload_min": big, "fortran": np.asfortranarray(big),
         "strided": big[:, ::2],
         "big_endian": big.astype(">f8"), "complex_be": big.astype(">c16"),
         "over_bound": big, "off": big}[case]
    if case == "off":
        monkeypatch.setattr(_pinned, "MIN_BYTES", None)
    if case == "over_bound":
        monkeypatch.setattr(_pinned, "MAX_LIVE_BYTES", big.nbytes - 1)
    got = _arrays.to_cupy(v)
    assert fake.asarray == [v.shape] and fake.pinned == [] and fake.sets == []
    assert np.array_equal(got, v)


def test_no_pinned_memory_takes_cupy_asarray(fake, rng, monkeypatch, caplog):
    cuda = sys.modules["cupy"].cuda

    def refuse(n):
        raise cuda.runtime.CUDARuntimeError("cudaErrorMemoryAllocation: out of memory")

    monkeypatch.setattr(cuda, "alloc_pinned_memory", refuse)
    v = rng.standard_normal((1100, 1000)).astype(np.float32)
    with caplog.at_level("INFO", logger="pytropical_gpu"):
        got = _arrays.to_cupy(v)
    assert fake.asarray == [v.shape] and np.array_equal(got, v) and "pinned upload" in caplog.text


# ------------------------------------------------------------------ the real device (device suite)
def test_cuda_upload_matches_asarray_on_any_stream(rng):
    require_backend("cuda")
    import cupy

    from pytropical_gpu import HybridContext

    want = _specials((2100, 1001), rng)  # 8.4 MB: two pieces of the default size
    assert _pinned.put_wanted(want)
    ref = cupy.asarray(want)
    for stream in (cupy.cuda.Stream.null, cupy.cuda.Stream(non_blocking=True)):
        with stream:
            got = HybridContext(backend="cuda").to_device(want)
            again = got.copy()  # queued on the same stream, after the DMA
        stream.synchronize()
        assert got.dtype == want.dtype and got.shape == want.shape
        for x in (got, again):
            assert bool(cupy.all(x.view(cupy.uint32) == ref.view(cupy.uint32)))
    cupy.cuda.Device().synchronize()
    _pinned.put(want)  # every earlier event has passed: only this upload's block stays
    assert len(_pinned._staged) == 1
