"""Fused ops: ops whose point is one pass over memory, so that a Pallas kernel
(``jflow/kernels/pallas``) can replace several XLA ops on GPU — definition, xla kernel and
SBP signatures side by side.

* ``fused_bias_add_activation(x, bias, *, activation)``: ``act(x + bias)`` with ``bias`` of
  shape ``(C,)`` broadcast along the last axis of ``x``; ``activation`` is ``"gelu"`` (exact,
  erf), ``"gelu_tanh"`` or ``"silu"``. float16 / bfloat16 are computed in float32.

The grad ops with Pallas kernels live with their forward op: ``softmax_grad`` /
``log_softmax_grad`` in ``nn.py``, ``layer_norm_grad`` / ``rms_norm_grad`` in ``norm.py``,
``sparse_softmax_cross_entropy_grad`` in ``loss.py``.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import elementwise
from .infer import FLOAT, check_dtype, desc
from .primitive import define_op
from .registry import Attr

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
