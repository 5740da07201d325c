"""Bit-packed boolean operands: K packed 32 per uint32 word, LSB first, zero tail.

Pack once, multiply many times: ``andor_matmul`` accepts these handles directly. A handle built by
hand (``PackedRows(words, k)``) is validated when it is made: uint32 words of shape
(rows, ceil(k/32)) with every bit past ``k`` zero; ``to_device`` checks the words again (they are a
mutable array). Operations trust a handle's words as validated then: change them in place and the
result is undefined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _arrays
from .._checks import int_arg, uint32_array


def check_words(words: Any, k: Any, where: str) -> int:
    """Validate packed ``words`` for ``k`` bits per row (see the module docstring); returns k."""
    k = int_arg(k, where, "k", lo=0)
    uint32_array(words, where, "words", "rows of k bits packed 32 per word")
    if words.ndim != 2:
        raise ValueError(f"{where}: words must be 2-D (rows, ceil(k/32)), got shape "
                         f"{tuple(words.shape)}")
    need = (k + 31) // 32
    if words.shape[1] != need:
        raise ValueError(f"{where}: k={k} needs {need} words per row, words have shape "
                         f"{tuple(words.shape)}")
    if k % 32 and words.shape[0]:
        last = (_arrays.to_numpy(words) if _arrays.is_wgpu(words) else words)[:, -1]
        if bool((last & ~np.uint32((1 << (k % 32)) - 1)).any()):
            raise ValueError(f"{where}: bits past k={k} in the last word of a row must be zero")
    return k


class _Packed:
    """Shared behaviour of the two handles: validation on construction, a trusted path for packers."""

    words: Any
    k: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_words(self.words, self.k, type(self).__name__))

    @classmethod
    def _trusted(cls, words: Any, k: int):
        """Wrap words a packer produced (already valid) without re-checking."""
        h = object.__new__(cls)
        object.__setattr__(h, "words", words)
        object.__setattr__(h, "k", int(k))
        return h


@dataclass(frozen=True, eq=False)
class PackedRows(_Packed):
    """A bool (m, k) matrix packed along k (from :func:`pytropical_gpu.pack_rows`).

    Parameters
    ----------
    words : array
        uint32 words, LSB first, zero tail (numpy, cupy or resident).
    k : int
        The number of bool columns packed.

    Shapes:
        words: (m, ceil(k / 32)) uint32; ``.shape`` is (m, k).

    Examples
    --------
    >>> import numpy as np
    >>> PackedRows(np.array([[5]], np.uint32), 3).shape
    (1, 3)
    """

    words: Any
    k: int

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.words.shape[0]), self.k)


@dataclass(frozen=True, eq=False)
class PackedCols(_Packed):
    """A bool (k, n) matrix packed along k per column (from :func:`pytropical_gpu.pack_cols`).

    Parameters
    ----------
    words : array
        uint32 words, one row per column of the matrix, LSB first, zero tail.
    k : int
        The number of bool rows packed.

    Shapes:
        words: (n, ceil(k / 32)) uint32; ``.shape`` is (k, n).

    Examples
    --------
    >>> import numpy as np
    >>> PackedCols(np.array([[3], [1]], np.uint32), 2).shape
    (2, 2)
    """

    words: Any
    k: int

    @property
    def shape(self) -> tuple[int, int]:
        return (self.k, int(self.words.shape[0]))
