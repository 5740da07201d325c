"""Compile every wgpu shader variant on one WebGPU runtime and print each one's seconds.

A diagnosis, not a benchmark: ``test_every_shader_variant_compiles`` ran past a 10-minute suite call
on the H200, and this told a stuck compile from a slow list (session 5: no source over 2.7 s, none
stuck; ~0.08 s each over 3,563 sources). Lines: ``START i label`` before a compile, ``DONE i
seconds ok|ERR label`` after, so the last START without DONE names a stuck one under a timeout.

Usage: ``python benchmarks/shader_compile_times.py wgpu|dawn``
"""

from __future__ import annotations

import importlib
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))


def main(argv: list[str] | None = None) -> int:
    import wgpu_variants as variants

    name = (argv or sys.argv[1:] or ["wgpu"])[0]
    if name not in ("wgpu", "dawn"):
        raise ValueError(f"runtime must be 'wgpu' or 'dawn', got {name!r}")
    mod = importlib.import_module("pytropical_gpu.backends.wgpu.runtime_"
                                  + ("wgpupy" if name == "wgpu" else "dawn"))
    rt = mod.create()
    srcs = variants.sources(variants.covering())
    print(f"{len(srcs)} sources on {name}", flush=True)
    t00, errors = time.perf_counter(), 0
    for i, (src, vs) in enumerate(srcs.items()):
        print(f"START {i} {vs[0].label}", flush=True)
        t0 = time.perf_counter()
        try:
            rt.compile(src, vs[0].label)
            ok = "ok"
        except RuntimeError as e:
            errors += 1
            ok = "ERR " + str(e).splitlines()[0][:100]
        print(f"DONE {i} {time.perf_counter() - t0:.2f}s {ok} {vs[0].label}", flush=True)
    print(f"total {time.perf_counter() - t00:.1f}s, {errors} errors", flush=True)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
