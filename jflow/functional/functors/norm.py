"""Functors of the norm ops (``jflow/ops/norm.py``): PyTorch's argument rules, then the op.

The ops also return their statistics (for the backward rule); the functors return only ``y``
(batch_norm also updates the running statistics with them).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from ...autograd.grad_mode import no_grad
from ...ops import get
from ...tensor import Tensor, _wrap
from ..promotion import assign_inplace
from ..registry import api as _api
from ..registry import functor

_layer_norm = get("layer_norm").apply
_rms_norm = get("rms_norm").apply
_group_norm = get("group_norm").apply
_batch_norm = get("batch_norm").apply
_batch_norm_stats = get("batch_norm_stats").apply
_reshape = get("reshape").apply
_add, _sub, _mul = get("add").apply, get("sub").apply, get("mul").apply
_rsqrt = get("rsqrt").apply


def _begin(fname: str, input: Tensor, normalized_shape: Any) -> int:
    ns = tuple(int(s) for s in normalized_shape)
    shape = tuple(input._meta.shape)
    k = len(ns)
    if k == 0 or k > len(shape) or shape[len(shape) - k:] != ns:
        raise RuntimeError(f"{fname}(): given normalized_shape={list(ns)}, expected input with "
                           f"shape [*, {', '.join(map(str, ns))}], but got input of size "
                           f"{list(shape)}")
    return len(shape) - k


def _float_input(fname: str, input: Tensor) -> None:
    if not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}")


@functor("LayerNorm")
def layer_norm(input: Tensor, normalized_shape: Any, weight: Any, bias: Any, eps: float) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims."""
    _float_input("layer_norm", input)
    b = _begin("layer_norm", input, normalized_shape)
    return _layer_norm(input, weight, bias, begin_norm_axis=b, eps=float(eps))[0]


@functor("RmsNorm")
def rms_norm(input: Tensor, normalized_shape: Any, weight: Any, eps: Any) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight; ``eps=None`` is the dtype's machine epsilon."""
    _float_input("rms_norm", input)
    b = _begin("rms_norm", input, normalized_shape)
    if eps is None:
        eps = float(jnp.finfo(input._meta.dtype).eps)
    return _rms_norm(input, weight, begin_norm_axis=b, eps=float(eps))[0]


@functor("GroupNorm")
def group_norm(input: Tensor, num_groups: int, weight: Any, bias: Any, eps: float) -> Tensor:
    """Normalise (N, C, *) over groups of C / num_groups channels, then per-channel affine."""
    _float_input("group_norm", input)
    return _group_norm(input, weight, bias, num_groups=num_groups, eps=float(eps))[0]


def _const(v: float, like: Tensor) -> Tensor:
    return _wrap(jnp.asarray(v, like._meta.dtype))


@functor("BatchNorm")
def batch_norm(input: Tensor, running_mean: Any, running_var: Any, weight: Any, bias: Any,
               training: bool, momentum: float, eps: float) -> Tensor:
    """torch.nn.functional.batch_norm over axis 1 of (N, C, *). Training: batch statistics
    (the batch_norm op), then, under no_grad, ``running = (1 - momentum) * running +
    momentum * stat`` in place with the unbiased batch variance (as PyTorch). Eval: the
    running statistics, as elementwise ops."""
    if not input.is_floating_point():
        raise TypeError(f"batch_norm(): expected a floating point input, got {input.dtype}")
    shape = tuple(input._meta.shape)
    if 0 in shape:  # PyTorch returns a copy of an empty input, unchecked
        return _mul(input, _const(1.0, input))
    if len(shape) < 2:
        raise ValueError(f"batch_norm(): expected an input of at least 2 dims (N, C, *), got "
                         f"shape {list(shape)}")
    c = shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and tuple(t._meta.shape) != (c,):
            raise RuntimeError(f"batch_norm(): {name} should contain {c} elements not "
                               f"{int(np.prod(t._meta.shape))}")
    pshape = (1, c) + (1,) * (len(shape) - 2)
    if training:
        n = int(np.prod(shape)) // c if c else 0
        if n <= 1:
            raise ValueError(f"batch_norm(): expected more than 1 value per channel when "
                             f"training, got input size {list(shape)}")
        y, mean, inv_std = _batch_norm(input, weight, bias, eps=float(eps))
        m = float(momentum)
        if (running_mean is not None and running_var is not None
                and running_mean._meta.dtype == running_var._meta.dtype):
            with no_grad():  # (one op: the update of both, as the branch below writes it)
                new_mean, new_var = _batch_norm_stats(running_mean, running_var, mean, inv_std,
                                                      momentum=m, eps=float(eps), count=n)
                assign_inplace(running_mean, new_mean, "batch_norm")
                assign_inplace(running_var, new_var, "batch_norm")
        elif running_mean is not None or running_var is not None:
            with no_grad():
                if running_mean is not None:
                    new = _add(_mul(running_mean, _const(1.0 - m, running_mean)),
                               _mul(mean.to(running_mean.dtype), _const(m, running_mean)))
                    assign_inplace(running_mean, new, "batch_norm")
                if running_var is not None:
                    r = inv_std.to(running_var.dtype)
                    # biased variance = 1 / inv_std^2 - eps
                    r2 = _rsqrt(_mul(r, r))
                    var = _sub(_mul(r2, r2), _const(float(eps), running_var))
                    var = _mul(var, _const(n / (n - 1), running_var))
                    new = _add(_mul(running_var, _const(1.0 - m, running_var)),
                               _mul(var, _const(m, running_var)))
                    assign_inplace(running_var, new, "batch_norm")
        return y
    if running_mean is None or running_var is None:
        raise ValueError("batch_norm(): running_mean and running_var are required when not "
                         "training")
    y = _mul(_sub(input, _reshape(running_mean, shape=pshape)),
             _reshape(_rsqrt(_add(running_var, _const(float(eps), running_var))), shape=pshape))
    if weight is not None:
        y = _mul(y, _reshape(weight, shape=pshape))
    if bias is not None:
        y = _add(y, _reshape(bias, shape=pshape))
    return y


