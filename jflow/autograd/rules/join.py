"""Backward rules of the join / split ops (``jflow/ops/join.py``): the gradient of a join is
split back, that of a split is joined."""

from __future__ import annotations

from ..rule import register_backward
from ._util import O


@register_backward("cat")
def _cat(ctx, dy):
    shapes = ctx.input_shapes
    a = ctx.dim % len(shapes[0])
    out, start = [], 0
    for i, s in enumerate(shapes):
        n = s[a]
        out.append(O.narrow(dy, dim=a, start=start, length=n) if ctx.needs_input_grad[i]
                   else None)
        start += n
    return out


@register_backward("stack")
def _stack(ctx, dy):
    shapes = ctx.input_shapes
    a = ctx.dim % (len(shapes[0]) + 1)
    out = []
    for i, s in enumerate(shapes):
        out.append(O.reshape(O.narrow(dy, dim=a, start=i, length=1), shape=s)
                   if ctx.needs_input_grad[i] else None)
    return out


@register_backward("split")
def _split(ctx, *dys):
    a = ctx.dim % len(ctx.input_shapes[0])
    return O.cat(list(dys), dim=a)
