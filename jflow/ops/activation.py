"""Activation ops: definition, xla kernel and SBP signatures side by side."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import elementwise
from .attrs import scalar_as
from .infer import FLOAT, NUMBER, same_as_input
from .primitive import define_op
from .registry import Attr

_EW = elementwise("none")


def _act(name, fn, attrs=(), allowed=FLOAT, check=None, doc=""):
    define_op(name, inputs=["x"], outputs=["y"], attrs=attrs, check=check, sbp=_EW,
              infer=same_as_input(allowed), doc=doc)
    register_kernel(name, fn, name=f"{name}_xla")


_act("relu", lambda x: jnp.maximum(x, jnp.zeros((), x.dtype)), allowed=NUMBER)
# The float attrs here are dynamic (runtime scalars, one executable for every value): the
# kernels use them in arithmetic only, cast with scalar_as (rounded as the Python float was).
_act("leaky_relu", lambda x, alpha: jnp.where(x > 0, x, x * scalar_as(alpha, x.dtype)),
     attrs=[Attr("alpha", "float", 0.01)], doc="x if x > 0 else alpha * x")
_act("elu", lambda x, alpha: jnp.where(x > 0, x, scalar_as(alpha, x.dtype) * jnp.expm1(x)),
     attrs=[Attr("alpha", "float", 1.0)])


def _gelu_check(approximate):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")


_act("gelu", lambda x, approximate: jax.nn.gelu(x, approximate=approximate == "tanh"),
     attrs=[Attr("approximate", "string", "none")], check=_gelu_check)
_act("silu", jax.nn.silu)


def _softplus(x, beta, threshold):
    b = scalar_as(beta, x.dtype)
    bx = x * b
    # times the reciprocal: what XLA made of the division when beta was a constant, so the
    # results stay bitwise (for bfloat16 that reciprocal was taken in float32)
    rdt = jnp.float32 if x.dtype == jnp.bfloat16 else x.dtype
    recip = jnp.ones((), rdt) / b.astype(rdt)
    soft = (jnp.logaddexp(bx, jnp.zeros((), x.dtype)).astype(rdt) * recip).astype(x.dtype)
    return jnp.where(bx > scalar_as(threshold, x.dtype), x, soft)  # no Python `if`: dynamic


_act("softplus", _softplus, attrs=[Attr("beta", "double", 1.0), Attr("threshold", "double", 20.0)],
     doc="log(1 + exp(beta x)) / beta, linear above threshold (as torch)")


def _hardtanh_check(min_val, max_val):
    if min_val > max_val:
        raise ValueError(f"min_val ({min_val}) must not exceed max_val ({max_val})")


_act("hardtanh", lambda x, min_val, max_val: lax.clamp(scalar_as(min_val, x.dtype), x,
                                                       scalar_as(max_val, x.dtype)),
     attrs=[Attr("min_val", "double", -1.0), Attr("max_val", "double", 1.0)],
     check=_hardtanh_check, allowed=NUMBER)


# -- PyTorch's remaining pointwise activations, one table ----------------------------------------
# Each is an elementwise float op with same-shape output; float attrs are dynamic (arithmetic
# and jnp.where only). NaN propagates as in PyTorch's CPU kernels: the comparisons are written
# the way ATen writes them (``x <= threshold ? value : x`` keeps a NaN input).

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _nonneg_lambd(lambd: float) -> None:
    if lambd < 0:
        raise ValueError(f"lambd must be greater or equal to 0, got {lambd}")


def _nonzero_alpha(alpha: float) -> None:
    if alpha == 0:
        raise ValueError("alpha must not be 0 (it divides the input)")


def _softshrink(x, lambd):
    lam = scalar_as(lambd, x.dtype)
    # x * 0 in the dead zone, as ATen: NaN stays NaN and -0.0 keeps its sign
    return jnp.where(x > lam, x - lam, jnp.where(x < -lam, x + lam, x * 0))


def _between(x, lo, hi):
    return (x >= lo) & (x <= hi)


_TABLE = [
    # name, kernel, attrs, check, doc
    ("selu", lambda x: _SELU_SCALE * jnp.where(x > 0, x, _SELU_ALPHA * jnp.expm1(x)), (), None,
     "scale * (x if x > 0 else alpha * (exp(x) - 1)), self-normalising constants"),
    ("celu", lambda x, alpha: jnp.where(
        x > 0, x, scalar_as(alpha, x.dtype) * jnp.expm1(x / scalar_as(alpha, x.dtype))),
     [Attr("alpha", "double", 1.0)], _nonzero_alpha, "x if x > 0 else alpha (exp(x / alpha) - 1)"),
    ("hardswish", lambda x: x * jnp.clip(x + 3, 0, 6) / 6, (), None, "x relu6(x + 3) / 6"),
    ("hardsigmoid", lambda x: jnp.clip(x + 3, 0, 6) / 6, (), None, "relu6(x + 3) / 6"),
    ("hardshrink", lambda x, lambd: jnp.where(
        _between(x, -scalar_as(lambd, x.dtype), scalar_as(lambd, x.dtype)),
        jnp.zeros((), x.dtype), x),
     [Attr("lambd", "double", 0.5)], None, "0 if |x| <= lambd else x"),
    ("softshrink", _softshrink, [Attr("lambd", "double", 0.5)], _nonneg_lambd,
     "x - lambd above lambd, x + lambd below -lambd, else 0"),
    ("tanhshrink", lambda x: x - jnp.tanh(x), (), None, "x - tanh(x)"),
    ("softsign", lambda x: x / (1 + jnp.abs(x)), (), None, "x / (1 + |x|)"),
    ("threshold", lambda x, threshold, value: jnp.where(
        x <= scalar_as(threshold, x.dtype), scalar_as(value, x.dtype), x),
     [Attr("threshold", "double"), Attr("value", "double")], None,
     "value if x <= threshold else x"),
]

for _name, _fn, _attrs, _check, _doc in _TABLE:
    _act(_name, _fn, attrs=list(_attrs), check=_check, doc=_doc)
