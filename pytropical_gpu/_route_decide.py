"""How a :class:`~pytropical_gpu.routing.Router` decides one call (:class:`Decide`, its mixin).

Two paths that decide alike: the lean one (:meth:`Decide._be`) reads plain host operands' route key
and size (:mod:`._route_lean`) and looks them up in the cuts and route table it cached; every other
call (resident or unusual operands, a matmul a GPU may refuse, the first call after the table
changed) takes the full one (:meth:`Decide._backend_for`): measure (:mod:`._route_measure`), pick by
where data lives or by the table, then a matmul's last word (:mod:`._route_exact`).
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

import numpy as np

from ._route_exact import exact, surely_exact
from ._route_lean import SIZE as _LEAN_SIZE
from ._route_lean import cpu_cuts
from ._route_measure import _dtype_name, _is_int, _lives, _measure, _plain
from .backends import Backend, get_backend, probe
from .thresholds import DEFAULTS

#: other names ``route`` accepts for an operation (the public verbs that share a threshold)
OP_ALIASES: dict[str, str] = {"unbind": "bind", "dot_similarity": "dot", "cosine_similarity": "cosine",
                              "multiset": "bundle", "pack_rows": "pack", "pack_cols": "pack"}


class Decide:
    """The per-call decision of a Router: what its ``backend``, ``gpu``, route table (``_table``,
    ``_routes()``) and lean state (``_lean``) say about one call's operands."""

    backend: str
    gpu: str | None
    _table: Any
    _gpu: Any
    _lean: tuple

    #: "auto"'s last word on a matmul sent to a GPU (:func:`._route_exact.exact`)
    _exact = staticmethod(exact)

    def backend_for(self, op: str, *operands: Any, backend: str | None = None,
                    semiring: Any = None) -> Backend:
        """The backend that runs ``op`` on ``operands`` (as the verb received them).

        "auto" with plain host operands is decided from their size (:mod:`._route_lean`): one
        comparison on the cpu side, else a bisection (a matmul only when the GPU runs its dtype
        exactly whatever the data: :func:`._route_exact.surely_exact`); every other call by
        :meth:`_backend_for`."""
        return self._be(op, operands, backend, semiring)

    def _be(self, op: str, operands: tuple, backend: str | None, semiring: Any = None) -> Backend:
        """:meth:`backend_for` with positional arguments (the verbs' hot path). The GPU side is
        lean too: on the H200 host the full path took 2.7-5.5 us (``backend="cuda"``: 0.55)."""
        if backend is None and self.backend == "auto":
            table, gpu, cuts, cpu = self._lean
            if table is self._table and gpu is self._gpu:
                f = _LEAN_SIZE.get(op)
                ks = None if f is None else f(operands)
                if ks is not None:
                    key, size = ks
                    if size < cuts[key]:
                        return cpu
                    if table is not None:
                        starts, names = table[key]
                        be = get_backend(names[bisect_right(starts, size) - 1])
                        if op != "matmul" or be is cpu or surely_exact(be, _dtype_name(operands[0])):
                            return be
        return self._backend_for(op, operands, backend, semiring)

    def _backend_for(self, op: str, operands: tuple, backend: str | None, semiring: Any) -> Backend:
        if backend is not None:
            return get_backend(backend)
        if self.backend != "auto":
            return get_backend(self.backend)
        key = OP_ALIASES.get(op, op)
        if op == "matmul" and _is_int(operands[0]):
            key = "matmul_int"  # calibrated on its own (int32 max_plus: DPX on Hopper)
        seg = None if self._table is None else self._table[key]
        if (self.gpu is None or (seg is not None and len(seg[1]) == 1)) and _plain(operands):
            # one backend for every size (no GPU, or a one-segment table) and nothing resident:
            # no size needed (a pack of 256 bools takes 10 us on cpu; routing must not add 10%)
            be = get_backend("cpu" if seg is None else seg[1][0])
        else:
            size, arrays = _measure(op, operands)
            be = self._pick(key, size, *arrays)
        if op == "matmul" and be.name != "cpu":
            a, b, c = (tuple(operands) + (None,))[:3]
            be = self._exact(be, semiring, {"a": a, "b": b, "c": c})
        self._relean()
        return be

    def _relean(self) -> None:
        """Rebuild the lean path's cuts when the table or the GPU changed since they were made."""
        table, gpu = self._lean[:2]
        if table is self._table and gpu is self._gpu:
            return
        if self.gpu is not None:
            self._routes()
        self._lean = (self._table, self._gpu, cpu_cuts(self._table, DEFAULTS),
                      get_backend("cpu"))

    def _pick(self, key: str, size: int, *arrays: Any) -> Backend:
        """"auto": where cupy / wgpu operands live, else by the route table (the hot path of every
        auto call: a type check per operand and one bisection, about a microsecond)."""
        for x in arrays:
            if type(x) is not np.ndarray:
                lives = _lives(list(arrays))
                if lives == "cuda" and probe("cuda")[0]:
                    return get_backend("cuda")  # data already on the device: no host round trip
                if lives == "wgpu":
                    return get_backend("wgpu")  # resident wgpu operands: run where they live
                break
        table = self._table
        if table is None:
            if self.gpu is None:
                return get_backend("cpu")
            table = self._routes()
        starts, names = table[key]
        return get_backend(names[bisect_right(starts, size) - 1])


__all__ = ["OP_ALIASES", "Decide"]
