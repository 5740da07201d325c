"""Command line: ``python -m pytropical_gpu info`` and ``python -m pytropical_gpu bench``.

``info`` builds one dict (versions, wgpu adapters, CUDA devices, each backend's probe and a tiny
known-answer check) and then renders it as text, or prints it as JSON with ``--json`` (the pattern of
wgpu-py's ``_diagnostics``). ``bench`` runs the benchmark modules in the repository's
``benchmarks/`` folder (not shipped in the wheel): ``cpu`` always, ``bench_wgpu`` / ``bench_cuda``
when present and the backend is available.

Only this module prints; the library logs through ``logging.getLogger("pytropical_gpu")``.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import platform
import sys
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: Benchmark module per backend, inside ``benchmarks/``.
BENCH_MODULES = {"cpu": "cpu", "wgpu": "bench_wgpu", "cuda": "bench_cuda"}


# ---------------------------------------------------------------------------- info: the dict
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
            "cupy": _version("cupy"), "jinja2": _version("jinja2")}


def wgpu_adapters() -> dict[str, Any]:
    """Every adapter ``wgpu.gpu.enumerate_adapters_sync()`` reports, or the reason there are none."""
    try:
        import wgpu  # noqa: F401 - is it installed?
    except ImportError as e:
        return {"error": f"wgpu is not installed ({e}); pip install wgpu"}
    from .backends.wgpu.runtime_wgpupy import _adapters, _info

    try:
        adapters = _adapters()  # the backend's own enumeration: GL adapters are never released
    except Exception as e:
        return {"error": f"enumerate_adapters_sync failed: {type(e).__name__}: {e}"}

    out = []
    for a in adapters:
        info = dict(a.info)
        fallback = bool(info.get("is_fallback_adapter", getattr(a, "is_fallback_adapter", False)))
        out.append({
            "device": info.get("device", ""), "vendor": info.get("vendor", ""),
            "description": info.get("description", ""), "backend_type": info.get("backend_type", ""),
            "adapter_type": info.get("adapter_type", ""), "is_fallback_adapter": fallback,
            "software": fallback or str(info.get("adapter_type", "")).upper() == "CPU",
            "refused": _refusal(_info(a)),
        })
    return {"adapters": out}


def _refusal(adapter_info) -> str | None:
    """Why the wgpu backend never opens this adapter (null/placeholder, OpenGL), or None."""
    from .backends.wgpu.adapters import refusal

    return refusal(adapter_info)


def webgpu_runtime() -> dict[str, Any]:
    """The WebGPU implementation the wgpu backend uses (``PYTROPICAL_WEBGPU``) and every
    implementation's probe and adapters (wgpu-py with naga, Dawn with Tint)."""
    try:
        from .backends.wgpu import runtime
    except ImportError as e:
        return {"error": f"{type(e).__name__}: {e}"}
    try:
        name = runtime.implementation()
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}
    out: dict[str, Any] = {"implementation": name, "runtimes": {}}
    for rname, r in runtime.survey().items():
        out["runtimes"][rname] = {
            "selected": r["selected"], "ok": r["ok"], "reason": r["reason"],
            "adapters": [{"device": a.name, "vendor": a.vendor, "backend_type": a.backend,
                          "adapter_type": a.adapter_type, "is_fallback_adapter": a.is_fallback,
                          "software": a.software, "refused": _refusal(a)} for a in r["adapters"]]}
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
        n = cupy.cuda.runtime.getDeviceCount()
        out = []
        for i in range(n):
            p = cupy.cuda.runtime.getDeviceProperties(i)
            name = p.get("name", b"")
            out.append({"id": i, "name": name.decode() if isinstance(name, bytes) else str(name),
                        "compute_capability": f"{p.get('major')}.{p.get('minor')}",
                        "memory_gib": round(p.get("totalGlobalMem", 0) / 2**30, 1)})
        return {"devices": out, "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion()}
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}


def _ka_min_plus(be):
    inf = np.inf
    a = np.array([[0, 1], [2, inf]], np.float32)
    b = np.array([[0, 3], [1, 0]], np.float32)
    _expect("min_plus 2x2", be.matmul(a, b, "min_plus"), np.array([[0, 1], [2, 5]], np.float32))


def _ka_max_plus(be):
    a = np.array([[1, 2], [3, 4]], np.int32)
    _expect("max_plus 2x2 int32", be.matmul(a, a, "max_plus"), np.array([[5, 6], [7, 8]], np.int32))


