"""Helpers shared by the functors of the spatial ops (conv, pool): PyTorch's int-or-tuple
arguments and unbatched (no N dim) inputs."""

from __future__ import annotations

from typing import Any

from ...ops import get
from ...tensor import Tensor

__all__ = ["pair", "unbatch"]

_reshape = get("reshape").apply


def pair(fname: str, name: str, v: Any, n: int) -> tuple[int, ...]:
    """``v`` (an int or ints) as ``n`` ints; a single int (or one-element list) repeats."""
    t = (v,) * n if isinstance(v, int) else tuple(int(a) for a in v)
    if len(t) == 1 and n > 1:
        t = t * n
    if len(t) != n:
        raise ValueError(f"{fname}(): {name} must be an int or {n} ints, got {list(t)}")
    return t


def unbatch(y: Tensor, unbatched: bool) -> Tensor:
    """Drop the unit batch dim added for an unbatched input."""
    return _reshape(y, shape=tuple(y._meta.shape[1:])) if unbatched else y
