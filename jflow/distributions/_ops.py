"""The jflow functions the distributions use, imported from the layers that define them.

The package root imports ``jflow.distributions`` (``torch.distributions`` is there after
``import torch``), so these modules cannot import the root back without a cycle.
"""

from .._C import erf, erfinv, log, sigmoid, softmax, where
from ..autograd.grad_mode import no_grad
from ..creation import arange, bernoulli, full, multinomial, rand, randn, tensor
from ..dtypes import finfo, get_default_dtype
from ..nn import functional as nn_functional
from ..tensor_methods import broadcast_tensors

__all__ = ["erf", "erfinv", "log", "sigmoid", "softmax", "where", "no_grad", "arange",
           "bernoulli", "full", "multinomial", "rand", "randn", "tensor", "finfo",
           "get_default_dtype", "nn_functional", "broadcast_tensors"]
