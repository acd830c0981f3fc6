"""Functors of the activation ops (``jflow/ops/activation.py``) that do more than call the op:
silu computes integer inputs in the default float dtype, leaky_relu takes ``inplace``. relu,
elu, gelu, softplus and hardtanh are bound to their ops in api.yaml (``=> op:elu``)."""

from __future__ import annotations

from ...ops import get
from ...tensor import Tensor
from ..promotion import assign_inplace, to_float
from ..registry import functor

_silu = get("silu").apply
_leaky_relu = get("leaky_relu").apply


@functor("Silu")
def silu(input: Tensor) -> Tensor:
    """x * sigmoid(x); bool / integer inputs in the default float dtype (as PyTorch)."""
    if input._value.dtype.kind in "iub":
        input = to_float(input)
    return _silu(input)


@functor("LeakyRelu")
def leaky_relu(x: Tensor, alpha: float, inplace: bool) -> Tensor:
    """x if x > 0 else alpha * x; ``inplace`` writes the result into ``x``. (No defaults
    here: api.yaml's signature holds them and the parser always passes both.)"""
    y = _leaky_relu(x, alpha=alpha)
    return assign_inplace(x, y, "leaky_relu") if inplace else y
