"""Backward rules of the norm ops (``jflow/ops/norm.py``).

Each rule also takes the gradients of the statistics outputs (zeros when they got none), so
``mean`` / ``inv_std`` / ``inv_rms`` are differentiable outputs like ``y``.
"""

from __future__ import annotations

import math

from ..rule import register_backward
from ._util import O, scalar_like


def _present(ctx, n_inputs):
    """Which of the op's declared inputs were given (optional weight / bias)."""
    lay = ctx.layout
    return [True] * n_inputs if lay is None else [bool(k) for k in lay]


def _normalize_backward(x, w, mean, r, dy, dmean, dr, axes, bshape, n, centered):
    """Gradient of x for y = xhat * w with xhat = (x - mean) * r (``centered``) or x * r, given
    also the gradients of the statistics (mean and r, of shape ``bshape`` after reshape)."""
    r_b = O.reshape(r, shape=bshape)
    if centered:
        mean_b = O.reshape(mean, shape=bshape)
        xhat = O.mul(O.sub(x, mean_b), r_b)
    else:
        xhat = O.mul(x, r_b)
    g = dy if w is None else O.mul(dy, w)
    inner = O.mul(xhat, O.reduce_mean(O.mul(g, xhat), axis=axes, keepdim=True))
    if centered:
        inner = O.add(inner, O.reduce_mean(g, axis=axes, keepdim=True))
    dx = O.mul(r_b, O.sub(g, inner))
    inv_n = scalar_like(1.0 / n if n else 0.0, x)
    # d r / d x = -r^3 (x - mean) / n = -r^2 xhat / n
    dr_b = O.reshape(dr, shape=bshape)
    dx = O.sub(dx, O.mul(O.mul(dr_b, O.mul(r_b, r_b)), O.mul(xhat, inv_n)))
    if centered:
        dx = O.add(dx, O.mul(O.reshape(dmean, shape=bshape), inv_n))
    return dx, xhat


def _sum_lead(t, b):
    return O.reduce_sum(t, axis=tuple(range(b)), keepdim=False) if b else t


@register_backward("layer_norm", save=["x", "weight", "mean", "inv_std"])
def _layer_norm(ctx, dy, dmean, dr):
    x, w, mean, r = ctx.saved_tensors
    has = _present(ctx, 3)
    shape = tuple(ctx.input_shapes[0])
    b = ctx.begin_norm_axis
    axes = tuple(range(b, len(shape)))
    bshape = shape[:b] + (1,) * len(axes)
    dx, xhat = _normalize_backward(x, w, mean, r, dy, dmean, dr, axes, bshape,
                                   math.prod(shape[b:]), True)
    grads = [dx]
    if has[1]:
        grads.append(_sum_lead(O.mul(dy, xhat), b))
    if has[2]:
        grads.append(_sum_lead(dy, b))
    return grads


@register_backward("rms_norm", save=["x", "weight", "inv_rms"])
def _rms_norm(ctx, dy, dr):
    x, w, r = ctx.saved_tensors
    has = _present(ctx, 2)
    shape = tuple(ctx.input_shapes[0])
    b = ctx.begin_norm_axis
    axes = tuple(range(b, len(shape)))
    bshape = shape[:b] + (1,) * len(axes)
    dx, xhat = _normalize_backward(x, w, None, r, dy, None, dr, axes, bshape,
                                   math.prod(shape[b:]), False)
    grads = [dx]
    if has[1]:
        grads.append(_sum_lead(O.mul(dy, xhat), b))
    return grads


@register_backward("group_norm", save=["x", "weight", "mean", "inv_std"])
def _group_norm(ctx, dy, dmean, dr):
    x, w, mean, r = ctx.saved_tensors
    has = _present(ctx, 3)
    shape = tuple(ctx.input_shapes[0])
    n, c, g = shape[0], shape[1], ctx.num_groups
    m = math.prod(shape[1:]) // g if g else 0
    pshape = (1, c) + (1,) * (len(shape) - 2)
    gy = dy if w is None else O.mul(dy, O.reshape(w, shape=pshape))
    xg = O.reshape(x, shape=(n, g, m))
    dxg, xhat = _normalize_backward(xg, None, mean, r, O.reshape(gy, shape=(n, g, m)), dmean,
                                    dr, (2,), (n, g, 1), m, True)
    grads = [O.reshape(dxg, shape=shape)]
    red = (0,) + tuple(range(2, len(shape)))
    if has[1]:
        grads.append(O.reduce_sum(O.mul(dy, O.reshape(xhat, shape=shape)), axis=red,
                                  keepdim=False))
    if has[2]:
        grads.append(O.reduce_sum(dy, axis=red, keepdim=False))
    return grads
