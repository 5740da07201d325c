"""Compile every CUDA kernel instantiation the cuda backend can ask NVRTC for, with the machine's
``nvcc`` for sm_80 and sm_90 (one translation unit per source and arch, built in parallel), so a
syntax or template error in ``cuda/*.cu`` cannot land on a machine without a GPU. Skips (with the
reason) where ``nvcc`` is not on PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import pytest

from pytropical_gpu import shaders
from pytropical_gpu.backends.cuda import module_specs
from pytropical_gpu.backends.cuda.kernels import OPTIONS

NVCC = shutil.which("nvcc")
ARCHS = ["sm_80", "sm_90"]
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH (CUDA toolkit not installed)")


def _units() -> dict[str, str]:
    """One translation unit per source: the source, every module's extra code (user-defined
    semiring functors) and the address of every name expression (which instantiates it)."""
    by_source = defaultdict(list)
    for spec in module_specs():
        by_source[spec.source].append(spec)
    units = {}
    for source, specs in by_source.items():
        names = sorted({n for s in specs for n in s.names.values()})
        extras = "".join(dict.fromkeys(s.extra for s in specs))
        refs = ",\n".join(f"  (const void*)&{n}" for n in names)
        units[source] = (shaders.load_source("cuda", source) + extras
                         + f"\nconst void* ptg_instantiations[] = {{\n{refs}\n}};\n")
    return units


def test_every_cuda_source_is_covered():
    covered = {s.source for s in module_specs()}
    assert set(shaders.list_sources("cuda")) == covered


def test_cuda_sources_compile_with_nvcc(tmp_path):
    """Every (source, arch) pair in parallel: one translation unit each."""
    jobs = [(src, code, arch) for src, code in _units().items() for arch in ARCHS]

    def build(job):
        source, code, arch = job
        cu = tmp_path / f"{arch}_{source}"
        cu.write_text(code)
        cmd = [NVCC, f"-arch={arch}", *OPTIONS, "-cubin", "-o", str(cu.with_suffix(".cubin")), str(cu)]
        return source, arch, subprocess.run(cmd, capture_output=True, text=True)

    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        results = list(pool.map(build, jobs))
    failed = [f"{src} ({arch}):\n{res.stderr[-4000:]}" for src, arch, res in results if res.returncode]
    assert not failed, "\n\n".join(failed)
