"""Activation modules (``ReLU``, ``GELU``, ``Softmax``, ...) over ``nn.functional``."""

from __future__ import annotations

from typing import Any

from jflow.functional import api_default  # absolute: ruff resolves it for B008

from ...creation import full
from ...tensor import Tensor
from .. import functional as F
from ..parameter import Parameter
from .module import Module

# PyTorch defines MultiheadAttention in nn/modules/activation.py, and ported code imports it from
# there; jflow defines it beside the transformer layers (which do not import this module, so no
# import cycle) and re-exports it here.
from .transformer import MultiheadAttention

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "Mish", "Sigmoid", "LogSigmoid",
           "Tanh", "Softmax", "LogSoftmax", "Softmin", "ELU", "Softplus", "Hardtanh"]
__all__ += ["MultiheadAttention", "Softmax2d"]
__all__ += ["SELU", "CELU", "GLU", "Hardswish", "Hardsigmoid", "Hardshrink", "Softshrink",
            "Tanhshrink", "Softsign", "PReLU", "RReLU", "Threshold"]


class _Inplace(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    """``max(x, 0)`` elementwise (``inplace=True`` writes into the input)."""

    def forward(self, input: Tensor) -> Tensor:
        """``max(input, 0)`` elementwise, any shape (in place when ``inplace``)."""
        return F.relu(input, self.inplace)


class ReLU6(_Inplace):
    """``min(max(x, 0), 6)`` elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """``min(max(input, 0), 6)`` elementwise, any shape."""
        return F.relu6(input, self.inplace)


class SiLU(_Inplace):
    """``x * sigmoid(x)`` elementwise (swish)."""

    def forward(self, input: Tensor) -> Tensor:
        """``input * sigmoid(input)`` elementwise, any shape."""
        return F.silu(input, self.inplace)


class Mish(_Inplace):
    """``x * tanh(softplus(x))`` elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """``input * tanh(softplus(input))`` elementwise, any shape."""
        return F.mish(input, self.inplace)


class LeakyReLU(Module):
    """``x`` where positive, else ``negative_slope * x``."""

    def __init__(self, negative_slope: float = api_default("leaky_relu", "alpha"),
                 inplace: bool = api_default("leaky_relu", "inplace")) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        """``input`` where positive, else ``negative_slope * input``; any shape."""
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                           else "")


class ELU(Module):
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""

    def __init__(self, alpha: float = api_default("elu", "alpha"), inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        """``input`` where positive, else ``alpha * (exp(input) - 1)``; any shape."""
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """``x * Phi(x)`` with Phi the normal CDF (``approximate="tanh"``: its tanh form)."""

    def __init__(self, approximate: str = api_default("gelu", "approximate")) -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        """``input * Phi(input)`` (Phi the normal CDF; its tanh form if ``approximate="tanh"``)."""
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Sigmoid(Module):
    """``1 / (1 + exp(-x))`` elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """``1 / (1 + exp(-input))`` elementwise, any shape."""
        return F.sigmoid(input)


class LogSigmoid(Module):
    """``log(sigmoid(x))`` elementwise, computed stably."""

    def forward(self, input: Tensor) -> Tensor:
        """``log(sigmoid(input))``, computed as ``-softplus(-input)`` for stability."""
        return F.logsigmoid(input)


class Tanh(Module):
    """Elementwise hyperbolic tangent."""

    def forward(self, input: Tensor) -> Tensor:
        """Elementwise hyperbolic tangent, any shape."""
        return F.tanh(input)


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold`` (a smooth ReLU)."""

    def __init__(self, beta: float = api_default("softplus", "beta"),
                 threshold: float = api_default("softplus", "threshold")) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        """``log(1 + exp(beta * input)) / beta``; linear where ``beta * input > threshold``."""
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]`` (default ``[-1, 1]``)."""

    def __init__(self, min_val: float = api_default("hardtanh", "min_val"),
                 max_val: float = api_default("hardtanh", "max_val"),
                 inplace: bool = False) -> None:
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must be greater than min_val "
                             f"({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input: Tensor) -> Tensor:
        """``input`` clamped to ``[min_val, max_val]``, any shape."""
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (
            ", inplace=True" if self.inplace else "")


class _DimModule(Module):
    """Softmax / LogSoftmax / Softmin (``dim=None``: PyTorch's deprecated implicit dim, 0 for
    0-, 1- and 3-d inputs, else 1, with its warning)."""

    def __init__(self, dim: int | None = api_default("softmax", "dim")) -> None:
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_DimModule):
    """Softmax along ``dim``: non-negative values summing to 1."""

    def forward(self, input: Tensor) -> Tensor:
        """``exp(input)`` normalised to sum to 1 along ``dim``."""
        return F.softmax(input, self.dim, _stacklevel=5)


class LogSoftmax(_DimModule):
    """``log(softmax(x))`` along ``dim``, computed stably."""

    def forward(self, input: Tensor) -> Tensor:
        """``log(softmax(input))`` along ``dim``, computed stably."""
        return F.log_softmax(input, self.dim, _stacklevel=5)


class Softmin(_DimModule):
    """``softmax(-x)`` along ``dim``."""

    def forward(self, input: Tensor) -> Tensor:
        """``softmax(-input)`` along ``dim``."""
        return F.softmin(input, self.dim, _stacklevel=5)


# -- the remaining activation modules ----------------------------------------------------------

class SELU(_Inplace):
    """``scale * elu(x, alpha)`` with the self-normalising constants."""

    def forward(self, input: Tensor) -> Tensor:
        """``scale * elu(input, alpha)`` with the self-normalising constants; any shape."""
        return F.selu(input, self.inplace)


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6`` elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """``input * relu6(input + 3) / 6`` elementwise, any shape."""
        return F.hardswish(input, self.inplace)


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6`` elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """``relu6(input + 3) / 6`` elementwise, any shape."""
        return F.hardsigmoid(input, self.inplace)


class Tanhshrink(Module):
    """``x - tanh(x)`` elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """``input - tanh(input)`` elementwise, any shape."""
        return F.tanhshrink(input)


