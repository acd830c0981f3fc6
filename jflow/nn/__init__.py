"""``flow.nn``: modules, parameters, initialisers and the functional API.

``nn.Module`` registers parameters, buffers and submodules by attribute assignment, as
``torch.nn.Module``; layers are written with jflow ops, so they run eagerly, record the
autograd tape and trace under ``jax.jit``.
"""

from . import functional, grad, init, parallel, utils
from .graph import Graph
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _modules_all
from .parallel import DataParallel
from .parameter import (
    Buffer,
    Parameter,
    UninitializedBuffer,
    UninitializedParameter,
    is_parameter,
)

__all__ = ["Parameter", "Buffer", "is_parameter", "UninitializedParameter", "UninitializedBuffer",
           "Graph", "DataParallel", "functional", "grad", "init", "parallel",
           "utils", *_modules_all]
