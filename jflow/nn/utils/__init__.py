"""``flow.nn.utils``: gradient clipping, parameter/vector conversion, resetting gradients."""

from ...creation import zero_grads
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters", "zero_grads"]

