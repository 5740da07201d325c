"""The WebGPU runtime contract (``backends/wgpu/runtime.py``) on both implementations: wgpu-py (naga)
and Dawn (pydawn, Tint). The same test body runs on each; an unavailable runtime skips with its
reason, and ``PYTROPICAL_REQUIRE`` naming ``wgpu`` / ``dawn`` turns that skip into a failure."""

from __future__ import annotations

import importlib
import struct

import numpy as np
import pytest

from conftest import REQUIRED
from pytropical_gpu.backends.wgpu import runtime as rtmod
from pytropical_gpu.backends.wgpu.runtime import AdapterInfo, Binding, Copy, Dispatch, Limits

RUNTIMES = {"wgpu": "runtime_wgpupy", "dawn": "runtime_dawn"}
_cache: dict = {}


def runtime_module(name: str):
    return importlib.import_module(f"pytropical_gpu.backends.wgpu.{RUNTIMES[name]}")


def require_runtime(name: str):
    """The runtime's module if it has an adapter; skip (or fail when required) otherwise."""
    if name not in _cache:
        try:
            mod = runtime_module(name)
            ok, reason = mod.probe()
        except Exception as e:  # noqa: BLE001 - an import error is a reason too
            mod, ok, reason = None, False, f"{type(e).__name__}: {e}"
        _cache[name] = (mod, ok, reason)
    mod, ok, reason = _cache[name]
    if not ok:
        if name in REQUIRED:
            pytest.fail(f"WebGPU runtime {name} is required (PYTROPICAL_REQUIRE) but unavailable: "
                        f"{reason}")
        pytest.skip(f"WebGPU runtime {name} unavailable: {reason}")
    return mod


_runtimes: dict = {}


def get_runtime(name: str):
    """One runtime object per implementation for the whole session (device creation is slow)."""
    mod = require_runtime(name)
    if name not in _runtimes:
        _runtimes[name] = mod.create()
    return _runtimes[name]


@pytest.fixture(params=list(RUNTIMES))
def rt(request):
    return get_runtime(request.param)


SCALE = """
struct Params { n: u32, mul: u32, add: u32, pad: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < p.n) {
        dst[i] = src[i] * p.mul + p.add;
    }
}
"""

NO_PARAMS = """
@group(0) @binding(1) var<storage, read_write> x: array<i32>;

@compute @workgroup_size(32)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&x)) {
        x[gid.x] = -x[gid.x];
    }
}
"""


def _params(n, mul, add) -> bytes:
    return struct.pack("<4I", n, mul, add, 0)


def test_probe_and_adapters(rt):
    mod = runtime_module(rt.name)
    ok, reason = mod.probe()
    assert ok and reason
    adapters = mod.list_adapters()
    assert adapters and all(isinstance(a, AdapterInfo) for a in adapters)
    assert rt.info.name in {a.name for a in adapters}
    assert isinstance(rt.limits, Limits)
    assert rt.limits.max_storage_binding >= 128 << 20
    assert rt.limits.max_workgroups_per_dim >= 65535
    assert rt.features <= {"subgroup", "shader-f16", "timestamp-query"}


def test_write_read_round_trip(rt):
    data = np.arange(1000, dtype=np.uint32) * np.uint32(2654435761)
    buf = rt.create_buffer(data.nbytes, "round trip")
    assert buf.size >= data.nbytes
    rt.write(buf, data)
    assert np.array_equal(np.frombuffer(rt.read(buf, 0, data.nbytes), np.uint32), data)
    # offsets on both sides, a read-only source, and a zero-length read
    rt.write(buf, np.full(10, 7, np.uint32).tobytes(), offset=40)
    got = np.frombuffer(rt.read(buf, 36, 48), np.uint32)
    assert got[0] == data[9] and (got[1:11] == 7).all() and got[11] == data[20]
    assert len(rt.read(buf, 0, 0)) == 0
    rt.destroy_buffer(buf)


