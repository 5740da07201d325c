"""The wgpu-py submit as session 4 left it, for a same-run baseline (``bench_batch_s5.py``).

Session 5 changed two things in the submit (`runtime.pack_uniforms`: equal params blocks share one
place; `bindgroups.lookup`: a hit makes no closure, the uniform key comes from `uniform_keys`).
:func:`s4_submit` puts the session-4 functions (copied from 7f2cec4) back into
``runtime_wgpupy``'s namespace while it is active; the adapters add one call frame per dispatch
(~0.1 µs), charged to the baseline.
"""

from __future__ import annotations

import contextlib

from pytropical_gpu.backends.wgpu.runtime import storage_ranges, uniform_size


def pack_uniforms_s4(blobs, align):
    offs, total = [], 0
    for b in blobs:
        offs.append(total)
        total += -(-uniform_size(b) // align) * align
    last = uniform_size(blobs[-1]) if blobs else 0
    stage = bytearray(offs[-1] + last + (-last % 4)) if blobs else bytearray()
    for o, b in zip(offs, blobs):
        stage[o:o + len(b)] = b
    return offs, stage


def lookup_s4(cache, cmd, uniform, offset, blob):
    b = cmd.bindings
    if type(b) is not tuple:
        b = tuple(b)
    u = None if blob is None else (uniform, offset, uniform_size(blob))

    def entries():
        ranges = storage_ranges(cmd)
        if u is not None:
            ranges.insert(0, (0, *u))
        return tuple(ranges)

    return cache.get((cmd.pipeline, u, b), cmd.pipeline, entries)


def _uniform_keys_s4(uniform, offs, blobs):
    return [(uniform, o, b) for o, b in zip(offs, blobs)]  # what lookup_s4 was given


def _lookup_adapter(cache, cmd, u):
    return lookup_s4(cache, cmd, None, 0, None) if u is None else lookup_s4(cache, cmd, *u)


@contextlib.contextmanager
def s4_submit():
    """wgpu-py's submit with the session-4 uniform packing and bind-group lookup."""
    from pytropical_gpu.backends.wgpu import runtime_wgpupy as rw

    saved = rw.pack_uniforms, rw.lookup, rw.uniform_keys
    rw.pack_uniforms, rw.lookup, rw.uniform_keys = pack_uniforms_s4, _lookup_adapter, \
        _uniform_keys_s4
    try:
        yield
    finally:
        rw.pack_uniforms, rw.lookup, rw.uniform_keys = saved
