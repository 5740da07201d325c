"""The library's data types: ternary hypervectors, soft counters and packed boolean operands.

Data only: this package imports numpy and the library's lowest modules (array kinds, argument
checks, errors), never the operations, the backends or the routing.
"""

from .packed import PackedCols, PackedRows, check_words
from .soft import SoftTernaryVec
from .ternary import TernaryVec, words_for

__all__ = ["PackedCols", "PackedRows", "SoftTernaryVec", "TernaryVec", "check_words", "words_for"]
