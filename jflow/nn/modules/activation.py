"""Activation modules (``ReLU``, ``GELU``, ``Softmax``, ...) over ``nn.functional``."""

from __future__ import annotations

from ...functional import api_default
from ...tensor import Tensor
from .. import functional as F
from .module import Module

# PyTorch defines MultiheadAttention in nn/modules/activation.py, and ported code imports it from
# there; jflow defines it beside the transformer layers (which do not import this module, so no
# import cycle) and re-exports it here.
from .transformer import MultiheadAttention

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "Mish", "Sigmoid", "LogSigmoid",
           "Tanh", "Softmax", "LogSoftmax", "Softmin", "ELU", "Softplus", "Hardtanh"]
__all__ += ["MultiheadAttention"]


class _Inplace(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, self.inplace)


class ReLU6(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.relu6(input, self.inplace)


class SiLU(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, self.inplace)


class Mish(_Inplace):
    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, self.inplace)


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = api_default("leaky_relu", "alpha"),
                 inplace: bool = api_default("leaky_relu", "inplace")) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                           else "")


class ELU(Module):
    def __init__(self, alpha: float = api_default("elu", "alpha"), inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    def __init__(self, approximate: str = api_default("gelu", "approximate")) -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class LogSigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Softplus(Module):
    def __init__(self, beta: float = api_default("softplus", "beta"),
                 threshold: float = api_default("softplus", "threshold")) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    def __init__(self, min_val: float = api_default("hardtanh", "min_val"),
                 max_val: float = api_default("hardtanh", "max_val"),
                 inplace: bool = False) -> None:
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"Hardtanh: max_val ({max_val}) must be greater than min_val "
                             f"({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (
            ", inplace=True" if self.inplace else "")


class _DimModule(Module):
    """Softmax / LogSoftmax / Softmin (``dim=None``: softmax's default, the last axis)."""

    def __init__(self, dim: int | None = api_default("softmax", "dim")) -> None:
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_DimModule):
    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)


class LogSoftmax(_DimModule):
    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


class Softmin(_DimModule):
    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim)
