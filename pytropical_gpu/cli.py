"""Command line: ``python -m pytropical_gpu info`` and ``python -m pytropical_gpu bench``.

``info`` renders :func:`pytropical_gpu.diagnostics.info_dict` as text, or prints it as JSON with
``--json``. ``bench`` runs the benchmark suites shipped in the package (:mod:`pytropical_gpu.bench`):
``cpu`` always, ``wgpu`` on a hardware adapter (or when asked for) and ``cuda`` when available;
``bench --plot FILE`` instead draws a calibration (:mod:`pytropical_gpu.plot`).

Only this module prints; the library logs through ``logging.getLogger("pytropical_gpu")``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import diagnostics

#: the runtimes' shader compilers, for the text
_COMPILERS = {"wgpu": "wgpu-py, naga", "dawn": "Dawn via pydawn, Tint"}
_PAD = " " * 21  # continuation lines of the backends table (under the status column)


# ---------------------------------------------------------------------------- info
def info_text(d: dict[str, Any]) -> str:
    """Render :func:`~pytropical_gpu.diagnostics.info_dict`'s result as text."""
    lines = ["pytropical_gpu info", "", "versions"]
    for k, v in d["versions"].items():
        lines.append(f"  {k:<15} {v if v is not None else 'not installed'}")
    lines += ["", "wgpu adapters", "  per WebGPU runtime of the wgpu backend (PYTROPICAL_WEBGPU=wgpu|dawn; "
              "* = selected)"]
    wg = d.get("wgpu", {})
    if wg.get("error"):
        lines.append(f"  none: {wg['error']}")
    for rname, r in wg.get("runtimes", {}).items():
        mark = "*" if r["selected"] else " "
        state = "ok" if r["ok"] else "unavailable"
        lines.append(f" {mark}{rname} ({_COMPILERS.get(rname, rname)}): {state}: {r['reason']}")
        for i, a in enumerate(r["adapters"]):
            soft = "software (never chosen by auto)" if a["software"] else "hardware"
            lines.append(f"    [{i}] {a['device']}  backend={a['backend_type']}  "
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
        lines += _backend_lines(name, b)
    lines += ["", f"auto picks GPU backend: {d.get('auto_gpu') or 'none (cpu only)'}"]
    if d.get("env"):
        lines.append("environment: " + ", ".join(f"{k}={v}" for k, v in d["env"].items()))
    return "\n".join(lines)


def _backend_lines(name: str, b: dict[str, Any]) -> list[str]:
    chk = b["check"]
    if not b["ok"]:
        return [f"  {name:<5} unavailable  {b['reason']}"]
    secs = f" ({chk.get('seconds', 0) * 1e3:.1f} ms)" if "seconds" in chk else ""
    out = []
    if "cases" in chk and chk["status"] == "FAIL":
        npass = sum(v == "PASS" for v in chk["cases"].values())
        out.append(f"  {name:<5} {'FAIL':<12} {npass}/{len(chk['cases'])} cases pass{secs}")
        out += [f"{_PAD}{case}: {_first_line(v, 200)}" for case, v in chk["cases"].items()]
    else:
        out.append(f"  {name:<5} {chk['status']:<12} {_first_line(chk['reason'], 300)}{secs}")
    out.append(f"{_PAD}probe: {b['reason']}")
    desc = b.get("describe") or {}
    if "flushes_subnormals" in desc:
        kind = "software" if desc.get("software") else "hardware"
        sub = ("FLUSHED to zero: float calls that could meet subnormals raise "
               "SubnormalFlushError, auto sends them to an exact backend"
               if desc["flushes_subnormals"] else "kept (exact)")
        out.append(f"{_PAD}adapter: {desc.get('device')} ({desc.get('backend')}, {kind}); "
                   f"subnormals {sub}")
    return out


def _first_line(text: str, width: int) -> str:
    """One line of ``text`` for the table (the full text is in ``--json``)."""
    parts = [p.strip() for p in str(text).splitlines() if p.strip()]
    line = parts[0] if parts else ""
    if len(parts) > 1:
        line += " ..."
    return line if len(line) <= width else line[: width - 3] + "..."


def cmd_info(args: argparse.Namespace) -> int:
    d = diagnostics.info_dict(args.backend)
    print(json.dumps(d, indent=2, default=str) if args.json else info_text(d))
    return 1 if any(b["check"]["status"] == "FAIL" for b in d["backends"].values()) else 0


# ---------------------------------------------------------------------------- bench
def _progress(prefix: str) -> Callable[[str], None]:
    def progress(text: str) -> None:
        print(f"[{prefix}] {text}", file=sys.stderr, flush=True)
    return progress


def _wgpu_hardware() -> bool:
    try:
        from .backends.wgpu import hardware_available

        return bool(hardware_available()[0])
    except Exception:  # noqa: BLE001 - no wgpu: no hardware adapter
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


def _run_suite(name: str, quick: bool, rows: list) -> int:
    """Run one backend's suite into ``rows``; the exit status it earns (0 or 1)."""
    from .bench import harness, suite

    progress = _progress(f"bench {name}")
    progress(f"start ({'quick' if quick else 'full'})")
    t0 = time.perf_counter()
    status = 0
    try:
        rows += list(suite(name).run(quick=quick, progress=progress) or [])
    except harness.CheckFailed as e:
        print(f"[bench] {name}: correctness check FAILED: {e}", file=sys.stderr)
        status = 1
    except Exception as e:
        print(f"[bench] {name}: error: {type(e).__name__}: {e}", file=sys.stderr)
        status = 1
    progress(f"done in {time.perf_counter() - t0:.1f} s")
    return status


def _plot_fail(what: str, e: BaseException) -> int:
    print(f"pytropical_gpu bench --plot: {what}: {_first_line(e, 300)}", file=sys.stderr)
    return 1


def cmd_plot(args: argparse.Namespace) -> int:
    """``bench --plot FILE``: calibrate (or read ``--from-json``) and draw time against size."""
    from . import plot

    try:  # every check that needs no measurement, before a calibration of minutes
        out = plot.check_path(args.plot)
        bad = _json_path_problem(args.plot) or (args.json and _json_path_problem(args.json))
        if bad:
            raise ValueError(f"cannot write there: {bad}")
        if args.json and args.from_json:
            raise ValueError("--json saves a new calibration; with --from-json none is made")
        plot.require_matplotlib()
    except (ImportError, ValueError) as e:
        return _plot_fail("cannot plot", e)
    if args.from_json:
        try:
            t = plot.read_calibration(args.from_json)
        except (OSError, ValueError) as e:
            return _plot_fail(f"cannot read --from-json {args.from_json}", e)
    else:
        from .calibration import calibrate
        from .routing import usable_backends

        names = [args.backend] if args.backend else usable_backends()
        if names == ["cpu"]:
            print("[bench] no GPU backend usable here: measuring cpu alone (every operation stays "
                  "on cpu; pass --backend wgpu to measure a software adapter)", file=sys.stderr)
        t0 = time.perf_counter()
        try:
            t = calibrate(names, **({"max_steps": 4, "repeats": 1} if args.quick else {}))
        except Exception as e:  # noqa: BLE001 - a backend that cannot run: one line, no traceback
            return _plot_fail("calibration failed", e)
        if args.json:
            try:
                took = {"seconds": time.perf_counter() - t0}  # calibrate_report.py's layout
                Path(args.json).write_text(json.dumps({**took, **t.to_json()}, indent=1), encoding="utf-8")
            except OSError as e:
                return _plot_fail(f"cannot write --json {args.json}", e)
            print(f"wrote {args.json}")
    try:
        print(f"wrote {plot.plot_thresholds(t, out)}")
    except (OSError, ValueError) as e:
        return _plot_fail(f"cannot plot to {args.plot}", e)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from .backends import BACKENDS, probe
    from .bench import harness

    if args.plot:
        return cmd_plot(args)
    if args.from_json:
        print("pytropical_gpu bench: --from-json needs --plot FILE", file=sys.stderr)
        return 2
    bad = _json_path_problem(args.json) if args.json else None
    if bad:
        print(f"pytropical_gpu bench: cannot write --json {args.json}: {bad}", file=sys.stderr)
        return 2
    rows: list[Any] = []
    status = 0
    for name in [args.backend] if args.backend else list(BACKENDS):
        ok, reason = probe(name)
        if not ok:
            print(f"[bench] {name}: skipped, backend unavailable: {reason}", file=sys.stderr)
            status = 2 if args.backend else status
        elif name == "wgpu" and not args.backend and not _wgpu_hardware():
            print("[bench] wgpu: only a software adapter (llvmpipe/lavapipe); pass --backend wgpu to "
                  "benchmark it anyway", file=sys.stderr)
        else:
            status = max(status, _run_suite(name, args.quick, rows))
    if rows:
        print(harness.format_table(rows))
    if args.json:
        devices = sorted({str(r.device if hasattr(r, "device") else r.get("device", "")) for r in rows})
        try:
            path = harness.write_json(args.json, rows, ", ".join(devices), quick=args.quick)
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
    pb = sub.add_parser("bench", help="run the benchmark suites and print a table")
    pb.add_argument("--backend", choices=("cpu", "wgpu", "cuda"),
                    help="only this backend (default: every available one)")
    pb.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    pb.add_argument("--json", metavar="PATH", help="also write the rows (with --plot: the calibration) "
                    "as JSON to PATH")
    pb.add_argument("--plot", metavar="FILE", help="instead of the suites, run calibrate() and draw time "
                    "against size per backend, crossover marked, to FILE (.png or .svg; extra 'plot')")
    pb.add_argument("--from-json", metavar="CALIBRATION", help="with --plot: draw this saved "
                    "calibration (benchmarks/calibrate_report.py --json, or the thresholds cache file)")
    pb.set_defaults(func=cmd_bench)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
