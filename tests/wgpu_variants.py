"""Every WGSL variant the wgpu backend can emit, as (template, parameters) pairs.

The enumeration goes through the backend's own choices, not a copy of them: GEMM parameters come
from :func:`.gemm.semiring_code` (each builtin semiring x dtype x guarded/unguarded ⊗, plus a
user-defined semiring) and :func:`.gemm.choose_kernel` asked over a grid of shapes that crosses
every threshold it has (so each tile config, every unrolled ``KCONST`` and the argmax kernel
appear), each with and without the ``c`` epilogue; packed boolean and VSA kernels with the
parameters :mod:`.boolean` and :mod:`.vsa` pass (every counter ``BITS``, every bundle ``WIDTH``, the
search top-k passes and nnz).

``tests/test_webgpu_runtimes.py`` compiles each one on every available WebGPU runtime (wgpu-py's
naga and Dawn's Tint), so a shader that only one compiler accepts cannot land. The test also checks
that everything the engine compiled while the suite ran is in this list, so the enumeration cannot
silently fall behind the kernels. A test helper: nothing in the package imports it.

>>> vs = variants()
>>> len({v.template for v in vs}) >= 8
True
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from pytropical_gpu.backends.wgpu import boolean, gemm, stats, templating, vsa, vsa_search, zsign
from pytropical_gpu.backends.wgpu import gemm_passes as passes
from pytropical_gpu.backends.wgpu.engine import WG
from pytropical_gpu.semirings import Semiring, get_semiring, semiring_names

#: counter widths a SoftTernaryVec can have (the spec's 1 to 31), all proved: the template unrolls
#: one plane per bit
MAX_BITS = 31
#: bundle counter widths: bit_length(max(vectors, threshold)) + 2 for any u32 count/threshold
BUNDLE_WIDTHS = range(3, 32 + 2 + 1)


@dataclass(frozen=True)
class Variant:
    """One shader: template name and its parameters (sorted items, hashable)."""

    template: str
    params: tuple

    @property
    def label(self) -> str:
        return f"{self.template}:" + ",".join(f"{k}={v}" for k, v in self.params)

    def source(self) -> str:
        return templating.render(self.template, **dict(self.params))

    @property
    def key(self) -> tuple:
        """The engine's pipeline-cache key of this variant."""
        return (self.template, self.params)


def _v(template: str, **params) -> Variant:
    return Variant(template, tuple(sorted(params.items())))


#: a user-defined semiring given once with WGSL expressions (the ``USER`` template path), on every
#: dtype a user semiring may use in WGSL (``gemm.USER_DTYPES``: float32, int32 and uint32)
USER_SEMIRING = Semiring("max_min_user", np.maximum, np.minimum, -np.inf, np.inf,
                         dtypes=tuple(sorted(gemm.USER_DTYPES)), wgsl_add="max(a, b)",
                         wgsl_mul="min(a, b)", selective=True)


def gemm_semirings() -> list[Semiring]:
    """Every builtin semiring the numeric GEMM kernels serve (aliases folded), plus a user one."""
    seen, out = set(), []
    for name in semiring_names():
        sr = get_semiring(name)
        if sr.name in seen or sr.add_op in ("lor", "lxor"):  # boolean: packed kernels
            continue
        seen.add(sr.name)
        out.append(sr)
    return out + [USER_SEMIRING]


def _kernel_choices(code=None) -> set[tuple[str, tuple, bool]]:
    """(kernel, kernel params, argmax) that choose_kernel returns over shapes crossing each of its
    thresholds (skinny k/n, small/large tile, argmax; the packed argmax indices' k limit) for a
    semiring's ``code`` (None: one whose argmax indices are never packed)."""
    top = passes.ARGMAX_PIDX and (1 << passes.ARGMAX_PIDX) * gemm.TILE_ARGMAX["BK"]
    ks = sorted({64, 1024} | set(range(1, gemm.SKINNY_K + 2)) | ({top, top + 1} if top else set()))
    ns = sorted({127, 128, 1024, 4096} | set(range(1, gemm.SKINNY_N + 2)))
    ms = [1, 127, 128, 1024, 1 << 13, 1 << 21]  # the wide kernel's m is a run-time value
    out = set()
    for argmax in (False, True):
        for m in ms:
            for n in ns:
                for k in ks:
                    # workgroup memory for two k-tiles of the big tile, or not (PF=1 fallback)
                    for storage in (1 << 14, 1 << 16):
                        for by_tile in ((False, True) if argmax else (None,)):
                            kname, kp = gemm.choose_kernel(m, n, k, argmax, storage, by_tile,
                                                           code)
                            out.add((kname, tuple(sorted(kp.items())), argmax))
    return out


