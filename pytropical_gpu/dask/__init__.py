"""pytropical_gpu beyond one GPU: semiring GEMM, item-memory search and bundling on dask arrays.

Install with ``pip install 'pytropical_gpu[dask]'`` (and ``dask-cuda`` for a GPU cluster). The
library stays the block kernel: every block product, every shard's search runs through
:mod:`pytropical_gpu` on the chunk's own backend (numpy chunks on ``cpu``, cupy chunks on
``cuda``), and dask's ``blockwise`` and tree reductions combine the blocks, so the same code runs on
dask's threads scheduler on a laptop and on a ``dask_cuda.LocalCUDACluster`` (one worker per GPU).
Results are lazy dask arrays; ``.compute()`` (or ``dask.compute``) runs them.

An item memory is a :class:`~pytropical_gpu.TernaryVec` whose planes are dask arrays sharded by
rows: :func:`from_ternary` shards an in-memory one, :func:`from_planes` wraps dask planes that were
built on the workers (each shard is validated where it lives, once if the memory is persisted).

>>> import numpy as np, pytropical_gpu as tg, pytropical_gpu.dask as tgd
>>> mem = tgd.from_ternary(tg.TernaryVec.from_array(np.array([[1, 1], [1, -1], [1, 1]], np.int8)),
...                        chunks=2)
>>> idx, score = tgd.search(tg.TernaryVec.from_array(np.array([1, 1], np.int8)), mem, k=2)
>>> idx.compute(scheduler="threads").tolist(), score.compute(scheduler="threads").tolist()
([0, 2], [2, 2])
"""

from ._gemm import matmul
from ._vsa import bundle, from_planes, from_ternary, search

__all__ = ["matmul", "search", "bundle", "from_ternary", "from_planes"]
