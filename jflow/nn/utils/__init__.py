"""``flow.nn.utils``: gradient clipping, parameter/vector conversion, resetting gradients."""

from typing import Any

from ...creation import zeros_like
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters", "zero_grads"]


def zero_grads(params: Any, set_to_none: bool = True) -> None:
    """Reset gradients (``Module.zero_grad`` / ``Optimizer.zero_grad``): to ``None``, or to
    zeros of the same shape, dtype and layout."""
    for p in params:
        if p.grad is not None:
            p.grad = None if set_to_none else zeros_like(p.grad)
