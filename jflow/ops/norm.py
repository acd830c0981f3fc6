"""Normalisation ops (issue 6): layer_norm, rms_norm, group_norm — definition, xla kernel and
SBP signatures side by side.

Each op returns, next to ``y``, the statistics its backward rule needs (OneFlow's layer_norm
returns ``mean`` and ``inv_variance`` the same way): ``mean`` and ``inv_std`` (layer_norm,
group_norm) or ``inv_rms`` (rms_norm), in the input's dtype, of shape ``x.shape[:begin]``
(layer/rms norm) or ``(N, num_groups)`` (group_norm). The functors return only ``y``.
Variance is biased (PyTorch). float16 / bfloat16 inputs are computed in float32 and rounded
once. ``weight`` / ``bias`` are optional inputs (elementwise affine).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import S, Signature
from .infer import FLOAT, check_dtype, desc
from .registry import Attr, Input, define_op

_LOW_PRECISION = (np.dtype(np.float16), np.dtype(jnp.bfloat16))


def _up(x: Any) -> Any:
    return x.astype(np.float32) if x.dtype in _LOW_PRECISION else x


def _check_param(x: Any, p: Any, shape: tuple[int, ...], name: str) -> None:
    if p is None:
        return
    if np.dtype(p.dtype) != np.dtype(x.dtype):
        raise TypeError(f"{name} must have the input's dtype {np.dtype(x.dtype).name}, got "
                        f"{np.dtype(p.dtype).name}")
    if tuple(p.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(p.shape)}")


# -- layer_norm / rms_norm ---------------------------------------------------------------------

def _begin(x: Any, begin_norm_axis: int) -> int:
    nd = len(x.shape)
    if not 0 <= begin_norm_axis <= nd:
        raise ValueError(f"begin_norm_axis {begin_norm_axis} is out of range for a {nd}-d "
                         f"input (expected to be in [0, {nd}])")
    return begin_norm_axis


def _ln_infer(x: Any, weight: Any, bias: Any, begin_norm_axis: int, eps: float) -> Any:
    check_dtype(x, FLOAT, "input")
    b = _begin(x, begin_norm_axis)
    shape = tuple(x.shape)
    _check_param(x, weight, shape[b:], "weight")
    _check_param(x, bias, shape[b:], "bias")
    return desc(shape, x.dtype), desc(shape[:b], x.dtype), desc(shape[:b], x.dtype)


def _lead_sbp(in_shapes: Any, n_out: int = 1, begin_norm_axis: int = 0,
              **_: Any) -> list[Signature]:
    """Split any leading (not normalised) axis of x; weight and bias stay broadcast."""
    from ..sharding.sbp import B
    n_params = len(in_shapes) - 1
    return [Signature((S(i),) + (B,) * n_params, (S(i),) * n_out)
            for i in range(begin_norm_axis)]


def _layer_norm(x: Any, weight: Any, bias: Any, begin_norm_axis: int, eps: float) -> Any:
    xf = _up(x)
    axes = tuple(range(begin_norm_axis, x.ndim))
    lead = x.shape[:begin_norm_axis]
    mean = jnp.mean(xf, axis=axes, keepdims=True)
    c = xf - mean
    var = jnp.mean(c * c, axis=axes, keepdims=True)
    r = lax.rsqrt(var + jnp.asarray(eps, xf.dtype))
    y = c * r
    if weight is not None:
        y = y * _up(weight)
    if bias is not None:
        y = y + _up(bias)
    return (y.astype(x.dtype), mean.reshape(lead).astype(x.dtype),
            r.reshape(lead).astype(x.dtype))


_NORM_ATTRS = [Attr("begin_norm_axis", "int64"), Attr("eps", "double", 1e-5)]

define_op("layer_norm", inputs=["x", Input("weight", optional=True), Input("bias", optional=True)],
          outputs=["y", "mean", "inv_std"], attrs=_NORM_ATTRS, infer=_ln_infer, sbp=_lead_sbp,
          doc="(x - mean) / sqrt(var + eps) * weight + bias over the axes from begin_norm_axis")
register_kernel("layer_norm", _layer_norm, name="layer_norm_xla")


def _rms_infer(x: Any, weight: Any, begin_norm_axis: int, eps: float) -> Any:
    check_dtype(x, FLOAT, "input")
    b = _begin(x, begin_norm_axis)
    shape = tuple(x.shape)
    _check_param(x, weight, shape[b:], "weight")
    return desc(shape, x.dtype), desc(shape[:b], x.dtype)


def _rms_norm(x: Any, weight: Any, begin_norm_axis: int, eps: float) -> Any:
    xf = _up(x)
    axes = tuple(range(begin_norm_axis, x.ndim))
    r = lax.rsqrt(jnp.mean(xf * xf, axis=axes, keepdims=True) + jnp.asarray(eps, xf.dtype))
    y = xf * r
    if weight is not None:
        y = y * _up(weight)
    return y.astype(x.dtype), r.reshape(x.shape[:begin_norm_axis]).astype(x.dtype)


define_op("rms_norm", inputs=["x", Input("weight", optional=True)], outputs=["y", "inv_rms"],
          attrs=_NORM_ATTRS, infer=_rms_infer, sbp=_lead_sbp,
          doc="x / sqrt(mean(x^2) + eps) * weight over the axes from begin_norm_axis")
register_kernel("rms_norm", _rms_norm, name="rms_norm_xla")


# -- group_norm --------------------------------------------------------------------------------

def _gn_infer(x: Any, weight: Any, bias: Any, num_groups: int, eps: float) -> Any:
    check_dtype(x, FLOAT, "input")
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError(f"expected an input of at least 2 dims (N, C, *), got shape {shape}")
    if num_groups <= 0 or shape[1] % num_groups:
        raise ValueError(f"num_groups {num_groups} must be positive and divide the number of "
                         f"channels {shape[1]}")
    _check_param(x, weight, shape[1:2], "weight")
    _check_param(x, bias, shape[1:2], "bias")
    stat = desc((shape[0], num_groups), x.dtype)
    return desc(shape, x.dtype), stat, stat


def _gn_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Split the batch axis; weight and bias stay broadcast."""
    from ..sharding.sbp import B
    return [Signature((S(0),) + (B,) * (len(in_shapes) - 1), (S(0),) * n_out)]


def _group_norm(x: Any, weight: Any, bias: Any, num_groups: int, eps: float) -> Any:
    xf = _up(x)
    n, c = x.shape[0], x.shape[1]
    g = xf.reshape(n, num_groups, -1)
    mean = jnp.mean(g, axis=2, keepdims=True)
    d = g - mean
    r = lax.rsqrt(jnp.mean(d * d, axis=2, keepdims=True) + jnp.asarray(eps, xf.dtype))
    y = (d * r).reshape(x.shape)
    pshape = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * _up(weight).reshape(pshape)
    if bias is not None:
        y = y + _up(bias).reshape(pshape)
    return (y.astype(x.dtype), mean.reshape(n, num_groups).astype(x.dtype),
            r.reshape(n, num_groups).astype(x.dtype))


define_op("group_norm", inputs=["x", Input("weight", optional=True), Input("bias", optional=True)],
          outputs=["y", "mean", "inv_std"],
          attrs=[Attr("num_groups", "int64"), Attr("eps", "double", 1e-5)], infer=_gn_infer,
          sbp=_gn_sbp, doc="normalise x (N, C, *) over groups of channels, then per-channel "
                           "weight and bias")
register_kernel("group_norm", _group_norm, name="group_norm_xla")
