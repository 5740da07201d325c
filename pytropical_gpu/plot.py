"""A picture of a calibration: time against size per backend for each operation, crossover marked.

:func:`plot_thresholds` draws what :func:`pytropical_gpu.calibration.calibrate` measured
(``Thresholds.timings``): one log-log panel per operation, one line per backend (a software adapter
dashed and labelled as such), and a vertical line where routing switches to the GPU that won
(``Thresholds.crossover``; "never: cpu" when none did). ``python -m pytropical_gpu bench --plot FILE``
calls it. matplotlib is an optional dependency (extra ``plot``), imported only here and only when
a picture is asked for; it draws off-screen (Agg, no display needed).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .thresholds import NEVER, Thresholds

#: the file types plot_thresholds writes, by the path's suffix
FORMATS = (".png", ".svg")
#: what a size means per operation (the route units of :mod:`pytropical_gpu.thresholds`)
UNITS: dict[str, str] = {
    "matmul": "m·n·k (float32 min_plus)", "matmul_int": "m·n·k (int32 max_plus)",
    "andor_matmul": "m·n·k / 32 (packed words)", "pack": "elements (bools)",
    "bind": "words (both operands)", "bundle": "words (16 vectors)", "dot": "words (both operands)",
    "cosine": "words (both operands)", "permute": "words", "search": "words (memory + query)",
    "accumulate": "words × bits", "harden": "words × bits",
}
#: fixed colours, so a backend looks the same in every panel and every picture
_COLOURS = {"cpu": "#444444", "cuda": "#2ca02c", "wgpu": "#1f77b4"}
_INSTALL = "pip install 'pytropical_gpu[plot]'"


def _figure_class() -> Any:
    """matplotlib's Figure (no pyplot: no global state, no GUI backend); a clear ImportError if absent."""
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError(f"plotting needs matplotlib, which is not installed: {_INSTALL}") from e
    del matplotlib
    return Figure


def require_matplotlib() -> None:
    """Raise the ImportError :func:`plot_thresholds` would, now (before a long calibration)."""
    _figure_class()


def check_path(path: str | Path) -> Path:
    """``path`` as a Path when its suffix names a format plot_thresholds writes; ValueError if not."""
    p = Path(path)
    if p.suffix.lower() not in FORMATS:
        raise ValueError(f"the plot file must end in .png or .svg (its format), got {str(path)!r}")
    return p


def read_calibration(path: str | Path) -> Thresholds:
    """A saved calibration: the JSON ``benchmarks/calibrate_report.py --json`` writes (a
    ``Thresholds`` table plus ``seconds``), or the cache file (``{"format", "entries"}``; its newest
    entry). ValueError naming ``path`` when it is neither; OSError when it cannot be read."""
    raw = Path(path).read_bytes()
    try:
        d = json.loads(raw.decode("utf-8"))
    except ValueError as e:  # bad JSON or bad UTF-8
        raise ValueError(f"{path}: not JSON ({e})") from None
    if isinstance(d, dict) and isinstance(d.get("entries"), dict) and "crossover" not in d:
        entries = [e for e in d["entries"].values() if isinstance(e, dict)]
        if not entries:
            raise ValueError(f"{path}: a thresholds cache file with no entries")
        d = max(entries, key=lambda e: e.get("created") or 0)
    try:
        t = Thresholds.from_json(d)
        _curves(t)  # the timings' layout, checked before anything is drawn
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path}: not a calibration ({e})") from None
    return t


def _curves(t: Thresholds) -> dict[str, dict[str, list[tuple[float, float]]]]:
    """op -> backend -> [(size, seconds)] with positive sizes, sorted; ValueError on a bad layout."""
    out: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for op, per in t.timings.items():
        if not isinstance(per, dict):
            raise ValueError(f"timings[{op!r}] must be a table of backends, got {type(per).__name__}")
        for be, rows in per.items():
            pts = []
            for row in rows if isinstance(rows, list) else [None]:
                ok = isinstance(row, (list, tuple)) and len(row) == 2 and all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in row)
                if not ok:
                    raise ValueError(f"timings[{op!r}][{be!r}] must be [[size, seconds], ...], "
                                     f"got an entry {row!r}")
                if row[0] > 0 and row[1] > 0 and math.isfinite(row[1]):
                    pts.append((float(row[0]), float(row[1])))
            if pts:
                out.setdefault(op, {})[be] = sorted(pts)
    return out


def _label(t: Thresholds, be: str) -> tuple[str, bool]:
    """The legend text of backend ``be`` and whether it ran on a software adapter."""
    d = t.devices.get(be) or {}
    soft = bool(d.get("software"))
    dev = str(d.get("device") or "")
    if be == "wgpu" and d.get("backend"):
        dev = f"{dev}, {d['backend']}" if dev else str(d["backend"])
    text = f"{be} ({dev})" if dev else be
    return (f"{text}: software adapter" if soft else text), soft