def _ka_andor(be):
    x = np.array([[True, False], [False, False]])
    y = np.array([[False, True], [True, False]])
    _expect("andor 2x2", be.andor_matmul(x, y), np.array([[False, True], [False, False]]))


def _trits():
    from .vsa import TernaryVec

    return (TernaryVec.from_array(np.array([1, -1, 0, 1, -1], np.int8)),
            TernaryVec.from_array(np.array([1, 1, -1, -1, 0], np.int8)))


def _ka_bind(be):
    from .vsa import TernaryVec

    u, v = _trits()
    r = be.bind(u, v)
    host = TernaryVec(np.asarray(_host(r.pos)), np.asarray(_host(r.neg)), r.dim)
    _expect("bind", host.to_array(), np.array([1, -1, 0, -1, 0], np.int8))


def _ka_dot(be):
    u, v = _trits()
    got = be.dot(u, v)
    if got != -1:
        raise AssertionError(f"dot: got {got}, expected -1")


#: Tiny problems with hand-computed answers, run on every available backend by ``info``.
KNOWN_ANSWERS: dict[str, Callable[[Any], None]] = {
    "min_plus": _ka_min_plus, "max_plus": _ka_max_plus, "andor": _ka_andor, "bind": _ka_bind,
    "dot": _ka_dot,
}


def _known_answers(be) -> dict[str, str]:
    """Run every :data:`KNOWN_ANSWERS` case on ``be``: name -> "PASS" or "FAIL: reason"."""
    out = {}
    for name, fn in KNOWN_ANSWERS.items():
        try:
            fn(be)
            out[name] = "PASS"
        except Exception as e:
            out[name] = f"FAIL: {type(e).__name__}: {e}"
    return out


def _host(x):
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else x


def _expect(what: str, got: np.ndarray, want: np.ndarray) -> None:
    got = np.asarray(_host(got))
    if got.shape != want.shape or not np.array_equal(got, want):
        raise AssertionError(f"{what}: got {got.tolist()}, expected {want.tolist()}")


def check_backend(name: str) -> dict[str, Any]:
    """Probe a backend and, if it is available, run the known-answer check on it."""
    from .backends import get_backend, probe

    ok, reason = probe(name)  # wgpu: the adapter is opened and its known-answer check run here
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
        cases = _known_answers(be)
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

    d: dict[str, Any] = {"versions": versions(), "wgpu": wgpu_adapters(), "cuda": cuda_devices()}
    d["webgpu_runtime"] = webgpu_runtime()
    d["backends"] = {n: check_backend(n) for n in (backends or BACKENDS)}
    try:
        from .hybrid import HybridContext

        d["auto_gpu"] = HybridContext().gpu
    except Exception as e:
        d["auto_gpu"] = f"error: {type(e).__name__}: {e}"
    d["env"] = {k: v for k, v in os.environ.items() if k.startswith("PYTROPICAL_")}
    return d


