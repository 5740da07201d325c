"""Operand facts of a GEMM's resident result, computed on the device (``wgsl/facts.wgsl``).

A result that stays on the device may be the next call's operand, and that call needs its facts
(NaN for the float check, ±inf and the integer range for the guard, subnormals on a flushing
adapter). Reading the result back to learn them would undo residency, so the GEMM's command list
gets one more dispatch that reduces the result to 8 words in a small buffer; :class:`Reader` turns
those 32 bytes into the facts when they are first asked, and :meth:`Reader.read_many` reads the
words of many results with one device read (what a batch does at its end).

A small GEMM may compute the same words in its own epilogue instead (``FACTS`` in
``wgsl/gemm_tiled.wgsl``, used by :mod:`.fastpath`): one set of 8 words per workgroup, folded here
(a Reader of ``slots`` sets), so the result needs no second dispatch.
"""

from __future__ import annotations

import struct

import numpy as np

from ..._checks import dt_name
from .engine import WG, Engine, pack_params
from .pool import DeviceBuffer
from .runtime import Copy

#: the initial words (see the shader): no NaN/inf, |x| max 0, min non-zero |x| inf, min/max empty
INIT = np.array([0, 0, 0, 0, 0x7F800000, 0, 0xFFFFFFFF, 0], np.uint32)
KINDS = {"float32": "f32", "int32": "i32", "uint32": "u32"}
#: workgroups of one facts dispatch (each reduces its share in workgroup memory first)
MAX_GROUPS = 1024
#: elements per thread below which one workgroup does it all (and the host writes no initial words)
ONE_GROUP_ITEMS = 64


class Reader:
    """The facts of one result, from its 8 words on the device (read once, then kept)."""

    __slots__ = ("eng", "handle", "capacity", "kind", "values", "slots")

    def __init__(self, eng: Engine, buf: DeviceBuffer, kind: str, slots: int = 1):
        kept = eng.pool.adopt(buf)
        self.eng, self.handle, self.capacity, self.kind = eng, kept.handle, kept.capacity, kind
        self.values: dict | None = None
        self.slots = slots  # sets of 8 words to fold (one per workgroup of a fused GEMM)

    def __del__(self):
        try:  # the words' buffer back to the pool (an atomic append, from any thread)
            self.eng.pool.returned.append((self.capacity, self.handle))
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __call__(self) -> dict:
        if self.values is None:
            self.read_many([self])
        return self.values

    @staticmethod
    def read_many(readers: list) -> None:
        """Fill the values of every reader not yet read with one device read (a staging copy)."""
        todo = [r for r in readers if r.values is None]
        if not todo:
            return
        eng = todo[0].eng
        at, spans = 0, []
        for r in todo:
            spans.append((r.handle, at, 32 * r.slots))
            at += 32 * r.slots
        with eng.lock:
            eng.flush()
            stage = eng.pool.acquire(at)
            try:
                sh = stage.handle
                eng.rt.submit([Copy(h, 0, sh, o, n) for h, o, n in spans])
                raw = np.frombuffer(eng.rt.read(stage.handle, 0, at), np.uint32)
            finally:
                eng.release(stage)
        words = raw.tolist()  # Python ints once (a batch's end decodes one reader per GEMM)
        at = 0
        for r in todo:
            w = words[at:at + 8 * r.slots]
            r.values = decode(r.kind, w if r.slots == 1 else fold(w))
            at += 8 * r.slots


def decode(kind: str, w: np.ndarray) -> dict:
    """The facts dict of :mod:`pytropical_gpu.facts` from the 8 words."""
    w = [int(x) for x in w]
    inf = float("inf")
    if kind == "f32":
        if w[0]:  # as the host facts: with NaN the rest is unknown, and moot
            return {"nan": True, "posinf": True, "neginf": True, "absmax": inf, "min": None,
                    "max": None, "min_abs": float("nan"), "subnormal": 0}
        return {"nan": False, "posinf": bool(w[1]), "neginf": bool(w[2]), "absmax": _f32(w[3]),
                "min": None, "max": None, "min_abs": _f32(w[4]), "subnormal": w[5]}
    lo, hi = w[6], w[7]
    if kind == "i32":
        lo, hi = lo - (1 << 31), hi - (1 << 31)  # undo the sign-bit flip
    return {"nan": False, "posinf": False, "neginf": False, "absmax": max(abs(lo), abs(hi)),
            "min": lo, "max": hi, "min_abs": inf, "subnormal": 0}


def fold(w: list) -> list:
    """One set of 8 words from several (one per workgroup), combined as the shader's atomics do."""
    s = [w[i::8] for i in range(8)]
    return [max(s[0]), max(s[1]), max(s[2]), max(s[3]), min(s[4]), sum(s[5]), min(s[6]), max(s[7])]


def _f32(bits: int) -> float:
    return _F32.unpack(_U32.pack(bits))[0]


_U32, _F32 = struct.Struct("<I"), struct.Struct("<f")


def record(eng: Engine, buf: DeviceBuffer, dtype, n: int):
    """``(dispatch, reader)`` computing the facts of ``n`` elements of ``dtype`` in ``buf`` (to be
    submitted right after the command that writes ``buf``), or None for a dtype without them."""
    kind = KINDS.get(dt_name(np.dtype(dtype)))
    if kind is None or n <= 0:
        return None
    st = eng.pool.acquire(32)
    groups = min(-(-n // (WG * ONE_GROUP_ITEMS)), MAX_GROUPS)
    if groups > 1:  # a fresh pool buffer: no recorded command uses it, so the write goes first
        eng.rt.write(st.handle, INIT)
    one = groups == 1
    pipe = eng.pipeline("facts", _key=("facts", kind, one), KIND=kind, ONE=one, WG=WG)
    gx, gy, _ = eng.grid(groups)
    d = eng.dispatch(pipe, [buf.binding(0, n * 4), st.binding(0, 32)], (gx, gy, 1),
                     pack_params(n, gx, 0, 0))
    r = Reader(eng, st, kind)
    if eng.recording is not None:
        eng._keep.append(r)  # its buffer is written by a recorded command: not recycled before
    return d, r


__all__ = ["INIT", "KINDS", "Reader", "decode", "fold", "record"]
