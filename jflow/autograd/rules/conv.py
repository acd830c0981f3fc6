"""Backward rules of the conv ops (``jflow/ops/conv.py``).

conv2d, conv2d_input_grad and conv2d_weight_grad are bilinear and transposes of each other:
with ``y = conv2d(x, w)``, ``dx = conv2d_input_grad(dy, w)`` and
``dw = conv2d_weight_grad(x, dy)``, ``<dy, conv2d(x, w)> = <conv2d_input_grad(dy, w), x> =
<conv2d_weight_grad(x, dy), w>``, so each rule is written with the other two ops;
conv_transpose2d (conv2d_input_grad up to zero rows) reuses them.
"""

from __future__ import annotations

from ...ops.conv import conv_transpose_plan
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
