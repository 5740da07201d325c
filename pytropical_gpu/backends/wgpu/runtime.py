"""The WebGPU runtime interface: the only place the backend touches a WebGPU implementation.

Everything above this module (kernels, templates, tiling, pipeline caching, buffer pooling) talks to
one :class:`Runtime` object and never imports ``wgpu`` or ``dawn`` itself. An implementation wraps
one adapter and one device; ``runtime_wgpupy.py`` does it with wgpu-py (``PYTROPICAL_WEBGPU=wgpu``,
the default; naga compiles the WGSL), ``runtime_dawn.py`` with pydawn (``PYTROPICAL_WEBGPU=dawn``,
extra ``dawn``; Tint compiles it).

The model is deliberately small:

* **Buffers** are opaque handles of a fixed byte size with usage STORAGE | COPY_SRC | COPY_DST.
  They are written from host memory (:meth:`Runtime.write`), read back (:meth:`Runtime.read`) and
  copied on the device (:class:`Copy`). Sizes and offsets are multiples of 4.
* **Pipelines** are compute pipelines compiled from one WGSL source with entry point ``main`` and
  an automatic layout over bind group 0 (:meth:`Runtime.compile`).
* **Commands**: a list of :class:`Dispatch` and :class:`Copy` is recorded into one command encoder,
  in order, and submitted once (:meth:`Runtime.submit`). Each dispatch binds an optional uniform
  block at ``@binding(0)`` (``params``: raw little-endian bytes, the runtime owns and recycles the
  uniform memory) and its storage buffers at ``@binding(1)``, ``@binding(2)``, ... in order.
* **Synchronisation**: :meth:`Runtime.read` returns only after all submitted work that writes the
  buffer finished; :meth:`Runtime.sync` waits for all submitted work.

An implementation module (``runtime_wgpupy.py``, ``runtime_dawn.py``) exports three functions:
``probe() -> (ok, reason)`` (is the library importable and is there any adapter; creates no device),
``list_adapters() -> list[AdapterInfo]`` and ``create() -> Runtime`` (the adapter
:func:`.adapters.choose_adapter` picks: hardware first; null/placeholder and OpenGL adapters are
refused before any device is requested).

Limits (:class:`Limits`) are the adapter's real limits, requested when the device was created; the
callers tile work so that no binding exceeds ``max_storage_binding`` and no dispatch dimension
exceeds ``max_workgroups_per_dim``.
"""

from __future__ import annotations

import abc
import importlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

#: One buffer handle as created by a runtime (opaque to callers; has ``.size`` in bytes).
BufferHandle = Any
#: One compiled compute pipeline (opaque to callers).
PipelineHandle = Any


@dataclass(frozen=True)
class Limits:
    """The device limits the engine tiles against (bytes unless stated)."""

    max_storage_binding: int
    max_buffer_size: int
    max_workgroups_per_dim: int
    max_invocations_per_workgroup: int
    max_workgroup_storage: int
    max_storage_buffers_per_stage: int
    min_storage_offset_alignment: int = 256
    min_uniform_offset_alignment: int = 256


@dataclass(frozen=True)
class AdapterInfo:
    """What the adapter says about itself; ``software`` is True for llvmpipe/lavapipe/SwiftShader."""

    name: str
    vendor: str
    backend: str  # "Vulkan", "Metal", "D3D12", ...
    adapter_type: str  # "DiscreteGPU", "IntegratedGPU", "CPU", "Unknown"
    is_fallback: bool
    description: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def software(self) -> bool:
        return software_adapter(self.adapter_type, self.is_fallback)


# Commands are named tuples, not frozen dataclasses: a queued small operation makes several per
# call, and a frozen dataclass's __init__ (object.__setattr__ per field) costs ~1 us each; a tuple
# also hashes in C (the bind-group cache keys on the bindings).
class Binding(NamedTuple):
    """A byte range of a buffer bound as one storage binding (``size=None``: to the end)."""

    buffer: BufferHandle
    offset: int = 0
    size: int | None = None


