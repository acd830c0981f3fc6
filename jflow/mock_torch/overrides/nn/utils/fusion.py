"""``torch.nn.utils.fusion``: folding an eval-mode BatchNorm into the preceding conv / linear
layer (the same formulas as PyTorch's, over jflow ops)."""

from __future__ import annotations

import copy
from typing import Any

import jflow

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def fuse_conv_bn_weights(conv_w: Any, conv_b: Any, bn_rm: Any, bn_rv: Any, bn_eps: float,
                         bn_w: Any, bn_b: Any, transpose: bool = False) -> tuple[Any, Any]:
    """Conv weight and bias with the BatchNorm folded in (as Parameters)."""
    dtype = conv_w.dtype
    if conv_b is None:
        conv_b = jflow.zeros_like(bn_rm)
    if bn_w is None:
        bn_w = jflow.ones_like(bn_rm)
    if bn_b is None:
        bn_b = jflow.zeros_like(bn_rm)
    rsqrt = jflow.rsqrt(bn_rv + bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(dtype)
    b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(dtype)
    return (jflow.nn.Parameter(w, conv_w.requires_grad),
            jflow.nn.Parameter(b, conv_b.requires_grad))


def fuse_conv_bn_eval(conv: Any, bn: Any, transpose: bool = False) -> Any:
    """A copy of ``conv`` computing ``bn(conv(x))`` (both in eval mode)."""
    if conv.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_linear_bn_weights(linear_w: Any, linear_b: Any, bn_rm: Any, bn_rv: Any,
                           bn_eps: float, bn_w: Any, bn_b: Any) -> tuple[Any, Any]:
    """Linear weight and bias with the BatchNorm folded in."""
    if linear_b is None:
        linear_b = jflow.zeros_like(bn_rm)
    scale = bn_w * jflow.rsqrt(bn_rv + bn_eps)
    w = linear_w * scale.unsqueeze(-1)
    b = (linear_b - bn_rm) * scale + bn_b
    return (jflow.nn.Parameter(w, linear_w.requires_grad),
            jflow.nn.Parameter(b, linear_b.requires_grad))


def fuse_linear_bn_eval(linear: Any, bn: Any) -> Any:
    """A copy of ``linear`` computing ``bn(linear(x))`` (eval mode)."""
    if linear.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused
