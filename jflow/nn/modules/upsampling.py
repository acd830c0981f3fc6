"""``Upsample``, ``UpsamplingNearest2d``, ``UpsamplingBilinear2d`` (PyTorch's
``torch.nn.modules.upsampling``). ``Upsample`` itself lives in ``pooling.py``; the two fixed-mode
layers are PyTorch's deprecated spellings, kept because old models use them."""

from __future__ import annotations

from typing import Any

from .pooling import Upsample

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class UpsamplingNearest2d(Upsample):
    """``Upsample(size, scale_factor, mode="nearest")``."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(size, scale_factor, mode="bilinear", align_corners=True)``: corner-aligned,
    unlike ``Upsample``'s bilinear default (as PyTorch)."""

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
