"""Compile every CUDA kernel instantiation the cuda backend can ask NVRTC for, with the machine's
``nvcc`` for sm_80 and sm_90 under exactly the runtime's options (``kernels.OPTIONS``; one
translation unit per source and arch, built in parallel), so a syntax or template error in
``cuda/*.cu`` cannot land on a machine without a GPU, and check the sm_90 PTX of the GEMM kernels
for IEEE float semantics: no flush-to-zero instruction, no contractible (FMA-able) add or product.
nvcc tests skip (with the reason) where ``nvcc`` is not on PATH.

The runtime path itself (``kernels.function`` through ``nvrtc_cache``, with a stand-in for CuPy)
is tested everywhere: exactly ``OPTIONS`` reach NVRTC, nothing goes through CuPy's ``RawModule``
(which adds ``-ftz=true``), and the on-disk cache round-trips.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import types
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pytropical_gpu import shaders
from pytropical_gpu.backends.cuda import kernels, module_specs, nvrtc_cache
from pytropical_gpu.backends.cuda.kernels import OPTIONS
from pytropical_gpu.semirings import get_semiring

NVCC = shutil.which("nvcc")
ARCHS = ["sm_80", "sm_90"]
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH (CUDA toolkit not installed)")


def _units() -> dict[str, str]:
    """One translation unit per source: every module's head code (shared declarations and device
    code, cuda/*.cuh), the source, every module's extra code (user-defined semiring functors) and
    the address of every name expression (which instantiates it)."""
    by_source = defaultdict(list)
    for spec in module_specs():
        by_source[spec.source].append(spec)
    units = {}
    for source, specs in by_source.items():
        names = sorted({n for s in specs for n in s.names.values()})
        heads = "".join(dict.fromkeys(s.head for s in specs))
        extras = "".join(dict.fromkeys(s.extra for s in specs))
        refs = ",\n".join(f"  (const void*)&{n}" for n in names)
        units[source] = (heads + shaders.load_source("cuda", source) + extras
                         + f"\nconst void* ptg_instantiations[] = {{\n{refs}\n}};\n")
    return units


@pytest.fixture(scope="module")
def nvcc_builds(tmp_path_factory):
    """{(source, arch): (CompletedProcess, kept PTX path)} for every source and arch."""
    root = tmp_path_factory.mktemp("nvcc")
    jobs = [(src, code, arch) for src, code in _units().items() for arch in ARCHS]

    def build(job):
        source, code, arch = job
        keep = root / f"keep_{arch}_{source}"
        keep.mkdir()
        cu = root / f"{arch}_{source}"
        cu.write_text(code)
        cmd = [NVCC, f"-arch={arch}", *OPTIONS, "-cubin", "-keep", "-keep-dir", str(keep),
               "-o", str(cu.with_suffix(".cubin")), str(cu)]
        return (source, arch), (subprocess.run(cmd, capture_output=True, text=True),
                                keep / cu.with_suffix(".ptx").name)

    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        return dict(pool.map(build, jobs))


def test_every_cuda_source_is_covered():
    covered = {s.source for s in module_specs()}
    assert set(shaders.list_sources("cuda")) == covered
    heads = {s.head for s in module_specs()}  # every shared header is put before some source
    for path in shaders.source_dir("cuda").glob("*.cuh"):
        assert path.read_text() in heads, f"{path.name} is in no module's head"


@needs_nvcc
def test_cuda_sources_compile_with_nvcc(nvcc_builds):
    """Every (source, arch) pair in parallel: one translation unit each."""
    failed = [f"{src} ({arch}):\n{res.stderr[-4000:]}"
              for (src, arch), (res, _) in nvcc_builds.items() if res.returncode]
    assert not failed, "\n\n".join(failed)


# a float add/sub/mul without a rounding mode may be contracted into an FMA by ptxas (-fmad=true)
_CONTRACTIBLE = re.compile(r"^\s*(?:@!?%p\d+\s+)?(add|sub|mul)(\.sat)?\.f(32|64)\s", re.M)


@needs_nvcc
def test_gemm_ptx_is_ieee(nvcc_builds):
    """The sm_90 PTX of every GEMM kernel (all float semirings x dtypes, user-defined ones too):
    no ``.ftz`` instruction (subnormals kept, as numpy), no FMA and no contractible add/product."""
    res, ptx = nvcc_builds[("semiring_gemm.cu", "sm_90")]
    assert res.returncode == 0, res.stderr[-4000:]
    text = ptx.read_text()
    for op in ("min.f32", "max.f32", "add.rn.f32", "mul.rn.f32", "min.f64", "add.rn.f64",
               "mul.rn.f64"):
        assert op in text, f"{op} missing from the GEMM PTX: the check would be vacuous"
    # argmax's strict float comparison (setp.lt, or its negation setp.geu on a branch)
    assert re.search(r"setp\.(lt|geu)\.f32", text), "no float comparison in the GEMM PTX"
    ftz = sorted({line.strip() for line in text.splitlines() if ".ftz" in line})
    assert not ftz, f"flush-to-zero instructions in the GEMM PTX (options {OPTIONS}): {ftz[:8]}"
    fma = sorted({line.strip() for line in text.splitlines() if re.search(r"\bfma\.\w+\.f(32|64)", line)})
    assert not fma, f"FMA instructions in the GEMM PTX: {fma[:8]}"
    loose = sorted({m.group(0).strip() for m in _CONTRACTIBLE.finditer(text)})
    assert not loose, f"contractible float ops (is -fmad=false missing?): {loose[:8]}"


@needs_nvcc
def test_zero_sign_ptx_is_ieee(nvcc_builds):
    """The zero-sign pass recomputes each term's sign (backends/cuda/zero_sign.py): its sm_90 PTX
    keeps subnormals (a flushed product would be a zero term of the wrong kind) and rounds once."""
    res, ptx = nvcc_builds[("zero_sign.cu", "sm_90")]
    assert res.returncode == 0, res.stderr[-4000:]
    text = ptx.read_text()
    for op in ("add.rn.f32", "mul.rn.f32", "add.rn.f64", "mul.rn.f64"):
        assert op in text, f"{op} missing from the zero-sign PTX: the check would be vacuous"
    assert ".ftz" not in text and not re.search(r"\bfma\.", text)
    assert not _CONTRACTIBLE.search(text)


def test_options_are_ieee():
    assert {"-ftz=false", "-prec-div=true", "-prec-sqrt=true", "-fmad=false"} <= set(OPTIONS)
    assert not {"-ftz=true", "--use_fast_math", "-use_fast_math", "-fmad=true"} & set(OPTIONS)


# ------------------------------------------------------------------ runtime path, CuPy stand-in
class _FakeModule:
    def __init__(self, log):
        self.log = log

    def load(self, binary):
        assert isinstance(binary, bytes)
        self.log.append(("load", binary))

    def get_function(self, name):
        return ("fn", name)


@pytest.fixture
def fake_cupy(monkeypatch, tmp_path):
    """A stand-in ``cupy`` with just what kernels.function/nvrtc_cache use; records each compile.
    It has no RawModule, so a call through CuPy's -ftz=true path fails."""
    log = []

    def compile_using_nvrtc(source, options=(), arch=None, filename="kern.cu", name_expressions=None,
                            **kw):
        log.append(("compile", tuple(options), arch, tuple(name_expressions)))
        return b"CUBIN" + str(len(source)).encode(), {n: f"_Z{i}lowered" for i, n in
                                                       enumerate(name_expressions)}

    compiler = types.SimpleNamespace(
        compile_using_nvrtc=compile_using_nvrtc, _get_arch=lambda: "90",
        _get_arch_for_options_for_nvrtc=lambda arch=None: (f"-arch=sm_{arch}", "cubin"))
    cuda = types.ModuleType("cupy.cuda")
    cuda.compiler = compiler
    cuda.nvrtc = types.SimpleNamespace(getVersion=lambda: (13, 0))
    cuda.function = types.SimpleNamespace(Module=lambda: _FakeModule(log))
    cuda.Device = lambda: types.SimpleNamespace(id=0)
    cupy = types.ModuleType("cupy")
    cupy.cuda = cuda
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CUPY_CACHE_IN_MEMORY", raising=False)
    monkeypatch.setattr(kernels, "_modules", {})
    monkeypatch.setattr(kernels, "_functions", {})
    monkeypatch.setattr(nvrtc_cache, "_memory", {})
    return log


def test_function_compiles_with_exact_options_and_caches(fake_cupy, tmp_path):
    spec = kernels.gemm_spec(get_semiring("min_plus"), np.dtype(np.float32))
    fn = kernels.function(spec, "skinny4")
    compiles = [e for e in fake_cupy if e[0] == "compile"]
    assert len(compiles) == 1
    _, options, arch, names = compiles[0]
    assert options == OPTIONS and arch == "90" and set(names) == set(spec.names.values())
    assert fn == ("fn", f"_Z{names.index(spec.names['skinny4'])}lowered")
    assert kernels.function(spec, "small") != fn  # same module: no second compile
    assert len([e for e in fake_cupy if e[0] == "compile"]) == 1
    files = list((tmp_path / "pytropical").glob("*.bin"))
    assert len(files) == 1 and not list((tmp_path / "pytropical").glob("*.tmp"))
    # a new process: the module comes from the disk cache, bit for bit, without compiling
    kernels._modules.clear()
    kernels._functions.clear()
    nvrtc_cache._memory.clear()
    assert kernels.function(spec, "skinny4") == fn
    assert len([e for e in fake_cupy if e[0] == "compile"]) == 1
    loads = [e[1] for e in fake_cupy if e[0] == "load"]
    assert len(loads) == 2 and loads[0] == loads[1]


def test_cache_rejects_damaged_or_foreign_files(tmp_path):
    names = ["f<1>", "g"]
    path = tmp_path / "k.bin"
    nvrtc_cache.write(path, b"BIN", {"f<1>": "_Zf1", "g": "_Zg"})
    assert nvrtc_cache.read(path, names) == (b"BIN", {"f<1>": "_Zf1", "g": "_Zg"})
    assert nvrtc_cache.read(path, ["f<1>"]) is None  # other name expressions: a miss
    data = path.read_bytes()
    for bad in (data[:5], b"garbage" + data, data[:-3]):
        path.write_bytes(bad)
        assert nvrtc_cache.read(path, names) is None
    assert nvrtc_cache.read(tmp_path / "missing.bin", names) is None
    k1 = nvrtc_cache.cache_key("src", OPTIONS, "90", "cubin", (13, 0), names)
    assert k1 == nvrtc_cache.cache_key("src", OPTIONS, "90", "cubin", (13, 0), names[::-1])
    for other in (("src ", OPTIONS, "90", "cubin", (13, 0), names),
                  ("src", (*OPTIONS, "-ftz=true"), "90", "cubin", (13, 0), names),
                  ("src", OPTIONS, "80", "cubin", (13, 0), names),
                  ("src", OPTIONS, "90", "ptx", (13, 0), names),
                  ("src", OPTIONS, "90", "cubin", (12, 8), names),
                  ("src", OPTIONS, "90", "cubin", (13, 0), names[:1])):
        assert nvrtc_cache.cache_key(*other) != k1
