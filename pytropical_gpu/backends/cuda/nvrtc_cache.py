"""Compile a CUDA module with NVRTC under exactly our options, and cache the binary on disk.

CuPy's ``RawModule`` appends ``-ftz=true`` to every compile, which flushes subnormal operands and
results of float adds, products, min/max and compares to zero (numpy keeps them). So the backend
compiles with :func:`cupy.cuda.compiler.compile_using_nvrtc` (CuPy 13 and 14; it appends nothing
but ``-arch`` and CuPy's own defaults) and caches the binary itself: one file per (source, options,
arch, NVRTC version, name expressions) under CuPy's cache folder / ``pytropical``, holding the
binary and the name expression -> lowered name mapping, written atomically. Set
``CUPY_CACHE_IN_MEMORY=1`` to keep it off the disk (as CuPy does). Imports cupy lazily.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger("pytropical_gpu")

#: file layout: MAGIC, uint32 length of the JSON mapping, the mapping, the binary (cubin or PTX).
MAGIC = b"PTGNVRTC1\n"

_lock = threading.Lock()
_memory: dict[str, tuple[bytes, dict[str, str]]] = {}


def cache_dir() -> Path:
    """CuPy's kernel cache folder (``CUPY_CACHE_DIR``, default ``~/.cupy/kernel_cache``) / pytropical."""
    try:
        from cupy.cuda import compiler

        base = compiler.get_cache_dir()  # CuPy 13; gone in 14
    except (ImportError, AttributeError):
        base = os.environ.get("CUPY_CACHE_DIR", os.path.expanduser("~/.cupy/kernel_cache"))
    return Path(base) / "pytropical"


def cache_key(source: str, options: Sequence[str], arch: str, target: str, nvrtc_version,
              names: Sequence[str]) -> str:
    """sha256 over everything that changes the binary (``target``: "cubin" or "ptx")."""
    blob = json.dumps([source, list(options), str(arch), target, list(nvrtc_version),
                       sorted(names)])
    return hashlib.sha256(blob.encode()).hexdigest()


def read(path: Path, names: Sequence[str]) -> tuple[bytes, dict[str, str]] | None:
    """The cached (binary, mapping), or None when missing, truncated or for other names."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(MAGIC) + 4
    if len(data) < head or not data.startswith(MAGIC):
        return None
    (size,) = struct.unpack_from("<I", data, len(MAGIC))
    try:
        mapping = json.loads(data[head:head + size].decode())
    except ValueError:
        return None
    binary = data[head + size:]
    if not binary or not isinstance(mapping, dict) or set(mapping) != set(names):
        return None
    return binary, mapping


def write(path: Path, binary: bytes, mapping: dict[str, str]) -> None:
    """Write atomically (temporary file in the same folder, then rename); failures only log."""
    meta = json.dumps(mapping).encode()
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.name, suffix=".tmp",
                                         delete=False) as f:
            tmp = f.name
            f.write(MAGIC + struct.pack("<I", len(meta)) + meta + binary)
        os.replace(tmp, path)
    except OSError as e:
        log.debug("cuda: could not write the kernel cache %s (%s)", path, e)
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def cached(key: str, names: Sequence[str],
           compile_fn: Callable[[], tuple[bytes, dict[str, str]]]) -> tuple[bytes, dict[str, str]]:
    """(binary, mapping) for ``key``: from this process, the disk cache, or ``compile_fn()``."""
    with _lock:
        hit = _memory.get(key)
        if hit is not None:
            return hit
        on_disk = os.environ.get("CUPY_CACHE_IN_MEMORY", "") != "1"
        path = cache_dir() / f"{key}.bin"
        hit = read(path, names) if on_disk else None
        if hit is None:
            t0 = time.perf_counter()
            binary, mapping = compile_fn()
            if isinstance(binary, str):
                binary = binary.encode()
            hit = (bytes(binary), {n: str(mapping[n]) for n in names})
            log.debug("cuda: compiled module %s in %.2f s", key[:12], time.perf_counter() - t0)
            if on_disk:
                write(path, *hit)
        _memory[key] = hit
        return hit


def compile_module(source: str, options: Sequence[str], names: Sequence[str]):
    """Compile ``source`` for the current device with exactly ``options`` (plus CuPy's ``-arch``
    and ``--device-as-default-execution-space``); return (binary, mapping), cached."""
    import cupy
    from cupy.cuda import compiler

    arch = compiler._get_arch()  # the device's sm, capped at what this NVRTC knows (CuPy 13, 14)
    try:
        target = compiler._get_arch_for_options_for_nvrtc(arch)[1]  # "cubin", or "ptx"
    except (AttributeError, TypeError, IndexError):
        target = "ptx" if os.environ.get("CUPY_COMPILE_WITH_PTX", "") == "1" else "cubin"
    key = cache_key(source, options, arch, target, cupy.cuda.nvrtc.getVersion(), names)

    def build():
        return compiler.compile_using_nvrtc(source, tuple(options), arch,
                                            name_expressions=list(names))

    return cached(key, names, build)


__all__ = ["cache_dir", "cache_key", "cached", "compile_module", "read", "write"]
