"""Backward rules of the view ops (``jflow/ops/view.py``): the inverse reshape, transpose
or sum over the broadcast dims."""

from __future__ import annotations

from ..rule import register_backward
from ._util import O, sum_to


@register_backward("reshape")
def _reshape(ctx, dy):
    return O.reshape(dy, shape=ctx.input_shapes[0])


@register_backward("expand")
def _expand(ctx, dy):
    return sum_to(dy, ctx.input_shapes[0])


# -- pure reshapes ---------------------------------------------------------------------------

def _reshape_back(ctx, dy):
    """flatten / squeeze / unsqueeze keep the row-major order: reshape the gradient back."""
    return O.reshape(dy, shape=ctx.input_shapes[0])


for _name in ("flatten", "squeeze", "unsqueeze"):
    register_backward(_name)(_reshape_back)


@register_backward("transpose")
def _transpose(ctx, dy):
    nd = len(ctx.input_shapes[0])
    perm = [p % nd for p in ctx.perm] if nd else []
    inv = [0] * nd
    for j, p in enumerate(perm):
        inv[p] = j
    return O.transpose(dy, perm=tuple(inv))
