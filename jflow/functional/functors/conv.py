"""Functors of the conv, pooling, batch_norm (``jflow/ops/conv.py``) and interpolation
(``jflow/ops/upsample.py``) ops: PyTorch's argument rules, then the op.

conv1d runs the conv2d op on a unit height dimension (reshapes in the functor); the bias is
added after the op (broadcast over N, H, W), so its gradient is the ordinary sum.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from ...autograd.grad_mode import no_grad
from ...ops import get
from ...tensor import Tensor, _wrap
from ..promotion import assign_inplace
from ..registry import functor
from .matmul import matmul

_conv2d = get("conv2d").apply
_conv_transpose2d = get("conv_transpose2d").apply
_upsample2d = get("upsample2d").apply
_reshape = get("reshape").apply
_add = get("add").apply
_avg_pool2d = get("avg_pool2d").apply
_max_pool2d = get("max_pool2d").apply
_batch_norm = get("batch_norm").apply
_sub = get("sub").apply
_mul = get("mul").apply
_rsqrt = get("rsqrt").apply


def _pair(fname: str, name: str, v: Any, n: int) -> tuple[int, ...]:
    t = (v,) * n if isinstance(v, int) else tuple(int(a) for a in v)
    if len(t) == 1 and n > 1:
        t = t * n
    if len(t) != n:
        raise ValueError(f"{fname}(): {name} must be an int or {n} ints, got {list(t)}")
    return t


def _check(fname: str, input: Tensor, weight: Tensor, bias: Any, nd: int) -> None:
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    if input._value.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{fname}(): expected a {nd + 1}-d (unbatched) or {nd + 2}-d "
                           f"(batched) input, got shape {list(input._value.shape)}")
    if weight._value.ndim != nd + 2:
        raise RuntimeError(f"{fname}(): expected a {nd + 2}-d weight, got shape "
                           f"{list(weight._value.shape)}")
    if bias is not None and tuple(bias._value.shape) != (weight._value.shape[0],):
        raise RuntimeError(f"{fname}(): bias must have shape ({weight._value.shape[0]},), got "
                           f"{list(bias._value.shape)}")


def _padding(fname: str, padding: Any, kernel: tuple[int, ...], stride: tuple[int, ...],
             dilation: tuple[int, ...]) -> list[int]:
    """(lo, hi) per spatial dim, flattened; "same" pads as PyTorch (the extra one at the end)."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return [0] * (2 * n)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError(f"{fname}(): padding='same' is not supported for strided "
                                 f"convolutions")
            out = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                out += [total // 2, total - total // 2]
            return out
        raise ValueError(f"{fname}(): invalid padding string {padding!r}, should be one of "
                         f"'valid' or 'same'")
    p = _pair(fname, "padding", padding, n)
    if any(a < 0 for a in p):
        raise ValueError(f"{fname}(): negative padding is not supported, got {list(p)}")
    return [a for v in p for a in (v, v)]


def _conv(fname: str, input: Tensor, weight: Tensor, bias: Any, stride: Any, padding: Any,
          dilation: Any, groups: int, nd: int) -> Tensor:
    _check(fname, input, weight, bias, nd)
    stride = _pair(fname, "stride", stride, nd)
    dilation = _pair(fname, "dilation", dilation, nd)
    pad = _padding(fname, padding, tuple(weight._value.shape[2:]), stride, dilation)
    unbatched = input._value.ndim == nd + 1
    x, w = input, weight
    if unbatched:
        x = _reshape(x, shape=(1,) + tuple(x._value.shape))
    if nd == 1:  # a unit height dimension
        x = _reshape(x, shape=x._value.shape[:2] + (1,) + x._value.shape[2:])
        w = _reshape(w, shape=w._value.shape[:2] + (1,) + w._value.shape[2:])
        stride, dilation, pad = (1,) + stride, (1,) + dilation, [0, 0] + pad
    y = _conv2d(x, w, stride=stride, padding=pad, dilation=dilation, groups=int(groups))
    if bias is not None:
        y = _add(y, _reshape(bias, shape=(1, bias._value.shape[0], 1, 1)))
    out_shape = tuple(y._value.shape)
    if nd == 1:
        out_shape = out_shape[:2] + out_shape[3:]
    if unbatched:
        out_shape = out_shape[1:]
    return _reshape(y, shape=out_shape) if out_shape != tuple(y._value.shape) else y


@functor("Conv2d")
def conv2d(input: Tensor, weight: Tensor, bias: Any = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-d cross-correlation (torch.nn.functional.conv2d): input (N, C, H, W) or (C, H, W),
    weight (O, C / groups, kH, kW); padding an int, 2 ints, "valid" or "same"."""
    return _conv("conv2d", input, weight, bias, stride, padding, dilation, groups, 2)


@functor("Conv1d")
def conv1d(input: Tensor, weight: Tensor, bias: Any = None, stride: Any = 1, padding: Any = 0,
           dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-d cross-correlation (torch.nn.functional.conv1d): input (N, C, L) or (C, L), weight
    (O, C / groups, k); runs the conv2d op on a unit height dimension."""
    return _conv("conv1d", input, weight, bias, stride, padding, dilation, groups, 1)


@functor("ConvTranspose2d")
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Any = None, stride: Any = 1,
                     padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """2-d transposed convolution (torch.nn.functional.conv_transpose2d): input (N, Cin, H, W)
    or (Cin, H, W), weight (Cin, Cout / groups, kH, kW); output size per dim
    ``(H - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1``."""
    fname = "conv_transpose2d"
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    if input._value.ndim not in (3, 4):
        raise RuntimeError(f"{fname}(): expected a 3-d (unbatched) or 4-d (batched) input, "
                           f"got shape {list(input._value.shape)}")
    ws = tuple(weight._value.shape)
    if len(ws) != 4:
        raise RuntimeError(f"{fname}(): expected a 4-d weight (Cin, Cout/groups, kH, kW), got "
                           f"shape {list(ws)}")
    if bias is not None and tuple(bias._value.shape) != (ws[1] * int(groups),):
        raise RuntimeError(f"{fname}(): bias must have shape ({ws[1] * int(groups)},), got "
                           f"{list(bias._value.shape)}")
    stride = _pair(fname, "stride", stride, 2)
    padding = _pair(fname, "padding", padding, 2)
    output_padding = _pair(fname, "output_padding", output_padding, 2)
    dilation = _pair(fname, "dilation", dilation, 2)
    if any(p < 0 for p in padding) or any(p < 0 for p in output_padding):
        raise ValueError(f"{fname}(): negative padding is not supported, got padding "
                         f"{list(padding)} and output_padding {list(output_padding)}")
    unbatched = input._value.ndim == 3
    x = _reshape(input, shape=(1,) + tuple(input._value.shape)) if unbatched else input
    try:
        y = _conv_transpose2d(x, weight, stride=stride, padding=padding,
                              output_padding=output_padding, dilation=dilation,
                              groups=int(groups))
    except ValueError as e:
        raise ValueError(f"{fname}(): {e}") from None
    if bias is not None:
        y = _add(y, _reshape(bias, shape=(1, bias._value.shape[0], 1, 1)))
    return _unbatch(y, unbatched)


_INTERP_MODES = {1: ("nearest", "nearest-exact", "linear"),
                 2: ("nearest", "nearest-exact", "bilinear")}


@functor("Interpolate")
def interpolate(input: Tensor, size: Any = None, scale_factor: Any = None,
                mode: str = "nearest", align_corners: Any = None,
                recompute_scale_factor: Any = None, antialias: bool = False) -> Tensor:
    """torch.nn.functional.interpolate for 3-d (N, C, L: 'nearest', 'nearest-exact',
    'linear') and 4-d (N, C, H, W: 'nearest', 'nearest-exact', 'bilinear') inputs. Exactly one
    of ``size`` / ``scale_factor``; the output size is ``floor(in * scale_factor)``, and the
    scale factor (unless ``recompute_scale_factor``) gives the source coordinates, as
    PyTorch."""
    fname = "interpolate"
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    shape = tuple(input._value.shape)
    nd = len(shape) - 2
    if nd not in _INTERP_MODES:
        raise NotImplementedError(f"{fname}(): jflow supports 3-d and 4-d inputs, got shape "
                                  f"{list(shape)}")
    if mode not in _INTERP_MODES[nd]:
        known = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear",
                 "area")
        if mode in known:
            raise NotImplementedError(f"{fname}(): mode {mode!r} is not supported for a "
                                      f"{nd + 2}-d input; supported: {list(_INTERP_MODES[nd])}")
        raise ValueError(f"{fname}(): mode must be one of {list(known)}, got {mode!r}")
    if antialias:
        raise NotImplementedError(f"{fname}(): antialias=True is not supported by jflow")
    if mode.startswith("nearest"):
        if align_corners is not None:
            raise ValueError(f"{fname}(): align_corners option can only be set with the "
                             f"interpolating modes: linear | bilinear | bicubic | trilinear")
        align_corners = False
    align_corners = bool(align_corners)
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{fname}(): exactly one of size or scale_factor should be defined, "
                         f"got size={size} and scale_factor={scale_factor}")
    in_sizes = shape[2:]
    if size is not None:
        out = (int(size),) * nd if isinstance(size, int) else tuple(int(v) for v in size)
        if len(out) != nd:
            raise ValueError(f"{fname}(): size must be an int or {nd} ints for a "
                             f"{nd + 2}-d input, got {list(out)}")
        scales = (0.0,) * nd
    else:
        sf = (float(scale_factor),) * nd if isinstance(scale_factor, (int, float)) else \
            tuple(float(v) for v in scale_factor)
        if len(sf) != nd:
            raise ValueError(f"{fname}(): scale_factor must be a float or {nd} floats for a "
                             f"{nd + 2}-d input, got {list(sf)}")
        if any(not v > 0 for v in sf):
            raise ValueError(f"{fname}(): scale_factor must be positive, got {list(sf)}")
        out = tuple(int(np.floor(float(n) * v)) for n, v in zip(in_sizes, sf))
        scales = (0.0,) * nd if recompute_scale_factor else sf
    if any(o <= 0 for o in out):
        raise ValueError(f"{fname}(): input and output sizes should be greater than 0, but "
                         f"got input {list(in_sizes)} and output {list(out)}")
    x = input
    if nd == 1:  # a unit height dimension
        x = _reshape(x, shape=shape[:2] + (1,) + shape[2:])
        out, scales = (1,) + out, (0.0,) + scales
    y = _upsample2d(x, output_size=out, mode="bilinear" if mode == "linear" else mode,
                    scales=scales, align_corners=align_corners)
    if nd == 1:
        y = _reshape(y, shape=shape[:2] + out[1:])
    return y


