"""The single-launch stream-k GEMM (issue 14: min_plus / max_plus float32, ``sr_gemm_sk``).

Host part (no GPU): its modules hold those two only (the default modules none), and
:func:`gemm_streamk.split` with the kernel's own index arithmetic (replayed here in Python) gives
every k-iteration of every tile to exactly one block, with contributor slots inside the workspace.
Device part: the kernel against the independent reference, bit for bit in value, on odd shapes
with ±inf, -0.0, ties and NaN products (inf - inf), with and without ``c``, k = 0, on the device's
block count and on few blocks (whole tiles, tiles split over several blocks, blocks spanning
tiles); the backend takes it only for the listed shapes (none by default: measured slower), and a
NaN operand is still refused."""

from __future__ import annotations

import numpy as np
import pytest
from reference import ref_matmul

import pytropical_gpu as tg
from conftest import require_backend
from pytropical_gpu.backends.cuda import gemm_streamk, kernels

PLUS = ["min_plus", "max_plus"]


def test_modules_of_their_own_for_float32_min_max_plus():
    from pytropical_gpu.backends.cuda import module_specs

    for name in PLUS:
        spec = gemm_streamk.spec(name)
        default = kernels.gemm_spec(tg.get_semiring(name), np.dtype(np.float32))
        expr = spec.names[gemm_streamk.ROLE]
        assert expr.startswith("ptg::sr_gemm_sk<ptg::") and expr.endswith(", 64, 128, 8, 8, 8, 3>")
        assert ("MaxPlus" if name == "max_plus" else "MinPlus") in expr and "sr_gemm_sk(" in spec.code()
        assert spec in module_specs()  # the nvcc compile test compiles it
        # the default modules do not carry it (no compile time for callers that never use it)
        assert "sr_gemm_sk(" not in default.code()
        assert not any("sr_gemm_sk<" in e for e in default.names.values())
    for name, dt, argmax in (("min_plus", np.int32, False), ("max_times", np.float32, False),
                             ("min_plus", np.float64, False), ("min_plus", np.float32, True)):
        assert not gemm_streamk.wanted(name, dt, 2048, 2048, 2048, 1, argmax)


