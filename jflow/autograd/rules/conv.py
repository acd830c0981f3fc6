"""Backward rules of the conv ops (``jflow/ops/conv.py``).

conv{2,3}d, conv{2,3}d_input_grad and conv{2,3}d_weight_grad are bilinear and transposes of
each other: with ``y = conv(x, w)``, ``dx = conv_input_grad(dy, w)`` and
``dw = conv_weight_grad(x, dy)``, ``<dy, conv(x, w)> = <conv_input_grad(dy, w), x> =
<conv_weight_grad(x, dy), w>``, so each rule is written with the other two ops of its rank;
conv_transpose{2,3}d (conv_input_grad up to zero rows) reuses them. im2col and col2im are
linear and each other's adjoint: each one's backward is the other.
"""

from __future__ import annotations

from ...ops.conv import conv_transpose_plan
from ..rule import register_backward
from ._util import O


def _attrs(ctx):
    return {"stride": ctx.stride, "padding": ctx.padding, "dilation": ctx.dilation,
            "groups": ctx.groups}


def _register_conv(nd: int, size_attr: str) -> None:
    """The rules of conv{nd}d and its two gradient ops (``size_attr``: the input grad's
    spatial size attr)."""
    conv = getattr(O, f"conv{nd}d")
    input_grad = getattr(O, f"conv{nd}d_input_grad")
    weight_grad = getattr(O, f"conv{nd}d_weight_grad")

    @register_backward(f"conv{nd}d", save=["x", "weight"])
    def _conv(ctx, dy):
        x, w = ctx.saved_tensors
        a = _attrs(ctx)
        dx = dw = None
        if ctx.needs_input_grad[0]:
            dx = input_grad(dy, w, **{size_attr: tuple(ctx.input_shapes[0][2:])}, **a)
        if ctx.needs_input_grad[1]:
            dw = weight_grad(x, dy, kernel_size=tuple(ctx.input_shapes[1][2:]), **a)
        return dx, dw

    @register_backward(f"conv{nd}d_input_grad", save=["dy", "weight"])
    def _conv_input_grad(ctx, g):
        dy, w = ctx.saved_tensors
        a = _attrs(ctx)
        gdy = gw = None
        if ctx.needs_input_grad[0]:
            gdy = conv(g, w, **a)
        if ctx.needs_input_grad[1]:
            gw = weight_grad(g, dy, kernel_size=tuple(ctx.input_shapes[1][2:]), **a)
        return gdy, gw

    @register_backward(f"conv{nd}d_weight_grad", save=["x", "dy"])
    def _conv_weight_grad(ctx, g):
        x, dy = ctx.saved_tensors
        a = _attrs(ctx)
        gx = gdy = None
        if ctx.needs_input_grad[0]:
            gx = input_grad(dy, g, **{size_attr: tuple(ctx.input_shapes[0][2:])}, **a)
        if ctx.needs_input_grad[1]:
            gdy = conv(x, g, **a)
        return gx, gdy

    @register_backward(f"conv_transpose{nd}d", save=["x", "weight"])
    def _conv_transpose(ctx, dy):
        """conv_transpose is conv_input_grad (then zero rows): dx is the convolution of dy
        (the zero rows cropped), dw is conv_weight_grad with dy as the convolution's input."""
        x, w = ctx.saved_tensors
        _, pads, _, extra = conv_transpose_plan(ctx.input_shapes[0], ctx.input_shapes[1],
                                                ctx.stride, ctx.padding, ctx.output_padding,
                                                ctx.dilation, ctx.groups, nd)
        if any(extra):
            dy = O.pad(dy, pad=tuple(a for e in reversed(extra) for a in (0, -e)))
        a = {"stride": ctx.stride, "padding": tuple(pads), "dilation": ctx.dilation,
             "groups": ctx.groups}
        dx = dw = None
        if ctx.needs_input_grad[0]:
            dx = conv(dy, w, **a)
        if ctx.needs_input_grad[1]:
            dw = weight_grad(dy, x, kernel_size=tuple(ctx.input_shapes[1][2:]), **a)
        return dx, dw


_register_conv(2, "input_hw")
_register_conv(3, "input_size")


@register_backward("im2col")
def _im2col(ctx, dy):
    return [O.col2im(dy, output_size=tuple(ctx.input_shapes[0][2:]),
                     kernel_size=ctx.kernel_size, dilation=ctx.dilation, padding=ctx.padding,
                     stride=ctx.stride)]


@register_backward("col2im")
def _col2im(ctx, dy):
    return [O.im2col(dy, kernel_size=ctx.kernel_size, dilation=ctx.dilation,
                     padding=ctx.padding, stride=ctx.stride)]
