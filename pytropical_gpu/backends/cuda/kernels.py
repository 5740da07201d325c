"""The CUDA modules: which ``cuda/*.cu`` source, which template instantiations, compiled how.

Every kernel is a C++ template in ``cuda/``; a :class:`ModuleSpec` names one source plus the
``name_expressions`` (template instantiations) compiled from it with NVRTC under :data:`OPTIONS`
(see nvrtc_cache.py: not through CuPy's ``RawModule``, which adds ``-ftz=true``). Modules are
compiled on first use, loaded once per device, and their binaries cached on disk.
:func:`module_specs` enumerates every builtin module, so ``tests/test_cuda_compile.py`` can compile
each instantiation with ``nvcc`` on machines without a GPU. This module imports cupy lazily.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field

import numpy as np

from ...semirings import Semiring, get_semiring
from ...shaders import load_source
from . import nvrtc_cache

#: NVRTC options (CuPy adds ``-arch`` for the current device), used verbatim by nvcc in
#: tests/test_cuda_compile.py. IEEE float semantics, as numpy: subnormal operands and results kept
#: (no flush to zero), correctly rounded division and square root, and no contraction of
#: ``a * b + c`` into an FMA (a user-defined semiring must round like numpy). Never add
#: ``-ftz=true`` or ``--use_fast_math``: the PTX test fails.
OPTIONS: tuple[str, ...] = ("--std=c++17", "-ftz=false", "-prec-div=true", "-prec-sqrt=true",
                            "-fmad=false")

#: numpy dtype name -> C++ element type.
CTYPES = {"float32": "float", "float64": "double", "int32": "int", "int64": "long long",
          "uint32": "unsigned", "uint64": "unsigned long long"}

#: (add_op, mul_op) of a builtin semiring -> functor template in cuda/semiring_gemm.cu.
FUNCTORS = {("min", "plus"): "MinPlus", ("max", "plus"): "MaxPlus", ("min", "times"): "MinTimes",
            ("max", "times"): "MaxTimes", ("min", "max"): "MinMax", ("max", "min"): "MaxMin",
            ("plus", "times"): "PlusTimes", ("bor", "band"): "BorBand", ("bxor", "band"): "BxorBand"}

#: Tile configurations (BM, BN, BK, TM, TN, min blocks per SM) of ``sr_gemm``: "big" for 4-byte
#: types when the output tiles fill the device, "small" otherwise (and for 8-byte types);
#: "small_arg" with argmax (each k-slab reduced without an index, the winner's k found in the
#: epilogue; 8-byte types at 1 block/SM). Chosen by benchmarks/bench_gemm_sweep.py on an H200
#: (benchmarks/results/gemm_cuda_notes.md).
TILES = {"big": (128, 128, 8, 8, 8, 2), "small": (64, 64, 16, 4, 4, 1),
         "small_arg": (64, 64, 16, 4, 4, 2), "big3": (64, 128, 8, 8, 8, 3)}
#: semiring -> dtypes that also get "big3" (8x8 a thread at 3 blocks/SM, no spill; measured faster
#: than "big" on the H200 for these: gemm_cuda_notes.md, sessions 4 and 5); the backend picks it
#: over "big". float32 min_times / max_times: the guarded functor maps the zero to NaN (no per-slab
#: test), so its loop is the NZ one's, which big3 suits (session 5: NZ 25.4 against "big" 23.2)
BIG3 = {"min_plus": ("float32",), "max_plus": ("float32",), "max_min": ("float32", "int32"),
        "min_max": ("float32", "int32"), "min_times": ("float32",), "max_times": ("float32",)}
#: Alternative big tiles compiled for min_plus/max_plus on 4-byte types only, timed by
#: benchmarks/bench_cuda.py (``CudaBackend.big_tile`` picks one).
BIG_VARIANTS = {"big_k16": (128, 128, 16, 8, 8, 1), "big_wide": (128, 256, 16, 8, 16, 1)}
_TUNED = ("min_plus", "max_plus")
#: the small-k kernels (k <= SMALL_K): ``sr_gemm_skinny`` (B in shared memory, m large) and
#: ``sr_gemm_wide`` (A in shared memory, m <= WIDE_M; a 4-row instantiation for m <= WIDE_M4),
#: 1 or 4 outputs per thread.
SMALL_K, WIDE_M, WIDE_M4 = 64, 16, 4
#: ``sr_gemm_mid`` (16 < n <= 64, n % 4 == 0, float32, no argmax): "mid{J}", n <= 16 J
MID_J, MID_RM = (2, 3, 4), 2

#: bit-sliced counter widths the bundle kernel is instantiated for.
BUNDLE_WIDTHS = (4, 8, 16, 40)
#: counter widths of the carry-save bundle kernel in cuda/vsa_vec.cu (12: up to 1,023 vectors;
#: 16: 16,383; 24: 4,194,303).
BUNDLE_V_WIDTHS = (4, 8, 12, 16, 24, 40)
#: magnitude-plane buckets of the register-resident soft accumulate kernel (SoftTernaryVec bits <= 31).
ACC_BITS = (4, 8, 16, 31)


@dataclass(frozen=True)
class ModuleSpec:
    """One RawModule: ``head`` code + ``source`` (a file in ``cuda/``) + ``extra`` code, and its
    instantiations."""

    key: str
    source: str
    names: dict[str, str] = field(hash=False)
    extra: str = ""
    head: str = ""

    def code(self) -> str:
        return self.head + load_source("cuda", self.source) + self.extra


def _tile(tile: str) -> tuple[int, ...]:
    return TILES.get(tile) or BIG_VARIANTS[tile]


def _gemm_expr(functor: str, tile: str, arg: bool, itemsize: int = 4) -> str:
    bm, bn, bk, tm, tn, mb = _tile(tile)
    mb = mb if itemsize == 4 or not arg else 1  # 8-byte argmax tiles need > 128 registers
    return f"ptg::sr_gemm<{functor}, {bm}, {bn}, {bk}, {tm}, {tn}, {mb}, {'true' if arg else 'false'}>"


def _gemm_names(functor: str, itemsize: int, selective: bool, prefix: str = "",
                variants: bool = False, small_k: bool = True, tile_functor: str = "",
                big3: bool = False) -> dict[str, str]:
    """Roles -> instantiations: tiles ("big", "small", variants, "*_arg"), the split-k "combine",
    and the small-k kernels "skinny{1,4}" / "wide{1,4}" (+ "_arg"). ``tile_functor``: another
    functor for the tiles without argmax (float32 max_min/min_max: the int-key KeyMinMax)."""
    names = {}
    flags = [False, True] if selective else [False]
    for arg in flags:
        sfx = "_arg" if arg else ""
        for tile in ("big", "small"):
            if tile == "big" and (itemsize != 4 or arg):
                continue
            names[prefix + tile + sfx] = _gemm_expr(tile_functor if tile_functor and not arg
                                                    else functor, tile + sfx, arg, itemsize)
        names[prefix + "combine" + sfx] = f"ptg::sr_combine<{functor}, {'true' if arg else 'false'}>"
        if not small_k:
            continue
        for kern in ("skinny", "wide"):
            for nv in ((1, 4) if itemsize == 4 else (1,)):
                names[f"{prefix}{kern}{nv}{sfx}"] = (f"ptg::sr_gemm_{kern}<{functor}, "
                                                     f"{'true' if arg else 'false'}, {nv}>")
        for nv in ((1, 4) if itemsize == 4 else (1,)):  # the wide kernel for m <= WIDE_M4
            names[f"{prefix}wide{nv}m4{sfx}"] = (f"ptg::sr_gemm_wide<{functor}, "
                                                 f"{'true' if arg else 'false'}, {nv}, {WIDE_M4}>")
    if big3:
        names[prefix + "big3"] = _gemm_expr(tile_functor or functor, "big3", False, itemsize)
    if variants and itemsize == 4:
        for tile in BIG_VARIANTS:
            names[prefix + tile] = _gemm_expr(functor, tile, False)
    return names


def _literal(value, dtype: np.dtype) -> str:
    """An exact C++ expression for a scalar of ``dtype`` (bit pattern, so ±inf and INT_MIN work)."""
    x = np.asarray(value, dtype)
    if dtype == np.float32:
        return f"__int_as_float((int)0x{int(x.view(np.uint32)):08x}u)"
    if dtype == np.float64:
        return f"__longlong_as_double((long long)0x{int(x.view(np.uint64)):016x}ull)"
    if dtype == np.int32:
        return f"((int)0x{int(x.view(np.uint32)):08x}u)"
    if dtype == np.int64:
        return f"((long long)0x{int(x.view(np.uint64)):016x}ull)"
    if dtype == np.uint32:
        return f"0x{int(x):08x}u"
    return f"0x{int(x):016x}ull"


def gemm_spec(sr: Semiring, dtype: np.dtype) -> ModuleSpec:
    """The module for semiring ``sr`` on ``dtype`` (builtin functor or one generated from
    ``cuda_add``/``cuda_mul``)."""
    dtype = np.dtype(dtype)
    ct = CTYPES[dtype.name]
    if sr.builtin:
        functor = f"ptg::{FUNCTORS[(sr.add_op, sr.mul_op)]}<{ct}>"
        tuned = sr.name in _TUNED
        key = (f"ptg::KeyMinMax<{'true' if sr.add_op == 'max' else 'false'}>"
               if dtype == np.float32 and sr.name in ("max_min", "min_max") else "")
        names = _gemm_names(functor, dtype.itemsize, sr.selective, variants=tuned, tile_functor=key,
                            big3=dtype.name in BIG3.get(sr.name, ()))
        if dtype == np.float32:  # 16 < n <= 64 (int32's guarded fold lost to the DPX tiles)
            names.update({f"mid{j}": f"ptg::sr_gemm_mid<{functor}, {j}, {MID_RM}>" for j in MID_J})
            names.update({f"midcp{j}": f"ptg::sr_gemm_mid_cp<{functor}, {j}>" for j in MID_J})
        if dtype == np.float32 and sr.mul_op == "times" and sr.add_op in ("min", "max"):
            nz = f"ptg::{sr.add_op.capitalize()}TimesNZ<float>"  # neither operand holds the zero
            names.update({"nz_" + t: _gemm_expr(nz, t, t.endswith("_arg"))
                          for t in ("big3", "small", "small_arg")})
        if dtype == np.int32 and tuned:
            dpx = "ptg::MaxPlusDpx" if sr.name == "max_plus" else "ptg::MinPlusDpx"
            names.update({k: v for k, v in _gemm_names(dpx, 4, False, "dpx_", variants=True, small_k=False,
                                                         big3=True).items() if "combine" not in k})
            names["range_check"] = "ptg::dpx_range_check"
            # no zero and |x| < 2^30 (the facts say so): DPX with identity maps ("dpxw_"); argmax
            # with the running best and the grouped epilogue search (RE, gemm_cuda_notes s8i32)
            names.update({"dpxw_" + t: _gemm_expr(dpx + ("RE" if t.endswith("_arg") else "W"), t,
                                                  t.endswith("_arg"))
                          for t in ("big3", "small", "small_arg")})
        return ModuleSpec(f"gemm:{sr.name}:{dtype.name}", "semiring_gemm.cu", names)
    if not (sr.cuda_add and sr.cuda_mul):
        raise TypeError(f"matmul: semiring {sr.name!r} has no CUDA expressions (cuda_add/cuda_mul); "
                        "give them to Semiring(...) or use backend='cpu'")
    zero, one = _literal(sr.zero_for(dtype), dtype), _literal(sr.one_for(dtype), dtype)
    digest = hashlib.sha1(f"{sr.name}|{sr.cuda_add}|{sr.cuda_mul}|{zero}|{one}|{ct}".encode()
                          ).hexdigest()[:16]
    struct = f"User_{digest}"
    extra = f"""
