"""Tensor operators and op-backed methods, attached once the functional layer is loaded.

Operators call functors directly (no argument parsing: the operand types are known here).
Named methods forward to ``flow._C`` with the tensor as first argument. One module per job:

==================  ===========================================================================
``_forward``        the makers the others share (``_method``, ``_assign_result``, ``_binary`` ...)
``operators``       Python's operators and their reflected / in-place forms, shifts, ``@``
``methods``         the lists of methods forwarding to ``flow._C``, in-place forms, aliases
``fills``           ``zero_`` / ``fill_`` / ``copy_`` / ``fill_diagonal_``, ``torch.fill``
``conversion``      ``to``, the dtype casters, ``type()`` and type strings, ``cpu`` / ``cuda``
``factories``       ``new_zeros`` / ``new_ones`` / ``new_empty`` / ``new_full`` / ``new_tensor``
``random_fills``    ``normal_`` / ``uniform_`` / ... / ``cauchy_`` / ``geometric_``
``compositions``    ``addcmul`` / ``addcdiv`` / ``lerp``, ``sum_to_size``, ``histogram`` ...
``torch_helpers``   ``result_type``, ``broadcast_shapes``, ``atleast_*`` ..., ``INPLACE_FUNCTIONS``
``inplace_shape``   ``squeeze_`` / ``unsqueeze_`` / ``t_`` / ``transpose_``, ``unfold``
``memory``          ``data_ptr``, ``untyped_storage`` / ``storage``, ``resize_``, ``set_`` ...
``compat``          ``new``, ``module_load``, ``as_subclass``, ``dim_order``, ``unsafe_split`` ...
``unsupported``     sparse / quantized / nested layouts and XPU / IPU / MTIA: clear errors
``grad_hooks``      ``register_post_accumulate_grad_hook``
``apply``           ``apply_`` / ``map_`` / ``map2_`` (Python callables on the elements)
==================  ===========================================================================

The submodules are imported in this order on purpose: a later assignment to ``Tensor.<name>``
overrides an earlier one (``methods`` first fills in the forwards, the modules after it only
add names), aliases copy the method they name at import, and ``torch_helpers`` builds
``INPLACE_FUNCTIONS`` from the in-place methods attached before it (``methods``, ``fills``,
``views``' ``detach_``). ``jflow/__init__.py`` imports this package after the functional layer
and before ``tensor_indexing`` (whose varargs forms of ``reshape`` ... win).
"""

# (not sorted: the submodules are imported in the order of attachment described above)
from __future__ import annotations  # noqa: I001

from . import operators  # noqa: F401  (first: nothing later assigns an operator)
from . import methods  # noqa: F401  (the forwarding tables; before the aliases that copy them)
from . import fills  # noqa: F401
from . import conversion  # noqa: F401
from . import factories  # noqa: F401
from . import random_fills  # noqa: F401  (after conversion: its error messages' type names)
from . import compositions  # noqa: F401
from . import torch_helpers  # noqa: F401  (after every in-place method INPLACE_FUNCTIONS calls)
from . import inplace_shape  # noqa: F401
from . import memory  # noqa: F401
from . import compat  # noqa: F401
from . import unsupported  # noqa: F401
from . import grad_hooks  # noqa: F401
from . import apply  # noqa: F401
from .compositions import (addcdiv, addcdiv_, addcmul, addcmul_, builtins_range, gradient,
                           histogram, histogramdd, lerp, lerp_, sum_to_size, unravel_index)
from .conversion import cpu, cuda, to, type_, type_as
from .factories import new_empty, new_full, new_ones, new_tensor, new_zeros
from .fills import copy_, fill, fill_, fill_diagonal_, flow_true, zero_
from .inplace_shape import get_device, unfold
from .methods import METHODS, clone, ndimension, polygamma, polygamma_, where_method
from .random_fills import (bernoulli_, cauchy_, exponential_, geometric_, log_normal_, normal_,
                           random_, uniform_)
from .torch_helpers import (INPLACE_FUNCTIONS, atleast_1d, atleast_2d, atleast_3d,
                            broadcast_shapes, broadcast_tensors, can_cast, celu_, detach,
                            is_floating_point, is_nonzero, is_same_size, is_signed, numel,
                            positive, result_type, rrelu_, scalar_tensor, select, selu_,
                            threshold_)

__all__ = [
    "METHODS", "clone", "ndimension", "polygamma", "polygamma_", "where_method",
    "copy_", "fill", "fill_", "fill_diagonal_", "flow_true", "zero_",
    "cpu", "cuda", "to", "type_", "type_as",
    "new_empty", "new_full", "new_ones", "new_tensor", "new_zeros",
    "bernoulli_", "cauchy_", "exponential_", "geometric_", "log_normal_", "normal_", "random_",
    "uniform_",
    "addcdiv", "addcdiv_", "addcmul", "addcmul_", "builtins_range", "gradient", "histogram",
    "histogramdd", "lerp", "lerp_", "sum_to_size", "unravel_index",
    "INPLACE_FUNCTIONS", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes",
    "broadcast_tensors", "can_cast", "celu_", "detach", "is_floating_point", "is_nonzero",
    "is_same_size", "is_signed", "numel", "positive", "result_type", "rrelu_", "scalar_tensor",
    "select", "selu_", "threshold_",
    "get_device", "unfold",
]
