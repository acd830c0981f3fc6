"""``flow.nn.functional``: the functional API under ``torch.nn.functional`` names.

Activations take PyTorch's arguments (``inplace`` included); every other function is the
``flow._C`` function of the same name, picked up when this module is imported, so ops added
to api.yaml (``dropout``, ``layer_norm``, losses, ...) appear here without further wiring.
"""

from __future__ import annotations

from typing import Any

from .. import _C
from ..functional import api_default as _default
from ..tensor import Tensor

__all__ = ["relu", "relu6", "leaky_relu", "elu", "gelu", "silu", "sigmoid", "tanh", "softplus",
           "hardtanh", "softmax", "log_softmax", "softmin", "linear", "normalize", "mish",
           "logsigmoid", "one_hot", "pad"]


def _inplace(input: Tensor, out: Tensor, inplace: bool) -> Tensor:
    return input.copy_(out) if inplace else out


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return _C.relu(input) if not inplace else input.relu_()


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return _inplace(input, _C.hardtanh(input, 0.0, 6.0), inplace)


def leaky_relu(input: Tensor, negative_slope: float = _default("leaky_relu", "alpha"),
               inplace: bool = _default("leaky_relu", "inplace")) -> Tensor:
    return _C.leaky_relu(input, negative_slope, inplace=inplace)


def elu(input: Tensor, alpha: float = _default("elu", "alpha"), inplace: bool = False) -> Tensor:
    return _inplace(input, _C.elu(input, alpha), inplace)


def gelu(input: Tensor, approximate: str = _default("gelu", "approximate")) -> Tensor:
    return _C.gelu(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _inplace(input, _C.silu(input), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    return _inplace(input, input * _C.tanh(_C.softplus(input)), inplace)


def sigmoid(input: Tensor) -> Tensor:
    return _C.sigmoid(input)


def logsigmoid(input: Tensor) -> Tensor:
    return -_C.softplus(-input)


def tanh(input: Tensor) -> Tensor:
    return _C.tanh(input)


def softplus(input: Tensor, beta: float = _default("softplus", "beta"),
             threshold: float = _default("softplus", "threshold")) -> Tensor:
    return _C.softplus(input, beta, threshold)


def hardtanh(input: Tensor, min_val: float = _default("hardtanh", "min_val"),
             max_val: float = _default("hardtanh", "max_val"), inplace: bool = False) -> Tensor:
    return _inplace(input, _C.hardtanh(input, min_val, max_val), inplace)


def softmax(input: Tensor, dim: int | None = _default("softmax", "dim"),
            dtype: Any = _default("softmax", "dtype")) -> Tensor:
    return _C.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = _default("log_softmax", "dim"),
                dtype: Any = _default("log_softmax", "dtype")) -> Tensor:
    return _C.log_softmax(input, dim, dtype=dtype)


def softmin(input: Tensor, dim: int | None = _default("softmax", "dim"),
            dtype: Any = _default("softmax", "dtype")) -> Tensor:
    return _C.softmax(-input, dim, dtype=dtype)


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = _default("linear", "bias")
           ) -> Tensor:
    """``input @ weight.T + bias`` (``flow._C.linear`` when the op library has it)."""
    fn = getattr(_C, "linear", None)
    if fn is not None:
        return fn(input, weight, bias)
    out = _C.matmul(input, _C.t(weight) if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    n = _C.norm(input, p, dim, True)
    return input / _C.clamp(n, eps)


one_hot = _C.one_hot
pad = _C.pad


def _export_functional_api() -> None:
    """Every other public ``flow._C`` function, under its own name."""
    g = globals()
    for name in _C.__all__:
        if name not in g:
            g[name] = getattr(_C, name)
            __all__.append(name)


_export_functional_api()
