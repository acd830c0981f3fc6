"""``flow.nn.utils``: gradient clipping, parameter/vector conversion, resetting gradients,
weight and spectral normalization and parametrizations (``parametrize``, ``parametrizations``)."""

from ...creation import zero_grads
from . import parametrizations, parametrize
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "parametrizations",
           "parametrize", "remove_spectral_norm", "remove_weight_norm", "spectral_norm",
           "vector_to_parameters", "weight_norm", "zero_grads"]