def _mark_crossover(ax: Any, t: Thresholds, op: str, xmin: float) -> None:
    """The routing rule on one panel: a vertical line where the GPU takes over, or "never: cpu"."""
    c, gpu = t.crossover.get(op, NEVER), t.gpu.get(op)
    if c == NEVER or not gpu:
        ax.text(0.03, 0.97, "never: cpu", transform=ax.transAxes, va="top", ha="left",
                fontsize=9, color="#b22222", fontweight="bold")
        return
    x = max(float(c), xmin)  # 0: the GPU won from the smallest size measured
    colour = _COLOURS.get(gpu, "#b22222")
    ax.axvline(x, color=colour, linestyle=":", linewidth=1.6)
    text = f"routes to {gpu} from here \u2192" if c > xmin else f"routes to {gpu} at every size"
    lo, hi = (math.log(v) for v in ax.get_xlim())
    right = (math.log(x) - lo) / (hi - lo) > 0.55  # a label past the middle goes left of its line
    ax.text(x, 0.97, f" {text} ", transform=ax.get_xaxis_transform(), va="top",
            ha="right" if right else "left", fontsize=8, color=colour, fontweight="bold",
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1})


def _span(lo: float, hi: float) -> tuple[float, float]:
    """Axis limits around [lo, hi], widened to whole decades when they would hold fewer than two
    powers of ten (only those are labelled)."""
    if math.floor(math.log10(hi)) - math.ceil(math.log10(lo)) < 1:
        return 10.0 ** math.floor(math.log10(lo)), 10.0 ** math.ceil(math.log10(hi))
    return lo, hi


def plot_thresholds(t: Thresholds, path: str | Path, *, title: str | None = None) -> Path:
    """Draw ``t``'s timings, one panel per operation, and write them to ``path`` (PNG or SVG).

    Parameters
    ----------
    t : Thresholds
        A calibration (:func:`~pytropical_gpu.calibration.calibrate`, or :func:`read_calibration`):
        its ``timings`` are drawn, its ``crossover``/``gpu`` marked.
    path : str or Path
        Where to write; the suffix (``.png`` or ``.svg``) picks the format. Missing parent
        directories are created.
    title : str, optional
        The figure's title (default: the devices measured).

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    ImportError
        matplotlib is not installed (``pip install 'pytropical_gpu[plot]'``).
    ValueError
        A suffix other than .png/.svg, timings of a bad layout, or no timings at all.
    OSError
        ``path`` cannot be written.

    Shapes:
        not applicable.

    Examples
    --------
    >>> from pytropical_gpu.calibration import calibrate
    >>> t = calibrate(["cpu"], ["bind"], progress=False, save=False, max_steps=2)
    >>> plot_thresholds(t, "calibration.png")  # doctest: +SKIP
    PosixPath('calibration.png')
    """
    p = check_path(path)
    curves = _curves(t)
    if not curves:
        raise ValueError("plot: the calibration holds no timings (nothing was measured)")
    Figure = _figure_class()
    from matplotlib import rc_context
    from matplotlib.ticker import NullFormatter

    ops = list(curves)
    cols = min(4, len(ops))
    rows = -(-len(ops) // cols)
    # svg.fonttype none: SVG text stays text (searchable, selectable), not glyph outlines
    with rc_context({"svg.fonttype": "none", "font.size": 9}):
        fig = Figure(figsize=(4.2 * cols, 3.3 * rows + 0.9), layout="constrained")
        axes = fig.subplots(rows, cols, squeeze=False).ravel()
        handles: dict[str, Any] = {}
        for ax, op in zip(axes, ops):
            xmin = min(s for pts in curves[op].values() for s, _ in pts)
            for be, pts in curves[op].items():
                label, soft = _label(t, be)
                (line,) = ax.plot([s for s, _ in pts], [x for _, x in pts], marker="o", markersize=3,
                                  linewidth=1.5, linestyle="--" if soft else "-",
                                  color=_COLOURS.get(be), label=label)
                handles.setdefault(label, line)
            ax.set_xscale("log")
            ax.set_yscale("log")
            xs = [s for pts in curves[op].values() for s, _ in pts]
            ys = [x for pts in curves[op].values() for _, x in pts]
            ax.set_xlim(*_span(min(xs) / 1.3, max(xs) * 1.3))
            ax.set_ylim(*_span(min(ys) / 1.5, max(ys) * 5))  # headroom above the curves: labels
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_title(op, fontweight="bold")
            ax.set_xlabel(f"size: {UNITS.get(op, 'route units')}")
            ax.set_ylabel("time per call (s)")
            ax.grid(True, which="major", alpha=0.3)
            _mark_crossover(ax, t, op, xmin)
        for ax in axes[len(ops):]:
            ax.set_visible(False)
        fig.legend(list(handles.values()), list(handles), loc="outside lower center",
                   ncols=min(3, len(handles)), frameon=False)
        fig.suptitle(title or "calibrate(): wall-clock time per call (numpy in, numpy out) against "
                     "size; dotted line: where auto routing moves to the GPU", fontsize=11)
        p.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(p, format=p.suffix.lower()[1:], dpi=110)
    return p


__all__ = ["FORMATS", "UNITS", "check_path", "plot_thresholds", "read_calibration",
           "require_matplotlib"]
