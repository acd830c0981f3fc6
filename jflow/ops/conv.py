"""Convolution ops (issue 6): conv2d and its two gradient ops, conv_transpose2d, avg_pool2d /
max_pool2d and their gradient ops, and batch_norm (training statistics) — definition, xla
kernel and SBP signatures side by side.

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
from .registry import Attr, Input, define_op

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


# -- avg_pool2d and its transpose ----------------------------------------------------------------
# attrs: kernel_size (2), stride (2), padding (2: symmetric, as PyTorch), count_include_pad,
# ceil_mode and divisor_override (0: none). Both ops are linear; each one's backward is the
# other.

def _pool_out(xs: Any, kernel_size: Any, stride: Any, padding: Any,
              ceil_mode: bool = False) -> tuple[int, ...]:
    """Output shape of a 2-d pooling (``kernel_size`` already dilated). ``ceil_mode`` rounds
    the window count up, as PyTorch, but drops a last window that would start past the input
    and its left padding."""
    xs = tuple(xs)
    if len(xs) != 4:
        raise ValueError(f"expected a 4-d input (N, C, H, W), got shape {xs}")
    if len(kernel_size) != 2 or any(k <= 0 for k in kernel_size):
        raise ValueError(f"kernel_size must be 2 positive ints, got {list(kernel_size)}")
    if len(stride) != 2 or any(s <= 0 for s in stride):
        raise ValueError(f"stride must be 2 positive ints, got {list(stride)}")
    if len(padding) != 2 or any(p < 0 or 2 * p > k for p, k in zip(padding, kernel_size)):
        raise ValueError(f"padding must be 2 non-negative ints of at most half the kernel "
                         f"size, got {list(padding)}")
    out = []
    for i in range(2):
        size = xs[2 + i] + 2 * padding[i]
        n = size - kernel_size[i] + (stride[i] - 1 if ceil_mode else 0)
        o = n // stride[i] + 1
        if ceil_mode and o > 0 and (o - 1) * stride[i] >= xs[2 + i] + padding[i]:
            o -= 1
        if o <= 0:
            raise ValueError(f"kernel size {kernel_size[i]} is larger than the padded input "
                             f"size {size}")
        out.append(o)
    return xs[:2] + tuple(out)


def _ceil_extra(xs: Any, out_hw: Any, kernel_size: Any, stride: Any, padding: Any) -> list[int]:
    """Per spatial dim, how far the last window reaches past the padded input (ceil_mode)."""
    return [max(0, (out_hw[i] - 1) * stride[i] + kernel_size[i] - xs[2 + i] - 2 * padding[i])
            for i in range(2)]


def _avg_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, count_include_pad: bool,
              ceil_mode: bool, divisor_override: int) -> Any:
    """Window sums over the input padded by ``padding`` (plus, in ceil_mode, what the last
    window needs), divided as PyTorch: by ``divisor_override`` if non-zero, else by the
    window's cells inside input + padding (count_include_pad) or inside the input."""
    out = _pool_out(x.shape, kernel_size, stride, padding, ceil_mode)
    extra = _ceil_extra(x.shape, out[2:], kernel_size, stride, padding)
    win = (1, 1) + tuple(kernel_size)
    strides = (1, 1) + tuple(stride)
    pads = ((0, 0), (0, 0)) + tuple((p, p + e) for p, e in zip(padding, extra))
    xf = x.astype(np.float32) if x.dtype in (np.dtype(np.float16), np.dtype(jnp.bfloat16)) else x
    s = lax.reduce_window(xf, np.array(0, xf.dtype), lax.add, win, strides, pads)
    if divisor_override:
        cnt = jnp.asarray(divisor_override, xf.dtype)
    elif count_include_pad:
        if not any(extra):
            cnt = jnp.asarray(kernel_size[0] * kernel_size[1], xf.dtype)
        else:  # cells past input + padding do not count
            ones = jnp.ones((1, 1) + tuple(h + 2 * p for h, p in zip(x.shape[2:], padding)),
                            xf.dtype)
            cnt = lax.reduce_window(ones, np.array(0, xf.dtype), lax.add, win, strides,
                                    ((0, 0), (0, 0)) + tuple((0, e) for e in extra))
    else:
        ones = jnp.ones((1, 1) + tuple(x.shape[2:]), xf.dtype)
        cnt = lax.reduce_window(ones, np.array(0, xf.dtype), lax.add, win, strides, pads)
    return (s / cnt).astype(x.dtype)


