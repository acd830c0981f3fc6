"""Backward rules of the conv ops (``jflow/ops/conv.py``).

conv2d, conv2d_input_grad and conv2d_weight_grad are bilinear and transposes of each other:
with ``y = conv2d(x, w)``, ``dx = conv2d_input_grad(dy, w)`` and
``dw = conv2d_weight_grad(x, dy)``, ``<dy, conv2d(x, w)> = <conv2d_input_grad(dy, w), x> =
<conv2d_weight_grad(x, dy), w>``, so each rule is written with the other two ops;
conv_transpose2d (conv2d_input_grad up to zero rows) reuses them. The pooling and upsample
ops are linear pairs: each one's backward is the other.
"""

from __future__ import annotations

import math

from ..rule import register_backward
from ._util import O


def _attrs(ctx):
    return {"stride": ctx.stride, "padding": ctx.padding, "dilation": ctx.dilation,
            "groups": ctx.groups}


@register_backward("conv2d", save=["x", "weight"])
def _conv2d(ctx, dy):
    x, w = ctx.saved_tensors
    a = _attrs(ctx)
    dx = dw = None
    if ctx.needs_input_grad[0]:
        dx = O.conv2d_input_grad(dy, w, input_hw=tuple(ctx.input_shapes[0][2:]), **a)
    if ctx.needs_input_grad[1]:
        dw = O.conv2d_weight_grad(x, dy, kernel_size=tuple(ctx.input_shapes[1][2:]), **a)
    return dx, dw


@register_backward("conv2d_input_grad", save=["dy", "weight"])
def _conv2d_input_grad(ctx, g):
    dy, w = ctx.saved_tensors
    a = _attrs(ctx)
    gdy = gw = None
    if ctx.needs_input_grad[0]:
        gdy = O.conv2d(g, w, **a)
    if ctx.needs_input_grad[1]:
        gw = O.conv2d_weight_grad(g, dy, kernel_size=tuple(ctx.input_shapes[1][2:]), **a)
    return gdy, gw


@register_backward("conv2d_weight_grad", save=["x", "dy"])
def _conv2d_weight_grad(ctx, g):
    x, dy = ctx.saved_tensors
    a = _attrs(ctx)
    gx = gdy = None
    if ctx.needs_input_grad[0]:
        gx = O.conv2d_input_grad(dy, g, input_hw=tuple(ctx.input_shapes[0][2:]), **a)
    if ctx.needs_input_grad[1]:
        gdy = O.conv2d(x, g, **a)
    return gx, gdy


@register_backward("conv_transpose2d", save=["x", "weight"])
def _conv_transpose2d(ctx, dy):
    """conv_transpose2d is conv2d_input_grad (then zero rows): dx is conv2d of dy (the zero
    rows cropped), dw is conv2d_weight_grad with dy as conv2d's input."""
    from ...ops.conv import conv_transpose_plan
    x, w = ctx.saved_tensors
    _, pads, _, extra = conv_transpose_plan(ctx.input_shapes[0], ctx.input_shapes[1],
                                            ctx.stride, ctx.padding, ctx.output_padding,
                                            ctx.dilation, ctx.groups)
    if any(extra):
        dy = O.pad(dy, pad=(0, -extra[1], 0, -extra[0]))
    a = {"stride": ctx.stride, "padding": tuple(pads), "dilation": ctx.dilation,
         "groups": ctx.groups}
    dx = dw = None
    if ctx.needs_input_grad[0]:
        dx = O.conv2d(dy, w, **a)
    if ctx.needs_input_grad[1]:
        dw = O.conv2d_weight_grad(dy, x, kernel_size=tuple(ctx.input_shapes[1][2:]), **a)
    return dx, dw


def _pool_attrs(ctx):
    return {"kernel_size": ctx.kernel_size, "stride": ctx.stride, "padding": ctx.padding,
            "count_include_pad": ctx.count_include_pad, "ceil_mode": ctx.ceil_mode,
            "divisor_override": ctx.divisor_override}


@register_backward("avg_pool2d")
def _avg_pool2d(ctx, dy):
    return O.avg_pool2d_grad(dy, input_hw=tuple(ctx.input_shapes[0][2:]), **_pool_attrs(ctx))


@register_backward("avg_pool2d_grad")
def _avg_pool2d_grad(ctx, g):
    return O.avg_pool2d(g, **_pool_attrs(ctx))


@register_backward("max_pool2d", save=["indices"])
def _max_pool2d(ctx, dy, didx):
    (idx,) = ctx.saved_tensors
    return O.max_pool2d_grad(dy, idx, input_hw=tuple(ctx.input_shapes[0][2:]))


@register_backward("max_pool2d_grad", save=["indices"])
def _max_pool2d_grad(ctx, g):
    """The gradient at each maximum's position, gathered back to dy's shape."""
    (idx,) = ctx.saved_tensors
    dshape = tuple(ctx.input_shapes[0])
    n, c = dshape[:2]
    flat_g = O.reshape(g, shape=(n, c, ctx.input_hw[0] * ctx.input_hw[1]))
    flat_i = O.reshape(idx, shape=(n, c, dshape[2] * dshape[3]))
    return O.reshape(O.dim_gather(flat_g, flat_i, dim=2), shape=dshape), None


@register_backward("batch_norm", save=["x", "weight", "mean", "inv_std"])
def _batch_norm(ctx, dy, dmean, dr):
    from .norm import _normalize_backward, _present
    x, w, mean, r = ctx.saved_tensors
    has = _present(ctx, 3)
    shape = tuple(ctx.input_shapes[0])
    c = shape[1]
    axes = (0,) + tuple(range(2, len(shape)))
    bshape = (1, c) + (1,) * (len(shape) - 2)
    n = math.prod(shape) // c if c else 0
    wb = None if w is None else O.reshape(w, shape=bshape)
    dx, xhat = _normalize_backward(x, wb, mean, r, dy, dmean, dr, axes, bshape, n, True)
    grads = [dx]
    if has[1]:
        grads.append(O.reduce_sum(O.mul(dy, xhat), axis=axes, keepdim=False))
    if has[2]:
        grads.append(O.reduce_sum(dy, axis=axes, keepdim=False))
    return grads


def _up_attrs(ctx):
    return {"mode": ctx.mode, "scales": ctx.scales, "align_corners": ctx.align_corners}


@register_backward("upsample2d")
def _upsample2d(ctx, dy):
    return O.upsample2d_grad(dy, input_hw=tuple(ctx.input_shapes[0][2:]), **_up_attrs(ctx))


@register_backward("upsample2d_grad")
def _upsample2d_grad(ctx, g):
    return O.upsample2d(g, output_size=tuple(ctx.input_shapes[0][2:]), **_up_attrs(ctx))
