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
from bench_gemm_sweep import baselines  # noqa: E402

sys.modules.pop("conftest", None)
from test_cuda_times_zn import PLACES  # noqa: E402

from pytropical_gpu.backends.cuda import gemm_launch  # noqa: E402

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


def check_plan():
    """Every checked case in order: (base, kind, (m, k, n, ks), use_c), each run by the library
    argmax kernel first, then by the base's variants."""
    return [(base, kind, shape, use_c) for base in BASES for kind in kinds(base) for shape in SHAPES
            for use_c in (False, True)]


def _bits(d, idx):
    return d.get()[0].view(np.uint32), idx.get()[0]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--json", default="gemm_s9t.json")
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--quick", action="store_true", help="1024³ and 2048³ only (a smoke test)")
    p.add_argument("--time-failed", action="store_true", help="time a variant even where a check failed")
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
    for base, kind, (m, k, n, ks), use_c in check_plan():
        name, _, _, vs = BASES[base]
        a, b, c, want, widx = check_inputs(crng, cache, name, kind, m, k, n, use_c)
        ops = (cp.asarray(a)[None], cp.asarray(b)[None], None if c is None else cp.asarray(c)[None])
        lib = None
        for label in (base, *(f"{base} {v}" for v in vs)):
            d, idx = run_tile(label, True, *ops, ks, k)
            rec = {"case": label, "role": ARG_ROLE, "kind": kind, "shape": [m, k, n], "ks": ks, "c": use_c}
            ok = check_run(out, ref_failed, log, rec, d, idx, want, widx, bits=True)
            got = _bits(d, idx)
            if lib is None:
                lib = (ok, got)
                continue
            same = all(np.array_equal(x, y) for x, y in zip(got, lib[1]))
            out["checks"][-1]["same_as_lib"] = same
            if not same:  # (the same bits as a library kernel that passes pass too)
                log(f"VARIANT FAILED {label} {kind} {m}x{k}x{n} ks={ks} c={use_c}: not the library "
                    f"kernel's bits (reference: variant {ok}, library {lib[0]})")
                failed.add((label, ARG_ROLE))
    out["ref_failed"] = [list(f) for f in sorted(ref_failed)]
    log(f"checks: {len(out['checks'])} in {time.perf_counter() - t0:.1f} s; failed the reference: "
        f"{sorted(ref_failed)}; variants failed: {sorted(failed)}")
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
            kernels += [(f"{base} {v}", True, v) for v in vs if (f"{base} {v}", ARG_ROLE) not in failed
                        or args.time_failed]
            if s == sizes[0]:  # the variants' timed outputs against the library kernel's
                ref = _bits(*run_tile(base, True, a, b, None, 1, s))
                for label, _, _ in kernels[2:]:
                    got = _bits(*run_tile(label, True, a, b, None, 1, s))
                    same = all(np.array_equal(x, y) for x, y in zip(got, ref))
                    out["checks"].append({"case": label, "role": ARG_ROLE, "kind": kind, "shape": [s, s, s],
                                          "against": base, "ok": same})
                    log(f"timed output {label} == {base} ({kind}, {s}^3): {same}")
                    if not same:
                        failed.add((label, ARG_ROLE))
            time_rounds(timer, rows, summary, log, save, run_tile, kernels, a, b, s, base, kind, T, FORMS,
                        failed, ARG_ROLE, args.time_failed)
    summarize_rounds(out, summary, log, save)
    log(f"wrote {args.json}; failed: {out['failed']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
