"""The known-answer check every adapter passes before the wgpu backend uses it.

It runs when the engine first opens an adapter (:func:`.device.get_engine`), through the real GEMM
path (template rendering, pipeline compile, upload, dispatch, read-back), on tiny problems with
hand-computed answers (:data:`pytropical_gpu.known_answers.GEMM`, which ``info`` runs on every
backend too): float32 min_plus with ∞, max_times with ∞, int32 max_plus, uint32 bor_band.
An adapter that gets one wrong (a null device returning uninitialised memory, a broken driver) is
never used.

It also finds out whether the adapter flushes subnormal floats to zero, which WGSL allows (an
NVIDIA H200 through Vulkan does): three probes whose exact answers are subnormal (a subnormal
operand passed through min_max, a min_plus sum and a max_times product of normal values that
underflow). Each must come back exact, or as zero on a flushing adapter; anything else fails the
check. A flushing adapter stays usable; :mod:`.flush` then decides which calls it may run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from ...known_answers import GEMM
from ...semirings import get_semiring
from . import gemm

log = logging.getLogger("pytropical_gpu")

_F = np.float32
_INF = np.inf
_SUB = float(2.0**-130)  # subnormal in float32 (the smallest normal is 2**-126)


@dataclass(frozen=True)
class SelfCheck:
    """The outcome: ``ok``; ``flushes_subnormals``; per case "exact" / "flushed" / "FAIL: ..."."""

    ok: bool
    flushes_subnormals: bool
    cases: dict = field(default_factory=dict)

    @property
    def reason(self) -> str:
        bad = [f"{k}: {v}" for k, v in self.cases.items() if v.startswith("FAIL")]
        return "; ".join(bad) if bad else f"{len(self.cases)} cases pass"


def run_gemm(eng, semiring: str, a, b) -> np.ndarray:
    """``a ⊗ b`` through the engine's GEMM kernels directly: no operand checks (a private path for
    this check and for tests of the raw kernels' behaviour on subnormals)."""
    a3, b3 = np.ascontiguousarray(a)[None], np.ascontiguousarray(b)[None]
    with eng.lock:
        return gemm.gemm(eng, a3, b3, get_semiring(semiring), None, False)[0][0]


#: (name, semiring, a, b, exact answer): must match bit for bit on every adapter
EXACT = GEMM

#: (name, semiring, a, b, exact answer): exact, or zero where the adapter flushes subnormals
FLUSH_PROBES = [
    ("subnormal operand (min_max)", "min_max",
     np.array([[_SUB, 1]], _F), np.array([[-1], [2]], _F), np.array([[_SUB]], _F)),
    ("subnormal sum of normals (min_plus)", "min_plus",
     np.array([[1.5 * 2.0**-126, _INF]], _F), np.array([[-(2.0**-126)], [5]], _F),
     np.array([[2.0**-127]], _F)),
    ("subnormal product of normals (max_times)", "max_times",
     np.array([[2.0**-70]], _F), np.array([[2.0**-60]], _F), np.array([[_SUB]], _F)),
]

#: judged only on an adapter that keeps subnormals (a flushing one makes inf * 0 = NaN here)
INF_TIMES_SUBNORMAL = ("inf x subnormal (max_times)", "max_times",
                       np.array([[_INF, 1]], _F), np.array([[_SUB], [-2]], _F),
                       np.array([[_INF]], _F))


def _same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    got = np.asarray(got)
    return got.shape == want.shape and got.dtype == want.dtype and bool(
        np.array_equal(got.view(np.uint8), want.view(np.uint8)))


def _fail(got, want) -> str:
    return f"FAIL: got {np.asarray(got).tolist()}, expected {want.tolist()}"


def run(eng) -> SelfCheck:
    """Run every case on ``eng`` (an :class:`~.engine.Engine` on a freshly opened adapter)."""
    cases: dict[str, str] = {}
    flushed = False
    try:
        for name, sr, a, b, want in EXACT:
            got = run_gemm(eng, sr, a, b)
            cases[name] = "exact" if _same_bits(got, want) else _fail(got, want)
        for name, sr, a, b, want in FLUSH_PROBES:
            got = run_gemm(eng, sr, a, b)
            if _same_bits(got, want):
                cases[name] = "exact"
            elif got.shape == want.shape and not np.asarray(got).any():
                cases[name] = "flushed to zero"
                flushed = True
            else:
                cases[name] = _fail(got, want)
        name, sr, a, b, want = INF_TIMES_SUBNORMAL
        got = run_gemm(eng, sr, a, b)
        if _same_bits(got, want):
            cases[name] = "exact"
        elif flushed:
            cases[name] = f"not judged (the adapter flushes subnormals; got {got.tolist()})"
        else:
            cases[name] = _fail(got, want)
    except Exception as e:  # noqa: BLE001 - a driver error is a failed check, with its message
        cases["error"] = f"FAIL: {type(e).__name__}: {e}"
    ok = not any(v.startswith("FAIL") for v in cases.values())
    res = SelfCheck(ok, flushed and ok, cases)
    log.info("wgpu: known-answer check on %s: %s%s", eng.rt.info.name,
             "passed" if ok else "FAILED: " + res.reason,
             " (flushes subnormals)" if res.flushes_subnormals else "")
    return res


__all__ = ["EXACT", "FLUSH_PROBES", "SelfCheck", "run", "run_gemm"]
