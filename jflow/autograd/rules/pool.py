"""Backward rules of the pooling ops (``jflow/ops/pool.py``): each op and its gradient op
are a linear pair, so each one's backward is the other (max_pool2d_grad's is a gather)."""

from __future__ import annotations

from ..rule import register_backward
from ._util import O


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
