"""Fused ops (issue 7): ops whose point is one pass over memory, so that a Pallas kernel
(``jflow/kernels/pallas``) can replace several XLA ops on GPU — definition, xla kernel and
SBP signatures side by side.

* ``fused_bias_add_activation(x, bias, *, activation)``: ``act(x + bias)`` with ``bias`` of
  shape ``(C,)`` broadcast along the last axis of ``x``; ``activation`` is ``"gelu"`` (exact,
  erf), ``"gelu_tanh"`` or ``"silu"``. float16 / bfloat16 are computed in float32.
* ``softmax_grad(y, dy, *, dim)`` / ``log_softmax_grad(y, dy, *, dim)``: the backward of
  softmax / log_softmax from their output ``y`` (``y * (dy - sum(dy * y))`` and
  ``dy - exp(y) * sum(dy)`` along ``dim``); the backward rules of softmax / log_softmax call
  them, so one kernel (xla, or Pallas on GPU) computes the whole gradient. They have backward
  rules of their own, so higher-order derivatives still work.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, P, S, Signature, elementwise
from .infer import FLOAT, check_dtype, desc, normalize_axis
from .registry import Attr, define_op

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(jnp.bfloat16))
ACTIVATIONS = ("gelu", "gelu_tanh", "silu")


def _up(x: Any) -> Any:
    return x.astype(np.float32) if x.dtype in _LOW_PRECISION else x


# -- fused_bias_add_activation ------------------------------------------------------------------

def _act_check(activation: str) -> None:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {list(ACTIVATIONS)}, got {activation!r}")


def _fba_infer(x: Any, bias: Any, activation: str) -> Any:
    check_dtype(x, FLOAT, "input")
    if np.dtype(bias.dtype) != np.dtype(x.dtype):
        raise TypeError(f"bias must have the input's dtype {np.dtype(x.dtype).name}, got "
                        f"{np.dtype(bias.dtype).name}")
    if len(x.shape) == 0:
        raise ValueError("input must be at least 1-d (..., C), got a 0-d input")
    if tuple(bias.shape) != (x.shape[-1],):
        raise ValueError(f"bias must have shape ({x.shape[-1]},) (the input's last axis), got "
                         f"{tuple(bias.shape)}")
    return desc(x.shape, x.dtype)


def apply_activation(z: Any, activation: str) -> Any:
    """The activation on a float32/float64 array (shared by the xla and Pallas kernels)."""
    if activation == "silu":
        return z * jax.nn.sigmoid(z)
    if activation == "gelu_tanh":
        k = math.sqrt(2.0 / math.pi)
        return 0.5 * z * (1.0 + jnp.tanh(k * (z + 0.044715 * z * z * z)))
    return 0.5 * z * (1.0 + lax.erf(z * (1.0 / math.sqrt(2.0))))


def _fused_bias_add_activation(x: Any, bias: Any, activation: str) -> Any:
    return apply_activation(_up(x) + _up(bias), activation).astype(x.dtype)


define_op("fused_bias_add_activation", inputs=["x", "bias"], outputs=["y"],
          attrs=[Attr("activation", "string", "gelu")], infer=_fba_infer, check=_act_check,
          sbp=elementwise("none"),
          doc="act(x + bias), bias (C,) along the last axis; act in gelu / gelu_tanh / silu")
register_kernel("fused_bias_add_activation", _fused_bias_add_activation,
                name="fused_bias_add_activation_xla")


# -- softmax_grad / log_softmax_grad -----------------------------------------------------------

def _sg_infer(y: Any, dy: Any, dim: int) -> Any:
    check_dtype(y, FLOAT, "y")
    if np.dtype(dy.dtype) != np.dtype(y.dtype) or tuple(dy.shape) != tuple(y.shape):
        raise ValueError(f"dy must have y's shape {tuple(y.shape)} and dtype "
                         f"{np.dtype(y.dtype).name}, got {tuple(dy.shape)} "
                         f"{np.dtype(dy.dtype).name}")
    normalize_axis(dim, max(len(y.shape), 1))
    return desc(y.shape, y.dtype)


def _sg_sbp(in_shapes: Any, n_out: int = 1, dim: int = -1, **_: Any) -> list[Signature]:
    """Split any axis but ``dim``; linear in dy: (B, P) -> P."""
    nd = len(in_shapes[0])
    sigs = [Signature((B, P), (P,))]
    if nd:
        d = dim % nd
        sigs += [Signature((S(i), S(i)), (S(i),)) for i in range(nd) if i != d]
    return sigs


def _along(y: Any, dy: Any, dim: int, f: Any) -> Any:
    """``f(y, dy, axis)`` in float32 (or wider) along ``dim``; 0-d inputs as 1-element rows."""
    if y.size == 0:
        return dy
    yf, g = _up(y), _up(dy)
    d = dim % max(y.ndim, 1) if y.ndim else None
    if d is None:
        yf, g, d = yf.reshape(1), g.reshape(1), 0
    return f(yf, g, d).reshape(y.shape).astype(y.dtype)


def _softmax_grad(y: Any, dy: Any, dim: int) -> Any:
    return _along(y, dy, dim, lambda y, g, d: y * (g - jnp.sum(g * y, axis=d, keepdims=True)))


def _log_softmax_grad(y: Any, dy: Any, dim: int) -> Any:
    return _along(y, dy, dim,
                  lambda y, g, d: g - jnp.exp(y) * jnp.sum(g, axis=d, keepdims=True))


define_op("softmax_grad", inputs=["y", "dy"], outputs=["dx"], attrs=[Attr("dim", "int64", -1)],
          infer=_sg_infer, sbp=_sg_sbp,
          doc="backward of softmax from its output: y * (dy - sum(dy * y)) along dim")
register_kernel("softmax_grad", _softmax_grad, name="softmax_grad_xla")

define_op("log_softmax_grad", inputs=["y", "dy"], outputs=["dx"],
          attrs=[Attr("dim", "int64", -1)], infer=_sg_infer, sbp=_sg_sbp,
          doc="backward of log_softmax from its output: dy - exp(y) * sum(dy) along dim")
register_kernel("log_softmax_grad", _log_softmax_grad, name="log_softmax_grad_xla")
