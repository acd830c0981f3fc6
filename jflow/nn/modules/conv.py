"""``Conv1d``, ``Conv2d``, ``Conv3d``, ``ConvTranspose1d``, ``ConvTranspose2d``,
``ConvTranspose3d`` over ``flow._C`` (conv ops in jflow/ops/conv.py).

Parameters, attribute names, ``state_dict`` keys and the default initialisation are
PyTorch's: weight ~ kaiming_uniform(a=√5) (i.e. U(±1/√fan_in)), bias ~ U(±1/√fan_in) with
fan_in = weight.shape[1] · prod(kernel_size), from jflow's default generator.
"""

from __future__ import annotations

import operator
from typing import Any

from jflow.functional import api_default  # absolute: ruff resolves it for B008

from ...autograd import no_grad
from ...creation import empty
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin, lazy_class
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _int(v: Any, name: str, owner: str, what: str = "an int") -> int:
    """``v`` as an int; a float (``out_channels=2.0``) is a TypeError naming the argument, where
    ``int(v)`` would silently truncate (PyTorch raises TypeError too, from ``torch.empty``)."""
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{owner}: argument '{name}' must be {what}, but got "
                        f"{type(v).__name__} ({v!r})") from None


def _ntuple(v: Any, n: int, name: str, owner: str = "conv") -> tuple[int, ...]:
    what = "an int or a tuple of ints"
    try:
        t = (operator.index(v),) * n
    except TypeError:
        if not hasattr(v, "__iter__"):
            _int(v, name, owner, what)                      # raises, naming the argument
        t = tuple(_int(a, name, owner, what) for a in v)  # tuple, list, Size, array, ...
    if len(t) == 1 and n > 1:
        t = t * n
    if len(t) != n:
        raise ValueError(f"{name} must be an int or {n} ints, got {list(t)}")
    return t


