"""Functors of the norm ops (``jflow/ops/norm.py``): PyTorch's argument rules, then the op.

The ops also return their statistics (for the backward rule); the functors return only ``y``.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from ...ops import get
from ...tensor import Tensor
from ..registry import functor

_layer_norm = get("layer_norm").apply
_rms_norm = get("rms_norm").apply
_group_norm = get("group_norm").apply


def _begin(fname: str, input: Tensor, normalized_shape: Any) -> int:
    ns = tuple(int(s) for s in normalized_shape)
    shape = tuple(input._value.shape)
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
def layer_norm(input: Tensor, normalized_shape: Any, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims."""
    _float_input("layer_norm", input)
    b = _begin("layer_norm", input, normalized_shape)
    return _layer_norm(input, weight, bias, begin_norm_axis=b, eps=float(eps))[0]


@functor("RmsNorm")
def rms_norm(input: Tensor, normalized_shape: Any, weight: Any = None, eps: Any = None
             ) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight; ``eps=None`` is the dtype's machine epsilon."""
    _float_input("rms_norm", input)
    b = _begin("rms_norm", input, normalized_shape)
    if eps is None:
        eps = float(jnp.finfo(input._value.dtype).eps)
    return _rms_norm(input, weight, begin_norm_axis=b, eps=float(eps))[0]


@functor("GroupNorm")
def group_norm(input: Tensor, num_groups: int, weight: Any = None, bias: Any = None,
               eps: float = 1e-5) -> Tensor:
    """Normalise (N, C, *) over groups of C / num_groups channels, then per-channel affine."""
    _float_input("group_norm", input)
    return _group_norm(input, weight, bias, num_groups=num_groups, eps=float(eps))[0]
