"""Convolution ops: conv2d and its two gradient ops, and conv_transpose2d —
definition, xla kernel and SBP signatures side by side. (Pooling is in ``pool.py``,
batch_norm in ``norm.py``.)

``conv2d(x, w)`` is ``lax.conv_general_dilated`` in NCHW / OIHW layout with attrs ``stride``
(2 ints), ``padding`` (4 ints: top, bottom, left, right), ``dilation`` (2 ints) and
``groups``; the bias is added by the functor. ``conv2d_input_grad(dy, w)`` and
``conv2d_weight_grad(x, dy)`` are the two transposes (vector-Jacobian products) of conv2d,
with the same attrs plus the spatial size of the result (``input_hw`` / ``kernel_size``; the
other dims follow from the inputs, so batch and channel splits stay consistent). The three
ops are bilinear and their backward rules are written with each other, so derivatives of any
order work.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, P, S, Signature
from .infer import FLOAT, check_dtype, desc
from .primitive import define_op
from .registry import Attr

_DN = ("NCHW", "OIHW", "NCHW")


def _conv(x: Any, w: Any, stride: Any, padding: Any, dilation: Any, groups: int) -> Any:
    return lax.conv_general_dilated(
        x, w, window_strides=tuple(stride),
        padding=((padding[0], padding[1]), (padding[2], padding[3])),
        rhs_dilation=tuple(dilation), dimension_numbers=_DN, feature_group_count=groups,
        precision=lax.Precision.HIGHEST)


def _check_attrs(stride: Any, padding: Any, dilation: Any, groups: int) -> None:
    if len(stride) != 2 or any(s <= 0 for s in stride):
        raise ValueError(f"stride must be 2 positive ints, got {list(stride)}")
    if len(dilation) != 2 or any(d <= 0 for d in dilation):
        raise ValueError(f"dilation must be 2 positive ints, got {list(dilation)}")
    if len(padding) != 4 or any(p < 0 for p in padding):
        raise ValueError(f"padding must be 4 non-negative ints, got {list(padding)}")
    if groups <= 0:
        raise ValueError(f"groups must be positive, got {groups}")


def conv2d_out_shape(xs: Any, ws: Any, stride: Any, padding: Any, dilation: Any,
                     groups: int) -> tuple[int, ...]:
    """The output shape of conv2d (checks the shapes)."""
    xs, ws = tuple(xs), tuple(ws)
    if len(xs) != 4 or len(ws) != 4:
        raise ValueError(f"expected a 4-d input (N, C, H, W) and a 4-d weight (O, C/groups, "
                         f"kH, kW), got shapes {xs} and {ws}")
    if xs[1] != ws[1] * groups:
        raise ValueError(f"input has {xs[1]} channels, but weight {ws} with groups={groups} "
                         f"expects {ws[1] * groups}")
    if ws[0] % groups:
        raise ValueError(f"out channels {ws[0]} must be divisible by groups {groups}")
    out = []
    for i in range(2):
        eff = dilation[i] * (ws[2 + i] - 1) + 1
        size = xs[2 + i] + padding[2 * i] + padding[2 * i + 1]
        if size < eff:
            raise ValueError(f"kernel size {eff} (dilated) is larger than the padded input "
                             f"size {size}")
        out.append((size - eff) // stride[i] + 1)
    return (xs[0], ws[0]) + tuple(out)


def _same_dtype(a: Any, b: Any, name: str) -> None:
    check_dtype(a, FLOAT, "input")
    if np.dtype(b.dtype) != np.dtype(a.dtype):
        raise TypeError(f"{name} must have the input's dtype {np.dtype(a.dtype).name}, got "
                        f"{np.dtype(b.dtype).name}")


def _conv_infer(x: Any, w: Any, stride: Any, padding: Any, dilation: Any, groups: int) -> Any:
    _same_dtype(x, w, "weight")
    _check_attrs(stride, padding, dilation, groups)
    return desc(conv2d_out_shape(x.shape, w.shape, stride, padding, dilation, groups), x.dtype)


def _conv_sbp(in_shapes: Any, n_out: int = 1, groups: int = 1, **_: Any) -> list[Signature]:
    """Batch split; out-channel split of the weight (groups == 1); in-channel split of both
    gives a partial sum (groups == 1); linear in each argument."""
    sigs = [Signature((S(0), B), (S(0),)), Signature((P, B), (P,)), Signature((B, P), (P,))]
    if groups == 1:
        sigs += [Signature((B, S(0)), (S(1),)), Signature((S(1), S(1)), (P,))]
    return sigs


define_op("conv2d", inputs=["x", "weight"], outputs=["y"],
          attrs=[Attr("stride", "int64_list"), Attr("padding", "int64_list"),
                 Attr("dilation", "int64_list"), Attr("groups", "int64", 1)],
          infer=_conv_infer, sbp=_conv_sbp,
          doc="2-d cross-correlation, NCHW input, OIHW weight (no bias)")
register_kernel("conv2d", _conv, name="conv2d_xla")


# -- the two transposes --------------------------------------------------------------------------

def _input_shape(dy: Any, w: Any, input_hw: Any, groups: int) -> tuple[int, ...]:
    if len(dy.shape) != 4 or len(w.shape) != 4 or len(input_hw) != 2:
        raise ValueError(f"expected a 4-d grad and weight and 2 ints input_hw, got shapes "
                         f"{tuple(dy.shape)}, {tuple(w.shape)} and {list(input_hw)}")
    return (dy.shape[0], w.shape[1] * groups) + tuple(input_hw)


def _input_grad_infer(dy: Any, w: Any, input_hw: Any, stride: Any, padding: Any,
                      dilation: Any, groups: int) -> Any:
    _same_dtype(dy, w, "weight")
    _check_attrs(stride, padding, dilation, groups)
    xs = _input_shape(dy, w, input_hw, groups)
    if conv2d_out_shape(xs, w.shape, stride, padding, dilation, groups) != tuple(dy.shape):
        raise ValueError(f"grad shape {tuple(dy.shape)} does not match conv2d of an input of "
                         f"shape {xs} with weight {tuple(w.shape)}")
    return desc(xs, dy.dtype)


def _input_grad(dy: Any, w: Any, input_hw: Any, stride: Any, padding: Any, dilation: Any,
                groups: int) -> Any:
    x0 = jnp.zeros(_input_shape(dy, w, input_hw, groups), dy.dtype)
    _, vjp = jax.vjp(lambda x: _conv(x, w, stride, padding, dilation, groups), x0)
    return vjp(dy)[0]


def _input_grad_sbp(in_shapes: Any, n_out: int = 1, groups: int = 1,
                    **_: Any) -> list[Signature]:
    sigs = [Signature((S(0), B), (S(0),)), Signature((P, B), (P,)), Signature((B, P), (P,))]
    if groups == 1:
        sigs += [Signature((S(1), S(0)), (P,)), Signature((B, S(1)), (S(1),))]
    return sigs


define_op("conv2d_input_grad", inputs=["dy", "weight"], outputs=["dx"],
          attrs=[Attr("input_hw", "int64_list"), Attr("stride", "int64_list"),
                 Attr("padding", "int64_list"), Attr("dilation", "int64_list"),
                 Attr("groups", "int64", 1)],
          infer=_input_grad_infer, sbp=_input_grad_sbp,
          doc="the gradient of conv2d with respect to its input (a transposed convolution)")
register_kernel("conv2d_input_grad", _input_grad, name="conv2d_input_grad_xla")


def _weight_shape(x: Any, dy: Any, kernel_size: Any, groups: int) -> tuple[int, ...]:
    if len(x.shape) != 4 or len(dy.shape) != 4 or len(kernel_size) != 2:
        raise ValueError(f"expected a 4-d input and grad and 2 ints kernel_size, got shapes "
                         f"{tuple(x.shape)}, {tuple(dy.shape)} and {list(kernel_size)}")
    if groups <= 0 or x.shape[1] % groups:
        raise ValueError(f"input channels {x.shape[1]} must be divisible by groups {groups}")
    return (dy.shape[1], x.shape[1] // groups) + tuple(kernel_size)


def _weight_grad_infer(x: Any, dy: Any, kernel_size: Any, stride: Any, padding: Any,
                       dilation: Any, groups: int) -> Any:
    _same_dtype(x, dy, "grad")
    _check_attrs(stride, padding, dilation, groups)
    ws = _weight_shape(x, dy, kernel_size, groups)
    if conv2d_out_shape(x.shape, ws, stride, padding, dilation, groups) != tuple(dy.shape):
        raise ValueError(f"grad shape {tuple(dy.shape)} does not match conv2d of an input of "
                         f"shape {tuple(x.shape)} with a weight of shape {ws}")
    return desc(ws, x.dtype)


def _weight_grad(x: Any, dy: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                 groups: int) -> Any:
    w0 = jnp.zeros(_weight_shape(x, dy, kernel_size, groups), x.dtype)
    _, vjp = jax.vjp(lambda w: _conv(x, w, stride, padding, dilation, groups), w0)
    return vjp(dy)[0]


def _weight_grad_sbp(in_shapes: Any, n_out: int = 1, groups: int = 1,
                     **_: Any) -> list[Signature]:
    sigs = [Signature((S(0), S(0)), (P,)), Signature((P, B), (P,)), Signature((B, P), (P,))]
    if groups == 1:
        sigs += [Signature((B, S(1)), (S(0),)), Signature((S(1), B), (S(1),))]
    return sigs


define_op("conv2d_weight_grad", inputs=["x", "dy"], outputs=["dw"],
          attrs=[Attr("kernel_size", "int64_list"), Attr("stride", "int64_list"),
                 Attr("padding", "int64_list"), Attr("dilation", "int64_list"),
                 Attr("groups", "int64", 1)],
          infer=_weight_grad_infer, sbp=_weight_grad_sbp,
          doc="the gradient of conv2d with respect to its weight")
register_kernel("conv2d_weight_grad", _weight_grad, name="conv2d_weight_grad_xla")


# -- conv_transpose2d -----------------------------------------------------------------------------
# conv_transpose2d(x, w) with w (Cin, Cout / groups, kH, kW) is conv2d_input_grad(x, w): the
# weight layouts coincide (conv2d's out channels are the transposed conv's in channels). The
# output size (H - 1) s - 2 p + d (k - 1) + output_padding + 1 is reached by giving the
# conv2d_input_grad a bottom/right padding of p - output_padding (when output_padding <= p) and,
# when output_padding > p, by appending the rows no window reaches (zeros) after the op.


def conv_transpose_plan(xs: Any, ws: Any, stride: Any, padding: Any, output_padding: Any,
                        dilation: Any, groups: int) -> tuple[tuple[int, ...], list[int],
                                                             list[int], list[int]]:
    """(output shape, conv2d padding (4 ints), the conv2d input size, and the zero rows/cols
    appended after it) of conv_transpose2d; checks shapes and attrs."""
    xs, ws = tuple(xs), tuple(ws)
    if len(xs) != 4 or len(ws) != 4:
        raise ValueError(f"expected a 4-d input (N, Cin, H, W) and a 4-d weight (Cin, "
                         f"Cout/groups, kH, kW), got shapes {xs} and {ws}")
    if len(padding) != 2 or any(p < 0 for p in padding):
        raise ValueError(f"padding must be 2 non-negative ints, got {list(padding)}")
    if len(output_padding) != 2 or any(p < 0 for p in output_padding):
        raise ValueError(f"output_padding must be 2 non-negative ints, got "
                         f"{list(output_padding)}")
    _check_attrs(stride, list(padding) * 2, dilation, groups)
    if xs[1] != ws[0]:
        raise ValueError(f"input has {xs[1]} channels, but weight {ws} expects {ws[0]} "
                         f"(weight dim 0)")
    if ws[0] % groups:
        raise ValueError(f"in channels {ws[0]} must be divisible by groups {groups}")
    out, pads, conv_hw, extra = [], [], [], []
    for i in range(2):
        s, p, op, d, k = stride[i], padding[i], output_padding[i], dilation[i], ws[2 + i]
        if op >= max(s, d):
            raise ValueError(f"output_padding must be smaller than either stride or dilation, "
                             f"got output_padding {list(output_padding)}, stride "
                             f"{list(stride)} and dilation {list(dilation)}")
        size = (xs[2 + i] - 1) * s - 2 * p + d * (k - 1) + op + 1
        if size <= 0:
            raise ValueError(f"output size {size} is too small (input {xs}, padding "
                             f"{list(padding)})")
        if op <= p:
            pb, e = p - op, 0
        else:
            pb, e = 0, max(0, op - p - s + 1)
        out.append(size)
        pads += [p, pb]
        conv_hw.append(size - e)
        extra.append(e)
    return (xs[0], ws[1] * groups) + tuple(out), pads, conv_hw, extra


def _conv_t_infer(x: Any, w: Any, stride: Any, padding: Any, output_padding: Any,
                  dilation: Any, groups: int) -> Any:
    _same_dtype(x, w, "weight")
    ys = conv_transpose_plan(x.shape, w.shape, stride, padding, output_padding, dilation,
                             groups)[0]
    return desc(ys, x.dtype)


def _conv_t(x: Any, w: Any, stride: Any, padding: Any, output_padding: Any, dilation: Any,
            groups: int) -> Any:
    _, pads, conv_hw, extra = conv_transpose_plan(x.shape, w.shape, stride, padding,
                                                  output_padding, dilation, groups)
    y = _input_grad(x, w, conv_hw, stride, pads, dilation, groups)
    if any(extra):
        y = jnp.pad(y, ((0, 0), (0, 0), (0, extra[0]), (0, extra[1])))
    return y


define_op("conv_transpose2d", inputs=["x", "weight"], outputs=["y"],
          attrs=[Attr("stride", "int64_list"), Attr("padding", "int64_list"),
                 Attr("output_padding", "int64_list"), Attr("dilation", "int64_list"),
                 Attr("groups", "int64", 1)],
          infer=_conv_t_infer, sbp=_input_grad_sbp,
          doc="2-d transposed convolution, NCHW input, (Cin, Cout/groups, kH, kW) weight "
              "(no bias)")
register_kernel("conv_transpose2d", _conv_t, name="conv_transpose2d_xla")
