"""Issue 15's one-query CUDA search row, session 4, part d: every variant in one run, checks first.

Memory 200,000 x 10,000 trits resident (cupy planes), k = 10, 1 query (64 queries: the s4c
defaults, checked and timed as before). Runs bench_search_s4c's parts (odd-size checks against the
cpu backend with ties, falling-score call pairs, the full size against CuPy float32, then CUDA
events in --rounds rounds) with these one-query variants: the s4c default (tma3, 2 blocks a SM,
raw launch, floor merge, results a call ahead) against the merge as a programmatic dependent launch
(search_pdl.PDL_MERGE) with tma3 / tma3v / tma4v and with 3 blocks a SM. Then a profile of the
public call's host work with ``_search`` stubbed (where the operation layer's us go).

    python benchmarks/bench_search_s4d.py [--quick] [--json PATH]
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_search_s4 as s4  # noqa: E402
import bench_search_s4c as s4c  # noqa: E402
from bench_search import random_vecs  # noqa: E402
from bench_search_plan import log  # noqa: E402

import pytropical_gpu as tg  # noqa: E402
from pytropical_gpu import TernaryVec  # noqa: E402
from pytropical_gpu.backends.cuda import search_pdl  # noqa: E402

_BASE = {"sl.SCAN": "tma3", "sl.TMA_BLOCKS": 2, "fused.RAW_LAUNCH": True, "fused.FLOOR_MERGE": True,
         "fused.OUT_AHEAD": True, "pdl.PDL_MERGE": False}
ONE = {"tma3 floor ahead (s4c default)": _BASE,
       "tma3 pdl merge": {**_BASE, "pdl.PDL_MERGE": True},
       "tma3v pdl merge": {**_BASE, "sl.SCAN": "tma3v", "pdl.PDL_MERGE": True},
       "tma4v pdl merge": {**_BASE, "sl.SCAN": "tma4v", "pdl.PDL_MERGE": True},
       "tma3 3/SM pdl merge": {**_BASE, "sl.TMA_BLOCKS": 3, "pdl.PDL_MERGE": True}}
MANY = {"s4c default": {}}
s4.MODS["pdl"] = search_pdl
s4.ONE = s4c.ONE = ONE
s4.MANY = s4c.MANY = MANY


def host_profile(k: int = 10) -> str:
    """cProfile of 20,000 public one-query calls (resident cupy planes, 256 rows) with the
    backend's ``_search`` stubbed: the operation layer's host work by function."""
    import cupy as cp

    from pytropical_gpu.backends.cuda.backend import CudaBackend

    mem = random_vecs(256, 10_000, 1)
    mc = TernaryVec._trusted(cp.asarray(mem.pos), cp.asarray(mem.neg), mem.dim)
    qc = TernaryVec._trusted(mc.pos[:1], mc.neg[:1], mem.dim)
    fixed = (cp.zeros((1, k), "int64"), cp.zeros((1, k), "int64"))
    orig = CudaBackend._search
    CudaBackend._search = lambda self, qp, qn, mp, mn, kk: fixed
    try:
        for _ in range(2000):
            tg.search(qc, mc, k=k, backend="cuda")
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(20_000):
            tg.search(qc, mc, k=k, backend="cuda")
        prof.disable()
    finally:
        CudaBackend._search = orig
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(16)
    return text.getvalue()


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    rc = s4c.main(argv)
    prof = host_profile()
    log(f"host profile, public call with _search stubbed (20,000 calls):\n{prof}")
    if "--json" in argv:
        path = Path(argv[argv.index("--json") + 1])
        out = json.loads(path.read_text())
        out["host_profile_stubbed"] = prof
        path.write_text(json.dumps(out, indent=1))
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
