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

#: the index of each of the 8 words (``wgsl/facts_core.wgsl`` lists them): NaN, +inf, -inf present;
#: largest and smallest non-zero |x| as f32 bits; the subnormal count; an integer's min and max
#: (order-preserving u32)
W_NAN, W_POSINF, W_NEGINF, W_ABSMAX, W_MIN_ABS, W_SUBNORMAL, W_LO, W_HI = range(8)
#: the words folded by min over workgroups (the others: max, but the subnormal count's sum)
W_MINS = (W_MIN_ABS, W_LO)
#: the float words ``Words.fl`` keeps as float32 columns (whatever their order in the layout)
FL = [W_ABSMAX, W_MIN_ABS]
_FL_MIN_ABS = FL.index(W_MIN_ABS)
#: the initial words (see the shader): no NaN/inf, |x| max 0, min non-zero |x| inf, min/max empty
INIT = np.array([0, 0, 0, 0, 0x7F800000, 0, 0xFFFFFFFF, 0], np.uint32)
KINDS = {"float32": "f32", "int32": "i32", "uint32": "u32"}
#: workgroups of one facts dispatch (each reduces its share in workgroup memory first)
MAX_GROUPS = 1024
#: elements per thread below which one workgroup does it all (and the host writes no initial words)
ONE_GROUP_ITEMS = 64
#: bytes of one facts arena (:class:`Arena`): 256 fused results at a 256-byte offset alignment
ARENA_BYTES = 1 << 16
#: False: :meth:`Reader.read_many` decodes every reader's words into its dict at once (the path
#: before :class:`Words`; benchmarks compare the two in one run)
WORDS = True


