"""What ``python -m pytropical_gpu info`` reports, as plain JSON-able data (the CLI renders it).

The pattern of wgpu-py's ``_diagnostics``: a dict first (versions, the WebGPU runtimes with their
adapters, CUDA devices, each backend's probe and a known-answer check), text second
(:func:`pytropical_gpu.cli.info_text`). The known-answer check runs the hand-computed problems of
:mod:`pytropical_gpu.known_answers` (the same GEMM table the wgpu backend checks every adapter
with) through each available backend's public methods. Nothing here prints.
"""

from __future__ import annotations

import importlib
import os
import platform
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import known_answers as ka


def _version(module: str) -> str | None:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    except Exception as e:  # a broken install (e.g. cupy without a CUDA runtime)
        return f"import failed: {type(e).__name__}: {e}"
    return str(getattr(mod, "__version__", "unknown"))


def versions() -> dict[str, str | None]:
    """Versions of python and the libraries we use (None: not installed)."""
    from . import __version__

    return {"pytropical_gpu": __version__, "python": platform.python_version(),
            "platform": platform.platform(), "numpy": np.__version__, "wgpu": _version("wgpu"),
            "dawn-python": _dist_version("dawn-python"), "cupy": _version("cupy"),
            "jinja2": _version("jinja2")}


def _dist_version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def webgpu() -> dict[str, Any]:
    """The wgpu backend's WebGPU runtimes (wgpu-py with naga, Dawn with Tint; the one
    ``PYTROPICAL_WEBGPU`` selects is marked), each with its probe and every adapter it sees, each
    adapter once: ``{"implementation", "runtimes": {name: {"selected", "ok", "reason",
    "adapters": [...]}}}`` or ``{"error": ...}``."""
    try:
        from .backends.wgpu import adapters, runtime
    except ImportError as e:
        return {"error": f"{type(e).__name__}: {e}"}
    try:
        selected = runtime.implementation()
    except ValueError as e:
        return {"error": str(e)}
    out: dict[str, Any] = {"implementation": selected, "runtimes": {}}
    for name in runtime.RUNTIMES:
        try:
            ok, reason = runtime.probe_runtime(name)
        except Exception as e:  # noqa: BLE001 - a broken driver is a reason, not a crash
            ok, reason = False, f"{type(e).__name__}: {e}"
        found = runtime.list_adapters(name)  # refused ones too: info says why
        out["runtimes"][name] = {
            "selected": name == selected, "ok": ok, "reason": reason,
            "adapters": [{"device": a.name, "vendor": a.vendor, "description": a.description,
                          "backend_type": a.backend, "adapter_type": a.adapter_type,
                          "is_fallback_adapter": a.is_fallback, "software": a.software,
                          "refused": adapters.refusal(a)} for a in found]}
    return out


