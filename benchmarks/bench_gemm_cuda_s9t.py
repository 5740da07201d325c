"""Issue 14, CUDA GEMM (ninth session, s9targ): float32 argmax's chunk-end update off the ALU pipe.

The argmax tile (64x64x16, 4x4 a thread, 2/SM) reduces each 16-term chunk on its own and ends it
with ``if (better(s, acc)) { acc = s; win = k0; }``: FSETP, FSEL, SEL a output, all three on the
ALU pipe (half rate), where every FMNMX of the loop runs too. SASS of the interior k-slab path
(nvcc 13.0, sm_90a; gemm_cuda_notes.md, session 9): ZN max_times argmax 642 issued / 319 ALU, the
same tile without argmax 608 / 287. Variants (``ptg::ArgForm<F, R, M>`` in cuda/semiring_gemm.cu,
bench-only):

* ``M``: the same chunk loop, its update as the FSETP and two IMADs predicated on it (FMA pipe):
  642 / 287, the plain tile's ALU count;
* ``R``: the running best (every term into acc, a chunk remembered where acc grew, as int32's
  PlusDpxR): 658 / 319 (its first term of a chunk needs the FMNMX the chunk form saves);
* ``RM``: R with its index update predicated: 658 / 303.

The epilogue (the winning chunk's serial search, the first term's bits stored) is the library's.
Beside them the library kernels (``zn``: float times with the zero mapped to NaN; ``nz``;
``min_plus``) and the same tile without argmax. Checks first: each argmax kernel bit for bit
(values as uint32, so ±0; indices) against tests/reference.py on the s8t shapes and operand kinds
(k % 4 != 0 and == 0, partial last chunks, split k 2 and 3, ``c``, the zero in the first / last
partial / a middle / a few / every slab, ±0, the other infinity, subnormals, 0 x inf chunks,
quarter-integer ties), and each variant's output against its library kernel's, bit for bit. A
variant fails (and is not timed) where it differs from the library kernel (so it fails the
reference wherever the library kernel passes it); every kernel's reference failures, the
library's own included (the zero's sign under ±0 ties: the reference orders zeros, -0 < +0, the
kernels store the first matching term's bits), are recorded in ``ref_failed`` and logged, and
fail no variant that has the library kernel's bits. Then each variant's timed
output at the first size against the library kernel's, and CUDA-event medians at 4096³ and
8192³ in two rounds (forward, backward order), beside a device copy and cuBLAS SGEMM; the JSON's
``summary`` holds each kernel's mean of the two rounds' medians and its ratio to the plain tile.

``python3 benchmarks/bench_gemm_cuda_s9t.py --json $OUT/gemm_cuda_s9t_h200_s9.json``
(``--quick``: 1024³ and 2048³, a smoke test)
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "benchmarks")]

from _gemm_run import argmax_bench, check_run, compile_all, run_checks, tile_name, time_forms  # noqa: E402
from bench_gemm_cuda_s6t import check_inputs  # noqa: E402
from bench_gemm_sweep import baselines  # noqa: E402

sys.modules.pop("conftest", None)
from test_cuda_times_zn import PLACES  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch  # noqa: E402, F401 (tests/test_bench_gemm_s9t.py patches its run)

TAG = "s9t"
T = (64, 64, 16, 4, 4, 2)  # the argmax tile
ARG, PLAIN = [(T, True)], [(T, True), (T, False)]
#: variant -> ArgForm's (R, M)
FORMS = {"R": (True, False), "RM": (True, True), "M": (False, True)}
#: library label -> (semiring, functor, checked with the zero placed, variants)
BASES = {
    "max_times zn": ("max_times", "ptg::MaxTimes<float>", True, ("R", "RM", "M")),
    "min_times zn": ("min_times", "ptg::MinTimes<float>", True, ("M",)),
    "max_times nz": ("max_times", "ptg::MaxTimesNZ<float>", False, ("M",)),
    "min_plus": ("min_plus", "ptg::MinPlus<float>", False, ("M",)),
}


def _form(functor: str, v: str) -> str:
    r, m = FORMS[v]
    return f"ptg::ArgForm<{functor}, {str(r).lower()}, {str(m).lower()}>"


#: label -> (semiring, functor, with the zero, [(cfg, arg)]): each library kernel with and without
#: argmax, each variant ("<base> <form>") with argmax only
CASES = {}
for _b, (_name, _f, _z, _vs) in BASES.items():
    CASES[_b] = (_name, _f, _z, PLAIN)
    CASES.update({f"{_b} {v}": (_name, _form(_f, v), _z, ARG) for v in _vs})
#: checked shapes (m, k, n, split parts): the s8t list (k % 4 != 0, partial last chunks, split k)
SHAPES = [(67, 97, 83, 1), (130, 132, 260, 1), (70, 600, 36, 3), (256, 72, 256, 1), (9, 33, 130, 1),
          (64, 1024, 128, 2), (200, 1000, 130, 1), (65, 252, 68, 2)]
#: timed: (library label, operands); "every": the zero in every 8-wide slab of every 64-row block of A
TIMED = [("max_times zn", "every"), ("min_times zn", "every"), ("max_times nz", "none"), ("min_plus", "none")]
ARG_ROLE, PLAIN_ROLE = tile_name(TAG, T, True), tile_name(TAG, T, False)


def kinds(base: str) -> tuple:
    """The operand kinds a library label is checked with (check_inputs's)."""
    with_zero = BASES[base][2]
    return ("nozero", "mixed", "late", *PLACES) if with_zero else ("nozero",)


def _bits(d, idx):
    return d.get()[0].view(np.uint32), idx.get()[0]


def main(argv=None) -> int:
    r = argmax_bench(__doc__, "gemm_s9t.json", argv, TAG, CASES, (ARG_ROLE, PLAIN_ROLE), time_failed=True)
    compile_all(r.out, list(r.sp.values()), r.args.workers, r.log)
    baselines(r.cp, r.timer, r.rows, r.log, r.sizes[:1], np.random.default_rng(1))

    def check(ref_failed, base, kind, shape, use_c, ops, want, widx):
        # the library argmax kernel, then the base's variants: each against the reference, and
        # each variant against the library kernel's bits
        m, k, n, ks = shape
        lib = None
        for label in (base, *(f"{base} {v}" for v in BASES[base][3])):
            d, idx = r.run_tile(label, True, *ops, ks, k)
            rec = {"case": label, "role": ARG_ROLE, "kind": kind, "shape": [m, k, n], "ks": ks, "c": use_c}
            ok = check_run(r.out, ref_failed, r.log, rec, d, idx, want, widx, bits=True)
            got = _bits(d, idx)
            if lib is None:
                lib = (ok, got)
                continue
            same = all(np.array_equal(x, y) for x, y in zip(got, lib[1]))
            r.out["checks"][-1]["same_as_lib"] = same
            if not same:  # (the same bits as a library kernel that passes pass too)
                r.log(f"VARIANT FAILED {label} {kind} {m}x{k}x{n} ks={ks} c={use_c}: not the library "
                      f"kernel's bits (reference: variant {ok}, library {lib[0]})")
                r.failed.add((label, ARG_ROLE))

    run_checks(r, BASES, kinds, SHAPES, check, "variants", check_inputs, log_ref=True)
    return time_forms(r, TIMED, BASES, T, FORMS, ARG_ROLE, _bits, time_failed=r.args.time_failed)


if __name__ == "__main__":
    sys.exit(main())
