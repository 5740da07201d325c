"""The argmax on wgpu's big tile with its k-tile indices packed (``PIDX`` 16 in
``wgsl/gemm_tiled.wgsl``, the rule :func:`.gemm_passes.argmax_pidx`): which (semiring, dtype, k)
get it, the guards that keep its I = -2 from ever being queued and a PIDX other than 0 or 16
(PIDX 8 was removed in session 8) from being rendered or queued, and results on the big tile
(m * n > 2^20, min(m, n) >= 128) against the independent reference on every backend: ±inf and
the integer extremes, rows and columns of the zero (I = -1), ties across k-tiles, k = 0, k running
downhill (every k-tile better than the last), every selective semiring, ``c``, batches, and eager
against batched calls."""

from __future__ import annotations

import re

import numpy as np
import pytest
from reference import ref_matmul
from test_matmul import rand

import pytropical_gpu as tg
from pytropical_gpu import HybridContext
from pytropical_gpu.semirings import Semiring, get_semiring

#: the big tile's output shapes (> 2^20 outputs): n odd (scalar stores, the shaders
#: test_matmul_kernels.py's big-tile argmax compiles too: lavapipe takes ~10 s a shader) and n a
#: multiple of 4 (DV: D and I as vec4, the library's path without ``c``)
M, N, NV = 1024, 1029, 1040
SELECTIVE = ["min_plus", "max_plus", "min_times", "max_times", "min_max", "max_min"]
#: the field's k limit, written out: 2^16 k-tiles of BK = 16
K_MAX = 65536 * 16


def _code(name, dtype, special=False):
    from pytropical_gpu.backends.wgpu import gemm

    sr = name if isinstance(name, Semiring) else get_semiring(name)
    return gemm.semiring_code(sr, np.dtype(dtype), special)


def _pidx(code, m=M, n=N, k=37, by_tile=True):
    from pytropical_gpu.backends.wgpu import gemm

    kname, kp = gemm.choose_kernel(m, n, k, True, 1 << 14, by_tile, code)
    return kp.get("PIDX", 0) if kname == "gemm_tiled" else 0


@pytest.mark.parametrize("name", SELECTIVE)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_rule_packs_builtin_min_max_while_k_fits(name, dtype):
    for special in (False, True):
        code = _code(name, dtype, special)
        for k in (0, 1, 15, 17, 4096, 4112, K_MAX - 1, K_MAX):
            assert _pidx(code, k=k) == 16, (special, k)
        for k in (K_MAX + 1, K_MAX + 16, 1 << 24):  # a 2^16 + 1st k-tile: unpacked
            assert _pidx(code, k=k) == 0, (special, k)


def test_rule_leaves_everything_else_unpacked():
    user = Semiring("max_min_pidx_user", np.maximum, np.minimum, -np.inf, np.inf,
                    dtypes=("float32", "int32"), wgsl_add="max(a, b)", wgsl_mul="min(a, b)",
                    selective=True)
    for code in (None, _code(user, "float32"), _code(user, "int32"),
                 _code("plus_times", "float32"), _code("bor_band", "uint32")):
        assert _pidx(code) == 0  # a user-defined or non-selective ⊕, or no semiring given
    code = _code("min_plus", "float32")
    assert _pidx(code, by_tile=False) == 0  # the per-pair argmax has no k-tile index
    assert _pidx(code, m=1024, n=1024) == 0  # m * n = 2^20: the small tile (not measured)
    assert _pidx(code, m=127, n=1 << 14) == 0
    assert _pidx(code, m=1 << 14, n=16, k=16) == 0  # gemm_simple


class _Eng:
    """Records what would be queued."""

    def dispatch(self, pipe, binds, groups, params):
        return groups


def _big_tile(**kw):
    from pytropical_gpu.backends.wgpu import gemm

    return {**gemm.TILE_ARGMAX, "ARGMAX": True, "AT": True, "PIDX": 16, **kw}


def test_a_field_too_short_for_k_is_never_queued():
    from pytropical_gpu.backends.wgpu import gemm, templating

    kp = _big_tile()
    assert gemm.make_dispatch(_Eng(), None, "gemm_tiled", kp, [], M, N, K_MAX) == (9, 8, 1)
    for k in (K_MAX + 1, K_MAX + 16, 1 << 24):
        with pytest.raises(RuntimeError, match=f"PIDX 16 holds 65536 k-tiles, k={k} has "):
            gemm.make_dispatch(_Eng(), None, "gemm_tiled", kp, [], M, N, k)
    unpacked = {x: v for x, v in kp.items() if x != "PIDX"}
    for kpu in (dict(kp, PIDX=0), unpacked):  # PIDX 0: the unpacked kernel, any k
        assert gemm.make_dispatch(_Eng(), None, "gemm_tiled", kpu, [], M, N, 1 << 24)
    params = _code("min_plus", "float32").params()
    assert (templating.render("gemm_tiled", **params, **dict(kp, PIDX=0), HAS_C=False)
            == templating.render("gemm_tiled", **params, **unpacked, HAS_C=False))


