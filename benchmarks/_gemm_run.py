"""What the CUDA GEMM benches (sessions 4 to 12) set up before their checks, in one place: the
run's record and timer, the bench's tile modules and their timed compile, the split-k plan a
tile role is checked with, and one check of a tile's output against its reference; and what
the argmax form benches (s9t, s12z) share: their start, the loop of their checks, and their timed
outputs' check, two timing rounds and summary.
"""

from __future__ import annotations

import argparse
import json
import time
import types
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


def argmax_bench(doc, json_path, argv, tag, cases, roles, time_failed=False):
    """The start of an argmax form bench's ``main``: its command line (``--json``, default
    ``json_path``; ``--workers``; ``--quick``; where ``time_failed`` s9t's ``--time-failed``; the
    description ``doc``'s first line), the CUDA backend, the run's record (``run_record``) and its
    tile modules (``tile_specs(tag, cases)``). Returns a namespace of ``args``, ``cp``, ``timer``,
    ``out``, ``rows``, ``failed``, ``save``, ``log`` (print), ``sp``, ``sizes`` (1024 and 2048 with
    --quick, else 4096 and 8192) and ``run_tile(label, arg, a, b, c, ks, k)``: ``label``'s tile of
    ``roles`` = (argmax role, plain role) by ``arg``, k in ``ks`` parts (``split_plan``). The bench
    then compiles ``sp`` and times its baselines itself."""
    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--json", default=json_path)
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--quick", action="store_true", help="1024³ and 2048³ only (a smoke test)")
    if time_failed:
        p.add_argument("--time-failed", action="store_true", help="time a variant even where a check failed")
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg

    be = tg.get_backend("cuda")
    timer, out, rows, failed, save = run_record(cp, be, args.json)
    sp = tile_specs(tag, cases)

    def run_tile(label, arg, a, b, c, ks, k):
        rl = roles[0] if arg else roles[1]
        return gemm_launch.run(be, sp[(label, rl)], a, b, c, arg, split_plan(rl, k, ks))

    return types.SimpleNamespace(args=args, cp=cp, timer=timer, out=out, rows=rows, failed=failed, save=save,
                                 log=print, sp=sp, sizes=(1024, 2048) if args.quick else (4096, 8192),
                                 run_tile=run_tile)


def run_checks(r, bases, kinds, shapes, check, what, check_inputs, log_ref=False):
    """An argmax form bench's checks (``r``: ``argmax_bench``'s namespace): for each base of
    ``bases`` (label -> (semiring name, ...)), each operand kind of ``kinds(base)``, each (m, k, n,
    ks) of ``shapes``, without then with ``c``: ``check_inputs``'s operands (the scripts pass
    ``bench_gemm_cuda_s6t.check_inputs``, imported at their top as before: s6t swaps the
    ``conftest`` module, which must happen at import, not in a test's run)
    (one generator, seed 2, one cache) and ``check(ref_failed, base, kind, (m, k, n, ks), use_c,
    ops, want, widx)``, ``ops`` the device (a, b, c) with a batch of 1 (c None without it). Then
    ``ref_failed`` sorted into ``out["ref_failed"]``, a log of the checks' count and time (where
    ``log_ref`` the reference failures) and ``what`` failed (``r.failed``), and a save."""
    cp, out = r.cp, r.out
    crng = np.random.default_rng(2)
    cache, ref_failed = {}, set()
    t0 = time.perf_counter()
    for base in bases:
        name = bases[base][0]
        for kind in kinds(base):
            for m, k, n, ks in shapes:
                for use_c in (False, True):
                    a, b, c, want, widx = check_inputs(crng, cache, name, kind, m, k, n, use_c)
                    ops = (cp.asarray(a)[None], cp.asarray(b)[None],
                           None if c is None else cp.asarray(c)[None])
                    check(ref_failed, base, kind, (m, k, n, ks), use_c, ops, want, widx)
    out["ref_failed"] = [list(f) for f in sorted(ref_failed)]
    ref = f"failed the reference: {sorted(ref_failed)}; " if log_ref else ""
    r.log(f"checks: {len(out['checks'])} in {time.perf_counter() - t0:.1f} s; {ref}{what} failed: "
          f"{sorted(r.failed)}")
    r.save()


def argmax_operands(cp, name, kind, s):
    """A timed (a, b): s x s standard normal float32 (a batch of 1, CuPy seed 7); ``kind`` "every":
    the zero (-inf for a max semiring ``name``, else +inf) in every 8-wide slab of every 64-row
    block of a."""
    g = cp.random.RandomState(7)
    a = g.standard_normal((1, s, s), dtype=cp.float32)
    b = g.standard_normal((1, s, s), dtype=cp.float32)
    if kind == "every":
        a[0, ::64, ::8] = np.float32(-np.inf if name.startswith("max") else np.inf)
    return a, b


def time_forms(r, timed, bases, cfg, forms, role, read, note="", time_failed=False):
    """An argmax form bench's timings and its end (``r``: ``argmax_bench``'s namespace): at each of
    ``r.sizes``, each (base, operand kind) of ``timed`` on ``argmax_operands``: the plain tile, the
    library's argmax ("lib") and each form of ``bases[base][3]`` whose (label, ``role``) has not
    failed (or every one, where ``time_failed``). At the first size each form's output, read by
    ``read(d, idx)``, against the library's: a check (failing the form where it differs) and a log
    line (``note`` ahead of the kind). Then ``time_rounds`` (config ``cfg``, ``forms``),
    ``summarize_rounds``, a log of the JSON's path and the failed forms; returns 1 if any failed,
    else 0."""
    summary = {}
    for s in r.sizes:
        for base, kind in timed:
            name, _, _, vs = bases[base]
            a, b = argmax_operands(r.cp, name, kind, s)
            runs = [(base, False, "plain"), (base, True, "lib")]
            runs += [(f"{base} {v}", True, v) for v in vs
                     if (f"{base} {v}", role) not in r.failed or time_failed]
            if s == r.sizes[0]:
                ref = read(*r.run_tile(base, True, a, b, None, 1, s))
                for label, _, _ in runs[2:]:
                    got = read(*r.run_tile(label, True, a, b, None, 1, s))
                    same = all(np.array_equal(x, y) for x, y in zip(got, ref))
                    r.out["checks"].append({"case": label, "role": role, "kind": kind, "shape": [s, s, s],
                                            "against": base, "ok": same})
                    r.log(f"timed output {label} == {base} ({note}{kind}, {s}^3): {same}")
                    if not same:
                        r.failed.add((label, role))
            time_rounds(r.timer, r.rows, summary, r.log, r.save, r.run_tile, runs, a, b, s, base, kind, cfg,
                        forms, r.failed, role, time_failed)
    summarize_rounds(r.out, summary, r.log, r.save)
    r.log(f"wrote {r.args.json}; failed: {r.out['failed']}")
    return 1 if r.failed else 0


__all__ = ["argmax_bench", "argmax_operands", "check_run", "compile_all", "run_checks", "run_record",
           "split_plan", "summarize_rounds", "tile_name", "tile_specs", "time_forms", "time_rounds"]
