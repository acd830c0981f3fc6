"""``flow.nn.utils``: gradient clipping, parameter/vector conversion, resetting gradients,
weight and spectral normalization and parametrizations (``parametrize``, ``parametrizations``),
pruning (``prune``), conv / linear + BatchNorm fusion, ``skip_init``, the conv weight
memory-format converters and the deprecated ``stateless.functional_call``."""

from ...creation import zero_grads
from . import fusion, memory_format, parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .init import skip_init
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "parametrizations",
           "parametrize", "remove_spectral_norm", "remove_weight_norm", "spectral_norm",
           "vector_to_parameters", "weight_norm", "zero_grads", "clip_grad_norm",
           "clip_grads_with_norm_", "get_total_norm", "fuse_conv_bn_eval",
           "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
           "skip_init", "convert_conv2d_weight_memory_format",
           "convert_conv3d_weight_memory_format", "fusion", "memory_format", "prune", "rnn",
           "stateless"]
