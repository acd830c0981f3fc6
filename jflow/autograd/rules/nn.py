"""Backward rules of the nn ops (``jflow/ops/nn.py``)."""

from __future__ import annotations

import math

import numpy as np

from ..rule import register_backward
from ._util import O, scalar_like


def _sum_dim(t, dim):
    return O.reduce_sum(t, axis=(dim,), keepdim=True)


@register_backward("softmax", save=["y"])
def _softmax(ctx, dy):
    """y * (dy - sum(dy * y)) along dim: one softmax_grad op (a Pallas kernel on GPU)."""
    (y,) = ctx.saved_tensors
    return O.softmax_grad(y, dy, dim=ctx.dim)


@register_backward("log_softmax", save=["y"])
def _log_softmax(ctx, dy):
    """dy - exp(y) * sum(dy) along dim: one log_softmax_grad op (a Pallas kernel on GPU)."""
    (y,) = ctx.saved_tensors
    return O.log_softmax_grad(y, dy, dim=ctx.dim)


def _sum_dim_any(t, dim):
    """sum along dim, keepdim (a 0-d tensor is its own sum)."""
    return t if not t._meta.ndim else _sum_dim(t, dim)


@register_backward("softmax_grad", save=["y", "dy"])
def _softmax_grad(ctx, g):
    """dx = y * (dy - s), s = sum(dy * y): to dy softmax_grad(y, g); to y
    g * (dy - s) - dy * sum(g * y)."""
    y, dy = ctx.saved_tensors
    s = _sum_dim_any(O.mul(dy, y), ctx.dim)
    gy = O.sub(O.mul(g, O.sub(dy, s)), O.mul(dy, _sum_dim_any(O.mul(g, y), ctx.dim)))
    return [gy if ctx.needs_input_grad[0] else None,
            O.softmax_grad(y, g, dim=ctx.dim) if ctx.needs_input_grad[1] else None]


@register_backward("log_softmax_grad", save=["y", "dy"])
def _log_softmax_grad(ctx, g):
    """dx = dy - exp(y) * sum(dy): to dy g - sum(g * exp(y)); to y -g * exp(y) * sum(dy)."""
    y, dy = ctx.saved_tensors
    e = O.exp(y)
    gy = O.neg(O.mul(O.mul(g, e), _sum_dim_any(dy, ctx.dim)))
    gdy = O.sub(g, _sum_dim_any(O.mul(g, e), ctx.dim))
    return [gy if ctx.needs_input_grad[0] else None, gdy if ctx.needs_input_grad[1] else None]




@register_backward("linear", save=["x", "weight"])
def _linear(ctx, dy):
    """dx = dy @ W; dW = dy^T @ x (over all batch rows); db = sum of dy over the batch."""
    x, w = ctx.saved_tensors
    xs = tuple(ctx.input_shapes[0])
    out_f, in_f = tuple(ctx.input_shapes[1])
    rows = math.prod(xs[:-1])
    dy2 = O.reshape(dy, shape=(rows, out_f)) if len(xs) != 2 else dy
    grads = [None, None]
    if ctx.needs_input_grad[0]:
        dx = O.matmul(dy2, w)
        grads[0] = O.reshape(dx, shape=xs) if len(xs) != 2 else dx
    if ctx.needs_input_grad[1]:
        x2 = O.reshape(x, shape=(rows, in_f)) if len(xs) != 2 else x
        grads[1] = O.matmul(dy2, x2, transpose_a=True)
    if len(ctx.input_shapes) == 3:
        grads.append(O.reduce_sum(dy2, axis=(0,), keepdim=False))
    return grads


@register_backward("embedding", save=["indices"])
def _embedding(ctx, dy):
    """Rows of dy added into their indices' rows (the embedding_grad op); the padding row 0."""
    (idx,) = ctx.saved_tensors
    return [O.embedding_grad(dy, idx, num_embeddings=ctx.input_shapes[0][0],
                             padding_idx=ctx.padding_idx), None]


@register_backward("embedding_grad", save=["indices"])
def _embedding_grad(ctx, g):
    """Linear in dy: each row of dy reads its index's row of g (embedding); rows at the
    padding index get 0, since the padding row of dweight is 0 whatever dy is."""
    (idx,) = ctx.saved_tensors
    n = ctx.num_embeddings
    if ctx.padding_idx is not None:
        keep = O.one_hot(O.full(shape=(1,), value=float(ctx.padding_idx % n), dtype=np.int64),
                         num_classes=n, dtype=ctx.input_dtypes[0])
        g = O.mul(g, O.reshape(O.sub(scalar_like(1.0, g), keep), shape=(n, 1)))
    return [O.embedding(g, idx), None]


@register_backward("dropout", save=["mask"])
def _dropout(ctx, dy, dmask):
    (mask,) = ctx.saved_tensors
    p = ctx.p
    scale = scalar_like(0.0 if p >= 1.0 else 1.0 / (1.0 - p), dy)
    return [O.mul(O.mul(dy, O.cast(mask, dtype=ctx.input_dtypes[0])), scale), None, None]
