"""Backward rules of the shape ops (``jflow/ops/shape.py``)."""

from __future__ import annotations

from ..rule import register_backward
from ._util import O, sum_to


@register_backward("reshape")
def _reshape(ctx, dy):
    return O.reshape(dy, shape=ctx.input_shapes[0])


@register_backward("expand")
def _expand(ctx, dy):
    return sum_to(dy, ctx.input_shapes[0])
