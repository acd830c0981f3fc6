"""Backward rules of the subscript ops (``jflow/ops/subscript.py``): getitem's gradient is
a scatter-add (setitem with accumulate), setitem's a getitem of the written region."""

from __future__ import annotations

from ..rule import register_backward
from ._util import O, scalar_like, sum_to, zeros

# -- getitem / setitem -------------------------------------------------------------------------

@register_backward("getitem", save=["indices"])
def _getitem(ctx, dy):
    (indices,) = ctx.saved_tensors
    gx = None
    if ctx.needs_input_grad[0]:
        gx = O.setitem(zeros(ctx.input_shapes[0], dy), dy, list(indices), spec=ctx.spec,
                       accumulate=True)
    return [gx] + [None] * len(indices)


def _value_grad(g, value_shape):
    """A gradient of the indexed region's shape reduced to the (broadcast) value's shape:
    the value's leading size-1 dims are dropped, the rest broadcasts (as the kernel's _fit)."""
    value_shape = tuple(value_shape)
    target = tuple(g._meta.shape)
    stripped = value_shape
    while len(stripped) > len(target) and stripped[0] == 1:
        stripped = stripped[1:]
    g = sum_to(g, stripped)
    return O.reshape(g, shape=value_shape) if stripped != value_shape else g


@register_backward("setitem", save=["indices"])
def _setitem(ctx, dy):
    (indices,) = ctx.saved_tensors
    indices = list(indices)
    mask = ctx.spec == "m"
    gx = gv = None
    if ctx.needs_input_grad[0]:
        if ctx.accumulate:
            gx = dy
        else:  # the overwritten region receives no gradient
            gx = O.setitem(dy, scalar_like(0.0, dy), indices, spec=ctx.spec, accumulate=False)
    if ctx.needs_input_grad[1]:
        if mask:
            m = indices[0]
            k = len(ctx.input_shapes[2])
            rest = tuple(ctx.input_shapes[0][k:])
            if rest:
                m = O.reshape(m, shape=tuple(ctx.input_shapes[2]) + (1,) * len(rest))
            g = O.where(m, dy, scalar_like(0.0, dy))
            if k:
                g = O.reduce_sum(g, axis=tuple(range(k)), keepdim=False)
        else:
            g = O.getitem(dy, indices, spec=ctx.spec)
        gv = _value_grad(g, ctx.input_shapes[1])
    return [gx, gv] + [None] * len(indices)
