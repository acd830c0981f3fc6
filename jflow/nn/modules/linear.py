"""``Linear``, ``Bilinear``, ``Identity``, ``Flatten``, ``Unflatten``."""

from __future__ import annotations

from typing import Any

from jflow.functional import api_default  # absolute: ruff resolves it for B008

from ... import _C
from ...autograd import no_grad
from ...creation import empty
from ...tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "Flatten", "Unflatten", "LazyLinear"]


class Identity(Module):
    """Returns its input (arguments are accepted and ignored, as PyTorch)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        """``input``, unchanged (the same object)."""
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``; weight ``(out_features, in_features)``.

    Initialised as PyTorch: weight ~ kaiming_uniform(a=√5), i.e. U(±1/√in_features), and
    bias ~ U(±1/√in_features), from jflow's default generator.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        for name, v in (("in_features", in_features), ("out_features", out_features)):
            # int() would truncate 2.5 silently; PyTorch raises TypeError (from torch.empty).
            if not hasattr(type(v), "__index__"):
                raise TypeError(f"Linear: argument '{name}' must be an int, but got "
                                f"{type(v).__name__} ({v!r})")
        self.in_features = int(in_features)
        self.out_features = int(out_features)
        self.weight = Parameter(empty(self.out_features, self.in_features, dtype=dtype,
                                      device=device))
        if bias:
            self.bias = Parameter(empty(self.out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws ``weight`` and ``bias`` from U(±1/√in_features), as at construction."""
        init._reset_affine(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """``input @ weight.T + bias``: ``(*, in_features) -> (*, out_features)``."""
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A ``Linear`` whose ``in_features`` is the last dim of its first input (PyTorch's;
    see :mod:`jflow.nn.modules.lazy`): after that call it is a ``Linear``."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


#: PyTorch's subclass that keeps ``MultiheadAttention.out_proj`` out of dynamic quantization.
#: jflow has no quantization, so the name is ``Linear`` itself: code that names it (a
#: ``safe_globals`` list for a saved Transformer, ``isinstance`` checks) gets the class jflow's
#: attention uses for ``out_proj``.
NonDynamicallyQuantizableLinear = Linear


class Flatten(Module):
    """Flattens dims ``start_dim..end_dim`` (default: all but the batch dim; the module's own
    ``start_dim=1``, as PyTorch, where ``flow.flatten`` starts at 0)."""

    def __init__(self, start_dim: int = 1, end_dim: int = api_default("flatten", "end_dim")
                 ) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        """``input`` with dims ``start_dim..end_dim`` merged into one (a view where possible)."""
        return _C.flatten(input, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands dim ``dim`` into ``unflattened_size``."""

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` with dim ``dim`` split into ``unflattened_size``."""
        return _C.unflatten(input, self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Bilinear(Module):
    """``y = x1^T A x2 + b``: weight ``(out_features, in1_features, in2_features)``, bias
    ``(out_features,)``; both initialised U(±1/√in1_features), as PyTorch."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features = int(in1_features), int(in2_features)
        self.out_features = int(out_features)
        self.weight = Parameter(empty(self.out_features, self.in1_features, self.in2_features,
                                      dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(empty(self.out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws ``weight`` and ``bias`` from U(±1/√in1_features)."""
        bound = 1.0 / self.in1_features ** 0.5 if self.in1_features else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """``(*, in1), (*, in2) -> (*, out_features)``."""
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
