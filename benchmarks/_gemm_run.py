"""What the CUDA GEMM benches (sessions 4 to 12) set up before their checks, in one place: the
run's record and timer, the bench's tile modules and their timed compile, the split-k plan a
tile role is checked with, and one check of a tile's output against its reference; and the
argmax form benches' (s9t, s12z) two timing rounds and their summary.
"""

from __future__ import annotations

import json
import time
from functools import partial
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


def time_rounds(timer, rows, summary, log, save, run_tile, runs, a, b, s, base, kind, cfg, forms, failed,
                role, time_failed=False):
    """Time ``runs`` ([(label, arg, tag)]) on ``a`` x ``b`` (s³, no c, k in one part) in two
    rounds, forward then backward order: ``timer`` of ``partial(run_tile, label, arg, a, b, None, 1,
    s)``, 5 reps of 1 call at s >= 8192, else 9 reps of 3. A form (``tag`` in ``forms``) whose
    (label, ``role``) is in ``failed`` is skipped unless ``time_failed``. Each time is a row of
    ``rows`` (op, base, form, round, config ``cfg``, size, operands ``kind``, s, TOPS), appended to
    ``summary[size][base][tag]`` (size "<s>^3"), logged, and saved."""
    big = s >= 8192
    for rnd in (0, 1):
        for label, arg, tag in (runs if rnd == 0 else runs[::-1]):
            if tag in forms and (label, role) in failed and not time_failed:
                continue
            t = timer(partial(run_tile, label, arg, a, b, None, 1, s), 5 if big else 9,
                      inner=1 if big else 3)
            rows.append({"op": f"{base} {tag}", "base": base, "form": tag, "round": rnd, "config": cfg,
                         "size": f"{s}^3", "operands": kind, "s": t, "TOPS": 2 * s**3 / t / 1e12})
            summary.setdefault(f"{s}^3", {}).setdefault(base, {}).setdefault(tag, []).append(t)
            log(f"{s}^3 round {rnd} {base:13s} {tag:5s} {kind:5s} {t * 1e3:9.3f} ms "
                f"{2 * s**3 / t / 1e12:6.2f} TOPS")
            save()


def summarize_rounds(out, summary, log, save):
    """Replace each list of times in ``summary`` (time_rounds's) by {"s": their mean, "rounds": the
    list, "ratio_to_plain": the "plain" tag's mean over it}, log each, store it as
    ``out["summary"]`` and save."""
    for size, bases in summary.items():
        for base, forms in bases.items():
            plain = float(np.mean(forms["plain"]))
            for tag, ts in forms.items():
                t = float(np.mean(ts))
                forms[tag] = {"s": t, "rounds": ts, "ratio_to_plain": plain / t}
                log(f"{size} {base:13s} {tag:5s} {forms[tag]['s'] * 1e3:9.3f} ms  ratio "
                    f"{forms[tag]['ratio_to_plain']:.3f}")
    out["summary"] = summary
    save()


__all__ = ["check_run", "compile_all", "run_record", "split_plan", "summarize_rounds", "tile_name",
           "tile_specs", "time_rounds"]
