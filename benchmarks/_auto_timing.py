"""bench_auto's two timing phases and the interval it judges "within 10 %" by.

:func:`survey` times every variant of a cell interleaved (a new shuffled order each round) to find
the fastest backend and each route; :func:`paired` then times ``auto`` against that backend (and
against the backend auto routes to, when that is another one) in pairs, so that both columns
share their predecessors; :func:`median_ci` gives the distribution-free interval of the median of
the per-round ratios.

Why pairs: on the H200 host a call's time depends on the call before it by up to +-30 %
(auto_notes.md, session 3: cpu bind of 512 trits 13 us after a cpu call, 22-26 us after a cuda or
wgpu call; a cuda bundle of 256 trits 165 us after a cuda call, 260 us after a cpu one). In a
shuffled round of five variants, auto and the fastest backend have different predecessors in each
round, and with 3-15 rounds their medians differed by that much while running the same code.
In :func:`paired` every timed call runs right after its own untimed warm-up, and that warm-up
right after a call on the reference backend, so when auto routes to the fastest backend (the
usual case) every call of the phase runs on one backend and the two columns differ only by what
auto itself adds. Adjacent calls of a round share the machine's load too, so the ratio of a round
cancels slow drift that a ratio of two medians keeps.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

#: a call shorter than this gets an untimed warm-up call of the same variant right before it
WARM_BELOW_S = 0.02


def _warm(calls: dict[str, Callable[[], Any]]) -> dict[str, float]:
    """One untimed call of each variant (compiles, allocates): its time decides the warm-ups."""
    took = {}
    for k, f in calls.items():
        t0 = time.perf_counter()
        f()
        took[k] = time.perf_counter() - t0
    return took


def survey(calls: dict[str, Callable[[], Any]], max_rounds: int, cell_s: float, seed: Any = 0,
           gpu: frozenset = frozenset(), after: dict | None = None,
           min_rounds: int = 3) -> tuple[dict, dict]:
    """Median wall time of each variant, interleaved round by round in a new shuffled order each
    round (``seed`` per cell): at least ``min_rounds``, more (up to ``max_rounds``) while the cell
    has used less than ``cell_s``. A call under :data:`WARM_BELOW_S` follows an untimed one of the
    same variant. Returns (medians, medians over the rounds whose previous variant ran on the host,
    i.e. is not in ``gpu``); ``after`` (if given) gets, per variant, its median by predecessor."""
    warm = _warm(calls)
    by_prev: dict[str, dict[str, list[float]]] = {k: {} for k in calls}
    t_end = time.perf_counter() + cell_s
    order, prev = list(calls), list(calls)[-1]
    shuffle = random.Random(repr(seed)).shuffle
    for r in range(max_rounds):
        shuffle(order)
        for k in order:
            f = calls[k]
            if warm[k] < WARM_BELOW_S:
                f()
            t0 = time.perf_counter()
            f()
            by_prev[k].setdefault(prev, []).append(time.perf_counter() - t0)
            prev = k
        if r + 1 >= min_rounds and time.perf_counter() > t_end:
            break
    if after is not None:
        for k, d in by_prev.items():
            after.setdefault(k, {}).update({p: statistics.median(v) for p, v in d.items()})
    med, host = {}, {}
    for k, d in by_prev.items():
        med[k] = statistics.median([t for v in d.values() for t in v])
        h = [t for p, v in d.items() if p not in gpu for t in v]
        host[k] = statistics.median(h) if h else med[k]
    return med, host


def paired(calls: dict[str, Callable[[], Any]], runs_on: dict[str, str], ref: str, cell_s: float,
           seed: Any = 0, min_rounds: int = 5, max_rounds: int = 100_000) -> dict[str, list[float]]:
    """Per-round wall times of every variant in ``calls`` (a new shuffled order each round), each
    timed call preceded by the same kind of call: its own untimed warm-up (for calls under
    :data:`WARM_BELOW_S`) and, before that, a call on ``ref``'s backend (``runs_on[ref]``): when
    the call before it ran elsewhere, an untimed call of ``ref`` is made first. ``runs_on``: the
    backend each variant runs on (auto: its route). At least ``min_rounds`` rounds, more while the
    phase has used less than ``cell_s``. Returns variant -> times, index i = round i."""
    warm = _warm(calls)
    home = runs_on[ref]
    times: dict[str, list[float]] = {k: [] for k in calls}
    order = list(calls)
    shuffle = random.Random(repr(("paired", seed))).shuffle
    last = runs_on[order[-1]]  # the backend of the last call made (the warm-up's last)
    t_end = time.perf_counter() + cell_s
    for r in range(max_rounds):
        shuffle(order)
        for k in order:
            f = calls[k]
            if last != home:
                calls[ref]()
            if warm[k] < WARM_BELOW_S:
                f()
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
            last = runs_on[k]
        if r + 1 >= min_rounds and time.perf_counter() > t_end:
            break
    return times


def median_ci(xs: list[float], level: float = 0.95) -> tuple[float, float, float]:
    """(low, high, coverage) of the distribution-free interval for the median of ``xs``: the order
    statistics x_(j), x_(n+1-j) with the largest j whose binomial coverage is at least ``level``
    (exact up to 200 values, the normal approximation beyond); with too few values for that
    (n < 6 at 95 %), the extremes and their coverage 1 - 2^(1-n)."""
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return math.nan, math.nan, 0.0
    tail = (1.0 - level) / 2.0
    if n <= 200:  # P(X < j), X ~ Binomial(n, 1/2), in integers over 2^n
        total, cum, j = 1 << n, 0, 0
        while j < n // 2 and cum + math.comb(n, j) <= tail * total:
            cum += math.comb(n, j)
            j += 1
        j = max(j, 1)
        cover = 1.0 - 2.0 * sum(math.comb(n, i) for i in range(j)) / total
    else:
        z = statistics.NormalDist().inv_cdf(1.0 - tail)
        j = max(1, int(math.floor(n / 2.0 - z * math.sqrt(n) / 2.0)))
        cover = level
    return s[j - 1], s[n - j], cover


def spread(xs: list[float]) -> tuple[float, float]:
    """(quartile 1, quartile 3) of ``xs`` over its median: how much one backend varies by itself."""
    if len(xs) < 2:
        return 1.0, 1.0
    q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    m = statistics.median(xs)
    return q1 / m, q3 / m


def verdict(lo: float, hi: float, limit: float) -> str:
    """"within": the whole interval at or under ``limit``; "over": all of it above; else "noise"
    (the interval holds ``limit``: this cell's spread cannot tell)."""
    if hi <= limit:
        return "within"
    if lo > limit:
        return "over"
    return "noise"


def table(doc: dict, limit: float) -> str:
    """bench_auto's rows as a text table (survey medians, then the pairs' ratio and interval)."""
    names = list(doc["devices"])
    head = (["op", "size"] + [f"{b} ms" for b in names] +
            ["route", "best", "pairs", "auto/best", "95% interval", "best q1-q3", "verdict",
             "dflt/best", "ok"])
    lines = [head]
    for r in doc["rows"]:
        m, pr = r["median_s"], r.get("pairs") or {}
        ms = [f"{m[k] * 1e3:.3f}" if k in m else "-" for k in names]
        v = r.get("ratio_auto")
        ci = r.get("ratio_auto_ci") or [None, None]
        sp = pr.get("spread_fastest")
        d = r.get("ratio_auto_defaults")
        lines.append([r["op"], str(r["size"])] + ms + [
            r["routes"]["auto"], str(r["fastest_eligible"]), str(pr.get("n", "-")),
            "-" if v is None else f"{v:.3f}" + ("!" if v > limit else ""),
            "-" if ci[0] is None else f"{ci[0]:.2f}-{ci[1]:.2f}",
            "-" if sp is None else f"{sp[0]:.2f}-{sp[1]:.2f}", str(r.get("verdict")),
            "-" if d is None else f"{d:.2f}", "yes" if r["agree"] else "NO"])
    w = [max(len(x[i]) for x in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w[i]) if i > 0 else c.ljust(w[i]) for i, c in enumerate(x))
                     for x in lines)


__all__ = ["WARM_BELOW_S", "median_ci", "paired", "spread", "survey", "table", "verdict"]