def gemm_variants() -> list[Variant]:
    out = []
    # the argmax second pass in column panels where n is beyond one (gemm_passes.ARGFIX_PW)
    pws = [{}] + ([{"PW": passes.ARGFIX_PW}] if passes.ARGFIX_PW else [])
    # a semiring whose argmax indices may be packed (gemm_passes.argmax_pidx at k = 0) gets the
    # choices of one such semiring (the rule's k limit is the same for all), the rest None's
    packed = gemm.semiring_code(get_semiring("min_plus"), np.dtype("float32"), False)
    choices = {False: sorted(_kernel_choices()), True: sorted(_kernel_choices(packed))}
    for sr in gemm_semirings():
        for dtn in sr.dtypes:
            dt = np.dtype(dtn)
            if dt.name == "uint64":
                continue  # runs as two uint32 lanes (gemm_u64)
            if dt.name not in templating.WGSL_TYPES:
                continue  # float64: the backend raises TypeError before any shader
            codes = {gemm.semiring_code(sr, dt, special) for special in (False, True)}
            for code in sorted(codes, key=repr):
                for kname, kp, argmax in choices[bool(passes.argmax_pidx(code, 0, 1))]:
                    if argmax and not sr.selective:
                        continue
                    for has_c in (False, True):
                        out.append(_v(kname, **code.params(), **dict(kp), HAS_C=has_c))
                    if kname == "gemm_tiled" and argmax:  # D and I as vec4 (n % 4 == 0, no c)
                        out.append(_v(kname, **code.params(), **dict(kp), DV=True, HAS_C=False))
                    if dict(kp).get("AT"):  # the argmax by k-tile's second pass (B in place,
                        bk = dict(kp)["BK"]  # or transposed: k a multiple of 4 or not)
                        out.append(_v("gemm_argfix", **code.params(), BK=bk, WG=WG, BT=False,
                                      VEC=False, AV=False, BV=False))
                        out += [_v("gemm_argfix", **code.params(), BK=bk, WG=WG, BT=True, VEC=v,
                                   AV=v, BV=v, **pw) for v in (False, True) for pw in pws]
                        out += [_v("gemm_argfix", **code.params(), BK=bk, WG=WG, BT=False,
                                   VEC=False, AV=False, BV=False, **pw) for pw in pws[1:]]
                        out += [_v("gemm_transpose", T=code.T, **({"TS": ts} if ts != 16 else {}))
                                for ts in (16, 32)]
                        if bk == 16:  # four threads an output (gemm_passes.ARGFIX_COOP)
                            out += [_v("gemm_argfix_coop", **code.params(), WG=WG, AV=True,
                                       BV=True, **pw) for pw in pws]
                            if passes.ARGFIX_ROW:  # ... row by row (ARGFIX_ROW)
                                out.append(_v("gemm_argfix_row", **code.params(),
                                              WG=passes.ARGFIX_ROW_WG, AV=True, BV=True,
                                              PW=passes.ARGFIX_ROW))
                if sr.builtin:  # split-k (gemm_passes)
                    sk = dict(passes.SPLIT_TILE, ARGMAX=False, SK=True)
                    out.append(_v("gemm_tiled", **code.params(), **sk, HAS_C=False))
                    if passes.SPLIT_DV:  # vec4 partial layers (n a multiple of 4)
                        out.append(_v("gemm_tiled", **code.params(), **sk, DV=True, HAS_C=False))
                    out += [_v("gemm_splitk", **code.params(), S=s, VEC=v, HAS_C=c, WG=WG)
                            for s in range(2, passes.SPLIT_MAX + 1) for v in (False, True)
                            for c in (False, True)]
                # the zero-sign pass after a float min/max GEMM (zsign; None: none recorded)
                out += [_v("gemm_zsign", **p) for c in (False, True)
                        if (p := zsign.params(sr, dt, c)) is not None]
                if zsign.params(sr, dt, False) is not None:  # its gate's flags and any zero (a variant each)
                    out.append(_v("gemm_zflags", **zsign.flags_params()))
                    out.append(_v("gemm_zany", **zsign.any_params()))
                if dt.name in stats.KINDS:  # a small GEMM writing its result's facts (fastpath)
                    for tile in {repr(t): t for t in (gemm.TILE_TINY, gemm.TILE_SMALL, gemm.TILE)
                                 if t is not None}.values():
                        fk = dict(tile, ARGMAX=False, FACTS=True, FKIND=stats.KINDS[dt.name])
                        out += [_v("gemm_tiled", **code.params(), **dict(fk, PF=pf), HAS_C=False)
                                for pf in {fk["PF"], 1}]
    return out


