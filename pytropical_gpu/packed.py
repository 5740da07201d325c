"""Bit-packed boolean operands: K packed 32 per uint32 word, LSB first, zero tail.

Pack once, multiply many times: ``andor_matmul`` accepts these handles directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PackedRows:
    """A bool (m, k) matrix packed along k: ``words`` has shape (m, ceil(k/32)) uint32."""

    words: Any
    k: int

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.words.shape[0]), self.k)


@dataclass(frozen=True)
class PackedCols:
    """A bool (k, n) matrix packed along k per column: ``words`` has shape (n, ceil(k/32)) uint32."""

    words: Any
    k: int

    @property
    def shape(self) -> tuple[int, int]:
        return (self.k, int(self.words.shape[0]))
