"""Functors of the rearranging ops (``jflow/ops/rearrange.py``): flip, roll, repeat / tile,
tril and triu — PyTorch's argument rules, then the op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...ops import get
from ...tensor import Tensor
from ..registry import functor
from ._shape_util import wrap_dim

_flip = get("flip").apply
_roll = get("roll").apply
_repeat = get("repeat").apply
_tril = get("tril").apply
_triu = get("triu").apply


# -- flip / roll / repeat / tile / tril / triu ---------------------------------------------------

@functor("Flip")
def flip(input: Tensor, dims: tuple[int, ...]) -> Tensor:
    nd = input._value.ndim
    axes = tuple(wrap_dim("flip", d, nd) for d in dims)
    for k, a in enumerate(axes):
        if a in axes[:k]:
            raise ValueError(f"flip(): dim {a} appears multiple times in the list of dims "
                             f"{list(dims)}")
    return _flip(input, axes=tuple(sorted(axes)) if nd else ())


@functor("Roll")
def roll(input: Tensor, shifts: tuple[int, ...], dims: tuple[int, ...] | None) -> Tensor:
    if not shifts:
        raise ValueError("roll(): shifts must not be empty")
    if dims is None or len(dims) == 0:
        if len(shifts) != 1:
            raise ValueError(f"roll(): shifts ({list(shifts)}) must have one entry when dims is "
                             f"not given")
        return _roll(input, shifts=shifts, axes=())
    if len(shifts) != len(dims):
        raise ValueError(f"roll(): shifts and dimensions must align. shifts: {len(shifts)}, "
                         f"dims: {len(dims)}")
    nd = input._value.ndim
    return _roll(input, shifts=shifts, axes=tuple(wrap_dim("roll", d, nd) for d in dims))


def _check_repeats(fname: str, input: Tensor, repeats: Sequence[int]) -> None:
    nd = input._value.ndim
    if len(repeats) < nd:
        raise ValueError(f"{fname}(): number of dimensions of repeat dims ({len(repeats)}) can "
                         f"not be smaller than number of dimensions of tensor ({nd})")
    if any(r < 0 for r in repeats):
        raise ValueError(f"{fname}(): trying to create tensor with negative dimension: "
                         f"repeats {list(repeats)}")


@functor("Repeat")
def repeat(input: Tensor, repeats: tuple[int, ...]) -> Tensor:
    _check_repeats("repeat", input, repeats)
    return _repeat(input, repeats=repeats)


@functor("Tile")
def tile(input: Tensor, dims: tuple[int, ...]) -> Tensor:
    nd = input._value.ndim
    reps = (1,) * (nd - len(dims)) + tuple(dims)
    _check_repeats("tile", input, reps)
    return _repeat(input, repeats=reps)


def _tri(fname: str, op: Any):
    def fn(input: Tensor, diagonal: int) -> Tensor:
        if input._value.ndim < 2:
            raise ValueError(f"{fname}(): input tensor must have at least 2 dimensions, got "
                             f"{input._value.ndim}")
        return op(input, diagonal=diagonal)
    fn.__name__ = fname
    return fn


functor("Tril")(_tri("tril", _tril))
functor("Triu")(_tri("triu", _triu))