def _pool_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Batch or channel split; linear (partial sums stay partial)."""
    return [Signature((S(0),), (S(0),)), Signature((S(1),), (S(1),)), Signature((P,), (P,))]


def _avg_pool_infer(x: Any, kernel_size: Any, stride: Any, padding: Any,
                    count_include_pad: bool, ceil_mode: bool, divisor_override: int) -> Any:
    check_dtype(x, FLOAT, "input")
    return desc(_pool_out(x.shape, kernel_size, stride, padding, ceil_mode), x.dtype)


_POOL_ATTRS = [Attr("kernel_size", "int64_list"), Attr("stride", "int64_list"),
               Attr("padding", "int64_list"), Attr("count_include_pad", "bool", True),
               Attr("ceil_mode", "bool", False), Attr("divisor_override", "int64", 0)]

define_op("avg_pool2d", inputs=["x"], outputs=["y"], attrs=_POOL_ATTRS, infer=_avg_pool_infer,
          sbp=_pool_sbp, doc="2-d average pooling over (H, W) windows, NCHW")
register_kernel("avg_pool2d", _avg_pool, name="avg_pool2d_xla")


def _avg_pool_grad_infer(dy: Any, input_hw: Any, kernel_size: Any, stride: Any, padding: Any,
                         count_include_pad: bool, ceil_mode: bool, divisor_override: int) -> Any:
    check_dtype(dy, FLOAT, "grad")
    if len(dy.shape) != 4 or len(input_hw) != 2:
        raise ValueError(f"expected a 4-d grad and 2 ints input_hw, got shape "
                         f"{tuple(dy.shape)} and {list(input_hw)}")
    xs = tuple(dy.shape[:2]) + tuple(input_hw)
    if _pool_out(xs, kernel_size, stride, padding, ceil_mode) != tuple(dy.shape):
        raise ValueError(f"grad shape {tuple(dy.shape)} does not match avg_pool2d of an input "
                         f"of shape {xs}")
    return desc(xs, dy.dtype)


def _avg_pool_grad(dy: Any, input_hw: Any, kernel_size: Any, stride: Any, padding: Any,
                   count_include_pad: bool, ceil_mode: bool, divisor_override: int) -> Any:
    x0 = jnp.zeros(tuple(dy.shape[:2]) + tuple(input_hw), dy.dtype)
    _, vjp = jax.vjp(lambda x: _avg_pool(x, kernel_size, stride, padding, count_include_pad,
                                         ceil_mode, divisor_override), x0)
    return vjp(dy)[0]


define_op("avg_pool2d_grad", inputs=["dy"], outputs=["dx"],
          attrs=[Attr("input_hw", "int64_list")] + _POOL_ATTRS, infer=_avg_pool_grad_infer,
          sbp=_pool_sbp, doc="the gradient of avg_pool2d with respect to its input")
register_kernel("avg_pool2d_grad", _avg_pool_grad, name="avg_pool2d_grad_xla")


# -- max_pool2d and its gradient -----------------------------------------------------------------
# max_pool2d returns (y, indices): indices (int64) are flat positions h * W + w in the unpadded
# input of each selected maximum (the first one on ties, as PyTorch). Padding is -inf.
# max_pool2d_grad(dy, indices) adds dy into those positions; its backward gathers with
# dim_gather. ceil_mode as PyTorch (windows past the end see -inf there).

def _max_pool_infer(x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                    ceil_mode: bool) -> Any:
    check_dtype(x, FLOAT, "input")
    if len(dilation) != 2 or any(d <= 0 for d in dilation):
        raise ValueError(f"dilation must be 2 positive ints, got {list(dilation)}")
    eff = [d * (k - 1) + 1 for d, k in zip(dilation, kernel_size)]
    if len(padding) != 2 or any(p < 0 or 2 * p > k for p, k in zip(padding, kernel_size)):
        raise ValueError(f"padding must be 2 non-negative ints of at most half the kernel "
                         f"size, got {list(padding)}")
    out = _pool_out(x.shape, eff, stride, padding, ceil_mode)
    return desc(out, x.dtype), desc(out, np.int64)


def _max_pool(x: Any, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
              ceil_mode: bool) -> Any:
    n, c, h, w = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel_size, stride, padding, dilation
    eff = [d * (k - 1) + 1 for d, k in zip(dilation, kernel_size)]
    oh, ow = _pool_out(x.shape, eff, stride, padding, ceil_mode)[2:]
    rows = (np.arange(oh)[:, None] * sh + np.arange(kh)[None, :] * dh) - ph   # (oh, kh)
    cols = (np.arange(ow)[:, None] * sw + np.arange(kw)[None, :] * dw) - pw   # (ow, kw)
    r = np.broadcast_to(rows[:, None, :, None], (oh, ow, kh, kw)).reshape(oh, ow, -1)
    q = np.broadcast_to(cols[None, :, None, :], (oh, ow, kh, kw)).reshape(oh, ow, -1)
    valid = (r >= 0) & (r < h) & (q >= 0) & (q < w)
    flat = np.where(valid, r * w + q, 0)                                      # (oh, ow, K)
    win = jnp.take(x.reshape(n, c, h * w), jnp.asarray(flat), axis=2)         # (n,c,oh,ow,K)
    win = jnp.where(jnp.asarray(valid), win, jnp.asarray(-jnp.inf, x.dtype))
    k = jnp.argmax(win, axis=-1)
    y = jnp.take_along_axis(win, k[..., None], axis=-1)[..., 0]
    idx = jnp.take_along_axis(jnp.broadcast_to(jnp.asarray(flat), win.shape), k[..., None],
                              axis=-1)[..., 0]
    return y, idx.astype(np.int64)


define_op("max_pool2d", inputs=["x"], outputs=["y", "indices"],
          attrs=[Attr("kernel_size", "int64_list"), Attr("stride", "int64_list"),
                 Attr("padding", "int64_list"), Attr("dilation", "int64_list"),
                 Attr("ceil_mode", "bool", False)],
          infer=_max_pool_infer,
          sbp=lambda in_shapes, n_out=1, **_: [Signature((S(0),), (S(0), S(0))),
                                               Signature((S(1),), (S(1), S(1)))],
          doc="2-d max pooling over (H, W) windows, NCHW; also the flat argmax indices")
register_kernel("max_pool2d", _max_pool, name="max_pool2d_xla")


def _max_pool_grad_infer(dy: Any, indices: Any, input_hw: Any) -> Any:
    check_dtype(dy, FLOAT, "grad")
    if len(dy.shape) != 4 or tuple(indices.shape) != tuple(dy.shape) or len(input_hw) != 2:
        raise ValueError(f"expected a 4-d grad, indices of its shape and 2 ints input_hw, got "
                         f"shapes {tuple(dy.shape)}, {tuple(indices.shape)} and "
                         f"{list(input_hw)}")
    return desc(tuple(dy.shape[:2]) + tuple(input_hw), dy.dtype)


def _max_pool_grad(dy: Any, indices: Any, input_hw: Any) -> Any:
    n, c = dy.shape[:2]
    hw = input_hw[0] * input_hw[1]
    out = jnp.zeros((n, c, hw), dy.dtype)
    ni = jnp.arange(n)[:, None, None]
    ci = jnp.arange(c)[None, :, None]
    out = out.at[ni, ci, indices.reshape(n, c, -1)].add(dy.reshape(n, c, -1))
    return out.reshape((n, c) + tuple(input_hw))


define_op("max_pool2d_grad", inputs=["dy", "indices"], outputs=["dx"],
          attrs=[Attr("input_hw", "int64_list")], infer=_max_pool_grad_infer,
          sbp=lambda in_shapes, n_out=1, **_: [Signature((S(0), S(0)), (S(0),)),
                                               Signature((S(1), S(1)), (S(1),)),
                                               Signature((P, B), (P,))],
          doc="the gradient of max_pool2d: dy added into the input positions of the maxima")
register_kernel("max_pool2d_grad", _max_pool_grad, name="max_pool2d_grad_xla")


# -- batch_norm (training mode: batch statistics) ------------------------------------------------
# y = (x - mean) * inv_std * weight + bias with per-channel (axis 1) biased batch statistics
# over every other axis; outputs y, mean, inv_std (shape (C,)) for the backward rule and the
# functor's running-stat update. Eval mode (running stats) is elementwise ops in the functor.

def _bn_infer(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    check_dtype(x, FLOAT, "input")
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError(f"expected an input of at least 2 dims (N, C, *), got shape {shape}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is None:
            continue
        if np.dtype(p.dtype) != np.dtype(x.dtype):
            raise TypeError(f"{name} must have the input's dtype {np.dtype(x.dtype).name}, "
                            f"got {np.dtype(p.dtype).name}")
        if tuple(p.shape) != shape[1:2]:
            raise ValueError(f"{name} must have shape {shape[1:2]}, got {tuple(p.shape)}")
    stat = desc(shape[1:2], x.dtype)
    return desc(shape, x.dtype), stat, stat


def _batch_norm(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    xf = x.astype(np.float32) if x.dtype in (np.dtype(np.float16), np.dtype(jnp.bfloat16)) else x
    axes = (0,) + tuple(range(2, x.ndim))
    mean = jnp.mean(xf, axis=axes, keepdims=True)
    d = xf - mean
    r = lax.rsqrt(jnp.mean(d * d, axis=axes, keepdims=True) + jnp.asarray(eps, xf.dtype))
    y = d * r
    pshape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.astype(xf.dtype).reshape(pshape)
    if bias is not None:
        y = y + bias.astype(xf.dtype).reshape(pshape)
    c = x.shape[1]
    return y.astype(x.dtype), mean.reshape(c).astype(x.dtype), r.reshape(c).astype(x.dtype)


def _bn_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Channel split (statistics are per channel); weight and bias split alike."""
    return [Signature((S(1),) + (S(0),) * (len(in_shapes) - 1), (S(1), S(0), S(0)))]


define_op("batch_norm", inputs=["x", Input("weight", optional=True),
                                Input("bias", optional=True)],
          outputs=["y", "mean", "inv_std"], attrs=[Attr("eps", "double", 1e-5)],
          infer=_bn_infer, sbp=_bn_sbp,
          doc="batch normalisation with batch statistics over every axis but 1 (training)")
register_kernel("batch_norm", _batch_norm, name="batch_norm_xla")