def cuda_devices() -> dict[str, Any]:
    """CuPy's view of the CUDA devices, or why it has none."""
    try:
        import cupy
    except ImportError:
        return {"error": "cupy is not installed; pip install 'pytropical_gpu[cuda12]' (or [cuda13])"}
    except Exception as e:
        return {"error": f"import cupy failed: {type(e).__name__}: {e}"}
    try:
        out = []
        for i in range(cupy.cuda.runtime.getDeviceCount()):
            p = cupy.cuda.runtime.getDeviceProperties(i)
            name = p.get("name", b"")
            out.append({"id": i, "name": name.decode() if isinstance(name, bytes) else str(name),
                        "compute_capability": f"{p.get('major')}.{p.get('minor')}",
                        "memory_gib": round(p.get("totalGlobalMem", 0) / 2**30, 1)})
        return {"devices": out, "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion()}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}


# ---------------------------------------------------------------------------- known answers
def _host(x):
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else x


def _expect(what: str, got, want) -> None:
    got = np.asarray(_host(got))
    if got.shape != np.shape(want) or not np.array_equal(got, want):
        raise AssertionError(f"{what}: got {got.tolist()}, expected {np.asarray(want).tolist()}")


def _gemm_case(semiring: str, a, b, want) -> Callable[[Any], None]:
    def case(be) -> None:
        _expect(f"{semiring} {a.shape[0]}x{a.shape[1]}x{b.shape[1]}", be.matmul(a, b, semiring), want)
    return case


def _andor(be) -> None:
    a, b, want = ka.ANDOR
    _expect("andor 2x2", be.andor_matmul(a, b), want)


def _bind(be) -> None:
    from .vsa import TernaryVec

    u, v = (TernaryVec.from_array(t) for t in ka.TRITS)
    r = be.bind(u, v)
    _expect("bind", TernaryVec(np.asarray(_host(r.pos)), np.asarray(_host(r.neg)), r.dim).to_array(),
            ka.BIND)


def _dot(be) -> None:
    from .vsa import TernaryVec

    got = be.dot(*(TernaryVec.from_array(t) for t in ka.TRITS))
    if got != ka.DOT:
        raise AssertionError(f"dot: got {got}, expected {ka.DOT}")


#: name -> check on a backend (raises on a wrong answer): the GEMM table, packed boolean, VSA
KNOWN_ANSWERS: dict[str, Callable[[Any], None]] = {
    **{name: _gemm_case(sr, a, b, want) for name, sr, a, b, want in ka.GEMM},
    "andor": _andor, "bind": _bind, "dot": _dot,
}


def known_answers(be) -> dict[str, str]:
    """Run every :data:`KNOWN_ANSWERS` case on ``be``: name -> "PASS" or "FAIL: reason"."""
    out = {}
    for name, fn in KNOWN_ANSWERS.items():
        try:
            fn(be)
            out[name] = "PASS"
        except Exception as e:
            out[name] = f"FAIL: {type(e).__name__}: {e}"
    return out


def check_backend(name: str) -> dict[str, Any]:
    """Probe a backend and, if it is available, run the known-answer check on it."""
    from .backends import get_backend, probe

    ok, reason = probe(name)  # wgpu: the adapter is opened and its own check run here
    res: dict[str, Any] = {"ok": ok, "reason": reason}
    if not ok:
        res["check"] = {"status": "SKIP", "reason": reason}
        return res
    t0 = time.perf_counter()
    try:
        be = get_backend(name)
        try:
            res["describe"] = be.describe()
        except Exception as e:  # describe is informational only
            res["describe"] = {"error": f"{type(e).__name__}: {e}"}
        cases = known_answers(be)
        failed = {k: v for k, v in cases.items() if v != "PASS"}
        if failed:
            res["check"] = {"status": "FAIL", "reason": "; ".join(f"{k} {v}" for k, v in failed.items())}
        else:
            res["check"] = {"status": "PASS", "reason": ", ".join(cases)}
        res["check"]["cases"] = cases
    except Exception as e:
        res["check"] = {"status": "FAIL", "reason": f"{type(e).__name__}: {e}"}
    res["check"]["seconds"] = round(time.perf_counter() - t0, 4)
    return res


def info_dict(backends: Sequence[str] | None = None) -> dict[str, Any]:
    """Everything ``info`` reports, as plain JSON-able data."""
    from .backends import BACKENDS

    d: dict[str, Any] = {"versions": versions(), "wgpu": webgpu(), "cuda": cuda_devices()}
    d["backends"] = {n: check_backend(n) for n in (backends or BACKENDS)}
    try:
        from .hybrid import HybridContext

        d["auto_gpu"] = HybridContext().gpu
    except Exception as e:
        d["auto_gpu"] = f"error: {type(e).__name__}: {e}"
    d["env"] = {k: v for k, v in os.environ.items() if k.startswith("PYTROPICAL_")}
    return d


__all__ = ["KNOWN_ANSWERS", "check_backend", "cuda_devices", "info_dict", "known_answers",
           "versions", "webgpu"]