def _pool_input(fname: str, input: Tensor) -> tuple[Tensor, bool]:
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")
    nd = input._value.ndim
    if nd not in (3, 4):
        raise RuntimeError(f"{fname}(): expected a 3-d (unbatched) or 4-d (batched) input, "
                           f"got shape {list(input._value.shape)}")
    if nd == 3:
        return _reshape(input, shape=(1,) + tuple(input._value.shape)), True
    return input, False


def _unbatch(y: Tensor, unbatched: bool) -> Tensor:
    return _reshape(y, shape=tuple(y._value.shape[1:])) if unbatched else y


@functor("AvgPool2d")
def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: Any = None) -> Tensor:
    """2-d average pooling (torch.nn.functional.avg_pool2d); ``stride`` defaults to the
    kernel size. ``ceil_mode`` and ``divisor_override`` as PyTorch: with ceil_mode the last
    window must start inside the input or its left padding, and cells past the right padding
    do not count."""
    if divisor_override is not None and int(divisor_override) == 0:
        raise ValueError("avg_pool2d(): divisor_override must be non-zero, got 0")
    x, unbatched = _pool_input("avg_pool2d", input)
    k = _pair("avg_pool2d", "kernel_size", kernel_size, 2)
    st = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _pair("avg_pool2d", "stride", stride, 2)
    pad = _pair("avg_pool2d", "padding", padding, 2)
    y = _avg_pool2d(x, kernel_size=k, stride=st, padding=pad,
                    count_include_pad=bool(count_include_pad), ceil_mode=bool(ceil_mode),
                    divisor_override=int(divisor_override or 0))
    return _unbatch(y, unbatched)


