"""pytropical_gpu: semiring GEMM and bitsliced ternary VSA on GPUs (WGSL via wgpu, CUDA via CuPy).

>>> import numpy as np, pytropical_gpu as tg
>>> tg.matmul(np.array([[1, 2]], np.int32), np.array([[3], [4]], np.int32), "max_plus", backend="cpu")
array([[6]], dtype=int32)
"""

from . import calibration as _calibration
from .api import andor_matmul, default_context, matmul, pack_cols, pack_rows
from .backends import available_backends, get_backend
from .errors import BackendUnavailableError, SubnormalFlushError
from .hybrid import HybridContext
from .semirings import Semiring, get_semiring, semiring_names
from .similarity import cosine, cosine_similarity, dot, dot_similarity, search
from .types import PackedCols, PackedRows, SoftTernaryVec, TernaryVec, soft
from .vsa import accumulate, bind, bundle, harden, multiset, permute, unbind

# soft.accumulate / soft.harden delegate to the verbs (the types never import upward)
soft.VERBS.update(accumulate=accumulate, harden=harden)
# ctx.calibrate() runs the calibration module, which times the context's verbs (it sits above them)
HybridContext._calibrate = staticmethod(_calibration.calibrate)

__version__ = "0.1.0"  # the one version source: pyproject.toml reads it (hatch dynamic version)

__all__ = [
    "BackendUnavailableError", "HybridContext", "PackedCols", "PackedRows", "Semiring",
    "SoftTernaryVec", "SubnormalFlushError", "TernaryVec", "accumulate", "andor_matmul",
    "available_backends", "bind", "bundle", "cosine", "cosine_similarity", "default_context", "dot",
    "dot_similarity", "get_backend", "get_semiring", "harden", "matmul", "multiset", "pack_cols",
    "pack_rows", "permute", "search", "semiring_names", "unbind",
]