def test_dispatch_params_bindings_and_copy(rt):
    pipe = rt.compile(SCALE, "scale")
    n = 1000
    src = rt.create_buffer(4 * 1024, "src")
    dst = rt.create_buffer(4 * 1024, "dst")
    out = rt.create_buffer(4 * 1024, "out")
    x = np.arange(1024, dtype=np.uint32)
    rt.write(src, x)
    rt.write(dst, np.zeros(1024, np.uint32))
    # two dispatches with different params in one submission, the second on sub-ranges, then a copy
    rt.submit([
        Dispatch(pipe, [src, dst], (-(-n // 64), 1, 1), _params(n, 3, 1)),
        Dispatch(pipe, [Binding(src, 256, 256), Binding(dst, 1024, 256)], (1, 1, 1), _params(64, 5, 2)),
        Copy(dst, 0, out, 0, 4 * 1024),
    ])
    want = np.zeros(1024, np.uint32)
    want[:n] = x[:n] * 3 + 1
    want[256:320] = x[64:128] * 5 + 2
    assert np.array_equal(np.frombuffer(rt.read(out, 0, 4096), np.uint32), want)
    # params are per dispatch even across submissions; sync waits for everything
    for k in range(3):
        rt.submit([Dispatch(pipe, [src, dst], (16, 1, 1), _params(n, k, k))])
    rt.sync()
    assert np.array_equal(np.frombuffer(rt.read(dst, 0, 4 * n), np.uint32), x[:n] * 2 + 2)
    for b in (src, dst, out):
        rt.destroy_buffer(b)


def test_dispatch_without_params(rt):
    pipe = rt.compile(NO_PARAMS, "negate")
    buf = rt.create_buffer(4 * 100)
    x = np.arange(-50, 50, dtype=np.int32)
    rt.write(buf, x)
    rt.submit([Dispatch(pipe, [buf], (4, 1, 1))])
    assert np.array_equal(np.frombuffer(rt.read(buf, 0, 400), np.int32), -x)
    rt.destroy_buffer(buf)


def test_many_params_blocks_grow_the_uniform_buffer(rt):
    pipe = rt.compile(SCALE, "scale")
    src = rt.create_buffer(4 * 64)
    dst = rt.create_buffer(4 * 64 * 40)
    rt.write(src, np.arange(64, dtype=np.uint32))
    cmds = [Dispatch(pipe, [src, Binding(dst, 256 * i, 256)], (1, 1, 1), _params(64, 1, i))
            for i in range(40)]
    rt.submit(cmds)
    got = np.frombuffer(rt.read(dst, 0, 4 * 64 * 40), np.uint32).reshape(40, 64)
    assert np.array_equal(got, np.arange(64, dtype=np.uint32)[None, :] + np.arange(40)[:, None])
    rt.destroy_buffer(src)
    rt.destroy_buffer(dst)


UNUSED_BINDING = """
struct Params { n: u32, pad0: u32, pad1: u32, pad2: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> unused: array<u32>;
@group(0) @binding(2) var<storage, read_write> x: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < p.n) {
        x[gid.x] = gid.x;
    }
}
"""


def test_declared_but_unused_binding_still_binds(rt):
    # a template variant may declare a buffer it does not read; the engine binds every declared one
    pipe = rt.compile(UNUSED_BINDING, "unused binding")
    a = rt.create_buffer(256)
    x = rt.create_buffer(256)
    rt.submit([Dispatch(pipe, [a, x], (1, 1, 1), _params(64, 0, 0))])
    assert np.array_equal(np.frombuffer(rt.read(x, 0, 256), np.uint32), np.arange(64))
    rt.destroy_buffer(a)
    rt.destroy_buffer(x)


@pytest.mark.parametrize("bad, needle", [
    ("@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }", "1"),
    ("@compute @workgroup_size(1) fn main() { undefined_fn(); }", "undefined_fn"),
    ("@group(0) @binding(1) var<storage, read_write> x: array<u32>;\n"
     "@compute @workgroup_size(1) fn not_main() { x[0] = 1u; }", "main"),
])
def test_compile_error_raises_runtime_error(rt, bad, needle):
    with pytest.raises(RuntimeError) as ei:
        rt.compile(bad, "bad kernel")
    msg = str(ei.value)
    assert "bad kernel" in msg and needle in msg


def test_validate_checks_the_front_end_only(rt):
    rt.validate(SCALE, "scale")
    with pytest.raises(RuntimeError) as ei:
        rt.validate("@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }", "bad front end")
    assert "bad front end" in str(ei.value)


def test_runtime_still_works_after_a_compile_error(rt):
    with pytest.raises(RuntimeError):
        rt.compile("this is not WGSL", "garbage")
    test_dispatch_without_params(rt)


def test_destroyed_buffers_free_memory(rt):
    # allocate and destroy more than a software adapter would hold if destroy leaked (384 MiB)
    size = 32 << 20
    for _ in range(12):
        b = rt.create_buffer(size, "churn")
        rt.write(b, np.zeros(16, np.uint32))
        rt.destroy_buffer(b)
    rt.sync()


def test_selection_by_env(monkeypatch):
    monkeypatch.delenv("PYTROPICAL_WEBGPU", raising=False)
    assert rtmod.implementation() == "wgpu"
    monkeypatch.setenv("PYTROPICAL_WEBGPU", "Dawn")
    assert rtmod.implementation() == "dawn"
    monkeypatch.setenv("PYTROPICAL_WEBGPU", "metal")
    with pytest.raises(ValueError, match="PYTROPICAL_WEBGPU"):
        rtmod.implementation()


@pytest.mark.parametrize("name", list(RUNTIMES))
def test_create_runtime_follows_env(monkeypatch, name):
    require_runtime(name)
    monkeypatch.setenv("PYTROPICAL_WEBGPU", name)
    assert rtmod.probe_runtime()[0]
    assert rtmod.list_adapters()
    rt = rtmod.create_runtime()
    try:
        assert rt.name == name
    finally:
        rt.close()


# ---------------------------------------------------------------------------- every shader variant
def _first_error_lines(msg: str, n: int = 4) -> str:
    lines = [ln for ln in str(msg).splitlines() if ln.strip()]
    return " / ".join(lines[:n])


def _check_all(name, srcs, how):
    rt = get_runtime(name)
    failures = []
    for src, vs in srcs.items():
        try:
            getattr(rt, how)(src, vs[0].label)
        except RuntimeError as e:
            failures.append(f"{vs[0].label} (+{len(vs) - 1} alike): {_first_error_lines(e)}")
    assert not failures, (f"{len(failures)} of {len(srcs)} shader variants fail ({how}) on {name}:\n"
                          + "\n".join(failures[:25]))


@pytest.mark.parametrize("name", list(RUNTIMES))
def test_every_shader_variant_validates(name):
    """Every template variant the wgpu backend can emit (semiring x dtype x guard x kernel x tile
    config x every K/N unroll x argmax x epilogue, packed boolean, each VSA kernel, each BITS and
    bundle WIDTH) passes this runtime's WGSL front end: naga (wgpu-py) and Tint (Dawn) both accept
    every shader, so one that only one compiler takes cannot land."""
    import wgpu_variants as variants

    _check_all(name, variants.sources(), "validate")


COMPILE_SHARDS = 8


@pytest.mark.parametrize("shard", range(COMPILE_SHARDS))
@pytest.mark.parametrize("name", list(RUNTIMES))
def test_every_shader_variant_compiles(name, shard):
    """Full compute pipelines (backend code generation and the driver's compile) for every variant
    with the K/N unrolls sampled (``variants.covering()``): every other parameter in full. Dealt
    into shards (every 8th source) so xdist spreads them: on the H200's driver the 3,563 sources
    take ~280 s in one test, which outlasted a 10-minute suite call."""
    import wgpu_variants as variants

    srcs = list(variants.sources(variants.covering()).items())
    _check_all(name, dict(srcs[shard::COMPILE_SHARDS]), "compile")


def test_variant_list_covers_what_the_backend_compiles():
    """Everything the engine compiled in this process (the suite so far, plus one call of each
    operation here) is in ``variants()``, so the list cannot fall behind the kernels."""
    import wgpu_variants as variants

    import pytropical_gpu as tg
    from conftest import require_backend
    from pytropical_gpu.backends.wgpu.device import get_engine

    require_backend("wgpu")
    rng = np.random.default_rng(7)
    a = rng.integers(-5, 5, (9, 20)).astype(np.float32)
    b = rng.integers(-5, 5, (20, 7)).astype(np.float32)
    a[0, 0] = np.inf
    tg.matmul(a, b, "min_plus", backend="wgpu")
    tg.matmul(a, b, "min_plus", c=np.zeros((9, 7), np.float32), return_argmax=True, backend="wgpu")
    tg.matmul(a[:, :3], b[:3], "max_times", backend="wgpu")
    tg.matmul(rng.integers(0, 2**31, (70, 150), dtype=np.uint32).astype(np.uint64),
              rng.integers(0, 2**31, (150, 130), dtype=np.uint32).astype(np.uint64), "bor_band",
              backend="wgpu")
    tg.matmul(np.nan_to_num(a, posinf=9).astype(np.int32)[:, :5], b.astype(np.int32)[:5], "max_plus",
              backend="wgpu")
    tg.matmul(a > 0, b > 0, "lxor_land", backend="wgpu")
    flushes = tg.get_backend("wgpu").flushes_subnormals
    for dt in variants.USER_SEMIRING.dtypes:  # a user semiring on every WGSL element type
        if flushes and np.dtype(dt).kind == "f":
            continue  # refused before compiling on a flushing adapter (test_wgpu_subnormals.py)
        u = rng.integers(0, 9, (5, 6)).astype(dt)
        tg.matmul(u, u.T.copy(), variants.USER_SEMIRING, backend="wgpu")
    x = tg.TernaryVec.random(300, seed=1, batch=(4,))
    tg.bundle(x, backend="wgpu")
    tg.dot(x, x, backend="wgpu")
    tg.search(x, x, k=2, backend="wgpu")
    tg.cosine(x, x, backend="wgpu")
    tg.permute(tg.bind(x, x, backend="wgpu"), 3, backend="wgpu")
    soft = tg.SoftTernaryVec(300, bits=5)
    soft.accumulate(tg.TernaryVec.random(300, seed=2), backend="wgpu")
    soft.harden(2, backend="wgpu")

    def shape(key):
        """A user-defined semiring's own expressions and identities are the user's WGSL: compare
        the template structure around them."""
        template, params = key
        if dict(params).get("USER"):
            params = tuple(kv for kv in params if kv[0] not in ("ADD", "MUL", "ZERO", "ONE"))
        return template, params

    known = {shape(v.key) for v in variants.variants()}
    compiled = set(get_engine()._pipelines)  # noqa: SLF001 - the engine's pipeline-cache keys
    assert compiled, "the engine compiled nothing"
    missing = sorted((k for k in compiled if shape(k) not in known), key=repr)
    assert not missing, f"{len(missing)} compiled variants are not in variants(): {missing[:5]}"


def test_backend_runs_on_the_selected_runtime():
    """PYTROPICAL_WEBGPU=dawn really moves the wgpu backend (its engine) onto Dawn."""
    from conftest import require_backend
    from pytropical_gpu.backends.wgpu.device import get_engine

    require_backend("wgpu")
    assert get_engine().rt.name == rtmod.implementation()


def test_bundle_threshold_beyond_u32_counter_width():
    """Found by compiling every variant: threshold >= 2**30 emitted a WIDTH=33 bundle shader with
    ``P.t >> 32u``, which naga and Tint both reject. Any threshold above the vector count gives
    the all-zero result."""
    import pytropical_gpu as tg
    from conftest import require_backend

    require_backend("wgpu")
    x = tg.TernaryVec.random(200, seed=3, batch=(5,))
    for t in (5, 6, 2**30, 2**31, 2**40):
        got = tg.bundle(x, threshold=t, backend="wgpu").to_array()
        assert np.array_equal(got, tg.bundle(x, threshold=t, backend="cpu").to_array()), t


def test_shaders_use_core_wgsl_only():
    """No enable directive, subgroup builtin or f16 in any variant: optional features need runtime
    detection, a core fallback the suite runs, and the runtime's own enable line (naga rejects
    ``enable subgroups;``, Tint requires it; see wgsl/PORTABILITY.md)."""
    import re

    import wgpu_variants as variants

    optional = re.compile(r"^\s*enable\b|\bsubgroup\w*\s*\(|builtin\(\s*subgroup|\bf16\b", re.M)
    for src, vs in variants.sources(variants.covering()).items():  # unrolls repeat the same lines
        code = re.sub(r"//[^\n]*", "", src)
        m = optional.search(code)
        assert m is None, f"{vs[0].label} uses an optional WGSL feature: {m.group(0)!r}"


def test_pack_uniforms_places_equal_blocks_once():
    # reference by hand: a new block goes to the next multiple of 256 after the last new one's
    # bound bytes (at least 16); an equal block reuses the first one's place
    a, b, c, d = bytes(range(16)), bytes(range(1, 17)), bytes(range(2, 22)), b"\x07\x00\x00\x00"
    offs, stage = rtmod.pack_uniforms([a, b, a, c, b, a, d, c], 256)
    assert offs == [0, 256, 0, 512, 256, 0, 768, 512]
    assert len(stage) == 768 + 16
    want = bytearray(784)
    want[0:16], want[256:272], want[512:532], want[768:772] = a, b, c, d
    assert stage == want
    assert rtmod.pack_uniforms([a, b, c], 64) == ([0, 64, 128], stage_of({0: a, 64: b, 128: c}, 148))
    assert rtmod.pack_uniforms([], 256) == ([], bytearray())


def stage_of(blocks: dict, size: int) -> bytearray:
    out = bytearray(size)
    for o, blk in blocks.items():
        out[o:o + len(blk)] = blk
    return out


def test_repeated_params_blocks_stay_exact_across_submits(rt):
    # equal params blocks share one place; the same bindings under another params block in the
    # next submit (a cached bind group at an offset that now holds other bytes) stay exact
    pipe = rt.compile(SCALE, "scale")
    src = rt.create_buffer(4 * 64)
    dst = rt.create_buffer(4 * 64 * 12)
    rt.write(src, np.arange(64, dtype=np.uint32))
    src_v = np.arange(64, dtype=np.uint64)
    for order in ([3, 5, 3, 3, 7, 5, 3, 7, 7, 3, 5, 3], [7, 3, 3, 5, 5, 7, 3, 3, 7, 5, 3, 7]):
        cmds = [Dispatch(pipe, [src, Binding(dst, 256 * i, 256)], (1, 1, 1), _params(64, m, i))
                if i % 4 else
                Dispatch(pipe, [src, Binding(dst, 256 * i, 256)], (1, 1, 1), _params(64, m, 0))
                for i, m in enumerate(order)]
        rt.submit(cmds)
        got = np.frombuffer(rt.read(dst, 0, 4 * 64 * 12), np.uint32).reshape(12, 64)
        for i, m in enumerate(order):
            assert np.array_equal(got[i], src_v * m + (i if i % 4 else 0)), (order, i)
    rt.destroy_buffer(src)
    rt.destroy_buffer(dst)
