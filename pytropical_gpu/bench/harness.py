"""Timing, checking and reporting for the benchmark suites (cpu, wgpu, cuda) and the scripts in
the repository's ``benchmarks/``.

The pattern (CuPy ``examples/gemm/sgemm.py``, Triton's matmul tutorial): check the result against a
baseline first, then time ours and the baseline in the same run, report medians with 20/80 quantiles.

A suite module (``pytropical_gpu.bench.cpu``, ``.wgpu``, ``.cuda``) exports
``run(quick=False, progress=None) -> rows``::

    def run(quick=False, progress=None):
        rows = []
        h.check("min_plus 256^3", ours(a, b), base(a, b))           # raises CheckFailed
        rows.append(h.compare("min_plus", "cpu", h.cpu_name(), "256x256x256",
                              lambda: ours(a, b), lambda: base(a, b), work=2 * 256**3,
                              unit="op", baseline="numpy broadcast"))
        return rows

``python -m pytropical_gpu bench`` calls it (from an installed wheel too); ``progress`` is a
callable taking one line of text (or None). A GPU benchmark passes ``sync=`` (e.g.
``cupy.cuda.Device().synchronize`` or a wgpu queue wait) so that the timed region includes the
kernel, not just its launch.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import math
import platform
import socket
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..thresholds import cpu_model

#: where git is asked for the commit: the checkout this package runs from (none when installed)
SOURCE_DIR = Path(__file__).resolve().parent


class CheckFailed(AssertionError):
    """A benchmark's result differs from its baseline: the run must exit non-zero."""


class Timing(NamedTuple):
    """Median and 20 % / 80 % quantiles of the measured times, in seconds; ``n`` timed calls."""

    median: float
    q20: float
    q80: float
    n: int


def median_time(fn: Callable[[], Any], sync: Callable[[], Any] | None = None, repeats: int = 10,
                warmup: int = 1, max_time: float | None = 5.0, min_repeats: int = 3) -> Timing:
    """Time ``fn()`` (followed by ``sync()``) ``repeats`` times after ``warmup`` untimed calls.

    Parameters
    ----------
    fn : callable
        The work; its return value is ignored.
    sync : callable, optional
        Called after each ``fn()`` inside the timed region (wait for the GPU queue to drain).
    repeats, warmup : int
        Timed and untimed calls.
    max_time : float or None
        Stop after ``min_repeats`` calls once this many seconds of timed work have run, so slow
        baselines do not dominate the run.

    Returns
    -------
    Timing
        ``(median, q20, q80, n)``, seconds.

    >>> t = median_time(lambda: sum(range(100)), repeats=5)
    >>> t.n, t.q20 <= t.median <= t.q80
    (5, True)
    """
    sync = sync or (lambda: None)
    for _ in range(warmup):
        fn()
        sync()
    times: list[float] = []
    total = 0.0
    for i in range(max(repeats, 1)):
        t0 = time.perf_counter()
        fn()
        sync()
        dt = time.perf_counter() - t0
        times.append(dt)
        total += dt
        if max_time is not None and total > max_time and i + 1 >= min_repeats:
            break
    q20, med, q80 = np.quantile(np.asarray(times), [0.2, 0.5, 0.8])
    return Timing(float(med), float(q20), float(q80), len(times))


@dataclasses.dataclass
class Result:
    """One row of a benchmark table.

    ``work`` counts ``unit`` (e.g. semiring ops = 2·m·n·k, or trits, or bytes) so that
    ``rate = work / median_s``; ``ratio = baseline_median_s / median_s`` is the speed-up of ours over
    the baseline (> 1: ours is faster).
    """

    op: str
    backend: str
    device: str
    sizes: str
    median_s: float
    q20_s: float
    q80_s: float
    work: float = 0.0
    unit: str = "op"
    baseline: str | None = None
    baseline_median_s: float | None = None
    note: str = ""

    @property
    def rate(self) -> float | None:
        return self.work / self.median_s if self.work and self.median_s > 0 else None

    @property
    def ratio(self) -> float | None:
        if self.baseline_median_s is None or self.median_s <= 0:
            return None
        return self.baseline_median_s / self.median_s

    def as_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["rate"] = self.rate
        d["ratio"] = self.ratio
        return d


