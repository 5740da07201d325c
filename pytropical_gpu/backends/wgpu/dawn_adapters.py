"""Dawn's C API through pydawn, below :mod:`.runtime_dawn`: the library, one helper for its
callback-and-wait calls, and the adapters (what ``probe`` and ``list_adapters`` report).

Dawn's C API has no "enumerate adapters": :func:`adapters` asks for a high-performance, a low-power
and a fallback adapter and keeps the distinct ones. On Linux software Vulkan, Dawn needs Mesa >= 25
(it rejects older lavapipe drivers), see ``.ci/run``.
"""

from __future__ import annotations

import ctypes
import threading

from .adapters import choose_adapter
from .runtime import AdapterInfo

_U64_MAX = 2**64 - 1
_lock = threading.Lock()


def dawn():
    """(webgpu, utils) from pydawn; importing utils creates the process-wide instance."""
    from pydawn import utils, webgpu

    return webgpu, utils


def version() -> str:
    try:
        from importlib.metadata import version as dist_version

        return dist_version("dawn-python")
    except Exception:  # noqa: BLE001
        return "?"


def text(view) -> str:
    """A Python str from a WGPUStringView."""
    if not view.data or not view.length:
        return ""
    n = view.length if view.length < (1 << 63) else -1  # WGPU_STRLEN: NUL-terminated
    raw = ctypes.string_at(view.data, n) if n >= 0 else ctypes.string_at(view.data)
    return raw.decode("utf-8", "replace")


def enum_name(table: dict, value: int, prefix: str) -> str:
    return table.get(int(value), f"{prefix}{int(value)}").split("_", 1)[-1]


def call(start, info_type: str, callback_type: str, *fields: str) -> dict:
    """Run one asynchronous Dawn call to completion and return its callback's arguments.

    ``start(cb_info)`` issues the call and returns its future; ``info_type``/``callback_type`` name
    the pydawn callback-info struct and callback type; ``fields`` name the callback's leading
    arguments (the trailing user-data pointers are dropped; a ``"msg"`` string view becomes a str)."""
    webgpu, utils = dawn()
    result: dict = {}

    def cb(*args):
        for name, value in zip(fields, args):
            result[name] = text(value) if name == "msg" else value

    cb_info = getattr(webgpu, info_type)()
    cb_info.mode = webgpu.WGPUCallbackMode_WaitAnyOnly
    cb_info.callback = getattr(webgpu, callback_type)(cb)
    wait = webgpu.WGPUFutureWaitInfo()
    wait.future = start(cb_info)
    status = webgpu.wgpuInstanceWaitAny(utils.instance, 1, wait, _U64_MAX)
    if status != webgpu.WGPUWaitStatus_Success:
        raise RuntimeError(f"dawn: waiting for a future failed (status {status})")
    return result


def _request_adapter(power: int, fallback: bool = False):
    """One adapter for these options, or None."""
    webgpu, utils = dawn()
    opts = webgpu.WGPURequestAdapterOptions()
    opts.powerPreference = power
    opts.backendType = 0
    opts.forceFallbackAdapter = int(fallback)
    got = call(lambda cb: webgpu.wgpuInstanceRequestAdapterF(utils.instance, opts, cb),
               "WGPURequestAdapterCallbackInfo", "WGPURequestAdapterCallback",
               "status", "adapter", "msg")
    if got.get("status") != webgpu.WGPURequestAdapterStatus_Success or not got.get("adapter"):
        return None
    return got["adapter"]


def info(adapter) -> AdapterInfo:
    webgpu, _ = dawn()
    raw = webgpu.WGPUAdapterInfo()
    webgpu.wgpuAdapterGetInfo(adapter, raw)
    try:
        extra = {"vendor": text(raw.vendor), "architecture": text(raw.architecture),
                 "device": text(raw.device), "description": text(raw.description),
                 "vendor_id": int(raw.vendorID), "device_id": int(raw.deviceID),
                 "backend_type": enum_name(webgpu.WGPUBackendType__enumvalues, raw.backendType,
                                           "Backend"),
                 "adapter_type": enum_name(webgpu.WGPUAdapterType__enumvalues, raw.adapterType,
                                           "Type"),
                 "runtime": f"dawn-python {version()}"}
    finally:
        webgpu.wgpuAdapterInfoFreeMembers(raw)
    # Dawn reports no fallback flag: its fallback adapter is the CPU one (AdapterInfo.software)
    return AdapterInfo(name=extra["device"], vendor=extra["vendor"], backend=extra["backend_type"],
                       adapter_type=extra["adapter_type"], is_fallback=False,
                       description=extra["description"], extra=extra)


def adapters() -> list:
    """Distinct adapters Dawn hands out: high-performance, low-power and fallback requests."""
    webgpu, _ = dawn()
    seen, out = set(), []
    tries = [(webgpu.WGPUPowerPreference_HighPerformance, False),
             (webgpu.WGPUPowerPreference_LowPower, False),
             (webgpu.WGPUPowerPreference_Undefined, True)]
    with _lock:
        for power, fallback in tries:
            a = _request_adapter(power, fallback=fallback)
            if a is None:
                continue
            inf = info(a)
            key = (inf.name, inf.backend, inf.extra.get("vendor_id"), inf.extra.get("device_id"))
            if key in seen:
                webgpu.wgpuAdapterRelease(a)
                continue
            seen.add(key)
            out.append(a)
    return out


def release_adapters(found, keep=None) -> None:
    webgpu, _ = dawn()
    for a in found:
        if a is not keep:
            webgpu.wgpuAdapterRelease(a)


def list_adapters() -> list[AdapterInfo]:
    found = adapters()
    try:
        return [info(a) for a in found]
    finally:
        release_adapters(found)


def probe() -> tuple[bool, str]:
    try:
        dawn()
    except ImportError as e:
        return False, f"pydawn is not installed ({e}); pip install 'pytropical_gpu[dawn]'"
    except OSError as e:  # the bundled libwebgpu_dawn failed to load
        return False, f"dawn-python {version()}: libwebgpu_dawn failed to load: {e}"
    try:
        found = adapters()
    except Exception as e:  # noqa: BLE001
        return False, f"dawn-python {version()}: adapter request failed: {e}"
    if not found:
        return False, (f"dawn-python {version()}: no WebGPU adapter (no Vulkan/Metal/D3D12 driver; "
                       "on software Vulkan Dawn needs Mesa >= 25)")
    adapter, why = choose_adapter(found, info)
    best = None if adapter is None else info(adapter)
    release_adapters(found)
    if best is None:
        return False, f"dawn-python {version()}: {why}"
    kind = "software" if best.software else best.adapter_type
    return True, f"dawn-python {version()}: {best.name} ({best.backend}, {kind})"


__all__ = ["adapters", "call", "dawn", "enum_name", "info", "list_adapters", "probe",
           "release_adapters", "text", "version"]
