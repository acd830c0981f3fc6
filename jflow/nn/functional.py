"""``flow.nn.functional``: the functional API under ``torch.nn.functional`` names.

Activations take PyTorch's arguments (``inplace`` included); every other function is the
``flow._C`` function of the same name, picked up when this module is imported, so ops added
to api.yaml (``dropout``, ``layer_norm``, losses, ...) appear here without further wiring.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax.core import Tracer

from .. import _C
from ..autograd.function import Function, FunctionCtx
from ..functional import api_default as _default
from ..tensor import Tensor
from ._functional_layout import (
    channel_shuffle,
    pixel_shuffle,
    pixel_unshuffle,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)

__all__ = ["relu", "relu6", "leaky_relu", "elu", "gelu", "silu", "sigmoid", "tanh", "softplus",
           "hardtanh", "softmax", "log_softmax", "softmin", "linear", "normalize", "mish",
           "logsigmoid", "one_hot", "pad"]
__all__ += ["binary_cross_entropy"]
__all__ += ["selu", "celu", "hardswish", "hardsigmoid", "threshold"]  # inplace (issue 14)
__all__ += ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "upsample",
            "upsample_nearest", "upsample_bilinear"]  # _functional_layout.py


def _inplace(input: Tensor, out: Tensor, inplace: bool) -> Tensor:
    return input.copy_(out) if inplace else out


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(input, 0)`` elementwise; ``inplace=True`` writes into ``input`` and returns it."""
    return _C.relu(input) if not inplace else input.relu_()


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(input, 0), 6)`` elementwise (``hardtanh(input, 0, 6)``)."""
    return _inplace(input, _C.hardtanh(input, 0.0, 6.0), inplace)


def leaky_relu(input: Tensor, negative_slope: float = _default("leaky_relu", "alpha"),
               inplace: bool = _default("leaky_relu", "inplace")) -> Tensor:
    """``input`` where positive, else ``negative_slope * input``."""
    return _C.leaky_relu(input, negative_slope, inplace=inplace)


def elu(input: Tensor, alpha: float = _default("elu", "alpha"), inplace: bool = False) -> Tensor:
    """``input`` where positive, else ``alpha * (exp(input) - 1)``."""
    return _inplace(input, _C.elu(input, alpha), inplace)


def gelu(input: Tensor, approximate: str = _default("gelu", "approximate")) -> Tensor:
    """``input * Phi(input)`` (Phi the normal CDF; its tanh form if ``approximate="tanh"``)."""
    return _C.gelu(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * sigmoid(input)`` elementwise (a.k.a. swish)."""
    return _inplace(input, _C.silu(input), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * tanh(softplus(input))`` elementwise."""
    return _inplace(input, input * _C.tanh(_C.softplus(input)), inplace)


def sigmoid(input: Tensor) -> Tensor:
    """``1 / (1 + exp(-input))`` elementwise."""
    return _C.sigmoid(input)


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(input))``, computed as ``-softplus(-input)`` so it does not underflow."""
    return -_C.softplus(-input)


def tanh(input: Tensor) -> Tensor:
    """Elementwise hyperbolic tangent."""
    return _C.tanh(input)


def softplus(input: Tensor, beta: float = _default("softplus", "beta"),
             threshold: float = _default("softplus", "threshold")) -> Tensor:
    """``log(1 + exp(beta * input)) / beta``; linear where ``beta * input > threshold``."""
    return _C.softplus(input, beta, threshold)


def hardtanh(input: Tensor, min_val: float = _default("hardtanh", "min_val"),
             max_val: float = _default("hardtanh", "max_val"), inplace: bool = False) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]``."""
    return _inplace(input, _C.hardtanh(input, min_val, max_val), inplace)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """``scale * elu(input, alpha)`` with the self-normalising constants of Klambauer et al."""
    return _inplace(input, _C.selu(input), inplace)


def celu(input: Tensor, alpha: float = _default("celu", "alpha"), inplace: bool = False
         ) -> Tensor:
    """``max(0, input) + min(0, alpha * (exp(input / alpha) - 1))``."""
    return _inplace(input, _C.celu(input, alpha), inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * relu6(input + 3) / 6`` elementwise."""
    return _inplace(input, _C.hardswish(input), inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(input + 3) / 6`` elementwise."""
    return _inplace(input, _C.hardsigmoid(input), inplace)


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``input`` where ``input > threshold``, else ``value``."""
    return _inplace(input, _C.threshold(input, threshold, value), inplace)


def softmax(input: Tensor, dim: int | None = _default("softmax", "dim"),
            dtype: Any = _default("softmax", "dtype")) -> Tensor:
    """``exp(input)`` normalised to sum to 1 along ``dim``, computed in ``dtype`` if given."""
    return _C.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = _default("log_softmax", "dim"),
                dtype: Any = _default("log_softmax", "dtype")) -> Tensor:
    """``log(softmax(input))`` along ``dim``, computed stably (in ``dtype`` if given)."""
    return _C.log_softmax(input, dim, dtype=dtype)


