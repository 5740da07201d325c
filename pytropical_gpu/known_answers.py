"""Tiny problems with hand-computed answers, as data: one table for every check that runs them.

The wgpu backend runs :data:`GEMM` on an adapter before it uses it (``backends/wgpu/selfcheck.py``);
``python -m pytropical_gpu info`` runs every table here on every available backend
(``pytropical_gpu.diagnostics``). This module imports nothing but numpy.
"""

from __future__ import annotations

import numpy as np

_F = np.float32
_INF = np.inf

#: (name, semiring, a, b, exact answer): every backend must match these bit for bit
GEMM = [
    ("min_plus f32 with inf", "min_plus",
     np.array([[0, 1, _INF], [2, _INF, 3]], _F), np.array([[0, 3], [1, 0], [_INF, -1]], _F),
     np.array([[0, 1], [2, 2]], _F)),
    ("max_times f32 with inf", "max_times",
     np.array([[_INF, 2], [-1, 0.5]], _F), np.array([[1, -2], [3, 4]], _F),
     np.array([[_INF, 8], [1.5, 2]], _F)),
    # zeros are ordered, -0 < +0 (zero_order.py): terms +0 + -0 = +0 and -0 + -0 = -0 tie at zero
    ("max_plus f32 ordered zeros", "max_plus",
     np.array([[0.0, -0.0], [-0.0, -0.0]], _F), np.array([[-0.0, -1], [-0.0, -0.0]], _F),
     np.array([[0.0, -0.0], [-0.0, -0.0]], _F)),
    # terms max(+0, -0) = +0 and max(-0, -0) = -0: the min is -0; max(+0, +0) alone: +0
    ("min_max f32 ordered zeros", "min_max",
     np.array([[0.0, -0.0], [0.0, 1]], _F), np.array([[-0.0, 0.0], [-0.0, 2]], _F),
     np.array([[-0.0, 0.0], [0.0, 0.0]], _F)),
    ("max_plus int32", "max_plus",
     np.array([[1, -7], [2**30, 4]], np.int32), np.array([[3, 0], [-1, 2**20]], np.int32),
     np.array([[4, 2**20 - 7], [2**30 + 3, 2**30]], np.int32)),
    ("bor_band uint32", "bor_band",
     np.array([[0xF0F0F0F0, 0x0000FFFF]], np.uint32),
     np.array([[0xFF00FF00, 0xFFFFFFFF], [0x12345678, 0]], np.uint32),
     np.array([[0xF000F678, 0xF0F0F0F0]], np.uint32)),
]


#: (a, b, a ∨.∧ b) of bool matrices
ANDOR = (np.array([[True, False], [False, False]]), np.array([[False, True], [True, False]]),
         np.array([[False, True], [False, False]]))

#: two ternary vectors (int8 trits), their bind (elementwise product) and their dot
TRITS = (np.array([1, -1, 0, 1, -1], np.int8), np.array([1, 1, -1, -1, 0], np.int8))
BIND = np.array([1, -1, 0, -1, 0], np.int8)
DOT = -1

__all__ = ["ANDOR", "BIND", "DOT", "GEMM", "TRITS"]