class Arena:
    """One pool buffer that the fused GEMMs of a batch write their facts words into, each at its
    own aligned offset (:meth:`slot`): a batch's end copies each arena's used bytes once instead of
    one small buffer per result. Back to the pool when the last reader in it is gone."""

    __slots__ = ("eng", "handle", "capacity", "used", "align")

    def __init__(self, eng: Engine, nbytes: int = ARENA_BYTES):
        self.eng, self.capacity = eng, eng.pool._class(nbytes)
        self.handle = eng.pool.take(self.capacity)
        self.used = 0
        self.align = max(32, eng.limits.min_storage_offset_alignment)

    def slot(self, nbytes: int) -> int | None:
        """The offset of ``nbytes`` more, or None when the arena is full."""
        at = -(-self.used // self.align) * self.align
        if at + nbytes > self.capacity:
            return None
        self.used = at + nbytes
        return at

    def __del__(self):
        try:  # an atomic append, from any thread (as a resident result's storage)
            self.eng.pool.returned.append((self.capacity, self.handle))
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


class Words:
    """The folded words of the readers one :meth:`Reader.read_many` read, a row each (in the order
    read), as arrays: ``w`` the 8 words (int64), ``fl`` the words ``W_ABSMAX`` and ``W_MIN_ABS`` as
    float32 values (float64, in that order), ``f32`` which rows are float facts. A batch's end
    checks many results' facts from these at once (:func:`.fastchecks.cleared`); a result's dict is
    decoded from its row only when asked."""

    __slots__ = ("w", "fl", "f32")

    def __init__(self, n: int, f32: np.ndarray):
        self.w, self.fl, self.f32 = np.empty((n, 8), np.int64), np.empty((n, 2)), f32

    def nan(self) -> np.ndarray:
        """Per row: the result holds NaN (``decode``'s "nan")."""
        return self.f32 & (self.w[:, W_NAN] != 0)

    def quiet(self, smallest: float) -> np.ndarray:
        """Per row: a float result without NaN or subnormals whose smallest non-zero magnitude is
        at least ``smallest`` (``decode``'s "subnormal" 0 and "min_abs" >= smallest)."""
        w = self.w
        return self.f32 & (w[:, W_NAN] == 0) & (w[:, W_SUBNORMAL] == 0) \
            & (self.fl[:, _FL_MIN_ABS] >= smallest)


class Reader:
    """The facts of one result, from its 8 words on the device (read once, then kept); ``slots``
    sets of them (one per workgroup of a fused GEMM) at ``offset`` of its buffer (an arena's).
    Once read: ``values`` (the dict) or, not yet decoded, row ``row`` of ``words``."""

    __slots__ = ("eng", "handle", "capacity", "kind", "values", "slots", "offset", "arena", "words",
                 "row")

    def __init__(self, eng: Engine, buf: DeviceBuffer | None, kind: str, slots: int = 1,
                 arena: Arena | None = None, offset: int = 0):
        self.eng, self.kind, self.slots, self.offset, self.arena = eng, kind, slots, offset, arena
        if arena is None:
            kept = eng.pool.adopt(buf)
            self.handle, self.capacity = kept.handle, kept.capacity
        else:  # the arena's buffer, given back with the arena
            self.handle, self.capacity = arena.handle, None
        self.values: dict | None = None
        self.words: Words | None = None
        self.row = 0

    def __del__(self):
        if self.arena is not None:
            return
        try:  # the words' buffer back to the pool (an atomic append, from any thread)
            self.eng.pool.returned.append((self.capacity, self.handle))
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def __call__(self) -> dict:
        if self.values is None:
            if self.words is None:
                self.read_many([self])
            if self.values is None:  # read as a row of words: decoded now, once
                wd, i = self.words, self.row
                self.values = decode(self.kind, wd.w[i].tolist(), wd.fl[i].tolist())
        return self.values

    @staticmethod
    def read_many(readers: list) -> None:
        """Fill the values of every reader not yet read with one device read: each buffer's used
        bytes copied once into one staging buffer (an arena's many results with one copy)."""
        # once each (a batch lists a result's facts once per deferred check that asks them)
        todo = [r for r in dict.fromkeys(readers) if r.values is None and r.words is None]
        if not todo:
            return
        eng = todo[0].eng
        ends: dict = {}  # buffer -> bytes to copy from its start
        for r in todo:
            e = r.offset + 32 * r.slots
            if ends.get(r.handle, 0) < e:
                ends[r.handle] = e
        base, at = {}, 0
        for h, e in ends.items():
            base[h] = at
            at += e
        with eng.lock:
            eng.flush()
            stage = eng.pool.acquire(at)
            try:
                sh = stage.handle
                eng.rt.submit([Copy(h, 0, sh, base[h], e) for h, e in ends.items()])
                raw = np.frombuffer(eng.rt.read(stage.handle, 0, at), np.uint32)
            finally:
                eng.release(stage)
        starts = [(base[r.handle] + r.offset) >> 2 for r in todo]
        words = _folded(raw, todo, starts)
        if not WORDS:  # every reader's dict now (the path before Words)
            for r, w, fl in zip(todo, words.w.tolist(), words.fl.tolist()):
                r.values = decode(r.kind, w, fl)
            return
        for i, r in enumerate(todo):
            r.words, r.row = words, i


def _folded(raw: np.ndarray, todo: list, starts: list) -> Words:
    """The readers' words, a row each, their workgroups' sets folded (vectorised per count, the
    floats too: no struct round trip each)."""
    out = Words(len(todo), np.fromiter((r.kind == "f32" for r in todo), bool, len(todo)))
    by: dict = {}
    for i, r in enumerate(todo):
        by.setdefault(r.slots, []).append(i)
    for slots, idx in by.items():
        pos = np.asarray([starts[i] for i in idx], np.int64)[:, None] + np.arange(8 * slots)
        w = raw[pos].reshape(len(idx), slots, 8).astype(np.int64)
        if slots == 1:
            f = w[:, 0]
        else:  # as the shader's atomics combine workgroups (and as fold)
            f = w.max(axis=1)
            for i in W_MINS:
                f[:, i] = w[:, :, i].min(axis=1)
            f[:, W_SUBNORMAL] = w[:, :, W_SUBNORMAL].sum(axis=1)
        if len(by) == 1:  # (every reader: no scatter)
            out.w[:] = f
            out.fl[:] = f[:, FL].astype(np.uint32).view(np.float32)
        else:
            out.w[idx] = f
            out.fl[idx] = f[:, FL].astype(np.uint32).view(np.float32)
    return out


def decode(kind: str, w, floats: list | None = None) -> dict:
    """The facts dict of :mod:`pytropical_gpu.facts` from the 8 words (``floats``: the words
    ``W_ABSMAX`` and ``W_MIN_ABS`` as float32 values, when the caller has them already)."""
    w = [int(x) for x in w] if floats is None else w
    inf = float("inf")
    if kind == "f32":
        if w[W_NAN]:  # as the host facts: with NaN the rest is unknown, and moot
            return {"nan": True, "posinf": True, "neginf": True, "absmax": inf, "min": None,
                    "max": None, "min_abs": float("nan"), "subnormal": 0}
        amax, mabs = (_f32(w[W_ABSMAX]), _f32(w[W_MIN_ABS])) if floats is None else floats
        return {"nan": False, "posinf": bool(w[W_POSINF]), "neginf": bool(w[W_NEGINF]),
                "absmax": amax, "min": None, "max": None, "min_abs": mabs,
                "subnormal": w[W_SUBNORMAL]}
    lo, hi = w[W_LO], w[W_HI]
    if kind == "i32":
        lo, hi = lo - (1 << 31), hi - (1 << 31)  # undo the sign-bit flip
    return {"nan": False, "posinf": False, "neginf": False, "absmax": max(abs(lo), abs(hi)),
            "min": lo, "max": hi, "min_abs": inf, "subnormal": 0}


def fold(w: list) -> list:
    """One set of 8 words from several (one per workgroup), combined as the shader's atomics do."""
    s = [w[i::8] for i in range(8)]
    out = [max(x) for x in s]
    for i in W_MINS:
        out[i] = min(s[i])
    out[W_SUBNORMAL] = sum(s[W_SUBNORMAL])
    return out


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


__all__ = ["ARENA_BYTES", "INIT", "KINDS", "WORDS", "Arena", "Reader", "Words", "decode", "fold",
           "record"]
