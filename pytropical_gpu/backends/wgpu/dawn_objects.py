"""Dawn objects the runtime owns (buffers, compute pipelines; released when collected) and how a
pipeline is built from WGSL: Tint parses and validates in :func:`shader_module`, and
:func:`compute_pipeline` binds the explicit group-0 layout the shader declares."""

from __future__ import annotations

import ctypes

from .dawn_adapters import dawn
from .runtime import binding_kinds


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


class Buffer:
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


class Pipeline:
    """A compute pipeline and its group-0 bind group layout (released when collected)."""

    __slots__ = ("handle", "layout", "label", "__weakref__")

    def __init__(self, handle, layout, label: str):
        self.handle, self.layout, self.label = handle, layout, label

    def __del__(self, _release=_release):
        if self.handle:
            _release("wgpuBindGroupLayoutRelease", self.layout)
            _release("wgpuComputePipelineRelease", self.handle)
            self.handle = self.layout = None



def shader_module(device, source: str, what: str):
    """A shader module (Tint parses, resolves and validates here), or RuntimeError."""
    webgpu, utils = dawn()
    code = source.encode("utf-8")
    code_buf = ctypes.create_string_buffer(code)
    wgsl = webgpu.WGPUShaderModuleWGSLDescriptor()
    wgsl.chain.sType = webgpu.WGPUSType_ShaderSourceWGSL
    wgsl.code.data = ctypes.cast(code_buf, ctypes.POINTER(ctypes.c_char))
    wgsl.code.length = len(code)
    mdesc = webgpu.WGPUShaderModuleDescriptor()
    mdesc.nextInChain = ctypes.cast(ctypes.pointer(wgsl), ctypes.POINTER(webgpu.struct_WGPUChainedStruct))
    webgpu.wgpuDevicePushErrorScope(device, webgpu.WGPUErrorFilter_Validation)
    module = webgpu.wgpuDeviceCreateShaderModule(device, mdesc)
    err = utils.pop_error(device)
    if err:
        if module:
            webgpu.wgpuShaderModuleRelease(module)
        raise RuntimeError(f"WGSL compilation of {what} failed (Tint): {err.strip()}")
    return module

def compute_pipeline(device, source: str, what: str) -> Pipeline:
    """A compute pipeline (entry point ``main``) with the explicit group-0 layout, or RuntimeError."""
    webgpu, utils = dawn()
    module = shader_module(device, source, what)
    entry = b"main"
    entry_buf = ctypes.create_string_buffer(entry)
    pdesc = webgpu.WGPUComputePipelineDescriptor()
    pdesc.compute.module = module
    pdesc.compute.entryPoint.data = ctypes.cast(entry_buf, ctypes.POINTER(ctypes.c_char))
    pdesc.compute.entryPoint.length = len(entry)
    webgpu.wgpuDevicePushErrorScope(device, webgpu.WGPUErrorFilter_Validation)
    # explicit layout from the declarations: "auto" drops bindings the compiler found unused,
    # and then a bind group naming every declared buffer would not match it
    bgl, playout = _layout(device, source)
    pdesc.layout = playout  # None: "auto", the layout comes from the shader
    pipe = webgpu.wgpuDeviceCreateComputePipeline(device, pdesc)
    err = utils.pop_error(device)
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
    return Pipeline(pipe, bgl, what)

def _layout(device, source: str):
    """(bind group layout, pipeline layout) for the shader's group-0 declarations, or (None,
    None) when it declares none in the recognised form (then Dawn derives the layout)."""
    webgpu, _ = dawn()
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
    bgl = webgpu.wgpuDeviceCreateBindGroupLayout(device, desc)
    pdesc = webgpu.WGPUPipelineLayoutDescriptor()
    layouts = (webgpu.WGPUBindGroupLayout * 1)(bgl)
    pdesc.bindGroupLayoutCount = 1
    pdesc.bindGroupLayouts = layouts
    return bgl, webgpu.wgpuDeviceCreatePipelineLayout(device, pdesc)


__all__ = ["Buffer", "Pipeline", "compute_pipeline", "shader_module"]
