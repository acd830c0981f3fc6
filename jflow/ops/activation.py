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