namespace ptg {{
// user-defined semiring {sr.name!r} on {dtype.name}
struct {struct} : Base<{ct}, {struct}> {{
  __device__ __forceinline__ static {ct} zero() {{ return {zero}; }}
  __device__ __forceinline__ static {ct} one() {{ return {one}; }}
  __device__ __forceinline__ static {ct} add({ct} a, {ct} b) {{ return ({ct})({sr.cuda_add}); }}
  __device__ __forceinline__ static {ct} mul({ct} a, {ct} b) {{ return ({ct})({sr.cuda_mul}); }}
}};
}}  // namespace ptg
"""
    names = _gemm_names(f"ptg::{struct}", dtype.itemsize, sr.selective)
    return ModuleSpec(f"gemm:user:{digest}", "semiring_gemm.cu", names, extra)


def tile_of(role: str) -> tuple[int, ...]:
    """(BM, BN, BK, TM, TN, MINB) of a GEMM role such as "big", "dpx_big_k16", "nz_small_arg"."""
    return _tile(role.split("_", 1)[1] if role.startswith(("dpx_", "dpxw_", "nz_")) else role)


BOOLEAN = ModuleSpec("boolean", "boolean.cu", {
    "or": "ptg::bool_mm<false>", "xor": "ptg::bool_mm<true>", "pack": "ptg::pack_bits"})

VSA = ModuleSpec("vsa", "vsa.cu", {
    **{f"bundle{w}": f"ptg::vsa_bundle<{w}>" for w in BUNDLE_WIDTHS},
    "dot_block": "ptg::vsa_dot_block", "dot_warp": "ptg::vsa_dot_warp",
    "permute": "ptg::vsa_permute", "accumulate": "ptg::vsa_accumulate", "harden": "ptg::vsa_harden"})

#: the vectorised VSA kernels (16-byte accesses, carry-save bundle; vsa_launch.py picks them).
VSA_VEC = ModuleSpec("vsa_vec", "vsa_vec.cu", {
    **{f"bundle{w}": f"ptg::vsa_bundle_v<{w}>" for w in BUNDLE_V_WIDTHS},
    **{f"accumulate{b}": f"ptg::vsa_accumulate_v<{b}>" for b in ACC_BITS},
    "bind": "ptg::vsa_bind_v", "dot": "ptg::vsa_dot_v", "harden": "ptg::vsa_harden_v"})


def module_specs() -> list[ModuleSpec]:
    """Every builtin module (all semirings x dtypes, boolean, VSA) plus one user-defined semiring
    per dtype: what the backend can compile, for the nvcc compile test."""
    specs = []
    seen = set()
    for name in ("min_plus", "max_plus", "min_times", "max_times", "min_max", "max_min", "plus_times",
                 "bor_band", "bxor_band"):
        sr = get_semiring(name)
        for dt in sr.dtypes:
            if dt in CTYPES and (name, dt) not in seen:
                seen.add((name, dt))
                specs.append(gemm_spec(sr, np.dtype(dt)))
    for dt, add, mul in (("float32", "fmaxf(a, b)", "fminf(a, b)"), ("float64", "fmax(a, b)", "a + b"),
                         ("int32", "a + b", "max(a, b)"), ("int64", "a > b ? a : b", "a + b"),
                         ("uint64", "a + b", "a * b")):
        user = Semiring(f"user_{dt}", np.maximum, np.minimum, -np.inf, np.inf, dtypes=(dt,),
                        cuda_add=add, cuda_mul=mul, selective=add.startswith("fmax"))
        specs.append(gemm_spec(user, np.dtype(dt)))
    specs += [BOOLEAN, VSA, VSA_VEC]
    return specs


# ------------------------------------------------------------------------------ run time
_lock = threading.Lock()
_modules: dict[tuple[int, str], tuple[object, dict[str, str]]] = {}
_functions: dict[tuple[int, str, str], object] = {}


def function(spec: ModuleSpec, role: str):
    """The compiled kernel ``spec.names[role]`` on the current device (compiled once per device,
    thread-safe); called like a RawKernel: ``fn(grid, block, args, shared_mem=...)``."""
    import cupy

    dev = cupy.cuda.Device().id
    fkey = (dev, spec.key, role)
    fn = _functions.get(fkey)
    if fn is not None:
        return fn
    with _lock:
        fn = _functions.get(fkey)
        if fn is not None:
            return fn
        mkey = (dev, spec.key)
        entry = _modules.get(mkey)
        if entry is None:
            binary, mapping = nvrtc_cache.compile_module(spec.code(), OPTIONS,
                                                         list(spec.names.values()))
            mod = cupy.cuda.function.Module()
            mod.load(binary)
            entry = _modules[mkey] = (mod, mapping)
        mod, mapping = entry
        fn = mod.get_function(mapping[spec.names[role]])
        _functions[fkey] = fn
        return fn


_ew: dict[str, object] = {}


def elementwise(name: str):
    """CuPy Elementwise/Reduction kernels for the simple VSA maps (CuPy compiles per device)."""
    k = _ew.get(name)
    if k is not None:
        return k
    import cupy

    if name == "bind":
        k = cupy.ElementwiseKernel(
            "uint32 ap, uint32 an, uint32 bp, uint32 bn", "uint32 p, uint32 n",
            "p = (ap & bp) | (an & bn); n = (ap & bn) | (an & bp);", "ptg_bind")
    elif name == "nnz":
        k = cupy.ReductionKernel(
            "uint32 p, uint32 n", "int64 y", "(long long)__popc(p | n)", "a + b", "y = a", "0",
            "ptg_nnz")
    else:  # pragma: no cover
        raise KeyError(name)
    _ew[name] = k
    return k


__all__ = ["ModuleSpec", "module_specs", "gemm_spec", "function", "elementwise", "OPTIONS", "TILES",
           "BOOLEAN", "VSA", "VSA_VEC", "CTYPES", "BIG_VARIANTS", "tile_of"]
