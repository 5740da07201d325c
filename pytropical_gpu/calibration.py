"""calibrate(): measure which backend is fastest for each operation and size, on this machine.

Every operation runs on every usable backend over a size sweep (tiny to where one backend clearly
wins), timed as a user's call costs: numpy in, numpy out, wall clock with transfers included (best
of ``repeats`` after one warm-up call that compiles and allocates). A backend leaves an
operation's sweep once one call takes longer than ``budget_s``, or once it has lost clearly (a GPU
at most ``CLEAR_WIN`` of its time) at two sizes in a row: cpu at any size, a GPU only against
another GPU whose call took at least ``SETTLED_S`` (past launch latency, where the order holds).
The sweep ends when fewer than two backends are left. Then one size is added between each pair
of neighbours where the fastest backend changes, so a crossover is interpolated over a factor 2.

Routing rule: the route table of :mod:`pytropical_gpu.route_table`, built from these timings when
a context routes: at each measured size the fastest backend (near ties to cpu, then cuda), the
boundaries where the two curves cross. ``Thresholds.crossover`` / ``gpu`` summarise it: the size
where it first leaves cpu and for which GPU (:data:`~pytropical_gpu.thresholds.NEVER` / None when
it never does). The raw timings are kept with the result (``Thresholds.timings``).
"""

from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import calibration_cases as cases
from . import route_table as rt
from ._checks import int_arg
from .routing import usable_backends
from .thresholds import (
    DEFAULTS,
    NEVER,
    Thresholds,
    describe_backend,
    fingerprint,
    load_thresholds,
    save_thresholds,
)

log = logging.getLogger("pytropical_gpu")

#: the operations calibrate() measures (keys of the thresholds table), in sweep order
OPS: tuple[str, ...] = tuple(DEFAULTS)
#: "clearly wins": the best GPU at most this fraction of cpu's time, at two sizes in a row
CLEAR_WIN = 0.5
#: a GPU drops out against another GPU only where the winner's call took this long (past launch latency)
SETTLED_S = 2e-3

def _time(call: Callable[[], Any], repeats: int, budget_s: float) -> float:
    """Best of ``repeats`` wall-clock calls after one warm-up; stops early past ``budget_s``."""
    call()
    best = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
        if best > budget_s:
            break
    return best


# ---------------------------------------------------------------- deriving the crossover
def crossover(cpu: Sequence[Sequence[float]], gpu: Sequence[Sequence[float]]) -> int:
    """The size from which ``gpu`` is at least as fast as ``cpu`` at every larger common size.

    ``cpu``, ``gpu``: ``[[size, seconds], ...]`` in increasing size. Between the last size cpu wins
    and the first from which the GPU always wins, the crossing is interpolated (log-log). 0 when the
    GPU wins from the smallest size, :data:`NEVER` when it loses at the largest common size."""
    g = {int(s): t for s, t in gpu}
    pts = [(int(s), t, g[int(s)]) for s, t in cpu if int(s) in g]
    if not pts or pts[-1][2] > pts[-1][1]:
        return NEVER
    j = len(pts) - 1
    while j > 0 and pts[j - 1][2] <= pts[j - 1][1]:
        j -= 1
    if j == 0:
        return 0
    (s0, c0, g0), (s1, c1, g1) = pts[j - 1], pts[j]
    r0, r1 = math.log(g0 / c0), math.log(max(g1, 1e-12) / c1)  # r0 > 0 >= r1
    if s0 <= 0 or r0 == r1:
        return s1
    x = math.log(s0) + (math.log(s1) - math.log(s0)) * r0 / (r0 - r1)
    return min(s1, max(s0 + 1, math.ceil(math.exp(x))))


def _derive(timings: dict[str, dict[str, list[list[float]]]], gpus: list[str]):
    """Per op: where the route table (:func:`~pytropical_gpu.route_table.from_timings`) first
    leaves cpu, and for which GPU; :data:`NEVER` / None when it never does."""
    cross: dict[str, int] = {}
    best: dict[str, str | None] = {}
    for op, per in timings.items():
        cross[op], best[op] = rt.first_gpu(rt.from_timings(per, ["cpu", *gpus]))
    return cross, best