def _replay(m, n, k, slots):
    """The kernel's share-out (sr_gemm_sk), in Python: {sk tile: [(first, last) k-iterations]}."""
    dp, sk, maxc = gemm_streamk.split(m, n, k, slots)
    ki = -(-k // 8)
    total = sk * ki

    def start(b):
        return b * total // slots

    cover = {}
    for bid in range(slots):
        s, e = start(bid), start(bid + 1)
        while s < e:
            t = s // ki
            ib, ie = s - t * ki, min(e, (t + 1) * ki) - t * ki
            if (ib, ie) != (0, ki):
                first = t * ki * slots // total
                while first > 0 and start(first) > t * ki:
                    first -= 1
                while start(first + 1) <= t * ki:
                    first += 1
                assert 0 <= bid - first < maxc  # its workspace slot exists
                last = first
                while start(last + 1) < (t + 1) * ki:
                    last += 1
                assert last - first < maxc  # the fixing block's reads stay inside too
            cover.setdefault(t, []).append((ib, ie))
            s = (t + 1) * ki
    return dp, sk, ki, cover


@pytest.mark.parametrize(("m", "n", "k"), [(67, 83, 97), (200, 130, 1000), (333, 700, 517),
                                           (2048, 2048, 2048), (4096, 4096, 4096), (1536, 2048, 2048),
                                           (640, 1280, 0)])
@pytest.mark.parametrize("slots", [396, 5, 7, 16])
def test_split_covers_every_iteration_once(m, n, k, slots):
    dp, sk, ki, cover = _replay(m, n, k, slots)
    tiles = -(-m // 64) * -(-n // 128)
    assert dp + sk == tiles and sk < slots and (dp % slots == 0 or (k == 0 and sk == 0))
    assert sorted(cover) == list(range(sk if ki else 0))
    for segs in cover.values():
        pos = 0
        for ib, ie in sorted(segs):
            assert ib == pos and ie > ib
            pos = ie
        assert pos == ki
    if (m, n, k, slots) == (2048, 2048, 2048, 396):
        assert (dp, sk) == (396, 116)


def test_backend_rule_only_for_listed_single_products(monkeypatch):
    assert gemm_streamk.DEFAULT_SHAPES == frozenset()  # measured slower everywhere (notes, s5)
    shape = (2048, 2048, 2048)
    monkeypatch.setattr(gemm_streamk, "DEFAULT_SHAPES", frozenset({shape}))
    assert gemm_streamk.wanted("min_plus", np.float32, *shape, 1, False)
    assert gemm_streamk.wanted("max_plus", "float32", *shape, 1, False)
    assert not gemm_streamk.wanted("min_plus", np.float32, *shape, 2, False)
    assert not gemm_streamk.wanted("min_plus", np.float32, *shape, 1, True)
    assert not gemm_streamk.wanted("min_plus", np.float32, 2049, 2048, 2048, 1, False)


# ------------------------------------------------------------------------------ device
def _operands(rng, name, m, k, n):
    """Quarter integers (ties), -0.0, both infinities (the zero and the other one) and rows x
    columns whose first 40 terms are inf + -inf (NaN products, ⊕ ignores them)."""
    a = (rng.integers(-20, 20, (m, k)) / 4).astype(np.float32)
    b = (rng.integers(-20, 20, (k, n)) / 4).astype(np.float32)
    for x in (a, b) if k else ():
        for v, frac in ((-0.0, 0.05), (np.inf, 0.08), (-np.inf, 0.08)):
            x.flat[rng.integers(0, x.size, max(1, int(x.size * frac)))] = v
    kk = min(40, k)
    a[3, :kk], b[:kk, 2] = np.inf, -np.inf
    a[2, :kk], b[:kk, 3] = -np.inf, np.inf
    return a, b


@pytest.mark.parametrize("name", PLUS)
@pytest.mark.parametrize(("m", "k", "n"), [(67, 97, 83), (200, 1000, 130), (333, 517, 700), (130, 2048, 260),
                                           (70, 0, 140)])
@pytest.mark.parametrize("slots", [None, 5, 7])
@pytest.mark.parametrize("with_c", [False, True], ids=["", "c"])
def test_streamk_exact(rng, name, m, k, n, slots, with_c):
    require_backend("cuda")
    import cupy as cp

    be = tg.get_backend("cuda")
    a, b = _operands(rng, name, m, k, n)
    c = _operands(rng, name, m, 1, n)[0][:, :1] * np.ones((1, n), np.float32) if with_c else None
    spec = gemm_streamk.spec(name)
    for _ in range(2):  # the second call finds the counters the first one left at 0
        d = gemm_streamk.run(be, spec, cp.asarray(a)[None], cp.asarray(b)[None],
                             None if c is None else cp.asarray(c)[None], slots=slots)
        np.testing.assert_array_equal(d.get()[0], ref_matmul(a, b, name, c)[0])


@pytest.mark.parametrize("name", PLUS)
def test_backend_takes_streamk_for_listed_shape(monkeypatch, rng, name):
    require_backend("cuda")
    m, k, n = 333, 517, 700
    monkeypatch.setattr(gemm_streamk, "DEFAULT_SHAPES", frozenset({(m, n, k)}))
    seen = []
    real = kernels.function
    monkeypatch.setattr(kernels, "function", lambda spec, role: seen.append(role) or real(spec, role))
    a, b = _operands(rng, name, m, k, n)
    np.testing.assert_array_equal(tg.matmul(a, b, name, backend="cuda"), ref_matmul(a, b, name)[0])
    assert seen == ["sk_big3"], seen
    seen.clear()
    d, idx = tg.matmul(a, b, name, return_argmax=True, backend="cuda")  # argmax: the tiles
    want, widx = ref_matmul(a, b, name)
    np.testing.assert_array_equal(d, want)
    np.testing.assert_array_equal(idx, widx)
    assert "sk_big3" not in seen
    a[4, 5] = np.nan
    with pytest.raises(ValueError):
        tg.matmul(a, b, name, backend="cuda")
