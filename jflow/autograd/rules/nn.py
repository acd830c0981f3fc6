"""Backward rules of the nn ops (``jflow/ops/nn.py``)."""

from __future__ import annotations

from ..rule import register_backward
from ._util import O


def _sum_dim(t, dim):
    return O.reduce_sum(t, axis=(dim,), keepdim=True)


@register_backward("softmax", save=["y"])
def _softmax(ctx, dy):
    """y * (dy - sum(dy * y)) along dim."""
    (y,) = ctx.saved_tensors
    return O.mul(y, O.sub(dy, _sum_dim(O.mul(dy, y), ctx.dim)))


@register_backward("log_softmax", save=["y"])
def _log_softmax(ctx, dy):
    """dy - exp(y) * sum(dy) along dim."""
    (y,) = ctx.saved_tensors
    return O.sub(dy, O.mul(O.exp(y), _sum_dim(dy, ctx.dim)))
