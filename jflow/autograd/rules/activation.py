"""Backward rules of the activation ops (``jflow/ops/activation.py``)."""

from __future__ import annotations

import math

from ..rule import register_backward
from ._util import O, keep_where, scalar_like


def _c(v: float, like):  # a cached 0-d constant of like's dtype
    return scalar_like(v, like)


@register_backward("relu", save=["y"])
def _relu(ctx, dy):
    (y,) = ctx.saved_tensors
    return keep_where(O.gt(y, _c(0.0, y)), dy)


@register_backward("leaky_relu", save=["x"])
def _leaky_relu(ctx, dy):
    (x,) = ctx.saved_tensors
    return O.where(O.gt(x, _c(0.0, x)), dy, O.mul(dy, _c(ctx.alpha, dy)))


@register_backward("elu", save=["x", "y"])
def _elu(ctx, dy):
    x, y = ctx.saved_tensors
    return O.where(O.gt(x, _c(0.0, x)), dy, O.mul(dy, O.add(y, _c(ctx.alpha, y))))


@register_backward("gelu", save=["x"])
def _gelu(ctx, dy):
    (x,) = ctx.saved_tensors
    if ctx.approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)
        x2 = O.square(x)
        inner = O.mul(O.mul(x, _c(k, x)), O.add(_c(1.0, x), O.mul(x2, _c(0.044715, x))))
        t = O.tanh(inner)
        dinner = O.mul(_c(k, x), O.add(_c(1.0, x), O.mul(x2, _c(3 * 0.044715, x))))
        left = O.mul(_c(0.5, x), O.add(_c(1.0, x), t))
        right = O.mul(O.mul(O.mul(_c(0.5, x), x), O.sub(_c(1.0, x), O.square(t))), dinner)
        return O.mul(dy, O.add(left, right))
    cdf = O.mul(_c(0.5, x), O.add(_c(1.0, x), O.erf(O.mul(x, _c(1 / math.sqrt(2.0), x)))))
    pdf = O.mul(O.exp(O.mul(O.square(x), _c(-0.5, x))), _c(1 / math.sqrt(2 * math.pi), x))
    return O.mul(dy, O.add(cdf, O.mul(x, pdf)))


@register_backward("silu", save=["x"])
def _silu(ctx, dy):
    (x,) = ctx.saved_tensors
    s = O.sigmoid(x)
    return O.mul(dy, O.mul(s, O.add(_c(1.0, x), O.mul(x, O.sub(_c(1.0, x), s)))))


@register_backward("softplus", save=["x"])
def _softplus(ctx, dy):
    (x,) = ctx.saved_tensors
    bx = O.mul(x, _c(ctx.beta, x))
    return O.where(O.gt(bx, _c(ctx.threshold, x)), dy, O.mul(dy, O.sigmoid(bx)))


@register_backward("hardtanh", save=["x"])
def _hardtanh(ctx, dy):
    (x,) = ctx.saved_tensors
    inside = O.logical_and(O.gt(x, _c(ctx.min_val, x)), O.lt(x, _c(ctx.max_val, x)))
    return keep_where(inside, dy)


# -- the table of pointwise activations (ops/activation.py `_TABLE`) -----------------------------
# PyTorch's backward formulas (ATen), including its choice at the kinks.

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _between(x, lo, hi):
    return O.logical_and(O.ge(x, lo), O.le(x, hi))


@register_backward("selu", save=["x"])
def _selu(ctx, dy):
    (x,) = ctx.saved_tensors
    neg = O.mul(O.exp(x), _c(_SELU_SCALE * _SELU_ALPHA, x))
    return O.mul(dy, O.where(O.gt(x, _c(0.0, x)), _c(_SELU_SCALE, x), neg))


@register_backward("celu", save=["x"])
def _celu(ctx, dy):
    (x,) = ctx.saved_tensors
    neg = O.mul(dy, O.exp(O.div(x, _c(ctx.alpha, x))))
    return O.where(O.gt(x, _c(0.0, x)), dy, neg)


@register_backward("hardswish", save=["x"])
def _hardswish(ctx, dy):
    (x,) = ctx.saved_tensors
    mid = O.mul(dy, O.add(O.div(x, _c(3.0, x)), _c(0.5, x)))
    inner = O.where(O.lt(x, _c(3.0, x)), mid, dy)
    return O.where(O.le(x, _c(-3.0, x)), _c(0.0, dy), inner)


@register_backward("hardsigmoid", save=["x"])
def _hardsigmoid(ctx, dy):
    (x,) = ctx.saved_tensors
    inside = O.logical_and(O.gt(x, _c(-3.0, x)), O.lt(x, _c(3.0, x)))
    return keep_where(inside, O.div(dy, _c(6.0, dy)))


@register_backward("hardshrink", save=["x"])
@register_backward("softshrink", save=["x"])
def _shrink(ctx, dy):
    (x,) = ctx.saved_tensors
    dead = _between(x, O.neg(_c(ctx.lambd, x)), _c(ctx.lambd, x))
    return keep_where(O.logical_not(dead), dy)


@register_backward("tanhshrink", save=["x"])
def _tanhshrink(ctx, dy):
    (x,) = ctx.saved_tensors
    return O.mul(dy, O.square(O.tanh(x)))


@register_backward("softsign", save=["x"])
def _softsign(ctx, dy):
    (x,) = ctx.saved_tensors
    return O.div(dy, O.square(O.add(_c(1.0, x), O.abs(x))))


@register_backward("threshold", save=["x"])
def _threshold(ctx, dy):
    (x,) = ctx.saved_tensors
    return keep_where(O.gt(x, _c(ctx.threshold, x)), dy)
