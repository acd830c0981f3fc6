"""``torch.nn.functional`` functions that are compositions of existing ops, re-exported by
``jflow.nn.functional``: ``pixel_shuffle``, ``pixel_unshuffle``, ``channel_shuffle`` (reshape and
permute: their gradients are those ops' rules, no new primitive to check), and the deprecated
``upsample``, ``upsample_nearest``, ``upsample_bilinear`` (``interpolate`` under old names,
with PyTorch's deprecation warning), kept apart from ``functional.py`` so that file only
lists them.
"""

from __future__ import annotations

import warnings
from typing import Any

from .. import _C
from ..tensor import Tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "upsample",
           "upsample_nearest", "upsample_bilinear"]


def _factor(fname: str, what: str, value: Any) -> int:
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{fname}(): argument '{what}' must be int, not {type(value).__name__}")
    value = int(value)
    if value <= 0:
        raise RuntimeError(f"{fname} expects a positive {what}, but got {value}")
    return value


def _at_least_3d(fname: str, input: Tensor) -> None:
    if input.ndim < 3:
        raise RuntimeError(f"{fname} expects input to have at least 3 dimensions, but got input "
                           f"with {input.ndim} dimension(s)")


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``(*, C r², H, W) -> (*, C, H r, W r)``: sub-pixel convolution's rearrangement."""
    r = _factor("pixel_shuffle", "upscale_factor", upscale_factor)
    _at_least_3d("pixel_shuffle", input)
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    nb = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)
    x = x.permute(*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``(*, C, H r, W r) -> (*, C r², H, W)``: the inverse of :func:`pixel_shuffle`."""
    r = _factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    _at_least_3d("pixel_unshuffle", input)
    *batch, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    nb = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)
    x = x.permute(*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)
    return x.reshape(*batch, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """``(N, C, *)``: split C into ``groups`` groups and interleave them (ShuffleNet)."""
    if isinstance(groups, bool) or not hasattr(type(groups), "__index__"):
        raise TypeError(f"channel_shuffle(): argument 'groups' must be int, not "
                        f"{type(groups).__name__}")
    g = int(groups)
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if g <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{g}")
    n, c, *rest = input.shape
    if c % g:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {g} groups.")
    x = input.reshape(n, g, c // g, *rest).transpose(1, 2)
    return x.reshape(n, c, *rest)


def upsample(input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated in PyTorch: ``interpolate`` (with PyTorch's warning)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return _C.interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated in PyTorch: ``interpolate(mode="nearest")``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return _C.interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated in PyTorch: ``interpolate(mode="bilinear", align_corners=True)`` — note
    ``align_corners=True``, unlike ``interpolate``'s default."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return _C.interpolate(input, size, scale_factor, "bilinear", True)
