"""The :class:`~.runtime.Runtime` implemented with Dawn through pydawn (``PYTROPICAL_WEBGPU=dawn``).

Dawn is Chromium's WebGPU implementation; its shader compiler is Tint, where wgpu-py's is naga, so
running the suite on both proves every shader on two compilers. pydawn (PyPI ``dawn-python``,
``pip install 'pytropical_gpu[dawn]'``) ships ``libwebgpu_dawn`` and ctypes bindings of its C API;
this module drives that C API directly (the same calls tinygrad's WebGPU backend makes) and uses
pydawn's ``utils`` only for its process-wide instance and string helpers.

Dawn's C API has no "enumerate adapters": :func:`list_adapters` asks for a high-performance, a
low-power and a fallback adapter on each backend and keeps the distinct ones. On Linux software
Vulkan, Dawn needs Mesa >= 25 (it rejects older lavapipe drivers), see ``.ci/run``.

Errors: Dawn reports validation errors (a bad bind group, an out-of-range binding) asynchronously
through the device's uncaptured-error callback; they are collected and raised as ``RuntimeError``
at the next :meth:`submit`, :meth:`read` or :meth:`sync`. Shader compilation errors are caught with
an error scope and raised by :meth:`compile` immediately, with Tint's ``line:column`` message.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from collections.abc import Sequence

from .adapters import choose_adapter, refusal
from .runtime import AdapterInfo, Binding, Copy, Dispatch, Limits, Runtime, binding_kinds

log = logging.getLogger("pytropical_gpu")

_U64_MAX = 2**64 - 1
#: our feature names (wgpu-py's spelling, the one kernels test for) -> Dawn's enum member names
_OPTIONAL_FEATURES = {"subgroup": "WGPUFeatureName_Subgroups",
                      "shader-f16": "WGPUFeatureName_ShaderF16",
                      "timestamp-query": "WGPUFeatureName_TimestampQuery"}
_lock = threading.Lock()


def _dawn():
    """(webgpu, utils) from pydawn; importing utils creates the process-wide instance."""
    from pydawn import utils, webgpu

    return webgpu, utils


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("dawn-python")
    except Exception:  # noqa: BLE001
        return "?"


def _str(view) -> str:
    if not view.data or not view.length:
        return ""
    n = view.length if view.length < (1 << 63) else -1  # WGPU_STRLEN: NUL-terminated
    raw = ctypes.string_at(view.data, n) if n >= 0 else ctypes.string_at(view.data)
    return raw.decode("utf-8", "replace")


def _enum_name(table: dict, value: int, prefix: str) -> str:
    return table.get(int(value), f"{prefix}{int(value)}").split("_", 1)[-1]


def _wait(future) -> None:
    webgpu, utils = _dawn()
    info = webgpu.WGPUFutureWaitInfo()
    info.future = future
    status = webgpu.wgpuInstanceWaitAny(utils.instance, 1, info, _U64_MAX)
    if status != webgpu.WGPUWaitStatus_Success:
        raise RuntimeError(f"dawn: waiting for a future failed (status {status})")


def _request_adapter(power: int, backend: int = 0, fallback: bool = False):
    """One adapter for these options, or None."""
    webgpu, utils = _dawn()
    result: dict = {}

    def cb(status, adapter, msg, _ud):
        result["status"], result["adapter"], result["msg"] = status, adapter, _str(msg)

    cb_info = webgpu.WGPURequestAdapterCallbackInfo()
    cb_info.mode = webgpu.WGPUCallbackMode_WaitAnyOnly
    cb_info.callback = webgpu.WGPURequestAdapterCallback(cb)
    opts = webgpu.WGPURequestAdapterOptions()
    opts.powerPreference = power
    opts.backendType = backend
    opts.forceFallbackAdapter = int(fallback)
    _wait(webgpu.wgpuInstanceRequestAdapterF(utils.instance, opts, cb_info))
    if result.get("status") != webgpu.WGPURequestAdapterStatus_Success or not result.get("adapter"):
        return None
    return result["adapter"]


def _info(adapter) -> AdapterInfo:
    webgpu, _ = _dawn()
    raw = webgpu.WGPUAdapterInfo()
    webgpu.wgpuAdapterGetInfo(adapter, raw)
    try:
        extra = {"vendor": _str(raw.vendor), "architecture": _str(raw.architecture),
                 "device": _str(raw.device), "description": _str(raw.description),
                 "vendor_id": int(raw.vendorID), "device_id": int(raw.deviceID),
                 "backend_type": _enum_name(webgpu.WGPUBackendType__enumvalues, raw.backendType,
                                            "Backend"),
                 "adapter_type": _enum_name(webgpu.WGPUAdapterType__enumvalues, raw.adapterType,
                                            "Type"),
                 "runtime": f"dawn-python {_version()}"}
    finally:
        webgpu.wgpuAdapterInfoFreeMembers(raw)
    atype = extra["adapter_type"]
    return AdapterInfo(name=extra["device"], vendor=extra["vendor"], backend=extra["backend_type"],
                       adapter_type=atype, is_fallback=atype.upper() == "CPU",
                       description=extra["description"], extra=extra)


def _adapters() -> list:
    """Distinct adapters Dawn hands out: high-performance, low-power and fallback requests."""
    webgpu, _ = _dawn()
    seen, out = set(), []
    tries = [(webgpu.WGPUPowerPreference_HighPerformance, False),
             (webgpu.WGPUPowerPreference_LowPower, False),
             (webgpu.WGPUPowerPreference_Undefined, True)]
    with _lock:
        for power, fallback in tries:
            a = _request_adapter(power, fallback=fallback)
            if a is None:
                continue
            inf = _info(a)
            key = (inf.name, inf.backend, inf.extra.get("vendor_id"), inf.extra.get("device_id"))
            if key in seen:
                webgpu.wgpuAdapterRelease(a)
                continue
            seen.add(key)
            out.append(a)
    return out


def _release_adapters(adapters, keep=None) -> None:
    webgpu, _ = _dawn()
    for a in adapters:
        if a is not keep:
            webgpu.wgpuAdapterRelease(a)


def list_adapters() -> list[AdapterInfo]:
    adapters = _adapters()
    try:
        return [_info(a) for a in adapters]
    finally:
        _release_adapters(adapters)


def probe() -> tuple[bool, str]:
    try:
        _dawn()
    except ImportError as e:
        return False, f"pydawn is not installed ({e}); pip install 'pytropical_gpu[dawn]'"
    except OSError as e:  # the bundled libwebgpu_dawn failed to load
        return False, f"dawn-python {_version()}: libwebgpu_dawn failed to load: {e}"
    try:
        adapters = _adapters()
    except Exception as e:  # noqa: BLE001
        return False, f"dawn-python {_version()}: adapter request failed: {e}"
    if not adapters:
        return False, (f"dawn-python {_version()}: no WebGPU adapter (no Vulkan/Metal/D3D12 driver; "
                       "on software Vulkan Dawn needs Mesa >= 25)")
    adapter, why = choose_adapter(adapters, _info)
    best = None if adapter is None else _info(adapter)
    _release_adapters(adapters)
    if best is None:
        return False, f"dawn-python {_version()}: {why}"
    kind = "software" if best.software else best.adapter_type
    return True, f"dawn-python {_version()}: {best.name} ({best.backend}, {kind})"


def _release(fn_name: str, *handles) -> None:
    """Drop our references (Dawn frees the object once the GPU no longer uses it)."""
    try:
        from pydawn import webgpu
        fn = getattr(webgpu, fn_name)
        for h in handles:
            if h:
                fn(h)
    except Exception:  # noqa: BLE001 - interpreter shutdown: nothing left to free
        pass


class _Buffer:
    """A Dawn buffer handle with the ``.size`` the engine reads (released when collected)."""

    __slots__ = ("handle", "size", "label", "__weakref__")

    def __init__(self, handle, size: int, label: str):
        self.handle, self.size, self.label = handle, size, label

    def __repr__(self) -> str:
        return f"<dawn buffer {self.label!r} {self.size} B>"

    def __del__(self, _release=_release):  # bound now: module globals are gone at shutdown
        if self.handle:
            _release("wgpuBufferRelease", self.handle)
            self.handle = None


class _Pipeline:
    """A compute pipeline and its group-0 bind group layout (released when collected)."""

    __slots__ = ("handle", "layout", "label", "__weakref__")

    def __init__(self, handle, layout, label: str):
        self.handle, self.layout, self.label = handle, layout, label

    def __del__(self, _release=_release):
        if self.handle:
            _release("wgpuBindGroupLayoutRelease", self.layout)
            _release("wgpuComputePipelineRelease", self.handle)
            self.handle = self.layout = None


class DawnRuntime(Runtime):
    """One Dawn device on the best adapter, created with the adapter's own limits."""

    name = "dawn"

    def __init__(self, adapter=None):
        webgpu, utils = _dawn()
        self._w, self._u = webgpu, utils
        if adapter is None:
            found = _adapters()
            if not found:
                raise RuntimeError("dawn: no WebGPU adapter")
            adapter, why = choose_adapter(found, _info)
            _release_adapters(found, keep=adapter)
            if adapter is None:
                raise RuntimeError(f"dawn: {why}")
        self.adapter = adapter
        self.info = _info(adapter)
        why = refusal(self.info)
        if why:  # refused before a device exists
            raise RuntimeError(f"dawn: {why}")
        self._errors: list[str] = []

        supported = webgpu.WGPUSupportedFeatures()
        webgpu.wgpuAdapterGetFeatures(adapter, supported)
        have = {webgpu.WGPUFeatureName__enumvalues.get(supported.features[i], "")
                for i in range(supported.featureCount)}
        feats = [ours for ours, theirs in _OPTIONAL_FEATURES.items() if theirs in have]
        try:
            self.device = self._request_device(feats)
        except RuntimeError as e:
            log.warning("dawn: requesting features %s failed (%s); using none", feats, e)
            feats = []
            self.device = self._request_device(feats)
        self.features = frozenset(feats)
        sl = webgpu.WGPUSupportedLimits()
        webgpu.wgpuDeviceGetLimits(self.device, sl)
        dl = sl.limits
        self.limits = Limits(
            max_storage_binding=int(dl.maxStorageBufferBindingSize),
            max_buffer_size=int(dl.maxBufferSize),
            max_workgroups_per_dim=int(dl.maxComputeWorkgroupsPerDimension),
            max_invocations_per_workgroup=int(dl.maxComputeInvocationsPerWorkgroup),
            max_workgroup_storage=int(dl.maxComputeWorkgroupStorageSize),
            max_storage_buffers_per_stage=int(dl.maxStorageBuffersPerShaderStage),
            min_storage_offset_alignment=int(dl.minStorageBufferOffsetAlignment) or 256,
            min_uniform_offset_alignment=int(dl.minUniformBufferOffsetAlignment) or 256,
        )
        self.queue = webgpu.wgpuDeviceGetQueue(self.device)
        self._usage = (webgpu.WGPUBufferUsage_Storage | webgpu.WGPUBufferUsage_CopySrc
                       | webgpu.WGPUBufferUsage_CopyDst)
        self._uniform: _Buffer | None = None  # one recycled uniform buffer for every params block
        self._staging: _Buffer | None = None  # one recycled MAP_READ buffer for read()

    # ------------------------------------------------------------------ device
    def _request_device(self, feats: list[str]):
        webgpu = self._w
        desc = webgpu.WGPUDeviceDescriptor()
        names = [getattr(webgpu, _OPTIONAL_FEATURES[f]) for f in feats]
        arr = (webgpu.WGPUFeatureName * max(len(names), 1))(*names)
        desc.requiredFeatureCount = len(names)
        desc.requiredFeatures = ctypes.cast(arr, ctypes.POINTER(webgpu.WGPUFeatureName))
        supported = webgpu.WGPUSupportedLimits()
        webgpu.wgpuAdapterGetLimits(self.adapter, supported)
        required = webgpu.WGPURequiredLimits()
        required.limits = supported.limits
        desc.requiredLimits = ctypes.pointer(required)
        errors = self._errors

        def on_error(_dev, etype, msg, _u1, _u2):
            kind = _enum_name(webgpu.WGPUErrorType__enumvalues, etype, "Error")
            errors.append(f"{kind}: {_str(msg)}")

        # kept alive as long as the runtime: Dawn calls it for every uncaptured error
        cb_type = dict(webgpu.struct_WGPUUncapturedErrorCallbackInfo2._fields_)["callback"]
        self._on_error = cb_type(on_error)
        desc.uncapturedErrorCallbackInfo2.callback = self._on_error
        result: dict = {}

        def cb(status, device, msg, _ud):
            result["status"], result["device"], result["msg"] = status, device, _str(msg)

        cb_info = webgpu.WGPURequestDeviceCallbackInfo()
        cb_info.mode = webgpu.WGPUCallbackMode_WaitAnyOnly
        cb_info.callback = webgpu.WGPURequestDeviceCallback(cb)
        _wait(webgpu.wgpuAdapterRequestDeviceF(self.adapter, desc, cb_info))
        if result.get("status") != webgpu.WGPURequestDeviceStatus_Success or not result.get("device"):
            raise RuntimeError(f"dawn: device request failed: {result.get('msg', '')}")
        return result["device"]

    def _check(self) -> None:
        if self._errors:
            msgs, self._errors[:] = list(self._errors), []
            raise RuntimeError("dawn: " + "\n".join(msgs))

    def _tick(self) -> None:
        self._w.wgpuInstanceProcessEvents(self._u.instance)

    # ------------------------------------------------------------------ buffers
    def _new_buffer(self, size: int, usage: int, label: str) -> _Buffer:
        desc = self._w.WGPUBufferDescriptor()
        desc.size = size
        desc.usage = usage
        desc.mappedAtCreation = False
        handle = self._w.wgpuDeviceCreateBuffer(self.device, desc)
        if not handle:
            raise MemoryError(f"dawn: could not create a buffer of {size} bytes ({label})")
        return _Buffer(handle, size, label)

    def _free(self, buf: _Buffer | None) -> None:
        if buf is not None and buf.handle:
            self._w.wgpuBufferDestroy(buf.handle)
            self._w.wgpuBufferRelease(buf.handle)
            buf.handle = None

    def create_buffer(self, size: int, label: str = "") -> _Buffer:
        size = max(int(size), 4)
        if size > self.limits.max_buffer_size:
            raise MemoryError(f"dawn: buffer of {size} bytes exceeds max_buffer_size "
                              f"{self.limits.max_buffer_size}")
        return self._new_buffer(size, self._usage, label)

    def destroy_buffer(self, buf: _Buffer) -> None:
        self._free(buf)

    def write(self, buf: _Buffer, data, offset: int = 0) -> None:
        mv = memoryview(data).cast("B")
        n = mv.nbytes
        if not n:
            return
        if mv.readonly:
            mv = memoryview(bytearray(mv))
        ptr = ctypes.addressof((ctypes.c_char * n).from_buffer(mv))
        self._w.wgpuQueueWriteBuffer(self.queue, buf.handle, int(offset), ptr, n)

    def read(self, buf: _Buffer, offset: int, size: int) -> memoryview:
        if size == 0:
            return memoryview(b"")
        webgpu = self._w
        self._check()
        if self._staging is None or self._staging.size < size:
            self._free(self._staging)
            cap = max(1 << 16, 1 << (size - 1).bit_length())
            self._staging = self._new_buffer(cap, webgpu.WGPUBufferUsage_MapRead
                                             | webgpu.WGPUBufferUsage_CopyDst, "staging")
        st = self._staging.handle
        enc = webgpu.wgpuDeviceCreateCommandEncoder(self.device, webgpu.WGPUCommandEncoderDescriptor())
        webgpu.wgpuCommandEncoderCopyBufferToBuffer(enc, buf.handle, int(offset), st, 0, int(size))
        self._finish_submit(enc)
        result: dict = {}

        def cb(status, msg, _u1, _u2):
            result["status"], result["msg"] = status, _str(msg)

        cb_info = webgpu.WGPUBufferMapCallbackInfo2()
        cb_info.mode = webgpu.WGPUCallbackMode_WaitAnyOnly
        cb_info.callback = webgpu.WGPUBufferMapCallback2(cb)
        _wait(webgpu.wgpuBufferMapAsync2(st, webgpu.WGPUMapMode_Read, 0, int(size), cb_info))
        if result.get("status") != webgpu.WGPUBufferMapAsyncStatus_Success:
            self._check()
            raise RuntimeError(f"dawn: mapping the read-back buffer failed: {result.get('msg', '')}")
        try:
            ptr = webgpu.wgpuBufferGetConstMappedRange(st, 0, int(size))
            out = bytearray(size)
            ctypes.memmove((ctypes.c_char * size).from_buffer(out), ptr, size)
        finally:
            webgpu.wgpuBufferUnmap(st)
        self._check()
        return memoryview(out)

    # ------------------------------------------------------------------ pipelines
    def _module(self, source: str, what: str):
        """A shader module (Tint parses, resolves and validates here), or RuntimeError."""
        webgpu, utils = self._w, self._u
        code = source.encode("utf-8")
        code_buf = ctypes.create_string_buffer(code)
        wgsl = webgpu.WGPUShaderModuleWGSLDescriptor()
        wgsl.chain.sType = webgpu.WGPUSType_ShaderSourceWGSL
        wgsl.code.data = ctypes.cast(code_buf, ctypes.POINTER(ctypes.c_char))
        wgsl.code.length = len(code)
        mdesc = webgpu.WGPUShaderModuleDescriptor()
        mdesc.nextInChain = ctypes.cast(ctypes.pointer(wgsl), ctypes.POINTER(webgpu.struct_WGPUChainedStruct))
        webgpu.wgpuDevicePushErrorScope(self.device, webgpu.WGPUErrorFilter_Validation)
        module = webgpu.wgpuDeviceCreateShaderModule(self.device, mdesc)
        err = utils.pop_error(self.device)
        if err:
            if module:
                webgpu.wgpuShaderModuleRelease(module)
            raise RuntimeError(f"WGSL compilation of {what} failed (Tint): {err.strip()}")
        return module

    def validate(self, source: str, label: str = "") -> None:
        self._w.wgpuShaderModuleRelease(self._module(source, label or "a kernel"))

    def compile(self, source: str, label: str = "") -> _Pipeline:
        webgpu, utils = self._w, self._u
        what = label or "a kernel"
        module = self._module(source, what)
        entry = b"main"
        entry_buf = ctypes.create_string_buffer(entry)
        pdesc = webgpu.WGPUComputePipelineDescriptor()
        pdesc.compute.module = module
        pdesc.compute.entryPoint.data = ctypes.cast(entry_buf, ctypes.POINTER(ctypes.c_char))
        pdesc.compute.entryPoint.length = len(entry)
        webgpu.wgpuDevicePushErrorScope(self.device, webgpu.WGPUErrorFilter_Validation)
        # explicit layout from the declarations: "auto" drops bindings the compiler found unused,
        # and then a bind group naming every declared buffer would not match it
        bgl, playout = self._layout(source)
        pdesc.layout = playout  # None: "auto", the layout comes from the shader
        pipe = webgpu.wgpuDeviceCreateComputePipeline(self.device, pdesc)
        err = utils.pop_error(self.device)
        webgpu.wgpuShaderModuleRelease(module)
        if playout:
            webgpu.wgpuPipelineLayoutRelease(playout)
        if err or not pipe:
            if pipe:
                webgpu.wgpuComputePipelineRelease(pipe)
            if bgl:
                webgpu.wgpuBindGroupLayoutRelease(bgl)
            raise RuntimeError(f"WGSL compilation of {what} failed (Tint): {(err or '').strip()}")
        if not bgl:
            bgl = webgpu.wgpuComputePipelineGetBindGroupLayout(pipe, 0)
        return _Pipeline(pipe, bgl, what)

    def _layout(self, source: str):
        """(bind group layout, pipeline layout) for the shader's group-0 declarations, or (None,
        None) when it declares none in the recognised form (then Dawn derives the layout)."""
        webgpu = self._w
        types = {"uniform": webgpu.WGPUBufferBindingType_Uniform,
                 "storage": webgpu.WGPUBufferBindingType_Storage,
                 "read-only-storage": webgpu.WGPUBufferBindingType_ReadOnlyStorage}
        kinds = {slot: types[k] for slot, k in binding_kinds(source).items()}
        if not kinds:
            return None, None
        arr = (webgpu.WGPUBindGroupLayoutEntry * len(kinds))()
        for e, (slot, kind) in zip(arr, sorted(kinds.items())):
            e.binding, e.visibility, e.buffer.type = slot, webgpu.WGPUShaderStage_Compute, kind
        desc = webgpu.WGPUBindGroupLayoutDescriptor()
        desc.entryCount = len(kinds)
        desc.entries = arr
        bgl = webgpu.wgpuDeviceCreateBindGroupLayout(self.device, desc)
        pdesc = webgpu.WGPUPipelineLayoutDescriptor()
        layouts = (webgpu.WGPUBindGroupLayout * 1)(bgl)
        pdesc.bindGroupLayoutCount = 1
        pdesc.bindGroupLayouts = layouts
        return bgl, webgpu.wgpuDeviceCreatePipelineLayout(self.device, pdesc)

    # ------------------------------------------------------------------ commands
    def _uniforms(self, blobs: list[bytes]) -> list[int]:
        align = self.limits.min_uniform_offset_alignment
        offs, total = [], 0
        for b in blobs:
            offs.append(total)
            total += -(-max(len(b), 16) // align) * align
        if self._uniform is None or total > self._uniform.size:
            self._free(self._uniform)
            size = max(4096, 1 << (total - 1).bit_length())
            self._uniform = self._new_buffer(
                size, self._w.WGPUBufferUsage_Uniform | self._w.WGPUBufferUsage_CopyDst, "params")
        return offs

    def _finish_submit(self, enc) -> None:
        webgpu = self._w
        cmd = webgpu.wgpuCommandEncoderFinish(enc, webgpu.WGPUCommandBufferDescriptor())
        arr = (webgpu.WGPUCommandBuffer * 1)(cmd)
        webgpu.wgpuQueueSubmit(self.queue, 1, arr)
        webgpu.wgpuCommandBufferRelease(cmd)
        webgpu.wgpuCommandEncoderRelease(enc)

    def submit(self, commands: Sequence[Dispatch | Copy]) -> None:
        webgpu = self._w
        self._check()
        blobs = [bytes(c.params) for c in commands if isinstance(c, Dispatch) and c.params is not None]
        offs = self._uniforms(blobs) if blobs else []
        if blobs:
            stage = bytearray(offs[-1] + len(blobs[-1]) + (-len(blobs[-1]) % 4))
            for o, b in zip(offs, blobs):
                stage[o:o + len(b)] = b
            self.write(self._uniform, stage)
        enc = webgpu.wgpuDeviceCreateCommandEncoder(self.device, webgpu.WGPUCommandEncoderDescriptor())
        groups_made = []
        ui = 0
        try:
            for cmd in commands:
                if isinstance(cmd, Copy):
                    webgpu.wgpuCommandEncoderCopyBufferToBuffer(
                        enc, cmd.src.handle, int(cmd.src_offset), cmd.dst.handle, int(cmd.dst_offset),
                        int(cmd.size))
                    continue
                entries = []
                if cmd.params is not None:
                    entries.append((0, self._uniform.handle, offs[ui], max(len(blobs[ui]), 16)))
                    ui += 1
                for i, bnd in enumerate(cmd.bindings):
                    if not isinstance(bnd, Binding):
                        bnd = Binding(bnd)
                    size = bnd.size if bnd.size is not None else bnd.buffer.size - bnd.offset
                    entries.append((i + 1, bnd.buffer.handle, int(bnd.offset), int(size)))
                arr = (webgpu.WGPUBindGroupEntry * len(entries))()
                for e, (binding, handle, off, size) in zip(arr, entries):
                    e.binding, e.buffer, e.offset, e.size = binding, handle, off, size
                bg_desc = webgpu.WGPUBindGroupDescriptor()
                bg_desc.layout = cmd.pipeline.layout
                bg_desc.entryCount = len(entries)
                bg_desc.entries = arr
                bg = webgpu.wgpuDeviceCreateBindGroup(self.device, bg_desc)
                groups_made.append(bg)
                cpass = webgpu.wgpuCommandEncoderBeginComputePass(
                    enc, webgpu.WGPUComputePassDescriptor())
                webgpu.wgpuComputePassEncoderSetPipeline(cpass, cmd.pipeline.handle)
                webgpu.wgpuComputePassEncoderSetBindGroup(cpass, 0, bg, 0, None)
                gx, gy, gz = (int(g) for g in cmd.groups)
                webgpu.wgpuComputePassEncoderDispatchWorkgroups(cpass, gx, gy, gz)
                webgpu.wgpuComputePassEncoderEnd(cpass)
                webgpu.wgpuComputePassEncoderRelease(cpass)
            self._finish_submit(enc)
        finally:
            for bg in groups_made:
                webgpu.wgpuBindGroupRelease(bg)
        self._tick()
        self._check()

    def sync(self) -> None:
        webgpu = self._w
        result: dict = {}

        def cb(status, _u1, _u2):
            result["status"] = status

        cb_info = webgpu.WGPUQueueWorkDoneCallbackInfo2()
        cb_info.mode = webgpu.WGPUCallbackMode_WaitAnyOnly
        cb_info.callback = webgpu.WGPUQueueWorkDoneCallback2(cb)
        _wait(webgpu.wgpuQueueOnSubmittedWorkDone2(self.queue, cb_info))
        self._check()
        if result.get("status") != webgpu.WGPUQueueWorkDoneStatus_Success:
            raise RuntimeError(f"dawn: submitted work failed (status {result.get('status')})")

    def close(self) -> None:
        self._free(self._uniform)
        self._free(self._staging)
        self._uniform = self._staging = None


def create() -> DawnRuntime:
    return DawnRuntime()
