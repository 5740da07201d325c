"""The :class:`~.runtime.Runtime` implemented with Dawn through pydawn (``PYTROPICAL_WEBGPU=dawn``).

Dawn is Chromium's WebGPU implementation; its shader compiler is Tint, where wgpu-py's is naga, so
running the suite on both proves every shader on two compilers. pydawn (PyPI ``dawn-python``,
``pip install 'pytropical_gpu[dawn]'``) ships ``libwebgpu_dawn`` and ctypes bindings of its C API;
this module drives that C API directly (the same calls tinygrad's WebGPU backend makes) and uses
pydawn's ``utils`` only for its process-wide instance and string helpers.

The library, the callback-and-wait helper and the adapters live in :mod:`.dawn_adapters`.

Errors: Dawn reports validation errors (a bad bind group, an out-of-range binding) asynchronously
through the device's uncaptured-error callback; they are collected and raised as ``RuntimeError``
at the next :meth:`submit`, :meth:`read` or :meth:`sync`. Shader compilation errors are caught with
an error scope and raised by :meth:`compile` immediately, with Tint's ``line:column`` message.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Sequence

from .adapters import choose_adapter, refusal
from .bindgroups import dawn_cache, lookup, uniform_keys
from .dawn_adapters import adapters, call, dawn, enum_name, info, list_adapters, probe, release_adapters, text
from .dawn_objects import Buffer, Pipeline, compute_pipeline, shader_module
from .runtime import (
    Copy,
    Dispatch,
    Limits,
    Runtime,
    buffer_capacity,
    pack_uniforms,
)

log = logging.getLogger("pytropical_gpu")

#: our feature names (wgpu-py's spelling, the one kernels test for) -> Dawn's enum member names
_OPTIONAL_FEATURES = {"subgroup": "WGPUFeatureName_Subgroups",
                      "shader-f16": "WGPUFeatureName_ShaderF16",
                      "timestamp-query": "WGPUFeatureName_TimestampQuery"}


class DawnRuntime(Runtime):
    """One Dawn device on the best adapter, created with the adapter's own limits."""

    name = "dawn"

    def __init__(self, adapter=None):
        webgpu, utils = dawn()
        self._w, self._u = webgpu, utils
        if adapter is None:
            found = adapters()
            if not found:
                raise RuntimeError("dawn: no WebGPU adapter")
            adapter, why = choose_adapter(found, info)
            release_adapters(found, keep=adapter)
            if adapter is None:
                raise RuntimeError(f"dawn: {why}")
        self.adapter = adapter
        self.info = info(adapter)
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
        self._uniform: Buffer | None = None  # one recycled uniform buffer for every params block
        self._staging: Buffer | None = None  # one recycled MAP_READ buffer for read()
        self._groups = dawn_cache(webgpu, self.device)

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
            errors.append(f"{enum_name(webgpu.WGPUErrorType__enumvalues, etype, 'Error')}: {text(msg)}")

        # kept alive as long as the runtime: Dawn calls it for every uncaptured error
        cb_type = dict(webgpu.struct_WGPUUncapturedErrorCallbackInfo2._fields_)["callback"]
        self._on_error = cb_type(on_error)
        desc.uncapturedErrorCallbackInfo2.callback = self._on_error
        got = call(lambda cb: webgpu.wgpuAdapterRequestDeviceF(self.adapter, desc, cb),
                   "WGPURequestDeviceCallbackInfo", "WGPURequestDeviceCallback",
                   "status", "device", "msg")
        if got.get("status") != webgpu.WGPURequestDeviceStatus_Success or not got.get("device"):
            raise RuntimeError(f"dawn: device request failed: {got.get('msg', '')}")
        return got["device"]

    def _check(self) -> None:
        if self._errors:
            msgs, self._errors[:] = list(self._errors), []
            raise RuntimeError("dawn: " + "\n".join(msgs))

    def _tick(self) -> None:
        self._w.wgpuInstanceProcessEvents(self._u.instance)

    # ------------------------------------------------------------------ buffers
    def _new_buffer(self, size: int, usage: int, label: str) -> Buffer:
        desc = self._w.WGPUBufferDescriptor()
        desc.size = size
        desc.usage = usage
        desc.mappedAtCreation = False
        handle = self._w.wgpuDeviceCreateBuffer(self.device, desc)
        if not handle:
            raise MemoryError(f"dawn: could not create a buffer of {size} bytes ({label})")
        return Buffer(handle, size, label)

    def _free(self, buf: Buffer | None) -> None:
        if buf is not None and buf.handle:
            self._w.wgpuBufferDestroy(buf.handle)
            self._w.wgpuBufferRelease(buf.handle)
            buf.handle = None
            self._groups.forget(buf)  # its bind groups go before the next submit (any thread)

    def create_buffer(self, size: int, label: str = "") -> Buffer:
        size = max(int(size), 4)
        if size > self.limits.max_buffer_size:
            raise MemoryError(f"dawn: buffer of {size} bytes exceeds max_buffer_size "
                              f"{self.limits.max_buffer_size}")
        return self._new_buffer(size, self._usage, label)

    def destroy_buffer(self, buf: Buffer) -> None:
        self._free(buf)

    def write(self, buf: Buffer, data, offset: int = 0) -> None:
        mv = memoryview(data).cast("B")
        n = mv.nbytes
        if not n:
            return
        if mv.readonly:
            mv = memoryview(bytearray(mv))
        ptr = ctypes.addressof((ctypes.c_char * n).from_buffer(mv))
        self._w.wgpuQueueWriteBuffer(self.queue, buf.handle, int(offset), ptr, n)

    def read(self, buf: Buffer, offset: int, size: int) -> memoryview:
        if size == 0:
            return memoryview(b"")
        webgpu = self._w
        self._check()
        if self._staging is None or self._staging.size < size:
            self._free(self._staging)
            self._staging = self._new_buffer(buffer_capacity(size, 1 << 16), webgpu.WGPUBufferUsage_MapRead
                                             | webgpu.WGPUBufferUsage_CopyDst, "staging")
        st = self._staging.handle
        enc = webgpu.wgpuDeviceCreateCommandEncoder(self.device, webgpu.WGPUCommandEncoderDescriptor())
        webgpu.wgpuCommandEncoderCopyBufferToBuffer(enc, buf.handle, int(offset), st, 0, int(size))
        self._finish_submit(enc)
        got = call(lambda cb: webgpu.wgpuBufferMapAsync2(st, webgpu.WGPUMapMode_Read, 0, int(size), cb),
                   "WGPUBufferMapCallbackInfo2", "WGPUBufferMapCallback2", "status", "msg")
        if got.get("status") != webgpu.WGPUBufferMapAsyncStatus_Success:
            self._check()
            raise RuntimeError(f"dawn: mapping the read-back buffer failed: {got.get('msg', '')}")
        try:
            ptr = webgpu.wgpuBufferGetConstMappedRange(st, 0, int(size))
            out = bytearray(size)
            ctypes.memmove((ctypes.c_char * size).from_buffer(out), ptr, size)
        finally:
            webgpu.wgpuBufferUnmap(st)
        self._check()
        return memoryview(out)

    # ------------------------------------------------------------------ pipelines
    def validate(self, source: str, label: str = "") -> None:
        self._w.wgpuShaderModuleRelease(shader_module(self.device, source, label or "a kernel"))

    def compile(self, source: str, label: str = "") -> Pipeline:
        return compute_pipeline(self.device, source, label or "a kernel")

    # ------------------------------------------------------------------ commands
    def _write_uniforms(self, blobs: list[bytes]) -> list[int]:
        """Every params block into the one recycled uniform buffer (written before the submit)."""
        offs, stage = pack_uniforms(blobs, self.limits.min_uniform_offset_alignment)
        if self._uniform is None or len(stage) > self._uniform.size:
            self._free(self._uniform)
            self._uniform = self._new_buffer(
                buffer_capacity(len(stage), 4096),
                self._w.WGPUBufferUsage_Uniform | self._w.WGPUBufferUsage_CopyDst, "params")
        self.write(self._uniform, stage)
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
        offs = self._write_uniforms(blobs) if blobs else []
        us = uniform_keys(self._uniform, offs, blobs)
        groups = self._groups
        groups.drain()
        enc = webgpu.wgpuDeviceCreateCommandEncoder(self.device, webgpu.WGPUCommandEncoderDescriptor())
        ui = 0
        cpass = pipe = None  # consecutive dispatches share one compute pass (WebGPU orders them)
        try:
            for cmd in commands:
                if type(cmd) is Copy:
                    if cpass is not None:
                        cpass = self._end_pass(cpass)
                        pipe = None
                    webgpu.wgpuCommandEncoderCopyBufferToBuffer(
                        enc, cmd.src.handle, int(cmd.src_offset), cmd.dst.handle, int(cmd.dst_offset),
                        int(cmd.size))
                    continue
                if cmd.params is None:  # the bind group: cached (.bindgroups)
                    bg = lookup(groups, cmd, None)
                else:
                    bg = lookup(groups, cmd, us[ui])
                    ui += 1
                if cpass is None:
                    cpass = webgpu.wgpuCommandEncoderBeginComputePass(
                        enc, webgpu.WGPUComputePassDescriptor())
                if cmd.pipeline is not pipe:
                    webgpu.wgpuComputePassEncoderSetPipeline(cpass, cmd.pipeline.handle)
                    pipe = cmd.pipeline
                webgpu.wgpuComputePassEncoderSetBindGroup(cpass, 0, bg, 0, None)
                gx, gy, gz = (int(g) for g in cmd.groups)
                webgpu.wgpuComputePassEncoderDispatchWorkgroups(cpass, gx, gy, gz)
            cpass = self._end_pass(cpass) if cpass is not None else None
            self._finish_submit(enc)
        finally:
            groups.done()
        self._tick()
        self._check()

    def _end_pass(self, cpass) -> None:
        self._w.wgpuComputePassEncoderEnd(cpass)
        self._w.wgpuComputePassEncoderRelease(cpass)
        return None

    def sync(self) -> None:
        webgpu = self._w
        got = call(lambda cb: webgpu.wgpuQueueOnSubmittedWorkDone2(self.queue, cb),
                   "WGPUQueueWorkDoneCallbackInfo2", "WGPUQueueWorkDoneCallback2", "status")
        self._check()
        if got.get("status") != webgpu.WGPUQueueWorkDoneStatus_Success:
            raise RuntimeError(f"dawn: submitted work failed (status {got.get('status')})")

    def close(self) -> None:
        self._free(self._uniform)
        self._free(self._staging)
        self._uniform = self._staging = None
        self._groups.clear()


def create() -> DawnRuntime:
    return DawnRuntime()


__all__ = ["DawnRuntime", "create", "list_adapters", "probe"]
