"""``Unfold`` and ``Fold`` (PyTorch's ``torch.nn.modules.fold``): ``F.unfold`` (im2col) and
``F.fold`` (col2im, the adjoint) as layers."""

from __future__ import annotations

from typing import Any

from jflow.functional import api_default  # absolute: ruff resolves it for B008

from ...tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["Unfold", "Fold"]


class Unfold(Module):
    """``(N, C, H, W) -> (N, C kH kW, L)``: every sliding block of the input as a column."""

    def __init__(self, kernel_size: Any, dilation: Any = api_default("im2col", "dilation"),
                 padding: Any = api_default("im2col", "padding"),
                 stride: Any = api_default("im2col", "stride")) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """``(N, C, H, W) -> (N, C kH kW, L)`` (or unbatched ``(C, H, W) -> (C kH kW, L)``)."""
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """``(N, C kH kW, L) -> (N, C, H, W)``: columns summed back into an image of size
    ``output_size`` (overlapping entries add up)."""

    def __init__(self, output_size: Any, kernel_size: Any,
                 dilation: Any = api_default("col2im", "dilation"),
                 padding: Any = api_default("col2im", "padding"),
                 stride: Any = api_default("col2im", "stride")) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """``(N, C kH kW, L) -> (N, C, H, W)`` (or unbatched ``(C kH kW, L) -> (C, H, W)``)."""
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")
