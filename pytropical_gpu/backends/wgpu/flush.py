"""What a float GEMM may run on an adapter that flushes subnormals to zero (WGSL allows it).

The known-answer check (:mod:`.selfcheck`) finds out whether the adapter flushes. On one that does,
a float call is refused (:class:`~pytropical_gpu.errors.SubnormalFlushError`, a ValueError) when its
answer could differ from numpy's, decided from operand facts alone, before any upload:

* an operand (a, b or c) holds subnormals (every float semiring: even min_max/max_min, where
  nothing is computed, a flushing adapter returns them as 0);
* ⊗ = plus (min_plus, max_plus): a and b both hold a non-zero finite value below 2**-102 in
  magnitude: only then can a sum of two normal floats cancel into the subnormal range (a float32
  sum is a multiple of the smaller ulp of its terms; a subnormal sum needs two terms of nearly
  equal magnitude whose ulp is below 2**-126, i.e. both below 2**-103);
* ⊗ = times (min_times, max_times): (smallest non-zero |a|) * (smallest non-zero |b|) < 2**-126,
  computed in float64: some product could underflow to a subnormal.

plus_times is a tolerance semiring (float sums are not exact on any GPU) and is held to the operand
rule only. A user-defined float semiring's expressions cannot be checked at all: TypeError.
The facts are :class:`pytropical_gpu.facts.Facts` (a resident :class:`~.array.WgpuArray` keeps its
own from ``to_device``), learned once per call by the operation, never by a scan here.
"""

from __future__ import annotations

import numpy as np

from ...errors import SubnormalFlushError
from ...facts import Facts
from ...semirings import Semiring

#: below this magnitude (in both a and b) a float32 sum may cancel to a subnormal
PLUS_LIMIT = 2.0**-102
#: the smallest normal float32
TINY = float(np.finfo(np.float32).tiny)
FIX = "use backend='cuda' or backend='cpu' (exact), or set the subnormals to zero first"


def reason(op: str, sr: Semiring, dt: np.dtype, known: dict[str, Facts | None],
           adapter: str) -> tuple[type, str] | None:
    """``(exception type, message)`` when ``op`` with operands of these facts ({name: Facts or
    None}) could differ from numpy on a flushing adapter, else None. Only float dtypes matter."""
    if np.dtype(dt).kind != "f":
        return None
    where = f"the wgpu adapter {adapter} flushes subnormal floats to zero (WGSL allows it)"
    if not sr.builtin:
        return TypeError, (f"{op}: {where}, so the user-defined float semiring {sr.name!r} cannot be "
                           "guaranteed exact (its expressions may produce or meet subnormals); use "
                           "backend='cuda' or backend='cpu'")
    smallest = {}
    for name, f in known.items():
        if f is None:
            continue
        n = f.subnormal
        smallest[name] = f.min_abs
        if n:
            return SubnormalFlushError, (
                f"{op}: {name} holds {n} subnormal value{'s' if n != 1 else ''} (|x| < {TINY:.6g}) "
                f"and {where}: they would be read as 0; {FIX}")
    sa, sb = smallest.get("a", np.inf), smallest.get("b", np.inf)
    if sr.mul_op == "plus" and sa < PLUS_LIMIT and sb < PLUS_LIMIT:
        return SubnormalFlushError, (
            f"{op}: {sr.name}: a and b hold values as small as {sa:.6g} and {sb:.6g}, so a sum "
            f"can be subnormal, and {where}: such a result would come back as 0; {FIX}")
    if sr.mul_op == "times" and sr.add_op != "plus" and sa * sb < TINY:
        return SubnormalFlushError, (
            f"{op}: {sr.name}: a and b hold values as small as {sa:.6g} and {sb:.6g}, so a product "
            f"can be subnormal, and {where}: such a result would come back as 0; {FIX}")
    return None

__all__ = ["FIX", "PLUS_LIMIT", "TINY", "reason"]
