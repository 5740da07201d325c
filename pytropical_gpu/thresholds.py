"""Routing thresholds: the defaults, the measured ones, and where they are kept between runs.

:func:`pytropical_gpu.calibration.calibrate` measures them; this module holds the result type
(:class:`Thresholds`), the machine fingerprint that keys them, and the JSON cache file. Sizes are in
the units HybridContext routes by: ``m*n*k`` (times batch) for ``matmul``, ``m*n*k // 32`` for
``andor_matmul``, elements for ``pack``, and for the VSA operations the sum of ``pos.size`` (uint32
words) over the operands (``sign.size * bits`` for ``accumulate``/``harden``).

A cache file that cannot be read is logged and ignored (never an exception): routing then uses
:data:`DEFAULTS` until the next calibration. An entry is found again only under the same
fingerprint (library version, CPU, and each measured backend's device), so another machine sharing
the home directory, a new GPU or a new release never reuses stale numbers.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("pytropical_gpu")

#: a crossover the GPU never reached in the sweep: every size stays on cpu
NEVER = sys.maxsize
#: the cache file's layout version (bump when the entry layout changes)
FORMAT = 1
CACHE_FILE = "thresholds.json"

#: Sensible crossovers before calibrate() has run, with cuda as the GPU (a hardware wgpu adapter's are
#: ``route_table.WGPU_DEFAULTS``): the H200 calibration (``benchmarks/results/calibrate_h200.json``),
#: cuda against cpu alone, to two digits. bundle's measured 0 holds for 16 vectors; 4096 keeps a
#: bundle of a few short vectors on cpu.
DEFAULTS: dict[str, int] = {
    "matmul": 180_000, "matmul_int": 140_000, "andor_matmul": 34_000, "pack": NEVER,
    "bind": 1_100_000, "bundle": 4096, "dot": 300_000, "cosine": 600_000, "permute": 10_000,
    "search": 180_000, "accumulate": 110_000, "harden": 150_000,
}
#: integer matmuls route by ``matmul_int`` (measured on int32 max_plus), floats by ``matmul``
INT_DTYPES = ("int32", "int64", "uint32", "uint64")


@dataclass
class Thresholds:
    """Per-operation crossovers: at ``size >= crossover[op]`` the best GPU is at least as fast as cpu.

    Parameters
    ----------
    crossover : dict
        op -> size (route units, see the module doc); :data:`NEVER` when no GPU beat cpu.
    gpu : dict
        op -> the GPU backend that won from the crossover on (None: none did).
    timings : dict
        op -> backend -> ``[[size, seconds], ...]``: the raw wall-clock measurements.
    devices : dict
        backend -> facts about its device (``device``, ``software``).
    fingerprint : str
        The key of the machine it was measured on (:func:`fingerprint`).
    source : str
        ``"defaults"`` or ``"calibrated"``.

    Shapes:
        not applicable.

    Examples
    --------
    >>> t = Thresholds.defaults()
    >>> t.route("bind", 10), t.route("matmul", 10**12, default_gpu="cuda")
    ('cpu', 'cuda')
    """

    crossover: dict[str, int]
    gpu: dict[str, str | None] = field(default_factory=dict)
    timings: dict[str, dict[str, list[list[float]]]] = field(default_factory=dict)
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    fingerprint: str = ""
    source: str = "defaults"
    created: float = 0.0
    errors: list[str] = field(default_factory=list)

    @classmethod
    def defaults(cls) -> Thresholds:
        """:data:`DEFAULTS`, with no GPU named (the router picks the one it has)."""
        return cls(crossover=dict(DEFAULTS))

    @staticmethod
    def key(op: str, dtype: Any = None) -> str:
        """The table key for ``op``: integer-dtype matmuls use ``matmul_int``."""
        if op == "matmul" and dtype is not None and _dtype_name(dtype) in INT_DTYPES:
            return "matmul_int"
        if op not in DEFAULTS:
            raise ValueError(f"Thresholds: unknown op {op!r}; known: {', '.join(DEFAULTS)}")
        return op

    def threshold(self, op: str, dtype: Any = None) -> int:
        """The crossover for ``op`` (see :meth:`key`); :data:`DEFAULTS` fill gaps."""
        k = self.key(op, dtype)
        return self.crossover.get(k, DEFAULTS[k])

    def route(self, op: str, size: int, dtype: Any = None, default_gpu: str | None = None) -> str:
        """``"cpu"`` below the crossover, else the GPU measured fastest for ``op`` (``default_gpu``
        when this table names none, as :meth:`defaults` does; ``"cpu"`` when that is None too)."""
        if size < self.threshold(op, dtype):
            return "cpu"
        return self.gpu.get(self.key(op, dtype)) or default_gpu or "cpu"

    def as_dict(self) -> dict[str, int]:
        """op -> crossover for every op in :data:`DEFAULTS` (HybridContext's ``thresholds`` table)."""
        return {op: self.threshold(op) for op in DEFAULTS}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Any) -> Thresholds:
        """Rebuild from :meth:`to_json`; ValueError when ``d`` does not have that layout."""
        if not isinstance(d, dict) or not isinstance(d.get("crossover"), dict):
            raise ValueError("not a Thresholds entry (no 'crossover' table)")
        t = cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})
        for op, v in t.crossover.items():
            if op not in DEFAULTS or isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"bad crossover {op!r}: {v!r}")
        if not isinstance(t.gpu, dict) or not isinstance(t.timings, dict) or \
                not isinstance(t.devices, dict):
            raise ValueError("gpu, timings and devices must be tables")
        return t


