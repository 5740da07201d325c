"""search_pdl's host side without a GPU (stand-ins for CuPy, the kernels and the driver): the
scan's parameter block (no counter, no results: lists only), the dependent merge's parameters
and launch configuration (the programmatic stream serialization attribute, one block of 256 on
the caller's stream), and the cases where it declines (not tma3/tma4(v), below sm_90, no
cuLaunchKernelEx) so the caller keeps the last-block merge."""

from __future__ import annotations

import ctypes
import types

import numpy as np
import pytest

from pytropical_gpu.backends.cuda import search_pdl


class _Fn:
    def __init__(self, name):
        self.name, self.ptr = name, 1000 + len(name)


def _be(cc="90"):
    dev = types.SimpleNamespace(compute_capability=cc)
    cp = types.SimpleNamespace(cuda=types.SimpleNamespace(Device=lambda: dev))
    return types.SimpleNamespace(_cp=cp)


def _plan(gx=264, m=200_000, w=313, span=80, smem=None, scan="tma3"):
    st, vq = int(scan[3]), scan.endswith("v")
    smem = smem or 64 * st + (128 * span if vq else 16 * ((2 * w + 3) // 4)) + 256 * st * span
    return (None, (gx, 1), (256,), smem, ((np.int64(m),), (), (np.int64(w), np.int32(span)), ()),
            1, gx * 16, None, np.int64(gx * 16))


@pytest.fixture
def stubs(monkeypatch):
    got = {"raw": [], "ex": []}
    monkeypatch.setattr(search_pdl.kernels, "function", lambda spec, role: _Fn(role))
    monkeypatch.setattr(search_pdl.search_raw, "launch",
                        lambda cp, plan, fn, grid, block, smem, stream, vals:
                        got["raw"].append((fn.name, grid, block, smem, stream, list(vals))) or True)

    def ex(cfg, fptr, params, extra):
        c = search_pdl._Config.from_address(cfg)
        slots = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        vals = [ctypes.c_uint64.from_address(slots[i]).value for i in range(5)]
        got["ex"].append((fptr, tuple(c.grid), tuple(c.block), c.smem, c.stream or 0, c.nattrs,
                          c.attrs[0].id, c.attrs[0].value, vals, extra))
        return 0

    monkeypatch.setattr(search_pdl, "_ex", [ex])
    monkeypatch.setattr(search_pdl, "_plans", {})
    monkeypatch.setattr(search_pdl, "_blocks", {})
    return got


def _sl(scan):
    return types.SimpleNamespace(SCAN=scan, _allow_smem=lambda fn, n: None)


@pytest.mark.parametrize("scan", ["tma3", "tma4", "tma3v", "tma4v"])
def test_launch_parameters(stubs, scan):
    plan = _plan(scan=scan)
    v = (11, 12, 13, 14, 15, 10, 1 << 20, 17, 10)  # mp, mn, qp, qn, cand, k, out, counter, q k
    for stream in (0, 77):  # the kept blocks rewritten on the next call
        assert search_pdl.launch(_be(), _sl(scan), plan, 16, stream, v)
    name, grid, block, smem, stream, vals = stubs["raw"][-1]
    assert (name, grid, block, smem, stream) == (f"scan_{scan}_k16p", (264, 1, 1), 256, plan[3], 77)
    assert vals == [11, 12, 13, 14, 0, 200_000, 313, 80, 15, 10, 0, 0, 0]  # no results, no counter
    fptr, grid, block, smem, stream, n, aid, aval, mvals, extra = stubs["ex"][-1]
    assert fptr == _Fn("pdmerge16").ptr and extra is None
    assert (grid, block, smem, stream, n, aid, aval) == ((1, 1, 1), (256, 1, 1), 0, 77, 1, 6, 1)
    assert mvals == [15, 264 * 16, 1 << 20, (1 << 20) + 80, 10]  # cand, n, idx, val, k
    assert len(stubs["raw"]) == len(stubs["ex"]) == 2


@pytest.mark.parametrize(("scan", "cc"), [("tma6", "90"), ("tma6v", "90"), ("cp3", "90"),
                                          (None, "90"), ("tma3", "80")])
def test_declines(stubs, scan, cc):
    v = (11, 12, 13, 14, 15, 10, 1 << 20, 17, 10)
    assert not search_pdl.launch(_be(cc), _sl(scan), _plan(), 16, 0, v)
    assert not stubs["raw"] and not stubs["ex"]


def test_declines_foreign_plan(stubs):
    """A plan whose shared memory is not the tma scan's (the cp3 fallback's): no PD launch."""
    v = (11, 12, 13, 14, 15, 10, 1 << 20, 17, 10)
    assert not search_pdl.launch(_be(), _sl("tma3"), _plan(smem=12_345), 16, 0, v)
    assert not stubs["raw"] and not stubs["ex"]


def test_declines_without_launch_ex(stubs, monkeypatch):
    monkeypatch.setattr(search_pdl, "_ex", [None])
    v = (11, 12, 13, 14, 15, 10, 1 << 20, 17, 10)
    assert not search_pdl.launch(_be(), _sl("tma3"), _plan(), 16, 0, v)


def test_launch_error_raises(stubs, monkeypatch):
    monkeypatch.setattr(search_pdl, "_ex", [lambda *a: 1])
    with pytest.raises(RuntimeError, match="cuLaunchKernelEx"):
        search_pdl.launch(_be(), _sl("tma3"), _plan(), 16, 0, (11, 12, 13, 14, 15, 10, 64, 17, 10))
