"""WGSL templates: jinja2 in pygfx style (``{$ $}`` blocks, ``$$`` line statements, strict).

A template is a file ``wgsl/<name>.wgsl`` loaded through :func:`pytropical_gpu.shaders.load_source`;
a parameter the template uses but the caller did not give is an error (``StrictUndefined``), never
empty text; a template refuses a parameter value it does not render with ``fail("...")``
(:class:`ValueError`). Helpers for exact WGSL literals of numpy scalars live here too.
"""

from __future__ import annotations

import functools

import jinja2
import numpy as np

from ...shaders import load_source

WGSL_TYPES = {"float32": "f32", "int32": "i32", "uint32": "u32"}


def _fail(message: str):
    """A template's refusal of parameters it does not render (``fail("...")`` in the template)."""
    raise ValueError(message)


@functools.lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        block_start_string="{$", block_end_string="$}", variable_start_string="{{",
        variable_end_string="}}", line_statement_prefix="$$", undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, autoescape=False, keep_trailing_newline=True,
        loader=jinja2.FunctionLoader(lambda name: load_source("wgsl", name)))
    env.globals["fail"] = _fail
    return env


@functools.cache
def _template(name: str) -> jinja2.Template:
    return _env().get_template(name if name.endswith(".wgsl") else name + ".wgsl")


def render(name: str, **params) -> str:
    """The WGSL text of template ``name`` with ``params`` substituted."""
    return _template(name).render(**params)


#: WGSL helper that every template using a float :func:`literal` declares (semiring_ops.wgsl does).
F32_BITS_FN = "fn f32_bits(b: u32) -> f32 { return bitcast<f32>(b); }"


def literal(value, dtype) -> str:
    """An exact WGSL expression for a numpy scalar (inf and INT_MIN included).

    A float goes through ``f32_bits(bits)`` (see :data:`F32_BITS_FN`), never ``bitcast<f32>(0x...u)``
    directly: naga cannot const-evaluate ``bitcast`` (so it may not initialise a ``const``), and Tint
    const-evaluates ``bitcast`` of a constant everywhere and rejects an infinite result ("value inf
    cannot be represented as 'f32'"). A function parameter is never a const-expression, so both
    compilers accept it and the driver folds the call."""
    dt = np.dtype(dtype)
    bits = int(np.asarray(value, dt).view(np.uint32 if dt.itemsize == 4 else np.uint8))
    if dt.name == "float32":
        return f"f32_bits({bits:#010x}u)"
    if dt.name == "int32":
        return f"bitcast<i32>({bits:#010x}u)"
    if dt.name == "uint32":
        return f"{bits:#010x}u"
    raise TypeError(f"wgpu: no WGSL type for dtype {dt.name}")


__all__ = ["F32_BITS_FN", "WGSL_TYPES", "literal", "render"]
