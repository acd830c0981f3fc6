"""Backward rules of the pooling ops (``jflow/ops/pool.py``), one set per rank (1, 2, 3):
avg_pool and its gradient op are a linear pair, so each one's backward is the other; max_pool
and adaptive_max_pool scatter dy to their argmax positions with max_pool_grad, whose backward
is a gather."""

from __future__ import annotations

from ..rule import register_backward
from ._util import O


def _pool_attrs(ctx):
    return {"kernel_size": ctx.kernel_size, "stride": ctx.stride, "padding": ctx.padding,
            "count_include_pad": ctx.count_include_pad, "ceil_mode": ctx.ceil_mode,
            "divisor_override": ctx.divisor_override}


def _register(nd: int) -> None:
    avg, avg_grad = getattr(O, f"avg_pool{nd}d"), getattr(O, f"avg_pool{nd}d_grad")
    max_grad = getattr(O, f"max_pool{nd}d_grad")

    @register_backward(f"avg_pool{nd}d")
    def _avg_pool(ctx, dy):
        return avg_grad(dy, input_size=tuple(ctx.input_shapes[0][2:]), **_pool_attrs(ctx))

    @register_backward(f"avg_pool{nd}d_grad")
    def _avg_pool_grad(ctx, g):
        return avg(g, **_pool_attrs(ctx))

    @register_backward(f"max_pool{nd}d", save=["indices"])
    def _max_pool(ctx, dy, didx):
        (idx,) = ctx.saved_tensors
        return max_grad(dy, idx, input_size=tuple(ctx.input_shapes[0][2:]))

    @register_backward(f"adaptive_max_pool{nd}d", save=["indices"])
    def _adaptive_max_pool(ctx, dy, didx):
        (idx,) = ctx.saved_tensors
        return max_grad(dy, idx, input_size=tuple(ctx.input_shapes[0][2:]))

    @register_backward(f"max_pool{nd}d_grad", save=["indices"])
    def _max_pool_grad(ctx, g):
        """The gradient at each maximum's position, gathered back to dy's shape."""
        (idx,) = ctx.saved_tensors
        dshape = tuple(ctx.input_shapes[0])
        n, c = dshape[:2]
        size = 1
        for s in ctx.input_size:
            size *= s
        flat_g = O.reshape(g, shape=(n, c, size))
        flat_i = O.reshape(idx, shape=(n, c, -1))
        return O.reshape(O.dim_gather(flat_g, flat_i, dim=2), shape=dshape), None


for _nd in (1, 2, 3):
    _register(_nd)
