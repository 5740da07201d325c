"""The :class:`~.runtime.Runtime` implemented with wgpu-py (``PYTROPICAL_WEBGPU=wgpu``, default)."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Sequence

from .adapters import choose_adapter, refusal
from .bindgroups import lookup, uniform_keys, wgpupy_cache
from .runtime import (
    AdapterInfo,
    Copy,
    Dispatch,
    Limits,
    Runtime,
    binding_kinds,
    buffer_capacity,
    pack_uniforms,
    storage_ranges,
    uniform_size,
)

log = logging.getLogger("pytropical_gpu")
#: The adapters, enumerated once per process (under the lock) and never released while it runs:
#: wgpu-native's OpenGL adapter aborts the process (EGL BadAccess, a panic that cannot unwind) when
#: it is released while another thread uses EGL, e.g. enumerating. Even a refused GL adapter is
#: created by enumeration, so no adapter object may be dropped from a caller's frame.
_lock = threading.Lock()
_enumerated: list | None = None

_OPTIONAL_FEATURES = ("subgroup", "shader-f16", "timestamp-query")


def _wgpu():
    import wgpu
    return wgpu


@functools.cache  # once per process, not per submit (the imports cost ~1.4 us a call)
def _raw():
    """wgpu-py's cffi handle and wgpu-native library; None off the tested 0.32 line (object API)."""
    try:
        import wgpu
        from wgpu.backends.wgpu_native._ffi import ffi, lib
    except ImportError:  # pragma: no cover
        return None
    return (ffi, lib) if wgpu.__version__.startswith("0.32.") else None


def _info(adapter) -> AdapterInfo:
    inf = dict(adapter.info)
    fallback = bool(inf.get("is_fallback_adapter", False) or getattr(adapter, "is_fallback_adapter",
                                                                       False))
    return AdapterInfo(name=str(inf.get("device", "")), vendor=str(inf.get("vendor", "")),
                       backend=str(inf.get("backend_type", "")),
                       adapter_type=str(inf.get("adapter_type", "Unknown")), is_fallback=fallback,
                       description=str(inf.get("description", "")), extra=inf)


def _adapters():
    """Every adapter wgpu-py sees (the same objects on every call, see ``_enumerated``)."""
    global _enumerated
    wgpu = _wgpu()
    with _lock:
        if _enumerated is None:
            _enumerated = list(wgpu.gpu.enumerate_adapters_sync())
        return list(_enumerated)


def list_adapters() -> list[AdapterInfo]:
    return [_info(a) for a in _adapters()]


def probe() -> tuple[bool, str]:
    try:
        wgpu = _wgpu()
    except ImportError as e:
        return False, f"wgpu-py is not installed ({e}); pip install wgpu"
    try:
        adapters = _adapters()
    except Exception as e:  # noqa: BLE001
        return False, f"wgpu {wgpu.__version__}: adapter enumeration failed: {e}"
    adapter, why = choose_adapter(adapters, _info)
    if adapter is None:
        return False, f"wgpu {wgpu.__version__}: {why}"
    best = _info(adapter)
    kind = "software" if best.software else best.adapter_type
    return True, f"wgpu {wgpu.__version__}: {best.name} ({best.backend}, {kind})"


def _pick(adapters):
    """The adapter to open, or RuntimeError saying why none may be (never a refused one)."""
    adapter, why = choose_adapter(adapters, _info)
    if adapter is None:
        raise RuntimeError(f"wgpu: {why}")
    return adapter