class _ConvNd(Module):
    """Shared constructor, initialisation and repr of the conv layers."""

    _nd = 2
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
                 padding: Any, dilation: Any, output_padding: Any, groups: int, bias: bool,
                 padding_mode: str, device: Any, dtype: Any) -> None:
        super().__init__()
        n, name = self._nd, type(self).__name__
        in_channels = _int(in_channels, "in_channels", name)
        out_channels = _int(out_channels, "out_channels", name)
        groups = _int(groups, "groups", name)
        if groups <= 0:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups}")
        if in_channels % groups:
            raise ValueError(f"{name}: in_channels {in_channels} must be divisible by groups "
                             f"{groups}")
        if out_channels % groups:
            raise ValueError(f"{name}: out_channels {out_channels} must be divisible by groups "
                             f"{groups}")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {list(_PADDING_MODES)}, "
                             f"got {padding_mode!r}")
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f"{name}: only 'zeros' padding mode is supported, got "
                             f"{padding_mode!r}")
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = _ntuple(kernel_size, n, "kernel_size", name)
        self.stride = _ntuple(stride, n, "stride", name)
        self.dilation = _ntuple(dilation, n, "dilation", name)
        if isinstance(padding, str):
            if self._transposed or padding not in ("same", "valid"):
                raise ValueError(f"{name}: invalid padding string {padding!r}"
                                 + ("" if not self._transposed else
                                    " (transposed convolutions take ints)"))
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(f"{name}: padding='same' is not supported for strided "
                                 f"convolutions")
            self.padding: Any = padding
        else:
            self.padding = _ntuple(padding, n, "padding", name)
        self.output_padding = _ntuple(output_padding, n, "output_padding", name)
        self.transposed, self.groups = self._transposed, int(groups)
        self.padding_mode = padding_mode
        if self._transposed:
            shape = (self.in_channels, self.out_channels // self.groups) + self.kernel_size
        else:
            shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        self.weight = Parameter(empty(*shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(self.out_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init._reset_affine(self.weight, self.bias)

    def _pad_widths(self) -> list[int]:
        """F.pad's list (last dim first) for a non-'zeros' padding_mode."""
        if self.padding == "valid":
            return [0, 0] * self._nd
        out: list[int] = []
        for i in reversed(range(self._nd)):
            if self.padding == "same":
                total = self.dilation[i] * (self.kernel_size[i] - 1)
                out += [total // 2, total - total // 2]
            else:
                out += [self.padding[i], self.padding[i]]
        return out

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._nd:
            s += f", padding={self.padding!r}" if isinstance(self.padding, str) \
                else f", padding={self.padding}"
        if self.dilation != (1,) * self._nd:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._nd:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    """A convolution layer: ``F.conv{1,2,3}d`` after explicit padding for non-zero modes."""

    _fn = "conv2d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any,
                 padding: Any, dilation: Any, groups: int, bias: bool, padding_mode: str,
                 device: Any, dtype: Any) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, 0,
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        conv = getattr(F, self._fn)
        if self.padding_mode != "zeros":
            return conv(F.pad(input, self._pad_widths(), mode=self.padding_mode),
                        self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                    self.groups)


class Conv1d(_Conv):
    """1-d convolution over (N, C, L) or (C, L); weight (out, in / groups, k)."""

    _nd, _fn = 1, "conv1d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any,
                 stride: Any = api_default("conv1d", "stride"),
                 padding: Any = api_default("conv1d", "padding"),
                 dilation: Any = api_default("conv1d", "dilation"),
                 groups: int = api_default("conv1d", "groups"), bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)


class Conv2d(_Conv):
    """2-d convolution over (N, C, H, W) or (C, H, W); weight (out, in / groups, kH, kW)."""

    _nd, _fn = 2, "conv2d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any,
                 stride: Any = api_default("conv2d", "stride"),
                 padding: Any = api_default("conv2d", "padding"),
                 dilation: Any = api_default("conv2d", "dilation"),
                 groups: int = api_default("conv2d", "groups"), bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)


class Conv3d(_Conv):
    """3-d convolution over (N, C, D, H, W) or (C, D, H, W); weight
    (out, in / groups, kD, kH, kW)."""

    _nd, _fn = 3, "conv3d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any,
                 stride: Any = api_default("conv3d", "stride"),
                 padding: Any = api_default("conv3d", "padding"),
                 dilation: Any = api_default("conv3d", "dilation"),
                 groups: int = api_default("conv3d", "groups"), bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)


class _ConvTransposeNd(_ConvNd):
    """A transposed convolution layer: ``F.conv_transpose{1,2,3}d``; weight
    (in, out / groups, k...). ``forward(input, output_size)`` picks the output_padding that
    gives ``output_size``, as PyTorch."""

    _transposed = True
    _fn = "conv_transpose2d"

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        if output_size is None:
            return self.output_padding
        n, name = self._nd, type(self).__name__
        lead = 2 if input.ndim == n + 2 else 1
        size = [int(s) for s in output_size]
        if len(size) == lead + n:
            size = size[lead:]
        if len(size) != n:
            raise ValueError(f"{name}: output_size must have {n} or {lead + n} elements (got "
                             f"{len(size)})")
        res = []
        for d in range(n):
            lo = ((input.shape[lead + d] - 1) * self.stride[d] - 2 * self.padding[d]
                  + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            hi = lo + self.stride[d] - 1
            if not lo <= size[d] <= hi:
                raise ValueError(f"{name}: requested an output size of {size}, but valid sizes "
                                 f"range from {lo} to {hi} in dim {d} (for an input of "
                                 f"{list(input.shape)[lead:]})")
            res.append(size[d] - lo)
        return tuple(res)

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        """``(N, C_in, *spatial) -> (N, C_out, *spatial')``; ``output_size`` picks the output
        padding."""
        return getattr(F, self._fn)(input, self.weight, self.bias, self.stride, self.padding,
                                    self._output_padding(input, output_size), self.groups,
                                    self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-d transposed convolution over (N, C, L) or (C, L); weight (in, out / groups, k)."""

    _nd, _fn = 1, "conv_transpose1d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any,
                 stride: Any = api_default("conv_transpose1d", "stride"),
                 padding: Any = api_default("conv_transpose1d", "padding"),
                 output_padding: Any = api_default("conv_transpose1d", "output_padding"),
                 groups: int = api_default("conv_transpose1d", "groups"), bias: bool = True,
                 dilation: Any = api_default("conv_transpose1d", "dilation"),
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         output_padding, groups, bias, padding_mode, device, dtype)


class ConvTranspose2d(_ConvTransposeNd):
    """2-d transposed convolution; weight (in, out / groups, kH, kW). ``forward(input,
    output_size)`` picks the output_padding that gives ``output_size``, as PyTorch."""

    _nd, _fn = 2, "conv_transpose2d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any,
                 stride: Any = api_default("conv_transpose2d", "stride"),
                 padding: Any = api_default("conv_transpose2d", "padding"),
                 output_padding: Any = api_default("conv_transpose2d", "output_padding"),
                 groups: int = api_default("conv_transpose2d", "groups"), bias: bool = True,
                 dilation: Any = api_default("conv_transpose2d", "dilation"),
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         output_padding, groups, bias, padding_mode, device, dtype)


class ConvTranspose3d(_ConvTransposeNd):
    """3-d transposed convolution over (N, C, D, H, W) or (C, D, H, W); weight
    (in, out / groups, kD, kH, kW)."""

    _nd, _fn = 3, "conv_transpose3d"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any,
                 stride: Any = api_default("conv_transpose3d", "stride"),
                 padding: Any = api_default("conv_transpose3d", "padding"),
                 output_padding: Any = api_default("conv_transpose3d", "output_padding"),
                 groups: int = api_default("conv_transpose3d", "groups"), bias: bool = True,
                 dilation: Any = api_default("conv_transpose3d", "dilation"),
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         output_padding, groups, bias, padding_mode, device, dtype)


# -- lazy convolutions ------------------------------------------------------------------------

class _LazyConvXdMixin(LazyModuleMixin):
    """The lazy convolutions' shared part (PyTorch's): ``in_channels`` from the first input's
    channel dim (dim 1, or 0 for an unbatched input), then the module is the ordinary one."""

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor, *args: Any, **kwargs: Any) -> None:
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            with no_grad():
                if self.transposed:
                    self.weight.materialize((self.in_channels, self.out_channels // self.groups,
                                             *self.kernel_size))
                else:
                    self.weight.materialize((self.out_channels, self.in_channels // self.groups,
                                             *self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()

    def _get_in_channels(self, input: Tensor) -> int:
        no_batch = self._nd + 1
        if input.dim() not in (no_batch, no_batch + 1):
            raise RuntimeError(f"Expected {no_batch}D (unbatched) or {no_batch + 1}D (batched) "
                               f"input to {self.__class__.__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[1] if input.dim() == no_batch + 1 else input.shape[0]

    def _lazy_init(self, out_channels: int, bias: bool, device: Any, dtype: Any) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = _int(out_channels, "out_channels", type(self).__name__)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


def _lazy_conv(base: type) -> type:
    """``Lazy<base>``: ``base``'s signature without ``in_channels``."""
    def __init__(self: Any, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None) -> None:
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups,
                                 False, padding_mode, device, dtype)  # (then base's __init__)
        self._lazy_init(out_channels, bias, device, dtype)

    return lazy_class(base, _LazyConvXdMixin, "``in_channels`` is the channel dim", __name__,
                      {"__init__": __init__})


def _lazy_conv_transpose(base: type) -> type:
    """``Lazy<base>`` of a transposed convolution (its argument order: ``output_padding``,
    ``groups``, ``bias``, ``dilation``)."""
    def __init__(self: Any, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                 bias: bool = True, dilation: Any = 1, padding_mode: str = "zeros",
                 device: Any = None, dtype: Any = None) -> None:
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, output_padding,
                                 groups, False, dilation, padding_mode, device, dtype)
        self._lazy_init(out_channels, bias, device, dtype)

    return lazy_class(base, _LazyConvXdMixin, "``in_channels`` is the channel dim", __name__,
                      {"__init__": __init__})


LazyConv1d = _lazy_conv(Conv1d)
LazyConv2d = _lazy_conv(Conv2d)
LazyConv3d = _lazy_conv(Conv3d)
LazyConvTranspose1d = _lazy_conv_transpose(ConvTranspose1d)
LazyConvTranspose2d = _lazy_conv_transpose(ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv_transpose(ConvTranspose3d)
__all__ += ["LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
            "LazyConvTranspose2d", "LazyConvTranspose3d"]
