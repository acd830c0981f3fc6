"""Backward rules of the reductions (``jflow/ops/reduce.py``)."""

from __future__ import annotations

from ..rule import register_backward
from ._util import O, scalar_like


def _axes(ctx) -> tuple[int, ...]:
    nd = len(ctx.input_shapes[0])
    axis = ctx.axis
    return tuple(range(nd)) if not axis else tuple(a % nd for a in axis) if nd else ()


def expand_back(ctx, dy):
    """A reduced gradient broadcast back to the input's shape."""
    shape = ctx.input_shapes[0]
    kept = tuple(1 if i in _axes(ctx) else s for i, s in enumerate(shape))
    if tuple(dy._value.shape) != kept:
        dy = O.reshape(dy, shape=kept)
    return O.expand(dy, shape=shape) if kept != tuple(shape) else dy


@register_backward("reduce_sum")
def _sum(ctx, dy):
    return expand_back(ctx, dy)


@register_backward("reduce_mean")
def _mean(ctx, dy):
    shape = ctx.input_shapes[0]
    n = 1
    for a in _axes(ctx):
        n *= shape[a]
    return O.mul(expand_back(ctx, dy), scalar_like(1.0 / max(n, 1), dy))
