"""Normalisation ops: layer_norm, rms_norm, group_norm, batch_norm (training
statistics) and the grad ops of layer_norm / rms_norm — definition, xla kernel and SBP
signatures side by side.

Each op returns, next to ``y``, the statistics its backward rule needs (OneFlow's layer_norm
returns ``mean`` and ``inv_variance`` the same way): ``mean`` and ``inv_std`` (layer_norm,
group_norm) or ``inv_rms`` (rms_norm), in the input's dtype, of shape ``x.shape[:begin]``
(layer/rms norm) or ``(N, num_groups)`` (group_norm). The functors return only ``y``.
Variance is biased (PyTorch). float16 / bfloat16 inputs are computed in float32 and rounded
once. ``weight`` / ``bias`` are optional inputs (elementwise affine).
"""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, P, S, Signature
from .infer import FLOAT, check_dtype, desc
from .primitive import define_op
from .registry import Attr, Input

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


_NORM_ATTRS = [Attr("begin_norm_axis", "int64"), Attr("eps", "double", 1e-5, static=True)]

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
    return [Signature((S(0),) + (B,) * (len(in_shapes) - 1), (S(0),) * n_out)]


def _group_norm(x: Any, weight: Any, bias: Any, num_groups: int, eps: float) -> Any:
    xf = _up(x)
    n, c = x.shape[0], x.shape[1]
    per = (n, num_groups, c // num_groups, math.prod(x.shape[2:]))  # (explicit: n may be 0)
    g = xf.reshape(n, num_groups, per[2] * per[3])
    mean = jnp.mean(g, axis=2, keepdims=True)
    d = g - mean
    r = lax.rsqrt(jnp.mean(d * d, axis=2, keepdims=True) + jnp.asarray(eps, xf.dtype))
    # (the per-(sample, channel) factor r * weight first, then one product with d, as
    # batch_norm: written as (d * r) * weight, XLA CPU compiles the program ~4x slower, 0.82
    # against 0.21 s for a (32, 16, 32, 32) batch in 4 groups)
    d = d.reshape(per)
    scale = r.reshape(n, num_groups, 1, 1)
    if weight is not None:
        scale = scale * _up(weight).reshape(1, *per[1:3], 1)
    y = d * scale
    if bias is not None:
        y = y + _up(bias).reshape(1, *per[1:3], 1)
    y = y.reshape(x.shape)
    return (y.astype(x.dtype), mean.reshape(n, num_groups).astype(x.dtype),
            r.reshape(n, num_groups).astype(x.dtype))


define_op("group_norm", inputs=["x", Input("weight", optional=True), Input("bias", optional=True)],
          outputs=["y", "mean", "inv_std"],
          attrs=[Attr("num_groups", "int64"), Attr("eps", "double", 1e-5, static=True)],
          infer=_gn_infer,
          sbp=_gn_sbp, doc="normalise x (N, C, *) over groups of channels, then per-channel "
                           "weight and bias")
register_kernel("group_norm", _group_norm, name="group_norm_xla")


# -- batch_norm (training mode: batch statistics) ------------------------------------------------
# y = (x - mean) * inv_std * weight + bias with per-channel (axis 1) biased batch statistics
# over every other axis; outputs y, mean, inv_std (shape (C,)) for the backward rule and the
# functor's running-stat update. Eval mode (running stats) is elementwise ops in the functor.

def _bn_infer(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    check_dtype(x, FLOAT, "input")
    shape = tuple(x.shape)
    if len(shape) < 2:
        raise ValueError(f"expected an input of at least 2 dims (N, C, *), got shape {shape}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is None:
            continue
        if np.dtype(p.dtype) != np.dtype(x.dtype):
            raise TypeError(f"{name} must have the input's dtype {np.dtype(x.dtype).name}, "
                            f"got {np.dtype(p.dtype).name}")
        if tuple(p.shape) != shape[1:2]:
            raise ValueError(f"{name} must have shape {shape[1:2]}, got {tuple(p.shape)}")
    stat = desc(shape[1:2], x.dtype)
    return desc(shape, x.dtype), stat, stat


def _batch_norm(x: Any, weight: Any, bias: Any, eps: float) -> Any:
    xf = x.astype(np.float32) if x.dtype in (np.dtype(np.float16), np.dtype(jnp.bfloat16)) else x
    axes = (0,) + tuple(range(2, x.ndim))
    mean = jnp.mean(xf, axis=axes, keepdims=True)
    d = xf - mean
    r = lax.rsqrt(jnp.mean(d * d, axis=axes, keepdims=True) + jnp.asarray(eps, xf.dtype))
    pshape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    # (the per-channel factor r * weight first, then one product with d: written as
    # d * r * weight, XLA CPU compiles the program ~4x slower, 0.6 against 0.15 s for a
    # (32, 16, 32, 32) batch, and runs it slower: benchmarks/results_ecosystem_models_cpu.txt,
    # session 27)
    scale = r if weight is None else r * weight.astype(xf.dtype).reshape(pshape)
    y = d * scale
    if bias is not None:
        y = y + bias.astype(xf.dtype).reshape(pshape)
    c = x.shape[1]
    return y.astype(x.dtype), mean.reshape(c).astype(x.dtype), r.reshape(c).astype(x.dtype)


def _bn_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Channel split (statistics are per channel); weight and bias split alike."""
    return [Signature((S(1),) + (S(0),) * (len(in_shapes) - 1), (S(1), S(0), S(0)))]


define_op("batch_norm", inputs=["x", Input("weight", optional=True),
                                Input("bias", optional=True)],
          outputs=["y", "mean", "inv_std"], attrs=[Attr("eps", "double", 1e-5, static=True)],
          infer=_bn_infer, sbp=_bn_sbp,
          doc="batch normalisation with batch statistics over every axis but 1 (training)")
register_kernel("batch_norm", _batch_norm, name="batch_norm_xla")


# -- batch_norm_stats (training: the running statistics' update) -------------------------------
# running = (1 - momentum) * running + momentum * batch statistic, with the unbiased batch
# variance (1 / inv_std^2 - eps) * count / (count - 1), as PyTorch. One op instead of ~10
# elementwise ops and 6 scalar constants per BatchNorm call (an eager ResNet step has 20).

def _bns_infer(running_mean: Any, running_var: Any, mean: Any, inv_std: Any, momentum: float,
               eps: float, count: int) -> Any:
    check_dtype(running_mean, FLOAT, "running_mean")
    shape = tuple(running_mean.shape)
    for name, t in (("running_var", running_var), ("mean", mean), ("inv_std", inv_std)):
        check_dtype(t, FLOAT, name)
        if tuple(t.shape) != shape or len(shape) != 1:
            raise ValueError(f"{name} must have running_mean's shape (C,) {shape}, got "
                             f"{tuple(t.shape)}")
    if np.dtype(running_var.dtype) != np.dtype(running_mean.dtype):
        raise TypeError(f"running_var must have running_mean's dtype "
                        f"{np.dtype(running_mean.dtype).name}, got "
                        f"{np.dtype(running_var.dtype).name}")
    if count < 2:
        raise ValueError(f"count must be at least 2 values per channel, got {count}")
    out = desc(shape, running_mean.dtype)
    return out, out


def _batch_norm_stats(running_mean: Any, running_var: Any, mean: Any, inv_std: Any,
                      momentum: float, eps: float, count: int) -> Any:
    dt = running_mean.dtype
    new_mean = running_mean * (1.0 - momentum) + mean.astype(dt) * momentum
    r = inv_std.astype(dt)
    r2 = lax.rsqrt(r * r)
    var = (r2 * r2 - eps) * (count / (count - 1))
    return new_mean, running_var * (1.0 - momentum) + var * momentum


define_op("batch_norm_stats", inputs=["running_mean", "running_var", "mean", "inv_std"],
          outputs=["running_mean_out", "running_var_out"],
          attrs=[Attr("momentum", "double", 0.1, static=True),
                 Attr("eps", "double", 1e-5, static=True),
                 Attr("count", "int64", static=True)],
          infer=_bns_infer,
          sbp=lambda in_shapes, n_out=2, **_: [Signature((S(0),) * 4, (S(0),) * 2),
                                               Signature((B,) * 4, (B,) * 2)],
          traits=("NoSideEffect", "NoGrad"),
          doc="batch_norm's running statistics after one training batch (PyTorch's update)")
register_kernel("batch_norm_stats", _batch_norm_stats, name="batch_norm_stats_xla")


# -- grad ops of layer_norm / rms_norm -----------------------------------------------
# The backward rules call these: one op (a Pallas kernel on GPU) computes dx, dweight and dbias
# from the saved statistics, also taking the statistics' own gradients (zeros when unused).
# Their backward rules (jflow/autograd/rules/norm.py) keep higher-order derivatives working.
# ``weight`` is optional and comes last; dweight / dbias are computed even without it.

def _lng_infer(x: Any, mean: Any, inv_std: Any, dy: Any, dmean: Any, dinv_std: Any, weight: Any,
               begin_norm_axis: int) -> Any:
    check_dtype(x, FLOAT, "input")
    b = _begin(x, begin_norm_axis)
    shape = tuple(x.shape)
    for name, t, s in (("dy", dy, shape), ("mean", mean, shape[:b]),
                       ("inv_std", inv_std, shape[:b]), ("dmean", dmean, shape[:b]),
                       ("dinv_std", dinv_std, shape[:b])):
        if t is None:
            continue
        _check_param(x, t, s, name)
    _check_param(x, weight, shape[b:], "weight")
    return desc(shape, x.dtype), desc(shape[b:], x.dtype), desc(shape[b:], x.dtype)


def _rmsg_infer(x: Any, inv_rms: Any, dy: Any, dinv_rms: Any, weight: Any,
                begin_norm_axis: int) -> Any:
    outs = _lng_infer(x, None, inv_rms, dy, None, dinv_rms, weight, begin_norm_axis)
    return outs[0], outs[1]


def _grad_sbp(n_stats: int) -> Any:
    def sbp(in_shapes: Any, n_out: int = 1, begin_norm_axis: int = 0,
            **_: Any) -> list[Signature]:
        """Split a leading axis of x, dy and the statistics; dweight / dbias are then partial
        sums (P); weight stays broadcast."""
        n_in = len(in_shapes)
        has_w = n_in == 2 + 2 * n_stats + 1
        sigs = []
        for i in range(begin_norm_axis):
            ins = (S(i),) * (n_in - (1 if has_w else 0)) + ((B,) if has_w else ())
            sigs.append(Signature(ins, (S(i),) + (P,) * (n_out - 1)))
        return sigs
    return sbp


def norm_backward(x: Any, mean: Any, r: Any, dy: Any, dmean: Any, dr: Any, weight: Any,
                  begin: int) -> Any:
    """(dx, dweight, dbias) of y = xhat * w + b, xhat = (x - mean) * r (or x * r when mean is
    None), given also the statistics' gradients — the xla kernel of both grad ops."""
    xf, g0 = _up(x), _up(dy)
    axes = tuple(range(begin, x.ndim))
    lead = tuple(range(begin))
    bshape = x.shape[:begin] + (1,) * len(axes)
    n = max(int(np.prod(x.shape[begin:])), 1)
    rb = _up(r).reshape(bshape)
    xc = xf - _up(mean).reshape(bshape) if mean is not None else xf
    xhat = xc * rb
    g = g0 if weight is None else g0 * _up(weight)
    inner = xhat * jnp.mean(g * xhat, axis=axes, keepdims=True)
    if mean is not None:
        inner = inner + jnp.mean(g, axis=axes, keepdims=True)
    dx = rb * (g - inner) - _up(dr).reshape(bshape) * rb * rb * xhat / n
    if mean is not None:
        dx = dx + _up(dmean).reshape(bshape) / n
    dw = jnp.sum(g0 * xhat, axis=lead)
    db = jnp.sum(g0, axis=lead)
    return dx.astype(x.dtype), dw.astype(x.dtype), db.astype(x.dtype)


def _layer_norm_grad(x: Any, mean: Any, inv_std: Any, dy: Any, dmean: Any, dinv_std: Any,
                     weight: Any, begin_norm_axis: int) -> Any:
    return norm_backward(x, mean, inv_std, dy, dmean, dinv_std, weight, begin_norm_axis)


def _rms_norm_grad(x: Any, inv_rms: Any, dy: Any, dinv_rms: Any, weight: Any,
                   begin_norm_axis: int) -> Any:
    dx, dw, _ = norm_backward(x, None, inv_rms, dy, None, dinv_rms, weight, begin_norm_axis)
    return dx, dw


define_op("layer_norm_grad",
          inputs=["x", "mean", "inv_std", "dy", "dmean", "dinv_std",
                  Input("weight", optional=True)],
          outputs=["dx", "dweight", "dbias"], attrs=[Attr("begin_norm_axis", "int64")],
          infer=_lng_infer, sbp=_grad_sbp(2),
          doc="backward of layer_norm from its saved statistics: dx, dweight, dbias")
register_kernel("layer_norm_grad", _layer_norm_grad, name="layer_norm_grad_xla")

define_op("rms_norm_grad",
          inputs=["x", "inv_rms", "dy", "dinv_rms", Input("weight", optional=True)],
          outputs=["dx", "dweight"], attrs=[Attr("begin_norm_axis", "int64")],
          infer=_rmsg_infer, sbp=_grad_sbp(1),
          doc="backward of rms_norm from its saved statistic: dx, dweight")
register_kernel("rms_norm_grad", _rms_norm_grad, name="rms_norm_grad_xla")
