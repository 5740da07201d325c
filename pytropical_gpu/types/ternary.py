"""Bitsliced ternary hypervectors: two bit planes per vector, 32 trits per uint32 word.

A trit t ∈ {−1, 0, +1} is stored as bit ``pos`` (t = +1) and bit ``neg`` (t = −1), LSB first; tail
bits past ``dim`` are zero and a bit set in both planes is invalid. Leading batch dimensions are
allowed: ``pos.shape == (..., words)``. Data only: the verbs are in :mod:`pytropical_gpu.vsa` and
:mod:`pytropical_gpu.similarity`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _arrays
from .._checks import int_arg, uint32_array


def words_for(dim: int) -> int:
    return (dim + 31) // 32


def _tail_mask(dim: int) -> np.uint32:
    r = dim % 32
    return np.uint32(0xFFFFFFFF if r == 0 else (1 << r) - 1)


def _check_bits(pos: Any, neg: Any, dim: int) -> None:
    """No bit in both planes, no bit past ``dim`` (numpy or cupy planes)."""
    if pos.size and bool((pos & neg).any()):
        raise ValueError("TernaryVec: invalid trit: a bit is set in both pos and neg")
    if pos.size and dim % 32:
        m = ~_tail_mask(dim)
        if bool(((pos[..., -1] | neg[..., -1]) & m).any()):
            raise ValueError(f"TernaryVec: tail bits past dim {dim} must be zero")


class TernaryVec:
    """A (batch of) ternary hypervector(s) stored as ``pos``/``neg`` uint32 bit planes.

    Made by :meth:`from_array`/:meth:`random`; :meth:`to_array` gives trits (np.asarray raises).
    Planes are validated here and by ``to_device``, then trusted (re-validate after in-place edits).

    Parameters
    ----------
    pos, neg : array
        uint32 planes (numpy or cupy): bit i of word w is trit 32 w + i; tail bits zero.
    dim : int
        Trits per vector.

    Raises
    ------
    ValueError
        A bit in both planes, non-zero tail bits, a word count that does not match ``dim``.

    Shapes:
        pos, neg: (*batch, ceil(dim/32)) uint32; ``.shape`` is (*batch, dim).

    Examples
    --------
    >>> v = TernaryVec.from_array(np.array([1, 0, -1, 1], dtype=np.int8))
    >>> v.to_array().tolist(), v.dim
    ([1, 0, -1, 1], 4)
    """

    __slots__ = ("pos", "neg", "dim")

    def __init__(self, pos: Any, neg: Any, dim: int):
        dim = int_arg(dim, "TernaryVec", "dim", lo=0)
        for plane, name in ((pos, "pos"), (neg, "neg")):
            uint32_array(plane, "TernaryVec", name, "a bit plane; build vectors from trits with "
                         "TernaryVec.from_array")
        if _arrays.xp_of(neg) is not _arrays.xp_of(pos) or _arrays.is_wgpu(pos) != _arrays.is_wgpu(neg):
            raise TypeError(f"TernaryVec: pos and neg must be the same array kind, got "
                            f"{type(pos).__name__} and {type(neg).__name__}")
        if pos.shape != neg.shape or pos.ndim < 1:
            raise ValueError(f"TernaryVec: plane shapes differ or are 0-d: {pos.shape} vs {neg.shape}")
        if pos.shape[-1] != words_for(dim):
            raise ValueError(f"TernaryVec: dim {dim} needs {words_for(dim)} words, planes have "
                             f"{pos.shape[-1]}")
        if _arrays.is_wgpu(pos):  # resident planes: checked on a host copy
            _check_bits(_arrays.to_numpy(pos), _arrays.to_numpy(neg), dim)
        else:
            _check_bits(pos, neg, dim)
        self.pos, self.neg, self.dim = pos, neg, dim

    @classmethod
    def _trusted(cls, pos: Any, neg: Any, dim: int) -> TernaryVec:
        """Wrap planes a backend produced (already valid) without re-checking."""
        v = object.__new__(cls)
        v.pos, v.neg, v.dim = pos, neg, int(dim)
        return v

    @property
    def words(self) -> int:
        return int(self.pos.shape[-1])

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return tuple(self.pos.shape[:-1])

    @property
    def shape(self) -> tuple[int, ...]:
        """The trit-array shape, ``batch_shape + (dim,)``."""
        return self.batch_shape + (self.dim,)

    def __len__(self) -> int:
        if not self.batch_shape:
            raise TypeError("len() of an unbatched TernaryVec")
        return self.batch_shape[0]

    def __getitem__(self, i: Any) -> TernaryVec:
        if not self.batch_shape:
            raise IndexError("indexing an unbatched TernaryVec")
        if isinstance(i, tuple) and len(i) > len(self.batch_shape):
            raise IndexError("too many indices for the batch dimensions")
        p, n = self.pos[i], self.neg[i]
        if p.ndim == 0 or p.shape[-1] != self.words:
            raise IndexError("indices may only select batch entries, not words")
        return TernaryVec._trusted(p, n, self.dim)

    def __repr__(self) -> str:
        return f"TernaryVec(dim={self.dim}, batch={self.batch_shape})"

    @classmethod
    def from_array(cls, trits: Any) -> TernaryVec:
        """Pack integer trits in {-1, 0, +1} (last axis = dim): numpy, cupy, torch (CPU/CUDA) or
        ``__dlpack__`` input; device input gives cupy planes.

        >>> TernaryVec.from_array(np.array([[1, 0], [0, -1]], np.int8)).shape
        (2, 2)
        """
        if _arrays.is_device(trits):
            trits = _arrays.to_cupy(trits, "TernaryVec.from_array")
        xp = _arrays.xp_of(trits)
        t = trits if xp is not np else _arrays.to_numpy(trits, "TernaryVec.from_array")
        if t.ndim < 1:
            raise ValueError("TernaryVec.from_array: expected at least 1-D, got a scalar")
        if t.dtype.kind not in "iub":
            raise TypeError(f"TernaryVec.from_array: expected integer trits, got dtype {t.dtype}")
        if t.size and bool(((t < -1) | (t > 1)).any()):
            bad = t[(t < -1) | (t > 1)].ravel()[:5]
            raise ValueError(f"TernaryVec.from_array: invalid trit values {bad.tolist()} "
                             "(expected -1, 0 or +1)")
        return cls._trusted(_pack_bits(t > 0, xp), _pack_bits(t < 0, xp), t.shape[-1])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:  # no object arrays
        raise TypeError("TernaryVec is bit-packed, not an array: call .to_array() for the int8 trits "
                        "(or use .pos / .neg for the uint32 bit planes)")

    def to_array(self) -> Any:
        """The trits as an int8 array of shape ``batch_shape + (dim,)`` (cupy for cupy planes)."""
        xp = _arrays.xp_of(self.pos)
        pos, neg = self.pos, self.neg
        if _arrays.is_wgpu(pos):
            pos, neg = pos.get(), _arrays.to_numpy(neg)
        p = _unpack_bits(pos, self.dim, xp)
        n = _unpack_bits(neg, self.dim, xp)
        return p.astype(np.int8) - n.astype(np.int8)

    @classmethod
    def random(cls, dim: int, density: float = 1.0, seed: Any = None,
               batch: tuple[int, ...] | int = ()) -> TernaryVec:
        """Random trits: non-zero with probability ``density``, then ±1 with equal odds.

        torchhd's ``random(num_vectors, dimensions)`` is ``random(dimensions, batch=num_vectors)``
        here (``batch`` also takes a tuple); ``seed`` goes to numpy's ``default_rng``.

        >>> TernaryVec.random(10000, batch=3, seed=0).shape
        (3, 10000)
        """
        if isinstance(density, (bool, np.bool_)) or not isinstance(density, (int, float, np.number)):
            raise TypeError(f"TernaryVec.random: density must be a number in [0, 1], got {density!r}")
        if not 0.0 <= float(density) <= 1.0:
            raise ValueError(f"TernaryVec.random: density must be in [0, 1], got {density}")
        dim = int_arg(dim, "TernaryVec.random", "dim", lo=0)
        batch = (batch,) if isinstance(batch, int) else tuple(batch)
        rng = np.random.default_rng(seed)
        shape = batch + (int(dim),)
        nz = rng.random(shape) < density
        sign = rng.random(shape) < 0.5
        return cls._trusted(_pack_bits(nz & sign, np), _pack_bits(nz & ~sign, np), int(dim))

    def copy(self) -> TernaryVec:
        return TernaryVec._trusted(self.pos.copy(), self.neg.copy(), self.dim)


def _pack_bits(bits: Any, xp: Any) -> Any:
    """bool (..., dim) -> uint32 (..., ceil(dim/32)), LSB first.

    Packs the flattened array (CuPy's packbits has no ``axis``): rows are padded to whole words,
    so a flat pack never mixes two rows in one byte."""
    dim = bits.shape[-1]
    w = words_for(dim)
    lead = bits.shape[:-1]
    if w == 0:
        return xp.zeros(lead + (0,), np.uint32)
    pad = w * 32 - dim
    if pad:
        bits = xp.concatenate([bits, xp.zeros(lead + (pad,), bool)], axis=-1)
    by = xp.packbits(xp.ascontiguousarray(bits).reshape(-1), bitorder="little")
    return by.view(np.uint32).reshape(lead + (w,))


def _unpack_bits(words: Any, dim: int, xp: Any) -> Any:
    """uint32 (..., W) -> bool (..., dim); flat unpack for the same reason as :func:`_pack_bits`."""
    lead, w = words.shape[:-1], words.shape[-1]
    if w == 0:
        return xp.zeros(lead + (dim,), bool)
    by = xp.ascontiguousarray(words).view(np.uint8).reshape(-1)
    bits = xp.unpackbits(by, bitorder="little").reshape(lead + (w * 32,))
    return bits[..., :dim].astype(bool)
