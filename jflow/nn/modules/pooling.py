"""Pooling layers in 1, 2 and 3 spatial dims (``MaxPool*``, ``AvgPool*``, ``AdaptiveAvgPool*``,
``AdaptiveMaxPool*``, ``LPPool*``) and ``Upsample``: parameter-free layers over
``flow.nn.functional`` (pooling ops in jflow/ops/pool.py, interpolation in
jflow/ops/upsample.py), with PyTorch's arguments, attributes and defaults; unbatched inputs
(no N dim) as PyTorch."""

from __future__ import annotations

from typing import Any

from jflow.functional import api_default  # absolute: ruff resolves it for B008

from ...tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "Upsample"]

_SHAPES = {1: "``(N, C, L)`` or ``(C, L)``", 2: "``(N, C, H, W)`` or ``(C, H, W)``",
           3: "``(N, C, D, H, W)`` or ``(C, D, H, W)``"}


class _MaxPoolNd(Module):
    _nd = 2

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
        """Max over windows of the input; ``(output, indices)`` if ``return_indices``."""
        fn = getattr(F, f"max_pool{self._nd}d")
        return fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                  ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-d max pooling over ``(N, C, L)`` or ``(C, L)``; ``stride`` defaults to
    ``kernel_size``; ``return_indices=True`` returns ``(output, indices)`` (positions in L)."""

    _nd = 1


class MaxPool2d(_MaxPoolNd):
    """2-d max pooling; ``stride`` defaults to ``kernel_size``; ``return_indices=True``
    returns ``(output, indices)`` (flat h * W + w positions, as PyTorch)."""

    _nd = 2


class MaxPool3d(_MaxPoolNd):
    """3-d max pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``; ``return_indices=True``
    returns ``(output, indices)`` (flat (d * H + h) * W + w positions, as PyTorch)."""

    _nd = 3


class AvgPool1d(Module):
    """1-d average pooling over ``(N, C, L)`` or ``(C, L)``; ``stride`` defaults to
    ``kernel_size``."""

    def __init__(self, kernel_size: Any, stride: Any = api_default("avg_pool1d", "stride"),
                 padding: Any = api_default("avg_pool1d", "padding"),
                 ceil_mode: bool = api_default("avg_pool1d", "ceil_mode"),
                 count_include_pad: bool = api_default("avg_pool1d", "count_include_pad")
                 ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        """Mean over windows of ``(N, C, L)`` or ``(C, L)``."""
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    _nd = 2

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
        """Mean over windows of the input."""
        fn = getattr(F, f"avg_pool{self._nd}d")
        return fn(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                  self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """2-d average pooling over ``(N, C, H, W)`` or ``(C, H, W)``; ``stride`` defaults to
    ``kernel_size``."""

    _nd = 2


class AvgPool3d(_AvgPoolNd):
    """3-d average pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``; ``stride`` defaults
    to ``kernel_size``."""

    _nd = 3


class _AdaptiveAvgPoolNd(Module):
    _nd = 2

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        """Each output the mean of its window; ``None`` in ``output_size`` keeps that size."""
        return getattr(F, f"adaptive_avg_pool{self._nd}d")(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    """Averages over windows chosen so the output length is ``output_size``."""

    _nd = 1


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    """Averages over windows chosen so the output is ``output_size`` (an int, or 2 entries
    where ``None`` keeps the input size)."""

    _nd = 2


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    """Averages over windows chosen so the output is ``output_size`` (an int, or 3 entries
    where ``None`` keeps the input size)."""

    _nd = 3


class _AdaptiveMaxPoolNd(Module):
    _nd = 2

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor) -> Any:
        """Each output the max of its window; ``(output, indices)`` if ``return_indices``."""
        return getattr(F, f"adaptive_max_pool{self._nd}d")(input, self.output_size,
                                                          self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Max over windows chosen so the output length is ``output_size``;
    ``return_indices=True`` also returns the positions of the maxima."""

    _nd = 1


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Max over windows chosen so the output is ``output_size`` (``None`` keeps a size);
    ``return_indices=True`` also returns the flat h * W + w positions of the maxima."""

    _nd = 2


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Max over windows chosen so the output is ``output_size`` (``None`` keeps a size);
    ``return_indices=True`` also returns the flat positions of the maxima."""

    _nd = 3


class _LPPoolNd(Module):
    _nd = 2

    def __init__(self, norm_type: float, kernel_size: Any,
                 stride: Any = api_default("lp_pool2d", "stride"),
                 ceil_mode: bool = api_default("lp_pool2d", "ceil_mode")) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        """``(sum over the window of x^p)^(1/p)`` as ``F.lp_pool*d``."""
        return getattr(F, f"lp_pool{self._nd}d")(input, self.norm_type, self.kernel_size,
                                                 self.stride, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """1-d power-average pooling over ``(N, C, L)`` or ``(C, L)``."""

    _nd = 1


class LPPool2d(_LPPoolNd):
    """2-d power-average pooling over ``(N, C, H, W)`` or ``(C, H, W)``."""

    _nd = 2


class LPPool3d(_LPPoolNd):
    """3-d power-average pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``."""

    _nd = 3


class Upsample(Module):
    """``F.interpolate`` as a layer: ``size`` or ``scale_factor``; modes 'nearest',
    'nearest-exact', 'area', 'linear' (3-d input), 'bilinear' / 'bicubic' (4-d input) and
    'trilinear' (5-d input)."""

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


# -- max unpooling and fractional max pooling ---------------------------------------------------

class _MaxUnpoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        """``input`` scattered to ``indices`` (from ``MaxPool*d(return_indices=True)``) of a
        zero output of ``output_size`` (default: the pooled size inverted)."""
        return getattr(F, f"max_unpool{self._nd}d")(input, indices, self.kernel_size,
                                                   self.stride, self.padding, output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool1d``: non-maximal positions are 0."""

    _nd = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool2d``: non-maximal positions are 0."""

    _nd = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of ``MaxPool3d``: non-maximal positions are 0."""

    _nd = 3


class _FractionalMaxPoolNd(Module):
    _nd = 2

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Any = None) -> None:
        super().__init__()
        name = type(self).__name__
        self.kernel_size = kernel_size
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = output_size
        self.output_ratio = output_ratio
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             f"ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError(f"{name}: only one of output_size and output_ratio may be "
                             f"specified")
        if output_ratio is not None:
            ratios = (output_ratio,) * self._nd if isinstance(output_ratio, (int, float)) \
                else tuple(output_ratio)
            if not all(0 < float(r) < 1 for r in ratios):
                raise ValueError(f"{name}: output_ratio must be between 0 and 1 (got "
                                 f"{output_ratio})")

    def forward(self, input: Tensor) -> Any:
        """Max over pseudo-random windows; ``(output, indices)`` if ``return_indices``."""
        return getattr(F, f"fractional_max_pool{self._nd}d")(
            input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
            _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-d fractional max pooling over ``(N, C, H, W)`` or ``(C, H, W)`` inputs."""

    _nd = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-d fractional max pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs."""

    _nd = 3


__all__ += ["MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d",
            "FractionalMaxPool3d"]
