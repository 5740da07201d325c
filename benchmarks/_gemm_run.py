"""What the CUDA GEMM benches (sessions 4 to 8) set up before their checks, in one place: the
run's record and timer, the bench's tile modules and their timed compile, the split-k plan a
tile role is checked with, and one check of a tile's output against its reference.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from bench_gemm_sweep import Timer, precompile

from pytropical_gpu.backends.cuda import gemm_launch, kernels


def run_record(cp, be, path):
    """``(timer, out, rows, failed, save)`` of one run.

    ``out`` holds the device, the timed ``rows``, the checks and the failed variants; ``failed`` is
    a set of tuples (a failed variant is not timed); ``save()`` writes ``out`` to ``path`` as JSON
    with ``failed`` sorted, after every row, so a run cut by its time limit keeps what it measured.
    ``timer`` is ``bench_gemm_sweep.Timer`` on ``cp``.
    """
    out = {"device": be.describe(), "rows": [], "checks": [], "failed": []}
    failed = set()

    def save():
        out["failed"] = [list(f) for f in sorted(failed)]
        Path(path).write_text(json.dumps(out, indent=1, default=str))

    return Timer(cp), out, out["rows"], failed, save


def compile_all(out, specs, workers, log):
    """Compile ``specs`` in ``workers`` processes (``bench_gemm_sweep.precompile``, filling the
    NVRTC cache), record ``out["compile"]`` (wall and summed CPU seconds) and log it."""
    t0 = time.perf_counter()
    cpu_s = precompile(specs, workers)
    out["compile"] = {"wall_s": time.perf_counter() - t0, "cpu_s": cpu_s}
    log(f"compiled {out['compile']}")


def tile_name(tag, cfg, arg):
    """A bench's tile role: ``tag``, the tile (BM, BN, BK, TM, TN, MINB), "_arg" for argmax."""
    return f"{tag}_" + "_".join(map(str, cfg)) + ("_arg" if arg else "")


def tile_specs(tag, cases, extra="", ak=0):
    """One module per (case, tile), so NVRTC compiles them in parallel: ``cases`` maps a label to
    (semiring, functor, ..., [(cfg, arg)]); each tile is registered in ``kernels.TILES`` under
    ``tile_name(tag, cfg, arg)`` and instantiated as ``sr_gemm`` of the functor beside its
    ``sr_combine`` pair, ``extra`` (C++ source: the bench's own functors) ahead of them; ``ak``
    (> 0) is ``sr_gemm``'s argmax chunk AK, else its default. Returns {(label, role): ModuleSpec}."""
    out = {}
    for label, (_, functor, *_, variants) in cases.items():
        for cfg, arg in variants:
            bm, bn, bk, tm, tn, mb = cfg
            rl = tile_name(tag, cfg, arg)
            kernels.TILES[rl] = cfg
            names = {rl: f"ptg::sr_gemm<{functor}, {bm}, {bn}, {bk}, {tm}, {tn}, {mb}, "
                         f"{'true' if arg else 'false'}{f', {ak}' if ak else ''}>",
                     "combine": f"ptg::sr_combine<{functor}, false>",
                     "combine_arg": f"ptg::sr_combine<{functor}, true>"}
            out[(label, rl)] = kernels.ModuleSpec(f"{tag}:{label}:{rl}", "semiring_gemm.cu", names, extra)
    return out


def split_plan(role, k, ks):
    """The tile plan of ``role`` with k cut in ``ks`` parts, each rounded up to whole BK slabs of
    the role's tile (so fewer parts may cover k); ``ks`` = 1: one part, the whole k padded."""
    bk = kernels.tile_of(role)[2]
    kc = (k + ks - 1) // ks
    kc = (kc + bk - 1) // bk * bk
    return gemm_launch.Plan("tile", role, -(-k // kc), kc)


def check_run(out, failed, log, record, d, idx, want, widx, bits=False):
    """One check: a tile's batch-1 output ``d`` (device array) against the reference ``want``, bit
    for bit where ``bits`` (float: ±0, NaN payloads), else by value, and where ``widx`` is not None
    (an argmax run) its index ``idx`` against ``widx``. ``record`` (the bench's JSON keys, in order:
    two naming the variant, then "kind", "shape" [m, k, n], "ks", "c") goes to ``out["checks"]``
    with "ok" last; a failure is logged as "CHECK FAILED" and those values, and the variant (the
    record's first two values) added to ``failed``. Returns ok."""
    got = d.get()[0]
    if bits:
        u = np.dtype(f"u{want.itemsize}")
        ok = bool(np.array_equal(got.view(u), want.view(u)))
    else:
        ok = bool(np.array_equal(got, want))
    ok = ok and (widx is None or bool(np.array_equal(idx.get()[0], widx)))
    out["checks"].append({**record, "ok": ok})
    if not ok:
        variant = tuple(record.values())[:2]
        m, k, n = record["shape"]
        log(f"CHECK FAILED {variant[0]} {variant[1]} {record['kind']} {m}x{k}x{n} ks={record['ks']} "
            f"c={record['c']}")
        failed.add(variant)
    return ok


__all__ = ["check_run", "compile_all", "run_record", "split_plan", "tile_name", "tile_specs"]