def _dtype_name(dtype: Any) -> str:
    import numpy as np

    try:
        return np.dtype(dtype).name
    except TypeError:
        return str(dtype)  # cupy/torch dtypes numpy does not know: no integer match


# ---------------------------------------------------------------- machine fingerprint
def cpu_model() -> str:
    """The CPU model name (``/proc/cpuinfo``), else ``platform.processor()`` or the machine
    type ("" when neither is known): the cpu backend's device in the fingerprint."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe_backend(name: str) -> dict[str, Any]:
    """What identifies ``name``'s device: its name, runtime and whether it is a software adapter."""
    if name == "cpu":
        import numpy as np

        return {"device": cpu_model(), "numpy": np.__version__, "software": False}
    from .backends import get_backend

    d = get_backend(name).describe()
    keep = ("device", "runtime", "backend", "adapter_type", "software", "compute_capability", "cupy")
    out = {k: d[k] for k in keep if k in d}
    out["software"] = bool(out.get("software", False))
    return out


def library_version() -> str:
    """The installed pytropical_gpu version (from its metadata: thresholds sits below the package
    ``__init__`` and does not import it)."""
    from importlib import metadata

    try:
        return metadata.version("pytropical_gpu")
    except metadata.PackageNotFoundError:  # a checkout on sys.path, never installed
        return "unknown"


def fingerprint(devices: dict[str, dict[str, Any]]) -> str:
    """A short stable key for (library version, machine, the measured backends' devices)."""
    facts = {"version": library_version(), "format": FORMAT, "machine": platform.machine(),
             "cpus": os.cpu_count(), "devices": devices}
    return hashlib.sha256(json.dumps(facts, sort_keys=True, default=str).encode()).hexdigest()[:20]


# ---------------------------------------------------------------- the cache file
def cache_dir() -> Path:
    """``PYTROPICAL_CACHE_DIR``, else platformdirs' user cache dir for pytropical_gpu."""
    env = os.environ.get("PYTROPICAL_CACHE_DIR")
    if env:
        return Path(env)
    try:
        import platformdirs
    except ImportError:  # declared as a dependency; a broken install still gets a sensible place
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        return Path(base) / "pytropical_gpu"
    return Path(platformdirs.user_cache_dir("pytropical_gpu"))


def _read(path: Path) -> dict[str, Any] | None:
    """The file's entries, {} when absent; None (logged) when it cannot be used."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as e:
        log.warning("calibration: cannot read %s (%s); using default thresholds", path, e)
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as e:  # bad JSON or bad UTF-8 (UnicodeDecodeError is a ValueError)
        log.warning("calibration: ignoring corrupt file %s (%s); using default thresholds", path, e)
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or \
            not isinstance(data.get("entries"), dict):
        log.warning("calibration: ignoring %s (not a format-%d thresholds file)", path, FORMAT)
        return None
    return data["entries"]


def save_thresholds(t: Thresholds) -> Path | None:
    """Store ``t`` under its fingerprint (other machines' entries are kept); None if not writable."""
    path = cache_dir() / CACHE_FILE
    entries = _read(path) or {}
    entries[t.fingerprint] = t.to_json()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"format": FORMAT, "entries": entries}, indent=1), encoding="utf-8")
        os.replace(tmp, path)  # atomic: a reader never sees half a file
    except OSError as e:  # a read-only home must not break calibration
        log.warning("calibration: cannot write %s (%s); thresholds not saved", path, e)
        return None
    log.info("calibration: saved thresholds to %s", path)
    return path


def load_thresholds(backends: Sequence[str]) -> Thresholds | None:
    """The thresholds calibrated on this machine, or None (never run here, stale, or unreadable).

    Parameters
    ----------
    backends : list of str
        The backends the calibration measured (what ``calibrate()`` measures by default is
        :func:`pytropical_gpu.routing.usable_backends`: cpu, cuda if usable, a hardware wgpu adapter).

    Returns
    -------
    Thresholds or None
        None when the file is absent, holds no entry for this machine's fingerprint, or is corrupt
        (logged at WARNING, never raised).

    Shapes:
        not applicable.

    Examples
    --------
    >>> load_thresholds(["cpu"]) is None or isinstance(load_thresholds(["cpu"]), Thresholds)
    True
    """
    names = list(backends)
    try:
        key = fingerprint({b: describe_backend(b) for b in names})
    except Exception as e:  # a backend that no longer opens: what was measured is stale
        log.info("calibration: cannot fingerprint %s (%s); thresholds not loaded", names, e)
        return None
    entries = _read(cache_dir() / CACHE_FILE)
    if not entries or key not in entries:
        return None
    try:
        t = Thresholds.from_json(entries[key])
    except (TypeError, ValueError) as e:
        log.warning("calibration: ignoring corrupt entry in %s (%s)", cache_dir() / CACHE_FILE, e)
        return None
    t.source = "calibrated"
    return t


__all__ = ["DEFAULTS", "NEVER", "Thresholds", "cache_dir", "cpu_model", "describe_backend", "fingerprint",
           "load_thresholds", "save_thresholds"]