# -- instance_norm, local_response_norm ------------------------------------------------------------

def _stat_shape(fname: str, c: int, **tensors: Any) -> None:
    for name, t in tensors.items():
        if t is not None and tuple(t._meta.shape) != (c,):
            raise RuntimeError(f"{fname}(): {name} should contain {c} elements not "
                               f"{int(np.prod(t._meta.shape))}")


@functor("InstanceNorm")
def instance_norm(input: Tensor, running_mean: Any, running_var: Any, weight: Any, bias: Any,
                  use_input_stats: bool, momentum: float, eps: float) -> Tensor:
    """torch.nn.functional.instance_norm: each (sample, channel) of (N, C, *) normalised over
    its spatial elements (``use_input_stats``; the group_norm op with one group per channel,
    weight and bias included: one program, where batch_norm on a (1, N * C, *) view and the
    affine ops were six), or with the running statistics. With input statistics the running
    ones, when given, are updated in place under no_grad with the batch average of the
    per-instance mean and unbiased variance: ``running = (1 - momentum) * running + momentum
    * stat``."""
    fname = "instance_norm"
    _float_input(fname, input)
    shape = tuple(input._meta.shape)
    if len(shape) < 3:
        raise ValueError(f"{fname}(): expected an input of at least 3 dims (N, C, *), got shape "
                         f"{list(shape)}")
    n, c = shape[0], shape[1]
    _stat_shape(fname, c, running_mean=running_mean, running_var=running_var, weight=weight,
                bias=bias)
    pshape = (1, c) + (1,) * (len(shape) - 2)
    if use_input_stats:
        m = int(np.prod(shape[2:]))
        if m <= 1:
            raise ValueError(f"{fname}(): expected more than 1 spatial element when using input "
                             f"statistics, got input size {list(shape)}")
        if c:
            y, mean, inv_std = _group_norm(input, weight, bias, num_groups=c, eps=float(eps))
            weight = bias = None  # (applied)
        else:  # (no channel: no group to make)
            y, mean, inv_std = _batch_norm(_reshape(input, shape=(1, 0) + shape[2:]), None,
                                           None, eps=float(eps))
            y = _reshape(y, shape=shape)
        if running_mean is not None or running_var is not None:
            mom = float(momentum)
            with no_grad():
                if running_mean is not None:
                    bm = _reshape(mean.to(running_mean.dtype), shape=(n, c)).mean(0)
                    new = _add(_mul(running_mean, _const(1.0 - mom, running_mean)),
                               _mul(bm, _const(mom, running_mean)))
                    assign_inplace(running_mean, new, fname)
                if running_var is not None:
                    r = inv_std.to(running_var.dtype)
                    r2 = _rsqrt(_mul(r, r))
                    var = _sub(_mul(r2, r2), _const(float(eps), running_var))
                    var = _mul(var, _const(m / (m - 1), running_var))
                    bv = _reshape(var, shape=(n, c)).mean(0)
                    new = _add(_mul(running_var, _const(1.0 - mom, running_var)),
                               _mul(bv, _const(mom, running_var)))
                    assign_inplace(running_var, new, fname)
    else:
        if running_mean is None or running_var is None:
            raise ValueError(f"{fname}(): running_mean and running_var are required when "
                             f"use_input_stats=False")
        y = _mul(_sub(input, _reshape(running_mean.to(input.dtype), shape=pshape)),
                 _reshape(_rsqrt(_add(running_var.to(input.dtype), _const(float(eps), input))),
                          shape=pshape))
    if weight is not None:
        y = _mul(y, _reshape(weight, shape=pshape))
    if bias is not None:
        y = _add(y, _reshape(bias, shape=pshape))
    return y


@functor("LocalResponseNorm")
def local_response_norm(input: Tensor, size: int, alpha: float, beta: float, k: float) -> Tensor:
    """torch.nn.functional.local_response_norm over the channels (axis 1) of (N, C, *):
    ``x / (k + alpha / size * s) ** beta``, ``s`` the sum of squares over the ``size``
    channels from ``c - size // 2`` to ``c + (size - 1) // 2`` (zeros outside)."""
    fname = "local_response_norm"
    _float_input(fname, input)
    nd = input._meta.ndim
    if nd < 3:
        raise ValueError(f"{fname}(): expected an input of at least 3 dims (N, C, *), got "
                         f"{nd} dimensions")
    if int(size) < 1:
        raise ValueError(f"{fname}(): size must be a positive integer, got {size}")
    if input._meta.size == 0:
        return input
    F = _api()
    c = int(input._meta.shape[1])
    sq = _mul(input, input)
    padded = F.pad(sq, [0, 0] * (nd - 2) + [int(size) // 2, (int(size) - 1) // 2])
    acc = F.narrow(padded, 1, 0, c)
    for i in range(1, int(size)):
        acc = _add(acc, F.narrow(padded, 1, i, c))
    div = _add(_mul(acc, _const(float(alpha) / int(size), input)), _const(float(k), input))
    return input / div ** float(beta)
