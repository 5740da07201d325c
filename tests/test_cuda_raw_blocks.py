"""The kept ``cuLaunchKernel`` parameter blocks of the search launches (search_raw.launch for 2+
queries, search_fused._raw for one), on a stand-in driver that reads back each launch's slots
through the pointer array it was given: every launch carries exactly the values of its call,
blocks are kept per plan (and rebuilt for another slot count or another plan at a reused id), the
one-query block's fixed slots come from its plan, and a table is emptied at its cap. Runs
everywhere (no CuPy, no GPU): the GPU tests (test_cuda_search_s4*.py) run the real launches."""

from __future__ import annotations

import ctypes
import types

import pytest

from pytropical_gpu.backends.cuda import search_fused, search_raw


class Driver:
    """cupy.cuda.driver with launchKernel recording (fn, grid, block, smem, stream, slot values)."""

    def __init__(self, slots: int):
        self.slots, self.calls, self.addrs = slots, [], []

    def launchKernel(self, fn, gx, gy, gz, bx, by, bz, smem, stream, args, extra):  # noqa: N802
        ptrs = (ctypes.c_void_p * self.slots).from_address(args)
        self.addrs.append(args)
        self.calls.append((fn, (gx, gy, gz), (bx, by, bz), smem, stream, extra,
                           [ctypes.c_uint64.from_address(p).value for p in ptrs]))


def _cp(driver):
    return types.SimpleNamespace(cuda=types.SimpleNamespace(driver=driver))


@pytest.fixture(autouse=True)
def _empty_tables(monkeypatch):
    monkeypatch.setattr(search_raw, "_blocks", {})
    monkeypatch.setattr(search_fused, "_raw_blocks", {})


def test_two_query_launch_carries_each_calls_values():
    fn, plans = types.SimpleNamespace(ptr=1234), [object(), object()]
    for n in (3, 5):
        drv = Driver(n)
        for rep in range(3):
            for i, plan in enumerate(plans):
                vals = [2**64 - 1 - rep, 2**40 + i] + list(range(n - 2))
                assert search_raw.launch(_cp(drv), plan, fn, (7, 8, 1), 256, 96, 42, vals)
                assert drv.calls[-1] == (1234, (7, 8, 1), (256, 1, 1), 96, 42, 0, vals)
        assert len(set(drv.addrs)) == len(plans)  # one block a plan, kept across calls
    assert search_raw.launch(_cp(types.SimpleNamespace()), plans[0], fn, (1, 1, 1), 1, 0, 0, [1]) is False


def test_one_query_launch_slots_and_fixed_values():
    drv, fn = Driver(13), types.SimpleNamespace(ptr=99)
    plans = [(None,) * 4 + (((1000 + i,), None, (37 + i, 10 + i), None),) for i in range(2)]
    for rep in range(2):
        for i, plan in enumerate(plans):
            v = (11, 12, 13, 14, 15 + rep, 3 + i, 2**40, 77, 2 + rep)
            assert search_fused._raw(_cp(drv), plan, fn, 5 + i, 999, 7, v)
            want = [11, 12, 13, 14, 0, 1000 + i, 37 + i, 10 + i, 15 + rep, 3 + i, 2**40,
                    2**40 + 8 * (2 + rep), 77]
            assert drv.calls[-1] == (99, (5 + i, 1, 1), (256, 1, 1), 999, 7, 0, want)
    assert search_fused._raw(_cp(types.SimpleNamespace()), plans[0], fn, 1, 0, 0, v) is False


def test_table_emptied_at_cap_and_a_reused_id_rebuilt(monkeypatch):
    monkeypatch.setattr(search_raw, "KEEP", 4)
    drv, fn = Driver(2), types.SimpleNamespace(ptr=1)
    plans = [object() for _ in range(4)]
    for p in plans:
        search_raw.launch(_cp(drv), p, fn, (1, 1, 1), 32, 0, 0, [1, 2])
    assert len(search_raw._blocks) == 4
    search_raw.launch(_cp(drv), object(), fn, (1, 1, 1), 32, 0, 0, [3, 4])
    assert len(search_raw._blocks) == 1 and drv.calls[-1][-1] == [3, 4]
    stale = object()
    search_raw._blocks[id(stale)] = (object(), None)  # an entry of a dead plan whose id came back
    search_raw.launch(_cp(drv), stale, fn, (1, 1, 1), 32, 0, 0, [5, 6])
    assert search_raw._blocks[id(stale)][0] is stale and drv.calls[-1][-1] == [5, 6]
