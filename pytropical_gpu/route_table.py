"""Route tables: for each operation, which backend runs each range of sizes.

A single cpu/GPU crossover per operation loses two things a calibration measures: which GPU is
fastest where (cuda and a hardware wgpu adapter trade places at large transfers), and ranges where
cpu wins again. A route table keeps them: per operation a short list of segments (first size,
backend), looked up by bisection, well under a microsecond per call.

:func:`from_timings` builds one from measured times. At each measured size the fastest backend
wins, except that a backend earlier in :data:`PREFERENCE` (cpu, cuda, wgpu) keeps the size while it
is within :data:`TIE` of the fastest: cpu needs no transfer and no GPU memory, cuda is exact where a
flushing wgpu adapter must scan float operands first, and without a margin a near tie flips on
noise. A backend that left the sweep (over budget) is extrapolated linearly from its last size.
Where the winner changes between two measured sizes, the boundary is where, on the two backends'
log-log interpolated curves, the new winner gets ahead by the tie margin. Software adapters are
never in a table: "auto" never picks them (SPEC).

Before any calibration, :func:`defaults` gives a cpu/GPU crossover per operation for the GPU
"auto" has: the H200 calibration (``benchmarks/results/calibrate_h200.json``), each GPU against
cpu alone, to two digits.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

from .thresholds import DEFAULTS, NEVER

#: (first sizes, backends): backends[i] runs sizes in [starts[i], starts[i + 1]); starts[0] == 0
Segments = tuple[tuple[int, ...], tuple[str, ...]]
#: who keeps a near tie, first to last
PREFERENCE: tuple[str, ...] = ("cpu", "cuda", "wgpu")
#: a backend earlier in PREFERENCE keeps a size while within this fraction of the fastest
TIE = 0.03
#: cpu/GPU crossovers before calibrate() for a hardware wgpu adapter (cuda's are DEFAULTS)
WGPU_DEFAULTS: dict[str, int] = {
    "matmul": 370_000, "matmul_int": 670_000, "andor_matmul": 150_000, "pack": NEVER,
    "bind": NEVER, "bundle": 160_000, "dot": 580_000, "cosine": NEVER, "permute": 42_000,
    "search": 220_000, "accumulate": 390_000, "harden": 590_000,
}
CPU_ONLY: Segments = ((0,), ("cpu",))


def defaults(gpu: str | None) -> dict[str, int]:
    """The cpu/GPU crossover per op before calibrate() has run, for the GPU "auto" has."""
    return dict(WGPU_DEFAULTS if gpu == "wgpu" else DEFAULTS)


def from_crossover(crossover: int, gpu: str | None) -> Segments:
    """cpu below ``crossover``, ``gpu`` from it on (cpu everywhere when gpu is None or NEVER)."""
    if gpu is None or gpu == "cpu" or crossover >= NEVER:
        return CPU_ONLY
    return ((0,), (gpu,)) if crossover <= 0 else ((0, int(crossover)), ("cpu", gpu))


def lookup(seg: Segments, size: int) -> str:
    """The backend of ``seg`` that runs ``size``."""
    return seg[1][bisect_right(seg[0], size) - 1]


def first_gpu(seg: Segments) -> tuple[int, str | None]:
    """(size where the table first leaves cpu, that backend), or (NEVER, None)."""
    for start, name in zip(*seg):
        if name != "cpu":
            return start, name
    return NEVER, None


def _rank(name: str) -> int:
    return PREFERENCE.index(name) if name in PREFERENCE else len(PREFERENCE)


def _curves(per: Mapping[str, Sequence[Sequence[float]]], eligible: Sequence[str]):
    return {b: {int(s): float(t) for s, t in per[b]} for b in eligible if per.get(b)}


def _time_at(curve: dict[int, float], size: int) -> float | None:
    """Measured, or linear from the last measured size below (a backend that left the sweep)."""
    if size in curve:
        return curve[size]
    below = [s for s in curve if s < size]
    if not below or len(below) < len(curve):
        return None  # never measured this far down, or a gap inside its sweep: no estimate
    s = max(below)
    return curve[s] * size / max(s, 1)


def winners(per: Mapping[str, Sequence[Sequence[float]]],
            eligible: Sequence[str]) -> list[tuple[int, str]]:
    """(size, backend that should run it) at every measured size (see the module doc)."""
    curves = _curves(per, eligible)
    out = []
    for size in sorted({s for c in curves.values() for s in c}):
        times = {b: t for b, c in curves.items() if (t := _time_at(c, size)) is not None}
        if not times:
            continue
        fastest = min(times.values())
        near = [b for b, t in times.items() if t <= fastest * (1 + TIE)]
        out.append((size, min(near, key=_rank)))
    return out


def _boundary(curves: dict, s0: int, s1: int, a: str, b: str) -> int:
    """Where ``b`` takes over from ``a`` between sizes s0 < s1, always in (s0, s1]: on the log-log
    interpolated curves, where ``a``'s time over ``b``'s passes the tie margin (1 + TIE when ``a``
    is preferred, 1 / (1 + TIE) when ``b`` is); the geometric midpoint when that is unknown."""
    ta0, ta1 = _time_at(curves[a], s0), _time_at(curves[a], s1)
    tb0, tb1 = _time_at(curves[b], s0), _time_at(curves[b], s1)
    x = 0.5 * (math.log(max(s0, 1)) + math.log(s1))
    if None not in (ta0, ta1, tb0, tb1) and s0 > 0 and min(ta0, ta1, tb0, tb1) > 0:
        m = math.log(1 + TIE) * (1 if _rank(a) < _rank(b) else -1)
        g0, g1 = math.log(ta0 / tb0) - m, math.log(ta1 / tb1) - m
        if g0 <= 0 < g1:
            x = math.log(s0) + (math.log(s1) - math.log(s0)) * -g0 / (g1 - g0)
    return min(s1, max(s0 + 1, math.ceil(math.exp(x))))


def from_timings(per: Mapping[str, Sequence[Sequence[float]]], eligible: Sequence[str]) -> Segments:
    """The route table of one operation from its ``{backend: [[size, seconds], ...]}``; only
    ``eligible`` backends appear (cpu when none was measured)."""
    win = winners(per, eligible)
    if not win:
        return CPU_ONLY
    curves = _curves(per, eligible)
    starts, names = [0], [win[0][1]]
    for (s0, a), (s1, b) in zip(win, win[1:]):
        if b != names[-1]:
            starts.append(_boundary(curves, s0, s1, a, b))
            names.append(b)
    return tuple(starts), tuple(names)


def tables(t: Any, gpu: str | None, eligible: Sequence[str]) -> dict[str, Segments]:
    """Per op in DEFAULTS: from ``t.timings`` where it measured cpu and a GPU in ``eligible``, else
    from ``t.crossover`` / ``t.gpu`` (``gpu`` when it names none), else :func:`defaults`."""
    out: dict[str, Segments] = {}
    base = defaults(gpu)
    for op in DEFAULTS:
        per = {} if t is None else (t.timings.get(op) or {})
        if per.get("cpu") and any(per.get(b) for b in eligible if b != "cpu"):
            out[op] = from_timings(per, eligible)
        elif t is not None and op in t.crossover:
            named = t.gpu.get(op)
            out[op] = from_crossover(t.crossover[op], named if named in eligible else gpu)
        else:
            out[op] = from_crossover(base[op], gpu)
    return out


def describe(seg: Segments) -> str:
    """``cpu < 34270 <= cuda`` style text of one table (reports, logs)."""
    parts = [seg[1][0]]
    for start, name in zip(seg[0][1:], seg[1][1:]):
        parts.append(f"< {start} <= {name}")
    return " ".join(parts)


__all__ = ["CPU_ONLY", "PREFERENCE", "Segments", "TIE", "WGPU_DEFAULTS", "defaults", "describe",
           "first_gpu", "from_crossover", "from_timings", "lookup", "tables", "winners"]
