"""Backward rules of the fused ops (``jflow/ops/fused.py``)."""

from __future__ import annotations

import math

from ..rule import register_backward
from ._util import O, scalar_like

_SQRT_2PI = math.sqrt(2.0 * math.pi)


@register_backward("fused_bias_add_activation", save=["x", "bias"])
def _fused_bias_add_activation(ctx, dy):
    """g = dy * act'(x + bias): to x, and summed over the leading axes to bias."""
    x, bias = ctx.saved_tensors
    z = O.add(x, bias)
    c = lambda v: scalar_like(v, z)  # noqa: E731
    if ctx.activation == "silu":
        s = O.sigmoid(z)
        d = O.mul(s, O.add(c(1.0), O.mul(z, O.sub(c(1.0), s))))
    elif ctx.activation == "gelu_tanh":
        k = math.sqrt(2.0 / math.pi)
        z2 = O.square(z)
        t = O.tanh(O.mul(O.mul(z, c(k)), O.add(c(1.0), O.mul(z2, c(0.044715)))))
        dinner = O.mul(c(k), O.add(c(1.0), O.mul(z2, c(3 * 0.044715))))
        d = O.add(O.mul(c(0.5), O.add(c(1.0), t)),
                  O.mul(O.mul(O.mul(c(0.5), z), O.sub(c(1.0), O.square(t))), dinner))
    else:
        cdf = O.mul(c(0.5), O.add(c(1.0), O.erf(O.mul(z, c(1 / math.sqrt(2.0))))))
        pdf = O.mul(O.exp(O.mul(O.square(z), c(-0.5))), c(1 / _SQRT_2PI))
        d = O.add(cdf, O.mul(z, pdf))
    g = O.mul(dy, d)
    nd = len(ctx.input_shapes[0])
    gb = O.reduce_sum(g, axis=tuple(range(nd - 1)), keepdim=False) if nd > 1 else g
    return [g if ctx.needs_input_grad[0] else None, gb if ctx.needs_input_grad[1] else None]
