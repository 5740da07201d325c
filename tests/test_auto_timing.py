"""bench_auto's timing method (benchmarks/_auto_timing.py): the median's interval against scipy's
binomial, and the pairs phase's promise that every timed call has the same kind of predecessor."""

from __future__ import annotations

import itertools

import pytest

from benchmarks import _auto_timing as timing

scipy_stats = pytest.importorskip("scipy.stats")


@pytest.mark.parametrize("n", list(range(1, 41)) + [57, 100, 199, 200])
def test_median_ci_ranks_are_the_widest_binomial_ones(n):
    """The interval's ranks: coverage at least 95 % and the next narrower pair below it (scipy's
    binomial, an independent computation); fewer than 6 values: the extremes, coverage 1-2^(1-n)."""
    xs = [float(v) for v in range(n, 0, -1)]  # unsorted input, value == rank
    lo, hi, cover = timing.median_ci(xs)
    j = int(lo)
    assert hi == n + 1 - j
    exact = 1.0 - 2.0 * scipy_stats.binom.cdf(j - 1, n, 0.5)
    assert cover == pytest.approx(exact, rel=1e-12, abs=1e-12)
    if n >= 6:
        assert exact >= 0.95
        assert 1.0 - 2.0 * scipy_stats.binom.cdf(j, n, 0.5) < 0.95 or j + 1 > n // 2
    else:
        assert (j, cover) == (1, pytest.approx(1.0 - 2.0 ** (1 - n)))


@pytest.mark.parametrize("n", [201, 1000, 5000])
def test_median_ci_large_n_close_to_exact(n):
    """Beyond 200 values the normal approximation: the interval's exact coverage 94-97 %."""
    lo, hi, _ = timing.median_ci(list(range(1, n + 1)))
    exact = 1.0 - 2.0 * scipy_stats.binom.cdf(lo - 1, n, 0.5)
    assert 0.94 <= exact <= 0.97 and hi == n + 1 - lo


def test_median_ci_empty_and_ties():
    assert timing.median_ci([])[2] == 0.0
    assert timing.median_ci([2.0] * 9)[:2] == (2.0, 2.0)


def test_verdict():
    assert timing.verdict(0.9, 1.1, 1.1) == "within"
    assert timing.verdict(1.0, 1.2, 1.1) == "noise"
    assert timing.verdict(1.11, 1.2, 1.1) == "over"


def _traced(monkeypatch, names):
    """Calls that log their name, and a clock that logs "T" at each read (1 us per read)."""
    log: list[str] = []
    ticks = itertools.count()
    monkeypatch.setattr(timing.time, "perf_counter", lambda: (log.append("T"), next(ticks) * 1e-6)[1])
    return log, {k: (lambda k=k: log.append(k)) for k in names}


@pytest.mark.parametrize("route", ["cuda", "cpu"])
def test_paired_every_timed_call_follows_its_warmup_after_a_reference_call(monkeypatch, route):
    """auto on the reference's backend or on another: each timed call (between two clock reads)
    right after its own untimed call, which comes right after a call on the reference backend."""
    log, calls = _traced(monkeypatch, ["auto", "cuda", "cpu"])
    runs_on = {"auto": route, "cuda": "cuda", "cpu": "cpu"}
    times = timing.paired(calls, runs_on, "cuda", cell_s=0.0, seed=1, min_rounds=7)
    assert all(len(v) == 7 for v in times.values())
    # the log after the warm-up calls (T name T each) and the cell's end time (T): per timed call
    # [a call of the reference, only when the last call ran elsewhere] X T X T, and a T per round
    i, last, seen = len(calls) * 3 + 1, runs_on["cpu"], []
    while i < len(log):
        if log[i] == "T":  # the round's time check
            i += 1
            continue
        if last != "cuda":
            assert log[i] == "cuda", (i, log[i - 4:i + 4])  # back on the reference backend first
            i += 1
        x = log[i]
        assert log[i + 1:i + 4] == ["T", x, "T"], (i, log[i - 4:i + 4])  # warm-up, then timed
        seen.append(x)
        last, i = runs_on[x], i + 4
    assert sorted(seen) == sorted(["auto", "cuda", "cpu"] * 7)


def test_survey_medians_and_predecessors(monkeypatch):
    _, calls = _traced(monkeypatch, ["a", "b", "c"])
    after: dict = {}
    med, host = timing.survey(calls, 20, 0.0, seed=3, gpu=frozenset({"b"}), after=after, min_rounds=4)
    assert set(med) == set(host) == set(after) == {"a", "b", "c"}
    assert all(v > 0 for v in med.values())
    assert all(set(d) <= {"a", "b", "c"} for d in after.values())