def boolean_variants() -> list[Variant]:
    return [_v("pack", WG=WG)] + [_v("andor", KW=boolean.KW, XOR=x) for x in (False, True)]


def vsa_variants() -> list[Variant]:
    vecs = (False, True)  # vec4 elements when the word count is a multiple of 4
    out = [_v("vsa_elementwise", OP="bind", BITS=0, WG=WG, VEC=v, PER=vsa.EW_PER) for v in vecs]
    out += [_v("vsa_dot", VEC=v, UNROLL=vsa.DOT_UNROLL) for v in vecs] + [_v("vsa_permute", WG=WG)]
    out += [_v("vsa_nnz", WG=WG)]
    out += [_v("facts", KIND=k, ONE=one, WG=WG)  # the facts of resident GEMM results
            for k in ("f32", "i32", "u32") for one in (False, True)]
    out += [_v("vsa_search", SRC=src, RPT=vsa_search.SEARCH_RPT) for src in ("score", "cand")]
    out += [_v("vsa_search", SRC="cand", RPT=vsa_search.SEARCH_RPT_LAST)]
    out += [_v("vsa_search_dot", **params) for params in vsa_search.dot_variants()]
    out += [_v("vsa_bundle", WIDTH=w, WG=WG) for w in BUNDLE_WIDTHS]
    for bits in range(1, MAX_BITS + 1):
        out += [_v("vsa_elementwise", OP=op, BITS=bits, WG=WG, VEC=v, PER=vsa.EW_PER)
                for op in ("accumulate", "harden") for v in vecs]
    return out


@functools.lru_cache(maxsize=1)
def _all() -> tuple[Variant, ...]:
    seen, out = set(), []
    for v in gemm_variants() + boolean_variants() + vsa_variants():
        if v.key not in seen:
            seen.add(v.key)
            out.append(v)
    return tuple(out)


def variants() -> list[Variant]:
    """Every (template, params) the backend can compile, without duplicates."""
    return list(_all())


#: parameters that only set an unrolled trip count (the same WGSL constructs, repeated)
UNROLL_PARAMS = ("K", "N", "KCONST")
#: the trip counts :func:`covering` keeps: the smallest, a non-multiple of 4, a multiple, the largest
UNROLL_SAMPLE = frozenset({1, 3, 4, 5, gemm.SKINNY_K, gemm.SKINNY_N})


def covering() -> list[Variant]:
    """The variants with every unrolled trip count in :data:`UNROLL_SAMPLE`: each semiring x dtype x
    guard x kernel x tile config x argmax x epilogue and every VSA/boolean variant, with the K/N
    unrolls sampled. The variant test builds full pipelines from these and validates all of
    :func:`variants` with each compiler's front end."""
    return [v for v in _all()
            if all(val in UNROLL_SAMPLE for key, val in v.params if key in UNROLL_PARAMS)]


def sources(vs=None) -> dict[str, list[Variant]]:
    """Distinct WGSL texts of ``vs`` (default: every variant) -> the variants rendering to them."""
    out: dict[str, list[Variant]] = {}
    for v in (_all() if vs is None else vs):
        out.setdefault(v.source(), []).append(v)
    return out


__all__ = ["MAX_BITS", "UNROLL_PARAMS", "UNROLL_SAMPLE", "USER_SEMIRING", "Variant",
           "boolean_variants", "covering", "gemm_variants", "sources", "variants", "vsa_variants"]
