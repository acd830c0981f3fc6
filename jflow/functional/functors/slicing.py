"""Functors of the slicing ops (``jflow/ops/slicing.py``): narrow, slice and pad —
PyTorch's argument rules (negative starts, pad modes and lengths), then the op.
"""

from __future__ import annotations

from typing import Any

from ...ops import get
from ...tensor import Tensor
from ...views import alias
from ..registry import functor
from ._shape_util import wrap_dim

_narrow = get("narrow").apply
_slice = get("slice").apply
_pad = get("pad").apply


# -- narrow / slice ------------------------------------------------------------------------------

@functor("Narrow")
def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    nd = input._meta.ndim
    if nd == 0:
        raise ValueError("narrow(): cannot be applied to a 0-dim tensor")
    a = wrap_dim("narrow", dim, nd)
    size = input._meta.shape[a]
    if not -size <= start <= size:
        raise IndexError(f"narrow(): start out of range (expected to be in range of "
                         f"[{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0:
        raise ValueError(f"narrow(): length must be non-negative, got {length}")
    if start + length > size:
        raise ValueError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size "
                         f"({size})")
    return alias(_narrow(input, dim=a, start=start, length=length), input, "narrow",
                 (a, start, length))


@functor("Slice")
def slice_(input: Tensor, start: tuple[int, ...], stop: tuple[int, ...],
           step: tuple[int, ...]) -> Tensor:
    nd = input._meta.ndim
    if not len(start) == len(stop) == len(step) == nd:
        raise ValueError(f"slice(): start, stop and step must each have one entry per dim of "
                         f"the input ({nd}), got {len(start)}, {len(stop)} and {len(step)}")
    if any(s <= 0 for s in step):
        raise ValueError(f"slice(): step must be greater than zero, got {list(step)}")
    return alias(_slice(input, start=start, stop=stop, step=step), input, "slice",
                 (start, stop, step))


# -- pad -------------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


@functor("Pad")
def pad(input: Tensor, pad: tuple[int, ...], mode: str, value: Any) -> Tensor:
    if mode not in _PAD_MODES:
        raise ValueError(f"pad(): mode must be one of {list(_PAD_MODES)}, got {mode!r}")
    if len(pad) % 2:
        raise ValueError(f"pad(): padding length must be divisible by 2, got {len(pad)}")
    nd = input._meta.ndim
    if len(pad) // 2 > nd:
        raise ValueError(f"pad(): padding length ({len(pad)}) is too large for a {nd}-d input "
                         f"(at most {2 * nd})")
    if mode != "constant" and value is not None and value != 0:
        raise ValueError(f"pad(): padding mode {mode!r} doesn't take in value argument")
    v = 0.0 if value is None else float(value)
    return _pad(input, pad=pad, mode=mode, value=v)
