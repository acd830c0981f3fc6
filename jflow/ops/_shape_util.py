"""Helpers shared by the shape-op families (``view``, ``join``, ``slicing``, ``rearrange``,
``subscript``): they are dtype-agnostic and exact, and most are linear."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..sharding.sbp import P, Signature

__all__ = ["PP", "prod", "dims_str"]

#: ``P -> P``: a linear op maps a partial sum to a partial sum.
PP = Signature((P,), (P,))


def prod(xs: Sequence[int]) -> int:
    """The number of elements of a shape."""
    return math.prod(int(x) for x in xs)


def dims_str(shape: Sequence[int]) -> str:
    """A shape as error messages print it: ``[2, 3]``."""
    return str([int(s) for s in shape])
