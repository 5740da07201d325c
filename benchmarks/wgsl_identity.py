"""Prove a WGSL template change keeps the library's shaders: ``gemm_tiled`` rendered from a git
revision and from the working tree, byte for byte, for every parameter set the library makes.

The sets: every tile the library uses (``gemm.TILE``, ``TILE_ARGMAX``, ``TILE_SMALL``,
``TILE_TINY``, ``gemm_passes.SPLIT_TILE``) as ``choose_kernel`` hands them out (the argmax's small
tile without WA, PF 1 where workgroup memory is short; the big tile's argmax by k-tile also with
``PIDX`` where the library packs its indices) x plain / argmax per pair / by k-tile x ``c``
x DV, for every builtin semiring and dtype the wgpu backend compiles (guarded ⊗ or not) and a
user-defined semiring; then, on min_plus / max_plus f32 and the user semiring, every combination of
PF, WA, BV, SK and FACTS too. Both renderings use the library's jinja settings (only the loader
differs), so a difference is the template's.

    python benchmarks/wgsl_identity.py 67b5690   # the revision before the change
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys

import jinja2
import numpy as np

from pytropical_gpu.backends.wgpu import gemm, stats, templating
from pytropical_gpu.backends.wgpu import gemm_passes as passes
from pytropical_gpu.semirings import Semiring, get_semiring, semiring_names


def codes():
    """(label, SemiringCode) of every builtin semiring on every dtype wgpu compiles, guarded or
    not, and one user-defined semiring on f32."""
    out = []
    for name in sorted({get_semiring(x).name for x in semiring_names()}):  # aliases once
        sr = get_semiring(name)
        for dts in ("float32", "int32", "uint32"):
            if not sr.builtin or dts not in sr.dtypes:
                continue
            for special in (False, True):
                out.append((f"{name} {dts} {special}",
                            gemm.semiring_code(sr, np.dtype(dts), special)))
    user = Semiring("user_min_plus", np.minimum, np.add, np.inf, 0.0, dtypes=("float32",),
                    wgsl_add="min(a, b)", wgsl_mul="a + b")
    out.append(("user f32", gemm.semiring_code(user, np.dtype("float32"), False)))
    return out


def tiles():
    """The tiles as ``choose_kernel`` hands them out, argmax or not."""
    small_arg = dict(gemm.TILE_SMALL, WA=False)
    out = {"TILE": gemm.TILE, "TILE_ARGMAX": gemm.TILE_ARGMAX, "TILE_SMALL": gemm.TILE_SMALL,
           "TILE_SMALL argmax": small_arg, "TILE_TINY": gemm.TILE_TINY,
           "SPLIT_TILE": passes.SPLIT_TILE}
    for x, t in list(out.items()):
        if t["PF"] == 2:  # a device with short workgroup memory gets PF 1
            out[x + " PF1"] = dict(t, PF=1)
    return out


def modes():
    """(ARGMAX, extra) of the plain kernel, the per-pair argmax and the argmax by k-tile."""
    return [(False, {}), (True, {}), (True, {"AT": True})]


def param_sets():
    """Every parameter set compared (label, params); the big tile's argmax by k-tile also with its
    indices packed where ``choose_kernel`` packs them (``gemm_passes.argmax_pidx``, k = 4096)."""
    cs = codes()
    for (cl, code), (tl, t), (am, ex), has_c, dv in itertools.product(
            cs, tiles().items(), modes(), (False, True), (False, True)):
        p = dict(code.params(), **t, ARGMAX=am, **ex, HAS_C=has_c, **({"DV": True} if dv else {}))
        yield f"{cl} {tl} argmax={am} {ex} c={has_c} dv={dv}", p
        px = passes.argmax_pidx(code, 4096, t["BK"]) if ex and tl == "TILE_ARGMAX" else 0
        if px:
            yield f"{cl} {tl} argmax={am} {ex} c={has_c} dv={dv} PIDX={px}", dict(p, PIDX=px)
    full = [(cl, c) for cl, c in cs if cl.startswith(("min_plus float32", "max_plus float32", "user"))]
    flags = ["WA", "BV", "DV", "SK", "HAS_C"]
    for (cl, code), (tl, t), (am, ex), pf, on in itertools.product(
            full, tiles().items(), modes(), (0, 1, 2), itertools.product((False, True), repeat=5)):
        fl = dict(zip(flags, on))
        if fl["SK"] and (am or fl["HAS_C"]):
            continue  # split-k: never an argmax, never c
        p = dict(code.params(), **dict(t, PF=pf, **fl), ARGMAX=am, **ex)
        yield f"{cl} {tl} argmax={am} {ex} PF={pf} {fl}", p
        if not am and not fl["SK"] and not fl["HAS_C"]:  # the fused facts epilogue (fastrecord)
            for kind in sorted(set(stats.KINDS.values())):
                yield (f"{cl} {tl} PF={pf} {fl} FACTS {kind}",
                       dict(p, FACTS=True, FKIND=kind))


def git_env(rev: str) -> jinja2.Environment:
    """The library's jinja environment reading ``wgsl/`` at ``rev``."""
    def load(name):
        return subprocess.run(["git", "show", f"{rev}:wgsl/{name}"], check=True,
                              capture_output=True, text=True).stdout
    return templating._env().overlay(loader=jinja2.FunctionLoader(load))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev", help="git revision holding the template before the change")
    ap.add_argument("--template", default="gemm_tiled")
    ap.add_argument("--all", action="store_true", help="name every differing set, not 10")
    args = ap.parse_args(argv)
    old = git_env(args.rev).get_template(args.template + ".wgsl")
    new = templating._env().get_template(args.template + ".wgsl")
    n = bad = 0
    seen = set()
    for label, p in param_sets():
        key = tuple(sorted(p.items()))
        if key in seen:
            continue
        seen.add(key)
        n += 1
        if old.render(**p) != new.render(**p):
            bad += 1
            if bad <= 10 or args.all:
                print(f"DIFFERS: {label}")
    print(f"{args.template}: {n} parameter sets, {n - bad} identical, {bad} differ "
          f"({args.rev} against the working tree)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