class WgpuPyRuntime(Runtime):
    """One wgpu-py device on the best adapter, created with the adapter's own limits."""

    name = "wgpu"

    def __init__(self, adapter=None):
        wgpu = _wgpu()
        self._wgpu = wgpu
        adapter = adapter or _pick(_adapters())
        self.adapter = adapter
        self.info = _info(adapter)
        why = refusal(self.info)
        if why:  # refused before a device (and its poll thread) exists
            raise RuntimeError(f"wgpu: {why}")
        al = adapter.limits
        want = {}
        for key in ("max-storage-buffer-binding-size", "max-buffer-size",
                    "max-compute-workgroups-per-dimension", "max-compute-invocations-per-workgroup",
                    "max-compute-workgroup-storage-size", "max-storage-buffers-per-shader-stage",
                    "max-compute-workgroup-size-x", "max-compute-workgroup-size-y",
                    "max-compute-workgroup-size-z", "max-bind-groups", "max-bindings-per-bind-group"):
            if key in al:
                want[key] = al[key]
        feats = [f for f in _OPTIONAL_FEATURES if f in adapter.features]
        try:
            self.device = adapter.request_device_sync(required_features=feats, required_limits=want,
                                                      label="pytropical_gpu")
        except Exception as e:  # noqa: BLE001 - retry with the defaults
            log.warning("wgpu: requesting the adapter's limits failed (%s); using defaults", e)
            feats = []
            self.device = adapter.request_device_sync(label="pytropical_gpu")
        self.features = frozenset(feats)
        dl = self.device.limits
        self.limits = Limits(
            max_storage_binding=int(dl["max-storage-buffer-binding-size"]),
            max_buffer_size=int(dl["max-buffer-size"]),
            max_workgroups_per_dim=int(dl["max-compute-workgroups-per-dimension"]),
            max_invocations_per_workgroup=int(dl["max-compute-invocations-per-workgroup"]),
            max_workgroup_storage=int(dl["max-compute-workgroup-storage-size"]),
            max_storage_buffers_per_stage=int(dl["max-storage-buffers-per-shader-stage"]),
            min_storage_offset_alignment=int(dl.get("min-storage-buffer-offset-alignment", 256)),
            min_uniform_offset_alignment=int(dl.get("min-uniform-buffer-offset-alignment", 256)),
        )
        self.queue = self.device.queue
        self._usage = (wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
                       | wgpu.BufferUsage.COPY_DST)
        self._uniform = None  # one recycled uniform buffer for every dispatch's params
        self._uniform_size = 0
        self._groups = None  # the bind-group cache, made at the first submit (.bindgroups)

    # ------------------------------------------------------------------ buffers
    def create_buffer(self, size: int, label: str = ""):
        return self.device.create_buffer(size=max(int(size), 4), usage=self._usage, label=label)

    def destroy_buffer(self, buf) -> None:
        buf.destroy()
        if self._groups is not None:  # its bind groups go before the next submit (any thread)
            self._groups.forget(buf)

    def write(self, buf, data, offset: int = 0) -> None:
        mv = memoryview(data).cast("B")
        if mv.nbytes:
            self.queue.write_buffer(buf, offset, mv)

    def read(self, buf, offset: int, size: int) -> memoryview:
        return self.queue.read_buffer(buf, offset, size) if size else memoryview(b"")

    # ------------------------------------------------------------------ pipelines
    def compile(self, source: str, label: str = ""):
        # explicit layout from the declarations: "auto" drops bindings the compiler found unused
        wgpu = self._wgpu
        types = {"uniform": wgpu.BufferBindingType.uniform,
                 "storage": wgpu.BufferBindingType.storage,
                 "read-only-storage": wgpu.BufferBindingType.read_only_storage}
        entries = [{"binding": slot, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": types[kind]}}
                   for slot, kind in binding_kinds(source).items()]
        try:
            module = self.device.create_shader_module(code=source, label=label)
            bgl = self.device.create_bind_group_layout(entries=entries)
            layout = self.device.create_pipeline_layout(bind_group_layouts=[bgl])
            pipe = self.device.create_compute_pipeline(
                layout=layout, compute={"module": module, "entry_point": "main"}, label=label)
        except Exception as e:
            raise RuntimeError(f"WGSL compilation of {label or 'a kernel'} failed: {e}") from e
        pipe._pt_bgl = bgl  # noqa: SLF001 - keep the layout with the pipeline
        return pipe

    def validate(self, source: str, label: str = "") -> None:
        # create_shader_module runs naga's parser and validator; no pipeline, no driver compile
        try:
            self.device.create_shader_module(code=source, label=label)
        except Exception as e:
            raise RuntimeError(f"WGSL validation of {label or 'a kernel'} failed: {e}") from e

    # ------------------------------------------------------------------ commands
    def _write_uniforms(self, blobs: list[bytes]) -> list[int]:
        """Every params block into the one recycled uniform buffer (written before the submit)."""
        offs, stage = pack_uniforms(blobs, self.limits.min_uniform_offset_alignment)
        if len(stage) > self._uniform_size:
            if self._uniform is not None:
                self.destroy_buffer(self._uniform)
            self._uniform_size = buffer_capacity(len(stage), 4096)
            self._uniform = self.device.create_buffer(
                size=self._uniform_size,
                usage=self._wgpu.BufferUsage.UNIFORM | self._wgpu.BufferUsage.COPY_DST)
        self.queue.write_buffer(self._uniform, 0, stage)
        return offs

    def submit(self, commands: Sequence[Dispatch | Copy]) -> None:
        blobs = [bytes(c.params) for c in commands if isinstance(c, Dispatch) and c.params is not None]
        offs = self._write_uniforms(blobs) if blobs else []
        raw = _raw()
        if raw is None:  # pragma: no cover - a wgpu-py without its cffi module
            return self._submit_objects(commands, blobs, offs)
        ffi, lib = raw
        groups = self._groups
        if groups is None:
            groups = self._groups = wgpupy_cache(self.device, ffi, lib)
        groups.drain()
        us = uniform_keys(self._uniform, offs, blobs)  # (after _write_uniforms: it may regrow)
        enc = self.device.create_command_encoder()
        ui = 0
        # consecutive dispatches share one compute pass (each dispatch is its own usage scope:
        # WebGPU orders one's writes before the next one's reads); bind groups come from the cache
        # (:mod:`.bindgroups`), made through wgpu-native's C API on a miss
        p = pipe = None
        try:
            for cmd in commands:
                if type(cmd) is Copy:
                    if p is not None:
                        p.end()
                        p = pipe = None
                    lib.wgpuCommandEncoderCopyBufferToBuffer(  # (the object API: ~10 us a copy)
                        enc._internal, cmd.src._internal, int(cmd.src_offset), cmd.dst._internal,
                        int(cmd.dst_offset), int(cmd.size))
                    continue
                if cmd.params is None:  # the bind group: cached (.bindgroups)
                    bg = lookup(groups, cmd, None)
                else:
                    bg = lookup(groups, cmd, us[ui])
                    ui += 1
                if p is None:
                    p = enc.begin_compute_pass()
                    praw = p._internal
                if cmd.pipeline is not pipe:
                    pipe = cmd.pipeline
                    lib.wgpuComputePassEncoderSetPipeline(praw, pipe._internal)
                lib.wgpuComputePassEncoderSetBindGroup(praw, 0, bg, 0, ffi.NULL)
                gx, gy, gz = cmd.groups
                lib.wgpuComputePassEncoderDispatchWorkgroups(praw, int(gx), int(gy), int(gz))
            if p is not None:
                p.end()
            self.queue.submit([enc.finish()])
        finally:
            groups.done()

    def _submit_objects(self, commands, blobs, offs) -> None:
        """:meth:`submit` through wgpu-py's object API only."""
        enc = self.device.create_command_encoder()
        ui = 0
        p = pipe = None
        for cmd in commands:
            if isinstance(cmd, Copy):
                if p is not None:
                    p.end()
                    p = pipe = None
                enc.copy_buffer_to_buffer(cmd.src, cmd.src_offset, cmd.dst, cmd.dst_offset, cmd.size)
                continue
            entries = []
            if cmd.params is not None:
                entries.append({"binding": 0, "resource": {
                    "buffer": self._uniform, "offset": offs[ui], "size": uniform_size(blobs[ui])}})
                ui += 1
            entries += [{"binding": slot, "resource": {"buffer": buf, "offset": off, "size": size}}
                        for slot, buf, off, size in storage_ranges(cmd)]
            bg = self.device.create_bind_group(layout=cmd.pipeline._pt_bgl, entries=entries)
            if p is None:
                p = enc.begin_compute_pass()
            if cmd.pipeline is not pipe:
                p.set_pipeline(cmd.pipeline)
                pipe = cmd.pipeline
            p.set_bind_group(0, bg)
            p.dispatch_workgroups(*cmd.groups)
        if p is not None:
            p.end()
        self.queue.submit([enc.finish()])

    def sync(self) -> None:
        # on_submitted_work_done_sync() raises a cffi TypeError in wgpu 0.32: read 4 bytes instead
        if getattr(self, "_sync_buf", None) is None:
            self._sync_buf = self.create_buffer(4, "sync")
        self.queue.read_buffer(self._sync_buf, 0, 4)


def create() -> WgpuPyRuntime:
    return WgpuPyRuntime()
