"""The workloads calibrate() times: for each operation a size sweep and, per step, random operands
and one call through the public API (numpy in, numpy out), with its size in HybridContext's route
units. Kept apart so the benchmark runner can time the very same calls."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_MAT_N = tuple(2 ** j for j in range(2, 14))     # matmul side n: 4 .. 8192 (work n^3)
_BOOL_N = tuple(2 ** j for j in range(4, 15))    # andor / pack side n: 16 .. 16384
_WORDS = tuple(4 ** j for j in range(2, 13))     # VSA words: 16 .. 2^24
_ROWS = tuple(4 ** j for j in range(0, 11))      # search memory rows: 1 .. 2^20 (128 words each)


def _tv(rng: np.random.Generator, words: int, rows: int | None = None) -> Any:
    from .types import TernaryVec

    shape = (words,) if rows is None else (rows, words)
    pos = rng.integers(0, 1 << 32, shape, dtype=np.uint32)
    neg = rng.integers(0, 1 << 32, shape, dtype=np.uint32) & ~pos
    return TernaryVec(pos, neg, 32 * words)


def _soft(rng: np.random.Generator, words: int) -> tuple[Any, Any]:
    from .types import SoftTernaryVec

    soft = SoftTernaryVec(32 * words, bits=3)
    h = _tv(rng, words)
    soft.accumulate(h, backend="cpu")
    return soft, h


def build(op: str, p: int, rng: np.random.Generator,
          ctx: Any = None) -> tuple[Callable[[str | None], Any], int]:
    """(call(backend), size in route units) for ``op`` at sweep step ``p``: the verbs of ``ctx``
    (default: the default context), so a call costs what a user's call costs (the same routing,
    checks and transfers); ``call(None)`` lets the context route it."""
    from .hybrid import default_context

    tg = default_context() if ctx is None else ctx
    size = build_size(op, p)

    if op in ("matmul", "matmul_int"):
        if op == "matmul":  # float32 min_plus: shortest paths
            a, b, sr = rng.random((p, p), np.float32), rng.random((p, p), np.float32), "min_plus"
        else:  # int32 max_plus: the integer GEMM path (DPX on Hopper)
            a = rng.integers(-1000, 1000, (p, p), dtype=np.int32)
            b = rng.integers(-1000, 1000, (p, p), dtype=np.int32)
            sr = "max_plus"
        return (lambda be: tg.matmul(a, b, sr, backend=be)), size
    if op == "andor_matmul":
        x, y = rng.random((p, p)) < 0.1, rng.random((p, p)) < 0.1
        return (lambda be: tg.andor_matmul(x, y, backend=be)), size
    if op == "pack":
        x = rng.random((p, p)) < 0.5
        return (lambda be: tg.pack_rows(x, backend=be)), size
    if op == "search":
        mem, q = _tv(rng, 128, rows=p), _tv(rng, 128)
        return (lambda be: tg.search(q, mem, 1, backend=be)), size
    if op in ("accumulate", "harden"):
        soft, h = _soft(rng, p)
        if op == "accumulate":
            return (lambda be: tg.accumulate(soft, h, backend=be)), size
        return (lambda be: tg.harden(soft, 1, backend=be)), size
    if op == "bundle":
        vs = _tv(rng, p, rows=16)
        return (lambda be: tg.bundle(vs, backend=be)), size
    a = _tv(rng, p)
    if op == "permute":
        return (lambda be: tg.permute(a, 5, backend=be)), size
    b = _tv(rng, p)
    # the verb looked up at call time, as the other cases do: a context switched between calls
    # (bench_auto's calibrated and defaults-only ones) must route each call itself
    return (lambda be: getattr(tg, op)(a, b, backend=be)), size


def build_size(op: str, p: int) -> int:
    """The route-units size of :func:`build`'s call at step ``p`` (nothing is built)."""
    if op in ("matmul", "matmul_int"):
        return p ** 3
    if op == "andor_matmul":
        return p * p * p // 32
    if op == "pack":
        return p * p
    if op == "search":
        return 128 * (p + 1)
    if op in ("accumulate", "harden"):
        return 3 * p
    if op == "bundle":
        return 16 * p
    return p if op == "permute" else 2 * p


def steps(op: str) -> tuple[int, ...]:
    if op in ("matmul", "matmul_int"):
        return _MAT_N
    if op in ("andor_matmul", "pack"):
        return _BOOL_N
    return _ROWS if op == "search" else _WORDS


__all__ = ["build", "build_size", "steps"]
