"""Functors of the fused ops (``jflow/ops/fused.py``)."""

from __future__ import annotations

from ...ops import get
from ...tensor import Tensor
from ..promotion import cast
from ..registry import functor

_fba = get("fused_bias_add_activation").apply


@functor("FusedBiasAddActivation")
def fused_bias_add_activation(x: Tensor, bias: Tensor, activation: str) -> Tensor:
    """act(x + bias) in one kernel; bias (C,) is cast to x's dtype. (api.yaml's signature
    holds the default activation.)"""
    if bias._meta.dtype != x._meta.dtype and x.is_floating_point():
        bias = cast(bias, x._meta.dtype)
    return _fba(x, bias, activation=activation)