def compare(op: str, backend: str, device: str, sizes: str, ours: Callable[[], Any],
            base: Callable[[], Any] | None = None, *, work: float = 0.0, unit: str = "op",
            baseline: str | None = None, sync: Callable[[], Any] | None = None,
            base_sync: Callable[[], Any] | None = None, repeats: int = 10, warmup: int = 1,
            max_time: float | None = 5.0, note: str = "") -> Result:
    """Time ``ours`` and (if given) ``base`` in the same run; a :class:`Result` row."""
    t = median_time(ours, sync, repeats, warmup, max_time)
    tb = median_time(base, base_sync, repeats, warmup, max_time) if base is not None else None
    return Result(op, backend, device, sizes, t.median, t.q20, t.q80, work, unit,
                  baseline if base is not None else None, tb.median if tb else None, note)


def check(what: str, got: Any, want: Any) -> None:
    """Raise :class:`CheckFailed` unless ``got`` equals ``want`` exactly (shape, dtype kind, values)."""
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        raise CheckFailed(f"{what}: shape {g.shape} != expected {w.shape}")
    if not np.array_equal(g, w):
        bad = int(np.count_nonzero(g != w))
        raise CheckFailed(f"{what}: {bad} of {w.size} elements differ from the baseline")


# ---------------------------------------------------------------------------- reporting
def _si(x: float | None, unit: str) -> str:
    if x is None:
        return "-"
    for p, s in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= p:
            return f"{x / p:.2f} {s}{unit}/s"
    return f"{x:.2f} {unit}/s"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1e3:.3f}"


def _row(r: Result | Mapping[str, Any]) -> dict[str, Any]:
    return r.as_dict() if isinstance(r, Result) else dict(r)


def format_table(rows: Iterable[Result | Mapping[str, Any]]) -> str:
    """A plain-text table: times in ms (median [q20, q80]), rate, baseline and speed-up ratio."""
    head = ("op", "backend", "sizes", "ms (median)", "q20-q80 ms", "rate", "baseline", "base ms", "ratio")
    lines = [head]
    for r in map(_row, rows):
        ratio = r.get("ratio")
        lines.append((
            str(r.get("op", "")), str(r.get("backend", "")), str(r.get("sizes", "")),
            _ms(r.get("median_s")), f"{_ms(r.get('q20_s'))}-{_ms(r.get('q80_s'))}",
            _si(r.get("rate"), r.get("unit", "op")), str(r.get("baseline") or "-"),
            _ms(r.get("baseline_median_s")), "-" if ratio is None else f"{ratio:.2f}x"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    right = {3, 4, 5, 7, 8}
    out = []
    for j, line in enumerate(lines):
        out.append("  ".join(c.rjust(w) if i in right else c.ljust(w)
                             for i, (c, w) in enumerate(zip(line, widths))).rstrip())
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def git_commit(path: Path | str | None = None) -> str | None:
    """The current git commit of the checkout holding ``path`` (None outside a git checkout)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=str(path or SOURCE_DIR),
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def git_dirty(path: Path | str | None = None) -> bool | None:
    """True when tracked files differ from the commit (untracked files are ignored)."""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                             cwd=str(path or SOURCE_DIR), capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.stdout.strip()) if out.returncode == 0 else None


def cpu_name() -> str:
    """The CPU model name (``/proc/cpuinfo``), else ``platform.processor()``: what the calibration
    fingerprint records (:func:`pytropical_gpu.thresholds.cpu_model`), never empty."""
    return cpu_model() or "unknown CPU"


def host_tag() -> str:
    """A file-name-safe short host name."""
    name = socket.gethostname().split(".")[0] or "host"
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name)


def write_json(path: Path | str, rows: Sequence[Result | Mapping[str, Any]], device: str,
               **extra: Any) -> Path:
    """Write ``{device, date, git_commit, host, python, numpy, ..., rows}`` to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "device": device,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "git_dirty": git_dirty(),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        **extra,
        "rows": [_row(r) for r in rows],
    }
    path.write_text(json.dumps(doc, indent=1, default=_json_default) + "\n")
    return path


def _json_default(x: Any) -> Any:
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


__all__ = ["CheckFailed", "Result", "Timing", "check", "compare", "cpu_name", "format_table",
           "git_commit", "git_dirty", "host_tag", "median_time", "write_json"]
