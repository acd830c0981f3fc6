"""Activation ops: definition, xla kernel and SBP signatures side by side."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import elementwise
from .infer import FLOAT, NUMBER, same_as_input
from .primitive import define_op
from .registry import Attr

_EW = elementwise("none")


def _act(name, fn, attrs=(), allowed=FLOAT, check=None, doc=""):
    define_op(name, inputs=["x"], outputs=["y"], attrs=attrs, check=check, sbp=_EW,
              infer=same_as_input(allowed), doc=doc)
    register_kernel(name, fn, name=f"{name}_xla")


_act("relu", lambda x: jnp.maximum(x, jnp.zeros((), x.dtype)), allowed=NUMBER)
_act("leaky_relu", lambda x, alpha: jnp.where(x > 0, x, x * jnp.asarray(alpha, x.dtype)),
     attrs=[Attr("alpha", "float", 0.01)], doc="x if x > 0 else alpha * x")
_act("elu", lambda x, alpha: jnp.where(x > 0, x, jnp.asarray(alpha, x.dtype) * jnp.expm1(x)),
     attrs=[Attr("alpha", "float", 1.0)])


def _gelu_check(approximate):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")


_act("gelu", lambda x, approximate: jax.nn.gelu(x, approximate=approximate == "tanh"),
     attrs=[Attr("approximate", "string", "none")], check=_gelu_check)
_act("silu", jax.nn.silu)


def _softplus(x, beta, threshold):
    bx = x * jnp.asarray(beta, x.dtype)
    soft = jnp.logaddexp(bx, jnp.zeros((), x.dtype)) / jnp.asarray(beta, x.dtype)
    return jnp.where(bx > threshold, x, soft)


_act("softplus", _softplus, attrs=[Attr("beta", "double", 1.0), Attr("threshold", "double", 20.0)],
     doc="log(1 + exp(beta x)) / beta, linear above threshold (as torch)")


def _hardtanh_check(min_val, max_val):
    if min_val > max_val:
        raise ValueError(f"min_val ({min_val}) must not exceed max_val ({max_val})")


_act("hardtanh", lambda x, min_val, max_val: lax.clamp(jnp.asarray(min_val, x.dtype), x,
                                                       jnp.asarray(max_val, x.dtype)),
     attrs=[Attr("min_val", "double", -1.0), Attr("max_val", "double", 1.0)],
     check=_hardtanh_check, allowed=NUMBER)