# ---------------------------------------------------------------- progress
class _Progress:
    """tqdm when installed, else one stderr line per step at most every half second."""

    def __init__(self, total: int, enabled: bool):
        self.bar = None
        self.enabled, self.total, self.done, self.last = enabled, total, 0, 0.0
        if enabled:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                return
            self.bar = tqdm(total=total, desc="calibrate", unit="op", file=sys.stderr)

    def note(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(text)
        elif self.enabled and time.perf_counter() - self.last >= 0.5:
            self.last = time.perf_counter()
            sys.stderr.write(f"calibrate: {self.done}/{self.total} ops done; {text}\n")
            sys.stderr.flush()

    def step(self) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled:
            sys.stderr.write(f"calibrate: {self.done}/{self.total} ops done\n")


# ---------------------------------------------------------------- calibrate
def calibrate(backends: Sequence[str] | None = None, ops: Sequence[str] | None = None, *,
              repeats: int = 3, progress: bool = True, save: bool = True, budget_s: float = 0.2,
              max_steps: int | None = None, seed: int = 0) -> Thresholds:
    """Measure the cpu/GPU crossover of every operation on this machine (see the module doc).

    Parameters
    ----------
    backends : list of str, optional
        Backends to measure; cpu is always added (the reference). Default: :func:`usable_backends`
        (a software wgpu adapter only when named here; it is then recorded as software); when that
        is cpu alone nothing is measured (there is nothing to route to).
    ops : list of str, optional
        Operations (default :data:`OPS`: every key of the thresholds table).
    repeats : int
        Timed calls per size (the best counts), after one warm-up call.
    progress : bool
        A progress bar on stderr (tqdm when installed, else plain lines).
    save : bool
        Store the result in the cache dir, where :func:`load_thresholds` finds it.
    budget_s : float
        A backend stops growing its sweep once one call takes longer than this, and skips a size
        where its last time, scaled linearly, predicts more than twice this.
    max_steps : int, optional
        At most this many sizes per operation (quick runs, tests).
    seed : int
        Seed of the random operands.

    Returns
    -------
    Thresholds
        Crossovers, the winning GPU per op, raw timings and the devices measured.

    Raises
    ------
    ValueError
        An unknown backend or op name, or a bad repeats/budget_s/max_steps.
    BackendUnavailableError
        A backend named in ``backends`` that cannot run here.

    Shapes:
        not applicable.

    Examples
    --------
    >>> t = calibrate(["cpu"], ["bind"], progress=False, save=False, max_steps=2)
    >>> t.crossover["bind"] == NEVER, len(t.timings["bind"]["cpu"])
    (True, 2)
    """
    from .backends import get_backend

    repeats = int_arg(repeats, "calibrate", "repeats", lo=1)
    steps_cap = None if max_steps is None else int_arg(max_steps, "calibrate", "max_steps", lo=1)
    if isinstance(budget_s, bool) or not isinstance(budget_s, (int, float)) or not budget_s > 0:
        raise ValueError(f"calibrate: budget_s must be a positive number of seconds, got {budget_s!r}")
    ops = list(OPS if ops is None else ops)
    bad = [o for o in ops if o not in OPS]
    if bad or not ops:
        raise ValueError(f"calibrate: unknown ops {bad or ops!r}; known: {', '.join(OPS)}")
    names = usable_backends() if backends is None else list(dict.fromkeys(["cpu", *backends]))
    for n in names:
        get_backend(n)  # ValueError for an unknown name, BackendUnavailableError with the reason
    devices = {n: describe_backend(n) for n in names}
    for n, d in devices.items():
        if d["software"]:
            log.info("calibrate: %s runs on a software adapter (%s); measured because it was asked "
                     "for, recorded as software", n, d.get("device"))
    gpus = [n for n in names if n != "cpu"]
    if backends is None and not gpus:  # nothing to compare with: routing keeps everything on cpu
        log.info("calibrate: no GPU backend usable here; every operation stays on cpu")
        ops = []
    rng = np.random.default_rng(seed)
    timings: dict[str, dict[str, list[list[float]]]] = {}
    errors: list[str] = []
    bar = _Progress(len(ops), progress)
    try:
        for op in ops:
            timings[op] = _sweep(op, names, rng, repeats, budget_s, steps_cap, bar, errors)
            bar.step()
    finally:
        bar.close()
    cross, best = _derive(timings, gpus)
    key = fingerprint(devices)
    t = Thresholds(crossover={**DEFAULTS, **cross},
                   gpu=best, timings=timings, devices=devices, fingerprint=key, source="calibrated",
                   created=time.time(), errors=errors)
    if save:
        save_thresholds(t)
    return t


def _sweep(op: str, names: list[str], rng: np.random.Generator, repeats: int, budget_s: float,
           steps_cap: int | None, bar: _Progress, errors: list[str]) -> dict[str, list[list[float]]]:
    """One operation's sweep: {backend: [[size, seconds], ...]} (see the module doc for the stops),
    then one size between each pair of neighbours where the route table changes backend."""
    out: dict[str, list[list[float]]] = {n: [] for n in names}
    active, lost, last, done = list(names), dict.fromkeys(names, 0), {}, []

    def measure(p: int, who: list[str]) -> dict[str, float]:
        call, size = cases.build(op, p, rng)
        row = {}
        for n in who:
            bar.note(f"{op} on {n}, size {size}")
            try:
                row[n] = _time(lambda n=n, call=call: call(n), repeats, budget_s)
            except Exception as e:  # out of memory, a binding limit: this backend stops here
                msg = f"{op} on {n} at size {size}: {type(e).__name__}: {e}"
                log.warning("calibrate: %s", msg)
                errors.append(msg)
                continue
            out[n].append([size, row[n]])
            last[n] = (max(size, 1), row[n])
        done.append((p, size, row))
        return row

    for p in cases.steps(op)[:steps_cap]:
        size = cases.build_size(op, p)
        # a call predicted (linear in size) to take many budgets is not made: it would dominate
        active = [n for n in active if n not in last or last[n][1] * size / last[n][0] <= 2 * budget_s]
        row = measure(p, active)
        active = [n for n in active if n in row and row[n] <= budget_s]
        for n in list(active):  # a clear loss twice in a row is for good (see _clear_loss)
            lost[n] = lost[n] + 1 if _clear_loss(n, row) else 0
            if lost[n] >= 2:
                active.remove(n)
        if not active or (len(names) > 1 and len(active) < 2):
            break
    _refine(op, done, measure, [n for n in names if n != "cpu"])
    for n in out:
        out[n].sort()
    return out


def _clear_loss(n: str, row: dict[str, float]) -> bool:
    """``n`` took at least 1/CLEAR_WIN times as long as some GPU at this size. cpu never comes back
    from that (its time grows at least linearly with size); a GPU only when the winner's call was
    long enough (SETTLED_S) for transfers and kernels, not launch latency, to decide the order."""
    gpus = [t for g, t in row.items() if g not in ("cpu", n)]
    if n not in row or not gpus or min(gpus) > CLEAR_WIN * row[n]:
        return False
    return n == "cpu" or min(gpus) >= SETTLED_S


def _refine(op: str, done: list, measure: Callable, gpus: list[str]) -> None:
    """One extra size between each pair of measured neighbours where the winner changes (the
    geometric middle step), measuring the backends measured at both: the crossover interpolated
    over a factor 2 instead of the sweep's factor 4-8."""
    done.sort(key=lambda d: d[1])
    for (p0, s0, r0), (p1, s1, r1) in list(zip(done, done[1:])):
        common = [n for n in r0 if n in r1]
        pm = round(math.sqrt(p0 * p1))
        if len(common) < 2 or not p0 < pm < p1:
            continue
        w0 = rt.winners({n: [[s0, r0[n]]] for n in common}, ["cpu", *gpus])
        w1 = rt.winners({n: [[s1, r1[n]]] for n in common}, ["cpu", *gpus])
        if w0 and w1 and w0[0][1] != w1[0][1]:
            measure(pm, common)


__all__ = ["CLEAR_WIN", "OPS", "Thresholds", "calibrate", "crossover", "load_thresholds",
           "usable_backends"]
