"""No adapter trusted unseen: the refusal rule (null/placeholder and OpenGL adapters, refused before
any device exists), the machine with no Vulkan driver (wgpu-py offers only OpenGL, Dawn only its
Null adapter), and thread-safe first use. The known-answer check and subnormal flushing are in
``test_wgpu_subnormals.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytropical_gpu.backends.wgpu.adapters import choose_adapter, refusal
from pytropical_gpu.backends.wgpu.runtime import AdapterInfo

ROOT = Path(__file__).resolve().parent.parent
#: a machine with no Vulkan driver, as far as the Vulkan loader can tell
NO_VULKAN = {"VK_ICD_FILENAMES": "/nonexistent.json", "VK_DRIVER_FILES": "/nonexistent.json"}

GL = AdapterInfo("llvmpipe (LLVM 15.0.6, 256 bits)", "", "OpenGL", "CPU", False)
NULL = AdapterInfo("Null backend", "", "Null", "CPU", True)
LAVAPIPE = AdapterInfo("llvmpipe (LLVM 15.0.6, 256 bits)", "llvmpipe", "Vulkan", "CPU", False)
GPU = AdapterInfo("NVIDIA H200", "NVIDIA", "Vulkan", "DiscreteGPU", False)


def _python(code: str, extra_env: dict | None = None, timeout: int = 300):
    env = {k: v for k, v in os.environ.items() if k != "PYTROPICAL_BACKEND"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra_env or {})
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=str(ROOT), env=env,
                          capture_output=True, text=True, timeout=timeout)


# ---------------------------------------------------------------------------- the rule itself
def test_refusal_names_what_why_and_the_fix():
    gl = refusal(GL)
    assert gl and "OpenGL" in gl and "llvmpipe" in gl
    assert "abort" in gl and "memory" in gl and "apt install mesa-vulkan-drivers" in gl
    null = refusal(NULL)
    assert null and "null/placeholder" in null and "uninitialised" in null
    assert refusal(LAVAPIPE) is None and refusal(GPU) is None


def test_choose_adapter_never_picks_a_refused_one(monkeypatch):
    monkeypatch.delenv("PYTROPICAL_WGPU_ADAPTER", raising=False)
    same = lambda a: a  # noqa: E731 - the adapters here are their own infos
    assert choose_adapter([GL, LAVAPIPE], same) == (LAVAPIPE, "")
    assert choose_adapter([LAVAPIPE, GPU, GL], same) == (GPU, "")
    got, why = choose_adapter([GL], same)
    assert got is None and "OpenGL" in why
    got, why = choose_adapter([NULL, GL], same)
    assert got is None and "null/placeholder" in why and "OpenGL" in why
    assert choose_adapter([], same)[0] is None
    # naming a refused adapter explicitly gets its refusal, not a silent substitute
    monkeypatch.setenv("PYTROPICAL_WGPU_ADAPTER", "llvmpipe")
    assert choose_adapter([GL, GPU], same) == (None, "PYTROPICAL_WGPU_ADAPTER='llvmpipe': "
                                                      + refusal(GL))
    monkeypatch.setenv("PYTROPICAL_WGPU_ADAPTER", "nvidia")
    assert choose_adapter([GL, GPU], same) == (GPU, "")


# ---------------------------------------------------------------------------- no Vulkan driver
def test_wgpu_py_without_vulkan_refuses_opengl_before_a_device_exists():
    """wgpu-py falls back to OpenGL (llvmpipe): the backend says unavailable with the reason, and
    no device (with its poll thread, which aborted the process on GL) is ever created."""
    pytest.importorskip("wgpu")
    r = _python("""
        import json, threading, wgpu
        found = [dict(a.info)["backend_type"] for a in wgpu.gpu.enumerate_adapters_sync()]
        import pytropical_gpu as tg
        from pytropical_gpu.backends import probe
        ok, reason = probe("wgpu")
        try:
            tg.get_backend("wgpu")
            err = None
        except tg.BackendUnavailableError as e:
            err = str(e)
        polls = [t.name for t in threading.enumerate() if type(t).__name__ == "PollThread"]
        print(json.dumps({"found": found, "ok": ok, "reason": reason, "err": err, "polls": polls}))
    """, {**NO_VULKAN, "PYTROPICAL_WEBGPU": "wgpu"})
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(r.stdout.strip().splitlines()[-1])
    assert "Vulkan" not in d["found"], d
    assert d["ok"] is False and d["err"] and d["polls"] == [], d
    if "OpenGL" in d["found"]:
        assert "OpenGL" in d["reason"] and "mesa-vulkan-drivers" in d["reason"], d
        assert "OpenGL" in d["err"], d


def test_dawn_without_vulkan_refuses_its_null_adapter():
    """Dawn hands out its "Null" adapter: it used to be accepted and returned uninitialised memory."""
    pytest.importorskip("pydawn")
    r = _python("""
        from pytropical_gpu.backends import probe
        from pytropical_gpu.backends.wgpu import runtime
        print([a.backend for a in runtime.list_adapters("dawn")])
        print(probe("wgpu"))
    """, {**NO_VULKAN, "PYTROPICAL_WEBGPU": "dawn"})
    assert r.returncode == 0, r.stdout + r.stderr
    found, verdict = r.stdout.strip().splitlines()[-2:]
    assert "Vulkan" not in found
    assert verdict.startswith("(False, "), r.stdout
    if "Null" in found:
        assert "null/placeholder" in verdict, r.stdout


@pytest.mark.parametrize("runtime", ["wgpu", "dawn"])
def test_info_json_without_vulkan_says_why(runtime):
    if runtime == "dawn":
        pytest.importorskip("pydawn")
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    r = subprocess.run([sys.executable, "-m", "pytropical_gpu", "info", "--json"], cwd=str(ROOT),
                       env={**os.environ, **NO_VULKAN, "PYTROPICAL_WEBGPU": runtime, "PYTHONPATH": path},
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    w = json.loads(r.stdout)["backends"]["wgpu"]
    assert w["ok"] is False and w["check"]["status"] == "SKIP"
    assert "OpenGL" in w["reason"] or "null/placeholder" in w["reason"] or "no WebGPU" in w["reason"]


# ---------------------------------------------------------------------------- first use, threads
FIRST_CALLS = """
    import threading, numpy as np, pytropical_gpu as tg
    from pytropical_gpu.backends import probe
    use_wgpu = {use_wgpu}
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.arange(8, dtype=np.float32).reshape(4, 2)
    want = tg.matmul(a, b, "min_plus", backend="cpu")
    v = tg.TernaryVec.from_array(np.array([1, -1, 0, 1], np.int8))
    gate, got, errors = threading.Barrier(4), [], []

    def first_call(i):
        gate.wait()
        try:
            be = "wgpu" if use_wgpu and i % 2 else None
            got.append((tg.matmul(a, b, "min_plus", backend=be), tg.dot(v, v, backend=be),
                        tg.available_backends(), tg.get_backend("wgpu") if use_wgpu else None))
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=first_call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(got) == 4
    for d, dot, names, be in got:
        assert np.array_equal(d, want) and dot == 3 and names == got[0][2]
    assert len({{id(g[3]) for g in got}}) == 1  # one backend object, one engine
    print("ok", got[0][2])
"""


@pytest.mark.parametrize("vulkan", [True, False], ids=["vulkan", "no-vulkan"])
def test_four_threads_making_their_first_call_at_once(vulkan):
    """In a fresh process (so the first call really is the first): four threads call at once;
    none may abort the process, all get the right answer and one engine is created."""
    env = {} if vulkan else dict(NO_VULKAN)
    from pytropical_gpu.backends import probe

    use_wgpu = vulkan and probe("wgpu")[0]
    for _ in range(2):
        r = _python(FIRST_CALLS.format(use_wgpu=use_wgpu), env)
        assert r.returncode == 0, f"rc {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        assert r.stdout.strip().splitlines()[-1].startswith("ok"), r.stdout
        if not vulkan:
            assert "'wgpu'" not in r.stdout.strip().splitlines()[-1]
