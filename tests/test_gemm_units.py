"""The big3 tile over work units (issue 14: min_plus / max_plus float32, ``sr_gemm_units``).

Host part (no GPU): its modules hold those two only (the default modules none); :func:`layout`
with the kernel's own index arithmetic (replayed here in Python) gives every k-iteration of every
tile to exactly one unit, with contributor slots inside the workspace; the backend's rule is the
plan's single ``big3`` launch with k >= MIN_K, nothing else. Device part: the kernel against the
independent reference, bit for bit in value, on odd shapes with ±inf, -0.0, ties and NaN products
(inf - inf), with and without ``c``, on the device's slots and on few (whole tiles, tiles split
over several units, units spanning tiles), one unit a block and by ticket, twice (the counters are
back at 0); the backend takes it
where the rule says, argmax keeps the tiles, and a NaN operand is still refused."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_matmul

import pytropical_gpu as tg
from conftest import require_backend
from pytropical_gpu.backends.cuda import gemm_launch, gemm_units, kernels, zero_sign
from pytropical_gpu.backends.cuda.streams import stream_key

PLUS = ["min_plus", "max_plus"]


def test_modules_of_their_own_for_float32_min_max_plus():
    from pytropical_gpu.backends.cuda import module_specs

    for name in PLUS:
        spec = gemm_units.spec(name)
        default = kernels.gemm_spec(tg.get_semiring(name), np.dtype(np.float32))
        expr = spec.names[gemm_units.ROLE]
        assert expr.startswith("ptg::sr_gemm_units<ptg::") and expr.endswith(", 64, 128, 8, 8, 8, 3>")
        assert ("MaxPlus" if name == "max_plus" else "MinPlus") in expr and "sr_gemm_units(" in spec.code()
        assert spec in module_specs()  # the nvcc compile test compiles it
        # the default modules do not carry it (no compile time for callers that never use it)
        assert "sr_gemm_units(" not in default.code()
        assert not any("sr_gemm_units<" in e for e in default.names.values())


def _replay(m, n, k, slots):
    """The kernel's share-out (sr_gemm_units), in Python: {tile: [(first, last) k-iterations]}."""
    w, u, maxc = gemm_units.layout(m, n, k, slots)
    tiles = -(-m // 64) * -(-n // 128)
    ki = -(-k // 8)
    total = (tiles - w) * ki

    def start(j):
        return j * total // u

    cover = {t: [(0, ki)] for t in range(w)}
    for j in range(u):
        s, e = start(j), start(j + 1)
        assert s < e  # no empty unit (each one is a block)
        while s < e:
            t = s // ki
            ib, ie = s - t * ki, min(e, (t + 1) * ki) - t * ki
            if (ib, ie) != (0, ki):
                first = t * ki * u // total
                while first > 0 and start(first) > t * ki:
                    first -= 1
                while start(first + 1) <= t * ki:
                    first += 1
                assert 0 <= j - first < maxc  # its workspace slot exists
                last = first
                while start(last + 1) < (t + 1) * ki:
                    last += 1
                assert last - first < maxc  # the folding unit's reads stay inside too
            cover.setdefault(w + t, []).append((ib, ie))
            s = (t + 1) * ki
    return w, u, tiles, ki, cover


@pytest.mark.parametrize(("m", "n", "k"), [(67, 83, 97), (200, 130, 1000), (333, 700, 517), (9, 130, 33),
                                           (2048, 2048, 2048), (4096, 4096, 4096), (1536, 2048, 2048),
                                           (1536, 1536, 1536), (64, 128, 1), (4096, 3168, 8)])
@pytest.mark.parametrize("slots", [396, 5, 7, 16])
def test_layout_covers_every_iteration_once(m, n, k, slots):
    w, u, tiles, ki, cover = _replay(m, n, k, slots)
    assert w % slots == 0 and 0 <= tiles - w < slots and (u == 0) == (w == tiles) and u <= slots
    assert sorted(cover) == list(range(tiles))
    for segs in cover.values():
        pos = 0
        for ib, ie in sorted(segs):
            assert ib == pos and ie > ib
            pos = ie
        assert pos == ki
    if (m, n, k, slots) == (2048, 2048, 2048, 396):
        assert (w, u) == (396, 396)  # 116 tiles' 29,696 iterations over every slot
    if (m, n, k, slots) == (1536, 1536, 1536, 396):
        assert (w, u) == (0, 396)


def test_backend_rule_is_the_plans_single_big3_launch():
    names = kernels.gemm_spec(tg.get_semiring("min_plus"), np.dtype(np.float32)).names

    def rule(m, n, k, batch=1, argmax=False, name="min_plus", dt=np.float32, sms=132):
        p = gemm_launch.plan(m, n, k, batch, 4, argmax, True, sms, names, "big3")
        return gemm_units.wanted(name, dt, p.role, p.ks, k, batch, argmax)

    assert rule(2048, 2048, 2048) and rule(1536, 1536, 1536) and rule(8192, 8192, 8192)
    assert rule(2048, 2048, 2048, name="max_plus", dt="float32")
    assert rule(1536, 2048, gemm_units.MIN_K)
    assert not rule(1536, 2048, gemm_units.MIN_K - 1)  # below the measured k
    assert not rule(1024, 1024, 1024)  # the small tile (64 big tiles < 132 SMs), split k
    assert not rule(2048, 2048, 2048, batch=2)
    assert not rule(2048, 2048, 2048, argmax=True)
    for name, dt in (("min_plus", np.int32), ("max_times", np.float32), ("min_plus", np.float64),
                     ("max_min", np.float32)):
        assert not rule(2048, 2048, 2048, name=name, dt=dt)


# ------------------------------------------------------------------------------ device
def _operands(rng, name, m, k, n):
    """Quarter integers (ties), -0.0, both infinities (the zero and the other one) and rows x
    columns whose first 40 terms are inf + -inf (NaN products, ⊕ ignores them)."""
    a = (rng.integers(-20, 20, (m, k)) / 4).astype(np.float32)
    b = (rng.integers(-20, 20, (k, n)) / 4).astype(np.float32)
    for x in (a, b):
        for v, frac in ((-0.0, 0.05), (np.inf, 0.08), (-np.inf, 0.08)):
            x.flat[rng.integers(0, x.size, max(1, int(x.size * frac)))] = v
    kk = min(40, k)
    a[3, :kk], b[:kk, 2] = np.inf, -np.inf
    a[2, :kk], b[:kk, 3] = -np.inf, np.inf
    return a, b


@pytest.mark.parametrize("name", PLUS)
@pytest.mark.parametrize(("m", "k", "n"), [(67, 97, 83), (200, 1000, 130), (333, 517, 700), (130, 2048, 260),
                                           (9, 5, 130)])
@pytest.mark.parametrize(("slots", "ticket"),
                         [(None, False), (5, False), (7, False), (None, True), (2, True)])
@pytest.mark.parametrize("with_c", [False, True], ids=["", "c"])
def test_units_exact(rng, name, m, k, n, slots, ticket, with_c):
    require_backend("cuda")
    import cupy as cp

    be = tg.get_backend("cuda")
    a, b = _operands(rng, name, m, k, n)
    c = _operands(rng, name, m, 1, n)[0][:, :1] * np.ones((1, n), np.float32) if with_c else None
    want = ref_matmul(a, b, name, c)[0]
    spec = gemm_units.spec(name)
    for _ in range(2):  # the second call finds the counters the first one left at 0
        d = gemm_units.run(be, spec, cp.asarray(a)[None], cp.asarray(b)[None],
                           None if c is None else cp.asarray(c)[None], slots=slots, ticket=ticket)
        np.testing.assert_array_equal(d.get()[0], want)
    assert not gemm_units._buffers[stream_key(cp)][1].any()


@pytest.mark.parametrize("name", PLUS)
def test_backend_takes_units_by_the_rule(monkeypatch, roles, rng, name):
    be = tg.get_backend("cuda")
    monkeypatch.setattr(be, "_sm_count", lambda: 4)  # a small shape then plans big3: 12 slots
    m, k, n = 300, 1030, 260  # 15 tiles: 12 whole, 3 split over 12 units
    a, b = _operands(rng, name, m, k, n)
    want, widx = ref_matmul(a, b, name)
    np.testing.assert_array_equal(tg.matmul(a, b, name, backend="cuda"), want)
    assert roles == [gemm_units.ROLE, zero_sign.role(*name.split("_"), "float32")], roles  # + the pass
    roles.clear()
    d, idx = tg.matmul(a, b, name, return_argmax=True, backend="cuda")  # argmax: the tiles
    np.testing.assert_array_equal(d, want)
    np.testing.assert_array_equal(idx, widx)
    assert gemm_units.ROLE not in roles
    roles.clear()
    np.testing.assert_array_equal(tg.matmul(a[:, :1000], b[:1000], name, backend="cuda"),
                                  ref_matmul(a[:, :1000], b[:1000], name)[0])
    assert gemm_units.ROLE not in roles  # k below MIN_K: the tiles
    a[4, 5] = np.nan
    with pytest.raises(ValueError):
        tg.matmul(a, b, name, backend="cuda")


def test_units_on_per_thread_default_streams_keep_apart(rng):
    """Two threads, each on its own per-thread default stream (the same handle, 2), launch at once:
    each gets its own counters and workspace (a shared set would mix their split tiles)."""
    require_backend("cuda")
    import threading

    import cupy as cp

    be = tg.get_backend("cuda")
    spec = gemm_units.spec("min_plus")
    ops = [_operands(rng, "min_plus", 333, 2048, 700) for _ in range(2)]
    wants = [ref_matmul(a, b, "min_plus")[0] for a, b in ops]
    got, errors = [None, None], []

    def work(i):
        try:
            with cp.cuda.Stream.ptds:
                a, b = (cp.asarray(x)[None] for x in ops[i])
                outs = [gemm_units.run(be, spec, a, b, None, slots=7) for _ in range(20)]
                got[i] = [d.get()[0] for d in outs]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i in range(2):
        for d in got[i]:
            np.testing.assert_array_equal(d, wants[i])