#: PIDX values gemm_tiled does not render (8: removed in session 8, at 41db6f3 only)
BAD_PIDX = [8, 1, 15, 32, -16, 16.0, True, "16", None]


@pytest.mark.parametrize("px", BAD_PIDX, ids=repr)
@pytest.mark.parametrize("argmax", [True, False])
def test_a_pidx_other_than_0_or_16_is_refused(px, argmax):
    """By the dispatch's guard at any k (before anything is queued) and by the template itself
    (never rendered as another PIDX), with the argmax by k-tile or without it."""
    from pytropical_gpu.backends.wgpu import gemm, templating

    kp = _big_tile(PIDX=px) if argmax else dict(gemm.TILE_ARGMAX, ARGMAX=False, PIDX=px)
    for k in (0, 16, 4096):
        with pytest.raises(ValueError, match=r"kp\['PIDX'\] must be 0 or 16 .*got " + re.escape(repr(px))):
            gemm.make_dispatch(_Eng(), None, "gemm_tiled", kp, [], M, N, k)
    with pytest.raises(ValueError, match=r"gemm_tiled: PIDX must be 0 or 16, got " + re.escape(repr(px))):
        templating.render("gemm_tiled", **_code("min_plus", "float32").params(), **kp, HAS_C=False)


def _ref(a, b, name, c=None):
    """The reference in blocks of rows (its products are m x k x n float64)."""
    lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2], () if c is None else c.shape[:-2])
    a = np.broadcast_to(a, lead + a.shape[-2:])
    c = None if c is None else np.broadcast_to(c, lead + c.shape[-2:])
    parts = [ref_matmul(a[..., i:i + 256, :], b, name, None if c is None else c[..., i:i + 256, :])
             for i in range(0, a.shape[-2], 256)]
    return np.concatenate([p[0] for p in parts], -2), np.concatenate([p[1] for p in parts], -2)


def _check(a, b, name, backend, c=None):
    got, idx = tg.matmul(a, b, name, c=c, return_argmax=True, backend=backend)
    want, want_idx = _ref(a, b, name, c)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(idx, want_idx)
    return got, idx


def _operands(rng, name, dtype, k, lead=(), n=N):
    """Random operands with the extremes, a row of A and a column of B all the zero (I = -1 there
    whatever the other side holds), and equal products in many k-tiles (smallest k wins)."""
    a, b = rand(rng, lead + (M, k), dtype), rand(rng, (k, n), dtype)
    if k:
        z = get_semiring(name).zero_for(dtype)
        a[..., 3, :], b[:, 5] = z, z
        a[..., 100:140, ::3], b[::3, 200:260] = a[..., 100:140, :1], b[:1, 200:260]
    return a, b


@pytest.mark.parametrize(("name", "dtype", "k"), [("min_plus", "float32", 37),
                                                   ("max_plus", "int32", 32)])
def test_big_tile_argmax_with_c(backend, rng, name, dtype, k):
    """Extremes, zero rows and columns, ties across k-tiles, k cut inside its last k-tile or not,
    without ``c`` and with it (-1 where ``c`` wins)."""
    a, b = _operands(rng, name, dtype, k)
    _, idx = _check(a, b, name, backend)
    assert (idx[3] == -1).all() and (idx[:, 5] == -1).all()
    _check(a, b, name, backend, rand(rng, (M, N), dtype))


@pytest.mark.parametrize("name", ["min_times", "max_times", "min_max", "max_min"])
def test_big_tile_argmax_other_selective(backend, rng, name):
    """The other selective semirings, D and I stored as vec4 (n a multiple of 4, no ``c``)."""
    dtype = "int32" if name == "min_max" else "float32"
    a, b = _operands(rng, name, dtype, 21, n=NV)
    _, idx = _check(a, b, name, backend)
    assert (idx[3] == -1).all() and (idx[:, 5] == -1).all()