# ---------------------------------------------------------------------------- info: the text
def info_text(d: dict[str, Any]) -> str:
    """Render :func:`info_dict`'s result as text."""
    lines = ["pytropical_gpu info", "", "versions"]
    for k, v in d["versions"].items():
        lines.append(f"  {k:<15} {v if v is not None else 'not installed'}")
    lines += ["", "wgpu adapters"]
    if "error" in d["wgpu"]:
        lines.append(f"  none: {d['wgpu']['error']}")
    elif not d["wgpu"]["adapters"]:
        lines.append("  none found")
    for i, a in enumerate(d["wgpu"].get("adapters", [])):
        soft = "software (never chosen by auto)" if a["software"] else "hardware"
        lines.append(f"  [{i}] {a['device']}  backend={a['backend_type']}  type={a['adapter_type']}  "
                     f"{soft}{'  REFUSED' if a.get('refused') else ''}")
    rt = d.get("webgpu_runtime", {})
    if rt.get("implementation") or rt.get("error"):
        lines += ["", "WebGPU runtimes of the wgpu backend (PYTROPICAL_WEBGPU=wgpu|dawn)"]
    if rt.get("error"):
        lines.append(f"  error: {rt['error']}")
    compilers = {"wgpu": "wgpu-py, naga", "dawn": "Dawn via pydawn, Tint"}
    for rname, r in rt.get("runtimes", {}).items():
        mark = "*" if r["selected"] else " "
        state = "ok" if r["ok"] else "unavailable"
        lines.append(f" {mark}{rname} ({compilers.get(rname, rname)}): {state}: {r['reason']}")
        for i, a in enumerate(r["adapters"]):
            soft = "software" if a["software"] else "hardware"
            lines.append(f"    {rname}[{i}] {a['device']}  backend={a['backend_type']}  "
                         f"type={a['adapter_type']}  {soft}{'  REFUSED' if a.get('refused') else ''}")
    lines += ["", "cuda devices (cupy)"]
    if "error" in d["cuda"]:
        lines.append(f"  none: {d['cuda']['error']}")
    elif not d["cuda"]["devices"]:
        lines.append("  none found")
    for c in d["cuda"].get("devices", []):
        lines.append(f"  [{c['id']}] {c['name']}  sm {c['compute_capability']}  {c['memory_gib']} GiB")
    lines += ["", "backends (probe, known-answer check)"]
    for name, b in d["backends"].items():
        chk = b["check"]
        if not b["ok"]:
            lines.append(f"  {name:<5} unavailable  {b['reason']}")
            continue
        secs = f" ({chk.get('seconds', 0) * 1e3:.1f} ms)" if "seconds" in chk else ""
        if "cases" in chk and chk["status"] == "FAIL":
            npass = sum(v == "PASS" for v in chk["cases"].values())
            lines.append(f"  {name:<5} {'FAIL':<12} {npass}/{len(chk['cases'])} cases pass{secs}")
            for case, v in chk["cases"].items():
                lines.append(f"  {'':<5} {'':<12} {case}: {_first_line(v, 200)}")
        else:
            lines.append(f"  {name:<5} {chk['status']:<12} {_first_line(chk['reason'], 300)}{secs}")
        lines.append(f"  {'':<5} {'':<12} probe: {b['reason']}")
        desc = b.get("describe") or {}
        if "flushes_subnormals" in desc:
            kind = "software" if desc.get("software") else "hardware"
            sub = ("FLUSHED to zero: float calls that could meet subnormals raise "
                   "SubnormalFlushError, auto sends them to an exact backend"
                   if desc["flushes_subnormals"] else "kept (exact)")
            lines.append(f"  {'':<5} {'':<12} adapter: {desc.get('device')} ({desc.get('backend')}, "
                         f"{kind}); subnormals {sub}")
    lines += ["", f"auto picks GPU backend: {d.get('auto_gpu') or 'none (cpu only)'}"]
    if d.get("env"):
        lines.append("environment: " + ", ".join(f"{k}={v}" for k, v in d["env"].items()))
    return "\n".join(lines)


def _first_line(text: str, width: int) -> str:
    """One line of ``text`` for the table (the full text is in ``--json``)."""
    parts = [p.strip() for p in str(text).splitlines() if p.strip()]
    line = parts[0] if parts else ""
    if len(parts) > 1:
        line += " ..."
    return line if len(line) <= width else line[: width - 3] + "..."


def cmd_info(args: argparse.Namespace) -> int:
    d = info_dict(args.backend)
    print(json.dumps(d, indent=2, default=str) if args.json else info_text(d))
    return 1 if any(b["check"]["status"] == "FAIL" for b in d["backends"].values()) else 0


# ---------------------------------------------------------------------------- bench
def find_benchmarks(explicit: str | None = None) -> Path | None:
    """The ``benchmarks/`` folder: ``--benchmarks-dir``, ``$PYTROPICAL_BENCHMARKS``, else the repo's."""
    cands = [explicit, os.environ.get("PYTROPICAL_BENCHMARKS"),
             Path(__file__).resolve().parent.parent / "benchmarks", Path.cwd() / "benchmarks"]
    for c in cands:
        if c and (Path(c) / "_harness.py").is_file():
            return Path(c).resolve()
    return None


def _import_bench(folder: Path, module: str):
    """Import ``benchmarks.<module>`` from ``folder`` (as a package, so relative imports work),
    whatever the folder is called and whatever else named ``benchmarks`` is importable."""
    pkg = sys.modules.get("benchmarks")
    if pkg is None or list(getattr(pkg, "__path__", [])) != [str(folder)]:
        for k in [k for k in sys.modules if k == "benchmarks" or k.startswith("benchmarks.")]:
            del sys.modules[k]
        pkg = types.ModuleType("benchmarks", "pytropical_gpu benchmark scripts")
        pkg.__path__ = [str(folder)]
        sys.modules["benchmarks"] = pkg
    return importlib.import_module(f"benchmarks.{module}")