class Softsign(Module):
    """``x / (1 + abs(x))`` elementwise."""

    def forward(self, input: Tensor) -> Tensor:
        """``input / (1 + abs(input))`` elementwise, any shape."""
        return F.softsign(input)


class CELU(Module):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    def __init__(self, alpha: float = api_default("celu", "alpha"), inplace: bool = False
                 ) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        """``max(0, input) + min(0, alpha * (exp(input / alpha) - 1))``; any shape."""
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GLU(Module):
    """Gated linear unit: ``a * sigmoid(b)`` of the halves of the input along ``dim``."""

    def __init__(self, dim: int = api_default("glu", "dim")) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        """``a * sigmoid(b)`` of the two halves of ``input`` along ``dim`` (halving it)."""
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _Shrink(Module):
    def __init__(self, lambd: float = api_default("hardshrink", "lambd")) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    """``x`` where ``abs(x) > lambd``, else 0."""

    def forward(self, input: Tensor) -> Tensor:
        """``input`` where ``abs(input) > lambd``, else 0; any shape."""
        return F.hardshrink(input, self.lambd)


class Softshrink(_Shrink):
    """``x`` moved ``lambd`` towards 0, and 0 where ``abs(x) <= lambd``."""

    def forward(self, input: Tensor) -> Tensor:
        """``input`` moved ``lambd`` towards 0, and 0 where ``abs(input) <= lambd``."""
        return F.softshrink(input, self.lambd)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        """``input`` where ``input > threshold``, else ``value``; any shape."""
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (
            ", inplace=True" if self.inplace else "")


class PReLU(Module):
    """x if x > 0 else weight * x with a learnable ``weight`` of ``num_parameters`` slopes
    (1, or one per channel of dim 1), initialised to ``init`` (PyTorch's names, so state
    dicts load either way)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if num_parameters < 1:
            raise ValueError(f"PReLU: num_parameters must be positive, got {num_parameters}")
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(full((num_parameters,), init, dtype=dtype, device=device))

    def forward(self, input: Tensor) -> Tensor:
        """``input`` where positive, else ``weight * input`` (weight per channel of dim 1)."""
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU: random slopes in training, (lower + upper) / 2 in eval."""

    def __init__(self, lower: float = api_default("rrelu", "lower"),
                 upper: float = api_default("rrelu", "upper"), inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        """Leaky ReLU with slopes drawn from ``U(lower, upper)`` in training, their mean in eval."""
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (
            ", inplace=True" if self.inplace else "")


class Softmax2d(Module):
    """``F.softmax(input, dim=-3)`` on a 3-D or 4-D input (PyTorch's check and message)."""

    def forward(self, input: Tensor) -> Tensor:
        """Softmax over the channels at every spatial position."""
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             f"instead")
        return F.softmax(input, -3)