class Dispatch(NamedTuple):
    """One compute dispatch: pipeline, uniform bytes (binding 0), storage bindings (1, 2, ...)."""

    pipeline: PipelineHandle
    bindings: Sequence[Binding | BufferHandle]
    groups: tuple[int, int, int]
    params: bytes | None = None


class Copy(NamedTuple):
    """A device-side buffer-to-buffer copy of ``size`` bytes."""

    src: BufferHandle
    src_offset: int
    dst: BufferHandle
    dst_offset: int
    size: int


class Runtime(abc.ABC):
    """One WebGPU adapter + device. Implementations must be usable from one thread at a time."""

    #: "wgpu" or "dawn"
    name: str = "abstract"
    info: AdapterInfo
    limits: Limits
    #: optional features the device was created with (e.g. {"subgroup", "shader-f16"}); kernels
    #: may use them when present and must work without them.
    features: frozenset[str] = frozenset()

    @abc.abstractmethod
    def create_buffer(self, size: int, label: str = "") -> BufferHandle:
        """A new STORAGE | COPY_SRC | COPY_DST buffer of ``size`` bytes (multiple of 4), undefined."""

    @abc.abstractmethod
    def destroy_buffer(self, buf: BufferHandle) -> None:
        """Free the buffer's device memory now (the handle must not be used afterwards)."""

    @abc.abstractmethod
    def write(self, buf: BufferHandle, data: Any, offset: int = 0) -> None:
        """Copy host bytes (a C-contiguous buffer-protocol object; nbytes multiple of 4) to ``buf``.

        Ordered with the submissions: work submitted later sees the data."""

    @abc.abstractmethod
    def read(self, buf: BufferHandle, offset: int, size: int) -> memoryview:
        """Wait for submitted work, then return ``size`` bytes of ``buf`` from ``offset`` (host copy)."""

    @abc.abstractmethod
    def compile(self, source: str, label: str = "") -> PipelineHandle:
        """Compile WGSL ``source`` (entry point ``main``, layout from the shader) to a compute pipeline.

        Raises ``RuntimeError`` with the compiler's message on invalid WGSL."""

    def validate(self, source: str, label: str = "") -> None:
        """Parse and validate WGSL ``source`` with the implementation's front end (naga / Tint)
        without building a pipeline; raises ``RuntimeError`` with the compiler's message.

        Cheaper than :meth:`compile` (no backend code generation, no driver compile); the variant
        test uses it for every shader. The default compiles the pipeline."""
        self.compile(source, label)

    @abc.abstractmethod
    def submit(self, commands: Sequence[Dispatch | Copy]) -> None:
        """Record ``commands`` in order into one command buffer and submit it (does not wait)."""

    @abc.abstractmethod
    def sync(self) -> None:
        """Block until every submitted command has finished."""

    def close(self) -> None:  # pragma: no cover - optional
        """Release the device (optional; the process exit also does it)."""
        return None


#: ``@group(0) @binding(N) var<space, access>`` declarations: the explicit layout both runtimes
#: build ("auto" layouts drop bindings the compiler found unused).
_BINDING_RE = re.compile(
    r"@group\(0\)\s*@binding\((\d+)\)\s*var<\s*(uniform|storage)\s*(?:,\s*(read_write|read))?\s*>")


def binding_kinds(source: str) -> dict[int, str]:
    """Group-0 bindings of a WGSL source: slot -> "uniform" | "storage" | "read-only-storage"."""
    kinds = {}
    for m in _BINDING_RE.finditer(source):
        space, access = m.group(2), m.group(3)
        kinds[int(m.group(1))] = ("uniform" if space == "uniform" else
                                  "storage" if access == "read_write" else "read-only-storage")
    return dict(sorted(kinds.items()))


def software_adapter(adapter_type: str, is_fallback: bool) -> bool:
    """The one rule for "software adapter" (llvmpipe, lavapipe, SwiftShader, a fallback): a CPU
    adapter or a fallback adapter. It keeps them out of "auto"; ``info`` and the adapter ranking
    read it through :attr:`AdapterInfo.software`."""
    return bool(is_fallback) or str(adapter_type).upper() == "CPU"


