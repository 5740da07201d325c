"""``with ctx.batch():`` — operations queued on the device and synchronised once (the seed's GpuBatch).

On wgpu the commands of every operation inside the block are recorded into one list and submitted
as one command buffer when the block ends (or earlier, when a host value is demanded: a ``dot``,
``.get()``, an operation on host operands that returns numpy); the block then waits for the device
once. On cuda everything already runs in order on the caller's current stream: the block removes
the host waits of validation (below) and synchronises that stream once at its end. (A CUDA graph
was not added: the launches are already asynchronous, so a graph could only save their CPU launch
cost, and a graph must be re-captured whenever a shape or an operand changes.)

Validation never waits for the device inside a block. A check that needs a fact of a device
operand not yet known (NaN in a float GEMM operand computed earlier in the block, the subnormal rule
of a flushing wgpu adapter) is queued with :func:`defer` and run once at the block's end, raising
the exception the eager call would have raised, with the same message naming the operation; the
block's results are then invalid (on wgpu, reading one raises RuntimeError). Checks on what is
known at the call (shapes, dtypes, operands put on the device with ``to_device``) still raise at the
call. Kernel choices that would need such a fact take the path that is exact for every input (the
guarded ⊗ on wgpu, the non-DPX int32 kernel on cuda).

Blocks nest: an inner block belongs to the outermost one, which submits and checks. An exception in
the block's body discards what was queued (wgpu: nothing recorded is submitted, and the block's
results are marked invalid) and leaves the context usable. A block holds the wgpu engine's lock
while it is open: other threads' wgpu calls wait for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("pytropical_gpu")
_local = threading.local()


def current() -> Batch | None:
    """The batch open on this thread (the outermost one), else None."""
    return getattr(_local, "batch", None)


def defer(check: Callable[[], None], *known: Any) -> bool:
    """Inside a batch, queue ``check`` (it raises when the call is invalid) for the batch's end when
    one of the facts ``known`` (:class:`~pytropical_gpu.facts.Facts`) is a device fact not yet
    known; their device reductions start now. Returns False (run the check now) otherwise."""
    b = current()
    pending = [f for f in known if f is not None and not f.computed and f.on_device]
    if b is None or not pending:
        return False
    for f in pending:
        f.start()
    b.checks.append(check)
    b.facts += pending
    return True


def pending(*known: Any) -> bool:
    """True inside a batch when one of these facts would have to wait for the device."""
    return current() is not None and any(f is not None and not f.computed and f.on_device
                                         for f in known)


class Batch:
    """The context manager :meth:`HybridContext.batch` returns; see the module docstring.

    Attributes: ``target`` ("wgpu", "cuda" or None: nothing to queue), ``ops`` (submissions
    recorded on wgpu, usually one per operation, for tests and benchmarks) and ``checks`` (the
    deferred checks)."""

    def __init__(self, target: str | None, engine: Any = None):
        self.target = target
        self._wgpu = engine  # the wgpu engine for target "wgpu" (the context finds it)
        self.checks: list[Callable[[], None]] = []
        self.facts: list = []  # the facts the deferred checks ask
        self.ops = 0
        self._outer: Batch | None = None
        self._engine = None
        self._start = 0

    def __enter__(self) -> Batch:
        self._outer = current()
        if self._outer is not None:  # nested: part of the outer block
            return self
        if self.target == "wgpu":
            eng = self._wgpu
            eng.lock.__enter__()
            try:
                eng.record()
            except BaseException:
                eng.lock.__exit__(None, None, None)
                raise
            self._engine = eng
            self._start = eng.stats.get("recorded", 0)
        _local.batch = self
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._outer is not None:
            return False
        _local.batch = None
        checks, self.checks = self.checks, []
        known, self.facts = self.facts, []
        eng, self._engine = self._engine, None
        try:
            if eng is not None:
                self.ops = eng.stats.get("recorded", 0) - self._start
                made = eng.stop(submit=exc_type is None)
                if exc_type is not None:
                    _poison(made, f"the batch was discarded ({exc_type.__name__} in its body)")
                    return False
                eng.sync()
                readers = [f._reader for f in known if hasattr(f._reader, "read_many")]
                if readers:  # facts computed on the device: one read for all of them
                    readers[0].read_many(readers)
            elif self.target == "cuda" and exc_type is None:
                _cuda_sync()
            if exc_type is not None:
                return False
            try:
                for check in checks:
                    check()
            except Exception as e:
                if eng is not None:
                    _poison(made, f"the batch failed ({type(e).__name__}: {e})")
                raise
        finally:
            if eng is not None:
                eng.lock.__exit__(exc_type, exc, tb)
        return False


def _poison(made: list, why: str) -> None:
    """Mark the results made in a failed or discarded batch: reading them raises."""
    for ref in made:
        s = ref()
        if s is not None:
            s.error = why
    log.info("wgpu batch: %d results marked invalid: %s", len(made), why)


def _cuda_sync() -> None:
    import cupy

    cupy.cuda.get_current_stream().synchronize()


__all__ = ["Batch", "current", "defer", "pending"]
