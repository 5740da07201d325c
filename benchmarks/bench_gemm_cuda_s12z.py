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

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from _gemm_run import argmax_bench, check_run, compile_all, run_checks, tile_name, time_forms  # noqa: E402
from bench_gemm_cuda_s6t import check_inputs  # noqa: E402
from bench_gemm_cuda_s9t import ARG, PLAIN, SHAPES, T, kinds  # noqa: E402
from bench_gemm_sweep import baselines  # noqa: E402

from pytropical_gpu.backends.cuda import zero_sign  # noqa: E402
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
    r = argmax_bench(__doc__, "gemm_s12z.json", argv, TAG, CASES, (ARG_ROLE, PLAIN_ROLE))
    compile_all(r.out, list(r.sp.values()), r.args.workers, r.log)
    baselines(r.cp, r.timer, r.rows, r.log, r.sizes[:1], np.random.default_rng(1))

    def check(ref_failed, base, kind, shape, use_c, ops, want, widx):
        # the library's argmax, then each form against it (±0 aside) and, after the zero-sign
        # pass, against the reference bit for bit
        name, _, _, vs = BASES[base]
        m, k, n, ks = shape
        sr = get_semiring(name)
        lib = zero_blind(*r.run_tile(base, True, *ops, ks, k))
        for v in vs:
            label = f"{base} {v}"
            d, idx = r.run_tile(label, True, *ops, ks, k)
            same = all(np.array_equal(x, y) for x, y in zip(zero_blind(d, idx), lib))
            zero_sign.fix(d, ops[0], ops[1], sr, ops[2])  # as CudaBackend._gemm does
            rec = {"case": label, "role": ARG_ROLE, "kind": kind, "shape": [m, k, n], "ks": ks,
                   "c": use_c, "same_as_lib": same, "after": "zero_sign.fix"}
            ok = check_run(r.out, ref_failed, r.log, rec, d, idx, want, widx, bits=True)
            if not (same and ok):
                r.log(f"FORM FAILED {label} {kind} {m}x{k}x{n} ks={ks} c={use_c}: library's "
                      f"(±0 aside) {same}, reference after the pass {ok}")
                r.failed.add((label, ARG_ROLE))

    run_checks(r, BASES, kinds, SHAPES, check, "forms", check_inputs)
    return time_forms(r, TIMED, BASES, T, FORMS, ARG_ROLE, zero_blind, "±0 aside; ")


if __name__ == "__main__":
    sys.exit(main())
