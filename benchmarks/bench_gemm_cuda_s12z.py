"""Issue 14, CUDA GEMM (session 12, s12z): float32 argmax's epilogue search grouped, as int32's RE4.

The float argmax tile (64x64x16, 4x4 a thread, 2/SM) ends with a serial search of each output's
winning chunk (one dependent pair of loads a term until the first match), because it stores the
first matching term's bits: a ±0 tie's sign. Since session 9 the host runs the zero-sign pass after
every float min/max argmax GEMM, so the epilogue may store the accumulator's bits and search as
int32's library kernel does (``kArgGroup`` 4: every output's value first, then the searches, 4 terms
a memory round trip; session 8 s8i32: the search was ~8 % of int32's 4096³ argmax, RE4 cut its
intercept by a third). Forms (``ptg::ArgForm<F, R, M, G>``, bench-only): ``G4`` (the chunk loop
unchanged), ``MG4`` (with session 9's M: the chunk-end update on the FMA pipe).

Checks first (the s9t plan: k % 4 both ways, partial last chunks, split k 2 and 3, ``c``, the zero
placed first / last partial / mid / few / every slab, ±0, the other infinity, subnormals, ties):
each form's indices equal the library kernel's and its values equal them with +0 == -0; then
after the zero-sign pass (``zero_sign.fix``, what ``CudaBackend._gemm`` runs) each form's values
equal tests/reference.py bit for bit. Then CUDA-event times at 4096³ and 8192³, two rounds
(forward, backward), beside the same tile without argmax; ``summary``: each mean's ratio to it.

``python3 benchmarks/bench_gemm_cuda_s12z.py --json $OUT/gemm_cuda_s12z_h200_s12.json``
(``--quick``: 1024³ and 2048³)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from _gemm_run import (  # noqa: E402
    check_run,
    compile_all,
    run_record,
    split_plan,
    summarize_rounds,
    tile_name,
    tile_specs,
    time_rounds,
)
from bench_gemm_cuda_s6t import check_inputs  # noqa: E402
from bench_gemm_cuda_s9t import ARG, PLAIN, SHAPES, T, kinds  # noqa: E402
from bench_gemm_sweep import baselines  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch, zero_sign  # noqa: E402
from pytropical_gpu.semirings import get_semiring  # noqa: E402

TAG = "s12z"
#: form -> ArgForm's (R, M, G)
FORMS = {"G4": (False, False, 4), "MG4": (False, True, 4)}
#: library label -> (semiring, functor, checked with the zero placed, forms); s9t's kinds() reads
#: the zero flag by label, so the labels are s9t's
BASES = {
    "max_times zn": ("max_times", "ptg::MaxTimes<float>", True, ("G4", "MG4")),
    "min_times zn": ("min_times", "ptg::MinTimes<float>", True, ("G4",)),
    "max_times nz": ("max_times", "ptg::MaxTimesNZ<float>", False, ("G4",)),
    "min_plus": ("min_plus", "ptg::MinPlus<float>", False, ("G4", "MG4")),
}
CASES = {}
for _b, (_name, _f, _z, _vs) in BASES.items():
    CASES[_b] = (_name, _f, _z, PLAIN)
    CASES.update({f"{_b} {v}": (_name, "ptg::ArgForm<{}, {}, {}, {}>".format(
        _f, *(str(x).lower() for x in FORMS[v][:2]), FORMS[v][2]), _z, ARG) for v in _vs})
TIMED = [("max_times zn", "every"), ("min_times zn", "every"), ("max_times nz", "none"), ("min_plus", "none")]
ARG_ROLE, PLAIN_ROLE = tile_name(TAG, T, True), tile_name(TAG, T, False)


def zero_blind(d, idx):
    """(values as uint32 with -0 read as +0, indices): what a form must share with the library."""
    v = d.get()[0]
    return np.where(v == 0, np.float32(0), v).view(np.uint32), idx.get()[0]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s12z.json")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--quick", action="store_true", help="1024³ and 2048³ only (a smoke test)")
    args = p.parse_args(argv)
    import cupy as cp

    import pytropical_gpu as tg

    be = tg.get_backend("cuda")
    timer, out, rows, failed, save = run_record(cp, be, args.json)
    log = print
    sp = tile_specs(TAG, CASES)
    compile_all(out, list(sp.values()), args.workers, log)
    sizes = (1024, 2048) if args.quick else (4096, 8192)
    baselines(cp, timer, rows, log, sizes[:1], np.random.default_rng(1))

    def run_tile(label, arg, a, b, c, ks, k):
        rl = ARG_ROLE if arg else PLAIN_ROLE
        return gemm_launch.run(be, sp[(label, rl)], a, b, c, arg, split_plan(rl, k, ks))

    # ------------------------------------------------------------------ checks
    crng = np.random.default_rng(2)
    cache, ref_failed = {}, set()
    t0 = time.perf_counter()
    n_checks = 0
    for base in BASES:
        name, _, _, vs = BASES[base]
        sr = get_semiring(name)
        for kind in kinds(base):
            for m, k, n, ks in SHAPES:
                for use_c in (False, True):
                    a, b, c, want, widx = check_inputs(crng, cache, name, kind, m, k, n, use_c)
                    ops = (cp.asarray(a)[None], cp.asarray(b)[None],
                           None if c is None else cp.asarray(c)[None])
                    lib = zero_blind(*run_tile(base, True, *ops, ks, k))
                    for v in vs:
                        label = f"{base} {v}"
                        d, idx = run_tile(label, True, *ops, ks, k)
                        same = all(np.array_equal(x, y) for x, y in zip(zero_blind(d, idx), lib))
                        zero_sign.fix(d, ops[0], ops[1], sr, ops[2])  # as CudaBackend._gemm does
                        rec = {"case": label, "role": ARG_ROLE, "kind": kind, "shape": [m, k, n], "ks": ks,
                               "c": use_c, "same_as_lib": same, "after": "zero_sign.fix"}
                        ok = check_run(out, ref_failed, log, rec, d, idx, want, widx, bits=True)
                        n_checks += 1
                        if not (same and ok):
                            log(f"FORM FAILED {label} {kind} {m}x{k}x{n} ks={ks} c={use_c}: library's "
                                f"(±0 aside) {same}, reference after the pass {ok}")
                            failed.add((label, ARG_ROLE))
    out["ref_failed"] = [list(f) for f in sorted(ref_failed)]
    log(f"checks: {n_checks} in {time.perf_counter() - t0:.1f} s; forms failed: {sorted(failed)}")
    save()

    # ------------------------------------------------------------------ timings
    def operands(name, kind, s):
        g = cp.random.RandomState(7)
        a = g.standard_normal((1, s, s), dtype=cp.float32)
        b = g.standard_normal((1, s, s), dtype=cp.float32)
        if kind == "every":
            a[0, ::64, ::8] = np.float32(-np.inf if name.startswith("max") else np.inf)
        return a, b

    summary = {}
    for s in sizes:
        for base, kind in TIMED:
            name, _, _, vs = BASES[base]
            a, b = operands(name, kind, s)
            kernels = [(base, False, "plain"), (base, True, "lib")]
            kernels += [(f"{base} {v}", True, v) for v in vs if (f"{base} {v}", ARG_ROLE) not in failed]
            if s == sizes[0]:
                ref = zero_blind(*run_tile(base, True, a, b, None, 1, s))
                for label, _, _ in kernels[2:]:
                    same = all(np.array_equal(x, y)
                               for x, y in zip(zero_blind(*run_tile(label, True, a, b, None, 1, s)), ref))
                    out["checks"].append({"case": label, "role": ARG_ROLE, "kind": kind, "shape": [s, s, s],
                                          "against": base, "ok": same})
                    log(f"timed output {label} == {base} (±0 aside; {kind}, {s}^3): {same}")
                    if not same:
                        failed.add((label, ARG_ROLE))
            time_rounds(timer, rows, summary, log, save, run_tile, kernels, a, b, s, base, kind, T, FORMS,
                        failed, ARG_ROLE)
    summarize_rounds(out, summary, log, save)
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