def pack_uniforms(blobs: Sequence[bytes], align: int) -> tuple[list[int], bytearray]:
    """Every dispatch's uniform block in one buffer: (byte offset of each block, the bytes to write).

    Each block starts at a multiple of ``align`` (the device's min uniform offset alignment) and is
    bound with :func:`uniform_size` bytes; equal blocks share one place (a batch of like calls
    writes its params once, and their bind groups differ only in their buffers). Both runtimes
    recycle one uniform buffer this way."""
    offs, at, end = [], {}, 0
    for b in blobs:
        o = at.get(b)
        if o is None:
            o = at[b] = -(-end // align) * align
            end = o + uniform_size(b)
        offs.append(o)
    stage = bytearray(end + (-end % 4))
    for b, o in at.items():
        stage[o:o + len(b)] = b
    return offs, stage


def uniform_size(blob: bytes) -> int:
    """The bound size of one uniform block (at least 16 bytes)."""
    return max(len(blob), 16)


def buffer_capacity(need: int, floor: int) -> int:
    """The size to (re)allocate a recycled buffer at: a power of two, at least ``floor``."""
    return max(floor, 1 << (max(need, 1) - 1).bit_length())


def storage_ranges(cmd: Dispatch) -> list[tuple[int, BufferHandle, int, int]]:
    """(slot, buffer, offset, size) of a dispatch's storage bindings, slots 1, 2, ... in order."""
    out = []
    slot = 0
    for bnd in cmd.bindings:
        slot += 1
        if type(bnd) is not Binding:
            bnd = bnd if isinstance(bnd, Binding) else Binding(bnd)
        buf, off, size = bnd
        out.append((slot, buf, int(off), int(buf.size - off if size is None else size)))
    return out


def implementation() -> str:
    """The runtime selected by ``PYTROPICAL_WEBGPU`` ("wgpu", the default, or "dawn")."""
    name = os.environ.get("PYTROPICAL_WEBGPU", "wgpu").strip().lower() or "wgpu"
    if name not in ("wgpu", "dawn"):
        raise ValueError(f"PYTROPICAL_WEBGPU must be 'wgpu' or 'dawn', got {name!r}")
    return name


#: implementation name -> module (each exports probe(), list_adapters(), create())
RUNTIMES = {"wgpu": "runtime_wgpupy", "dawn": "runtime_dawn"}


def runtime_module(name: str | None = None):
    """The implementation module for ``name`` (default: the one ``PYTROPICAL_WEBGPU`` selects)."""
    name = name or implementation()
    if name not in RUNTIMES:
        raise ValueError(f"unknown WebGPU runtime {name!r}; known: {', '.join(RUNTIMES)}")
    return importlib.import_module(f"{__package__}.{RUNTIMES[name]}")


def probe_runtime(name: str | None = None) -> tuple[bool, str]:
    """(ok, reason) for the selected implementation without creating a device (a bad
    ``PYTROPICAL_WEBGPU`` or ``PYTROPICAL_WGPU_ADAPTER`` is a reason, not an exception)."""
    from ...errors import BackendUnavailableError

    try:
        name = name or implementation()
    except ValueError as e:
        return False, str(e)
    try:
        mod = runtime_module(name)
    except ImportError as e:
        return False, f"the {name} WebGPU runtime is unavailable: {e}"
    try:
        return mod.probe()
    except BackendUnavailableError as e:
        return False, e.reason


def list_adapters(name: str | None = None) -> list[AdapterInfo]:
    """Every adapter the selected implementation sees (empty when it is not installed)."""
    try:
        return runtime_module(name).list_adapters()
    except Exception:  # noqa: BLE001 - a broken driver must not break probing
        return []


def create_runtime(name: str | None = None) -> Runtime:
    """A new Runtime of the selected implementation on the best adapter (hardware first)."""
    return runtime_module(name).create()


__all__ = ["RUNTIMES", "AdapterInfo", "Binding", "Copy", "Dispatch", "Limits", "Runtime",
           "buffer_capacity", "create_runtime", "implementation", "list_adapters", "pack_uniforms",
           "probe_runtime", "runtime_module", "software_adapter", "storage_ranges",
           "uniform_size"]