@pytest.mark.parametrize(("name", "dtype"), [("min_plus", "float32"), ("max_plus", "int32")])
def test_big_tile_argmax_k_running_downhill(backend, rng, name, dtype):
    """Every k better than the one before (each k-tile replaces the index), the best at k - 1;
    and k = 0 (nothing improves: the zero, I = -1 everywhere)."""
    k, dt = 41, np.dtype(dtype)
    step = -1 if name == "min_plus" else 1
    a = np.tile((step * np.arange(k)).astype(dt), (M, 1)) + rand(rng, (M, 1), dt, False)
    b = np.tile(rand(rng, (1, N), dt, False), (k, 1))
    a[7] = get_semiring(name).zero_for(dt)  # a row of the zero (and the guarded ⊗)
    _, idx = _check(a, b, name, backend)
    assert (idx[7] == -1).all() and (np.delete(idx, 7, 0) == k - 1).all()
    got, idx = _check(np.zeros((M, 0), dt), np.zeros((0, N), dt), name, backend)
    assert (idx == -1).all() and (got == get_semiring(name).zero_for(dt)).all()


def test_big_tile_argmax_batched(backend, rng):
    """A batch of A against one B, and both batched (per-entry strides), with ``c``."""
    a, b = _operands(rng, "min_plus", "float32", 19, (2,))
    _check(a, b, "min_plus", backend, rand(rng, (2, M, N), "float32"))
    _check(a[:1], np.stack([b, b[::-1]]), "min_plus", backend)


@pytest.mark.parametrize(("name", "n", "cs"), [("min_plus", N, (False, True)),
                                               ("max_min", NV, (False,))])
def test_big_tile_argmax_eager_equals_batch(backend, rng, monkeypatch, name, n, cs):
    """The same calls inside ``ctx.batch()`` (the recorded path) give the eager results, and on
    wgpu both ran the packed first pass."""
    if backend == "cpu":
        pytest.skip("no batch on the cpu backend")
    seen = []
    if backend == "wgpu":
        from pytropical_gpu.backends import get_backend

        eng = get_backend("wgpu").engine
        real = eng.pipeline

        def spy(kname, **kw):
            seen.append(kw.get("PIDX") if kname == "gemm_tiled" else None)
            return real(kname, **kw)

        monkeypatch.setattr(eng, "pipeline", spy)
    ctx = HybridContext(backend=backend)
    a, b = _operands(rng, name, "float32", 23, n=n)
    cs = [rand(rng, (M, n), "float32") if x else None for x in cs]
    eager = [ctx.matmul(a, b, name, c=x, return_argmax=True) for x in cs]
    with ctx.batch():
        lazy = [ctx.matmul(a, b, name, c=x, return_argmax=True) for x in cs]
    for (d, i), (ld, li), x in zip(eager, lazy, cs):
        want, want_i = _ref(a, b, name, x)
        for got, exp in ((d, want), (i, want_i), (ctx.to_host(ld), want), (ctx.to_host(li), want_i)):
            np.testing.assert_array_equal(ctx.to_host(got), exp)
    assert backend != "wgpu" or seen.count(16) == 2 * len(cs)


@pytest.mark.parametrize(("name", "dtype"), [("min_plus", "float32"), ("max_plus", "int32")])
def test_big_tile_packed_indices_beyond_k_tile_255(backend, rng, monkeypatch, name, dtype):
    """k-tile indices that need the field's high bits (k-tiles 255-259: bit 8 set in both halves of
    the u32), on a small shape forced onto the big tile: each row's unique best planted in one
    k-tile (the other tests' k stay under 3 k-tiles, so an 8-bit field would pass them)."""
    if backend != "wgpu":
        pytest.skip("the packed field is the wgpu big tile's")
    from pytropical_gpu.backends.wgpu import gemm

    seen, choose = [], gemm.choose_kernel

    def forced(m, n, k, *args, **kw):  # the big tile's answer for a big output, on this shape
        r = choose(4096, 4096, k, *args, **kw)
        seen.append(r[1].get("PIDX", 0))
        return r

    monkeypatch.setattr(gemm, "choose_kernel", forced)
    m, k, n, dt = 130, 4152, 132, np.dtype(dtype)
    a = rng.integers(0, 1000, (m, k)).astype(dt)
    b = rng.integers(0, 1000, (k, n)).astype(dt)
    sign = -1 if name == "min_plus" else 1
    at = rng.choice([4080, 4095, 4096, 4111, 4112, 4127, 4130, 4151], m)  # k-tiles 255-259
    a[np.arange(m), at] = sign * (5000 + np.arange(m))
    _, idx = _check(a, b, name, backend)
    assert seen and set(seen) == {16}
    np.testing.assert_array_equal(idx, np.broadcast_to(at[:, None], (m, n)))