def softmin(input: Tensor, dim: int | None = _default("softmax", "dim"),
            dtype: Any = _default("softmax", "dtype")) -> Tensor:
    """``softmax(-input)`` along ``dim``."""
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
    """``input`` divided by its ``p``-norm along ``dim``, the norm clamped to ``>= eps``."""
    n = _C.norm(input, p, dim, True)
    return input / _C.clamp(n, eps)


class _BinaryCrossEntropy(Function):
    """Elementwise BCE of probabilities with PyTorch's backward: written as a Function because
    differentiating the clamped logs gives 0 * inf = NaN where the input is exactly 0 or 1,
    where PyTorch's ``(x - t) / max(x (1 - x), 1e-12)`` stays finite."""

    @staticmethod
    def forward(ctx: FunctionCtx, input: Tensor, target: Tensor, weight: Tensor | None
                ) -> Tensor:
        log_x = _C.clamp(_C.log(input), -100.0)
        log_1mx = _C.clamp(_C.log1p(-input), -100.0)
        loss = (target - 1) * log_1mx - target * log_x
        if weight is not None:
            loss = loss * weight
        ctx.save_for_backward(input, target, weight)
        return loss

    @staticmethod
    def backward(ctx: FunctionCtx, dy: Tensor) -> tuple[Any, ...]:
        input, target, weight = ctx.saved_tensors
        if weight is not None:
            dy = dy * weight
        d_input = d_target = None
        if ctx.needs_input_grad[0]:
            d_input = dy * (input - target) / _C.clamp((1 - input) * input, 1e-12)
        if ctx.needs_input_grad[1]:
            d_target = dy * (_C.log1p(-input) - _C.log(input))   # unclamped, as PyTorch
        return d_input, d_target, None


def _check_probabilities(input: Tensor) -> None:
    """PyTorch's eager range check (one device-to-host read of a bool); skipped under a trace,
    where out-of-range inputs give NaN or meaningless values instead of an error."""
    v = input._value
    if isinstance(v, Tracer) or v.size == 0:
        return
    with jax.ensure_compile_time_eval():
        ok = bool(jax.device_get(jnp.all((v >= 0) & (v <= 1))))
    if not ok:
        raise RuntimeError("all elements of input should be between 0 and 1")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: Any = None, reduce: Any = None, reduction: str = "mean"
                         ) -> Tensor:
    """``-w [t log(x) + (1 - t) log(1 - x)]`` of probabilities ``x``, reduced; each log is
    clamped to >= -100 (as PyTorch) so a saturated probability gives a finite loss and the
    gradient is PyTorch's ``w (x - t) / max(x (1 - x), 1e-12)``. ``weight`` broadcasts to the
    input; no gradient flows to it (PyTorch does not implement one either)."""
    if size_average is not None or reduce is not None:
        raise TypeError("binary_cross_entropy(): size_average and reduce are deprecated in "
                        "PyTorch and not supported by jflow; use reduction")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({tuple(target.shape)}) that is different to the "
                         f"input size ({tuple(input.shape)}) is deprecated. Please ensure they "
                         "have the same size.")
    if not input.is_floating_point():
        raise TypeError(f"binary_cross_entropy(): expected a floating point input, got "
                        f"{input.dtype}")
    _check_probabilities(input)
    target = target.to(input.dtype)
    if weight is not None:
        weight = weight.to(input.dtype)
        if weight.requires_grad:
            raise RuntimeError("the derivative for 'weight' is not implemented")
    loss = _BinaryCrossEntropy.apply(input, target, weight)
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


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
