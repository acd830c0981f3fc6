"""``MaxPool2d``, ``AvgPool2d``, ``AdaptiveAvgPool2d`` and ``Upsample``: parameter-free layers
over ``flow._C`` (pooling ops in jflow/ops/conv.py, interpolation in jflow/ops/upsample.py),
with PyTorch's arguments, attributes and defaults."""

from __future__ import annotations

from typing import Any

from ...functional import api_default
from ...tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "Upsample"]


class MaxPool2d(Module):
    """2-d max pooling; ``stride`` defaults to ``kernel_size``; ``return_indices=True``
    returns ``(output, indices)`` (flat h * W + w positions, as PyTorch)."""

    def __init__(self, kernel_size: Any, stride: Any = api_default("max_pool2d", "stride"),
                 padding: Any = api_default("max_pool2d", "padding"),
                 dilation: Any = api_default("max_pool2d", "dilation"),
                 return_indices: bool = False,
                 ceil_mode: bool = api_default("max_pool2d", "ceil_mode")) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Any:
        """Max over windows of ``(N, C, H, W)`` or ``(C, H, W)``; ``(output, indices)`` if asked."""
        if self.return_indices:
            return F.max_pool2d_with_indices(input, self.kernel_size, self.stride, self.padding,
                                             self.dilation, ceil_mode=self.ceil_mode)
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """2-d average pooling; ``stride`` defaults to ``kernel_size``."""

    def __init__(self, kernel_size: Any, stride: Any = api_default("avg_pool2d", "stride"),
                 padding: Any = api_default("avg_pool2d", "padding"),
                 ceil_mode: bool = api_default("avg_pool2d", "ceil_mode"),
                 count_include_pad: bool = api_default("avg_pool2d", "count_include_pad"),
                 divisor_override: int | None = api_default("avg_pool2d", "divisor_override")
                 ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        """Mean over windows of ``(N, C, H, W)`` or ``(C, H, W)``."""
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Averages over windows chosen so the output is ``output_size`` (an int, or 2 entries
    where ``None`` keeps the input size)."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        """``(*, H, W) -> (*, *output_size)``, each output the mean of its window."""
        os = self.output_size
        if not isinstance(os, int):  # None entries keep the input's size
            os = tuple(input.shape[-2 + i] if v is None else int(v) for i, v in enumerate(os))
        return F.adaptive_avg_pool2d(input, os)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class Upsample(Module):
    """``F.interpolate`` as a layer: ``size`` or ``scale_factor``; modes 'nearest',
    'nearest-exact', 'linear' (3-d input) and 'bilinear' (4-d input)."""

    def __init__(self, size: Any = api_default("interpolate", "size"),
                 scale_factor: Any = api_default("interpolate", "scale_factor"),
                 mode: str = api_default("interpolate", "mode"),
                 align_corners: bool | None = api_default("interpolate", "align_corners"),
                 recompute_scale_factor: bool | None = api_default("interpolate",
                                                                   "recompute_scale_factor")
                 ) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, (tuple, list)):
            self.scale_factor: Any = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        """``F.interpolate(input, ...)`` with this module's size / scale and mode."""
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = (f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None
                else f"size={self.size!r}")
        return info + f", mode={self.mode!r}"