def _adaptive_matrix(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) averaging matrix: window i is [floor(i n_in / n_out),
    ceil((i + 1) n_in / n_out)) as PyTorch's adaptive pooling."""
    m = np.zeros((n_out, n_in))
    for i in range(n_out):
        lo, hi = (i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


@functor("AdaptiveAvgPool2d")
def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """2-d adaptive average pooling (torch.nn.functional.adaptive_avg_pool2d).
    Evenly dividing sizes use the avg_pool2d op;
    others are two matmuls with constant averaging matrices."""
    x, unbatched = _pool_input("adaptive_avg_pool2d", input)
    h, w = x._value.shape[2:]
    os = (output_size,) * 2 if output_size is None or isinstance(output_size, int) \
        else tuple(output_size)
    if len(os) == 1:
        os = os * 2
    if len(os) != 2:
        raise ValueError(f"adaptive_avg_pool2d(): output_size must be an int or 2 ints, got "
                         f"{output_size}")
    oh, ow = (h if os[0] is None else int(os[0])), (w if os[1] is None else int(os[1]))
    if oh <= 0 or ow <= 0:
        raise ValueError(f"adaptive_avg_pool2d(): output_size must be positive, got "
                         f"{[oh, ow]}")
    if h % oh == 0 and w % ow == 0:
        k = (h // oh, w // ow)
        y = _avg_pool2d(x, kernel_size=k, stride=k, padding=(0, 0), count_include_pad=True)
    else:
        dt = x._value.dtype
        ah = _wrap(jnp.asarray(_adaptive_matrix(h, oh), dt))
        aw = _wrap(jnp.asarray(_adaptive_matrix(w, ow), dt))
        y = matmul(matmul(ah, x), aw, transpose_b=True)
    return _unbatch(y, unbatched)


def _max_pool(fname: str, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool) -> tuple[Tensor, Tensor]:
    x, unbatched = _pool_input(fname, input)
    k = _pair(fname, "kernel_size", kernel_size, 2)
    st = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _pair(fname, "stride", stride, 2)
    y, idx = _max_pool2d(x, kernel_size=k, stride=st, padding=_pair(fname, "padding", padding, 2),
                         dilation=_pair(fname, "dilation", dilation, 2),
                         ceil_mode=bool(ceil_mode))
    return _unbatch(y, unbatched), _unbatch(idx, unbatched)


@functor("MaxPool2d")
def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    """2-d max pooling (torch.nn.functional.max_pool2d); ``stride`` defaults to the kernel
    size; padding is -inf; ``ceil_mode`` as PyTorch. For the indices use
    ``max_pool2d_with_indices``."""
    return _max_pool("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode)[0]


@functor("MaxPool2dWithIndices")
def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,
                            padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """max_pool2d and the flat indices (h * W + w) of the maxima (PyTorch's
    ``return_indices=True``); the first maximum on ties."""
    return _max_pool("max_pool2d_with_indices", input, kernel_size, stride, padding, dilation,
                     ceil_mode)


def _const(v: float, like: Tensor) -> Tensor:
    return _wrap(jnp.asarray(v, like._value.dtype))


@functor("BatchNorm")
def batch_norm(input: Tensor, running_mean: Any, running_var: Any, weight: Any = None,
               bias: Any = None, training: bool = False, momentum: float = 0.1,
               eps: float = 1e-5) -> Tensor:
    """torch.nn.functional.batch_norm over axis 1 of (N, C, *). Training: batch statistics
    (the batch_norm op), then, under no_grad, ``running = (1 - momentum) * running +
    momentum * stat`` in place with the unbiased batch variance (as PyTorch). Eval: the
    running statistics, as elementwise ops."""
    if not input.is_floating_point():
        raise TypeError(f"batch_norm(): expected a floating point input, got {input.dtype}")
    shape = tuple(input._value.shape)
    if len(shape) < 2:
        raise ValueError(f"batch_norm(): expected an input of at least 2 dims (N, C, *), got "
                         f"shape {list(shape)}")
    c = shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and tuple(t._value.shape) != (c,):
            raise RuntimeError(f"batch_norm(): {name} should contain {c} elements not "
                               f"{int(np.prod(t._value.shape))}")
    pshape = (1, c) + (1,) * (len(shape) - 2)
    if training:
        n = int(np.prod(shape)) // c if c else 0
        if n <= 1:
            raise ValueError(f"batch_norm(): expected more than 1 value per channel when "
                             f"training, got input size {list(shape)}")
        y, mean, inv_std = _batch_norm(input, weight, bias, eps=float(eps))
        if running_mean is not None or running_var is not None:
            m = float(momentum)
            with no_grad():
                if running_mean is not None:
                    new = _add(_mul(running_mean, _const(1.0 - m, running_mean)),
                               _mul(mean.to(running_mean.dtype), _const(m, running_mean)))
                    assign_inplace(running_mean, new, "batch_norm")
                if running_var is not None:
                    r = inv_std.to(running_var.dtype)
                    # biased variance = 1 / inv_std^2 - eps
                    r2 = _rsqrt(_mul(r, r))
                    var = _sub(_mul(r2, r2), _const(float(eps), running_var))
                    var = _mul(var, _const(n / (n - 1), running_var))
                    new = _add(_mul(running_var, _const(1.0 - m, running_var)),
                               _mul(var, _const(m, running_var)))
                    assign_inplace(running_var, new, "batch_norm")
        return y
    if running_mean is None or running_var is None:
        raise ValueError("batch_norm(): running_mean and running_var are required when not "
                         "training")
    y = _mul(_sub(input, _reshape(running_mean, shape=pshape)),
             _reshape(_rsqrt(_add(running_var, _const(float(eps), running_var))), shape=pshape))
    if weight is not None:
        y = _mul(y, _reshape(weight, shape=pshape))
    if bias is not None:
        y = _add(y, _reshape(bias, shape=pshape))
    return y