def _call_run(mod, quick: bool, progress: Callable[[str], None]):
    params = inspect.signature(mod.run).parameters
    kw: dict[str, Any] = {}
    if "quick" in params:
        kw["quick"] = quick
    if "progress" in params:
        kw["progress"] = progress
    return mod.run(**kw)


def _wgpu_hardware() -> bool:
    try:
        from .backends.wgpu import hardware_available
    except ImportError:
        return False
    try:
        return bool(hardware_available()[0])
    except Exception:
        return False


def _json_path_problem(path: str) -> str | None:
    """Why ``--json PATH`` cannot be written (checked before the benchmarks run), or None."""
    p = Path(path)
    if p.is_dir():
        return f"{path} is a directory"
    parent = next((q for q in p.parents if q.exists()), None)
    if parent is not None and not parent.is_dir():
        return f"{parent} is not a directory"
    return None


def cmd_bench(args: argparse.Namespace) -> int:
    from .backends import BACKENDS, probe

    bad = _json_path_problem(args.json) if args.json else None
    if bad:
        print(f"pytropical_gpu bench: cannot write --json {args.json}: {bad}", file=sys.stderr)
        return 2
    folder = find_benchmarks(args.benchmarks_dir)
    if folder is None:
        print("pytropical_gpu bench: the benchmarks/ folder was not found. It is part of the source "
              "repository, not of the installed wheel: run this from a git checkout, or pass "
              "--benchmarks-dir PATH (or set PYTROPICAL_BENCHMARKS).", file=sys.stderr)
        return 2
    h = _import_bench(folder, "_harness")
    wanted = [args.backend] if args.backend else list(BACKENDS)
    rows: list[Any] = []
    status = 0
    for name in wanted:
        ok, reason = probe(name)
        if not ok:
            msg = f"[bench] {name}: skipped, backend unavailable: {reason}"
            print(msg, file=sys.stderr)
            if args.backend:
                status = 2
            continue
        if name == "wgpu" and not args.backend and not _wgpu_hardware():
            print("[bench] wgpu: only a software adapter (llvmpipe/lavapipe); pass --backend wgpu to "
                  "benchmark it anyway", file=sys.stderr)
            continue
        modname = BENCH_MODULES[name]
        if not (folder / f"{modname}.py").is_file():
            print(f"[bench] {name}: no benchmarks/{modname}.py yet, skipped", file=sys.stderr)
            continue
        mod = _import_bench(folder, modname)
        progress = h.stderr_progress(f"bench {name}")
        progress(f"start ({'quick' if args.quick else 'full'})")
        t0 = time.perf_counter()
        try:
            if hasattr(mod, "run"):
                got = _call_run(mod, args.quick, progress)
                rows += list(got or [])
            else:  # a script with main(argv) only: let it print its own table
                rc = mod.main(["--quick"] if args.quick else [])
                status = max(status, int(rc or 0))
        except h.CheckFailed as e:
            print(f"[bench] {name}: correctness check FAILED: {e}", file=sys.stderr)
            status = 1
        except Exception as e:
            print(f"[bench] {name}: error: {type(e).__name__}: {e}", file=sys.stderr)
            status = 1
        progress(f"done in {time.perf_counter() - t0:.1f} s")
    if rows:
        print(h.format_table(rows))
    if args.json:
        devices = sorted({str(r.device if hasattr(r, "device") else r.get("device", "")) for r in rows})
        try:
            path = h.write_json(args.json, rows, ", ".join(devices), quick=args.quick)
        except OSError as e:
            print(f"pytropical_gpu bench: cannot write --json {args.json}: {e}", file=sys.stderr)
            return 1
        print(f"wrote {path}")
    return status


# ---------------------------------------------------------------------------- entry point
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pytropical_gpu",
                                description="pytropical_gpu diagnostics and benchmarks")
    sub = p.add_subparsers(dest="cmd", required=True)
    pi = sub.add_parser("info", help="versions, adapters, backends and a known-answer check per backend")
    pi.add_argument("--json", action="store_true", help="print the report as JSON")
    pi.add_argument("--backend", action="append", choices=("cpu", "wgpu", "cuda"),
                    help="only these backends (repeatable; default: all)")
    pi.set_defaults(func=cmd_info)
    pb = sub.add_parser("bench", help="run the benchmark suite and print a table")
    pb.add_argument("--backend", choices=("cpu", "wgpu", "cuda"),
                    help="only this backend (default: every available one)")
    pb.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    pb.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    pb.add_argument("--benchmarks-dir", metavar="DIR", help="the repository's benchmarks/ folder")
    pb.set_defaults(func=cmd_bench)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
