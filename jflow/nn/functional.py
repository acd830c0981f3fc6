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
from ..functional import F as _F
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
__all__ += ["binary_cross_entropy", "gumbel_softmax"]
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


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample from the Gumbel-softmax (concrete) distribution over ``dim``:
    ``softmax((logits + g) / tau)`` with ``g = -log(E)``, ``E ~ Exp(1)``. ``hard=True`` returns
    the one-hot of the sample's argmax in the forward pass with the soft sample's gradient
    (straight-through). ``eps`` is unused, as in PyTorch."""
    if not tau > 0:
        raise ValueError(f"gumbel_softmax(): argument 'tau' must be positive, got {tau}")
    noise = _C.neg(_C.log(logits.new_empty(tuple(logits.shape)).exponential_()))
    soft = _C.softmax((logits + noise) / tau, dim)
    if not hard:
        return soft
    pick = _C.argmax(soft, dim, True)
    one_hot = _C.scatter(soft.new_zeros(tuple(soft.shape)), dim, pick, 1.0)
    return one_hot - soft.detach() + soft


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


def _pool_output_size(input: Tensor, output_size: Any, nd: int) -> Any:
    """``output_size`` with ``None`` entries replaced by the input's size there (PyTorch)."""
    if output_size is None or isinstance(output_size, int):
        return output_size
    os = tuple(output_size)
    if None in os and len(os) == nd:
        lead = input.dim() - nd
        return tuple(input.shape[lead + i] if v is None else v for i, v in enumerate(os))
    return os


def _max_pool(nd: int, input: Tensor, kernel_size: Any, stride: Any, padding: Any,
              dilation: Any, ceil_mode: bool, return_indices: bool) -> Any:
    args = (input, kernel_size, stride, padding, dilation, ceil_mode)
    if return_indices:
        return tuple(getattr(_C, f"max_pool{nd}d_with_indices")(*args))
    return getattr(_C, f"max_pool{nd}d")(*args)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = _default("max_pool1d", "stride"),
               padding: Any = _default("max_pool1d", "padding"),
               dilation: Any = _default("max_pool1d", "dilation"),
               ceil_mode: bool = _default("max_pool1d", "ceil_mode"),
               return_indices: bool = False) -> Any:
    """1-d max pooling (``flow._C.max_pool1d``); ``return_indices=True`` returns
    ``(output, indices)`` as ``max_pool1d_with_indices``."""
    return _max_pool(1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = _default("max_pool2d", "stride"),
               padding: Any = _default("max_pool2d", "padding"),
               dilation: Any = _default("max_pool2d", "dilation"),
               ceil_mode: bool = _default("max_pool2d", "ceil_mode"),
               return_indices: bool = False) -> Any:
    """2-d max pooling (``flow._C.max_pool2d``); ``return_indices=True`` returns
    ``(output, indices)`` as ``max_pool2d_with_indices``."""
    return _max_pool(2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = _default("max_pool3d", "stride"),
               padding: Any = _default("max_pool3d", "padding"),
               dilation: Any = _default("max_pool3d", "dilation"),
               ceil_mode: bool = _default("max_pool3d", "ceil_mode"),
               return_indices: bool = False) -> Any:
    """3-d max pooling (``flow._C.max_pool3d``); ``return_indices=True`` returns
    ``(output, indices)`` as ``max_pool3d_with_indices``."""
    return _max_pool(3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _adaptive_max_pool_fn(nd: int) -> Any:
    op = getattr(_C, f"adaptive_max_pool{nd}d")
    name = f"adaptive_max_pool{nd}d"

    def adaptive_max_pool(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
        out, idx = op(input, _pool_output_size(input, output_size, nd))
        return (out, idx) if return_indices else out

    adaptive_max_pool.__name__ = adaptive_max_pool.__qualname__ = name
    adaptive_max_pool.__doc__ = (f"{nd}-d adaptive max pooling; ``None`` in ``output_size`` "
                                 f"keeps the input's size; ``return_indices=True`` returns "
                                 f"``(output, indices)``.")
    return adaptive_max_pool


adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d = (
    _adaptive_max_pool_fn(n) for n in (1, 2, 3))


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any) -> Any:
    """2-d adaptive max pooling: ``(output, indices)``; ``None`` in ``output_size`` keeps
    the input's size."""
    return _C.adaptive_max_pool2d_with_indices(input, _pool_output_size(input, output_size, 2))


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any) -> Any:
    """3-d adaptive max pooling: ``(output, indices)``; ``None`` in ``output_size`` keeps
    the input's size."""
    return _C.adaptive_max_pool3d_with_indices(input, _pool_output_size(input, output_size, 3))


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """2-d adaptive average pooling; ``None`` in ``output_size`` keeps the input's size."""
    return _C.adaptive_avg_pool2d(input, _pool_output_size(input, output_size, 2))


def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """3-d adaptive average pooling; ``None`` in ``output_size`` keeps the input's size."""
    return _C.adaptive_avg_pool3d(input, _pool_output_size(input, output_size, 3))


__all__ += ["max_pool1d", "max_pool2d", "max_pool3d", "adaptive_max_pool1d",
            "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_max_pool2d_with_indices",
            "adaptive_max_pool3d_with_indices", "adaptive_avg_pool2d",
            "adaptive_avg_pool3d"]  # pooling (return_indices, None output sizes)


one_hot = _C.one_hot
pad = _C.pad


# issue 14, breadth round 2: PyTorch's in-place activation functions (``f_(x)`` is
# ``f(x, inplace=True)``: writes into ``x`` and returns it)
def relu_(input: Tensor) -> Tensor:
    """``relu(input, inplace=True)``."""
    return relu(input, inplace=True)


def elu_(input: Tensor, alpha: float = _default("elu", "alpha")) -> Tensor:
    """``elu(input, alpha, inplace=True)``."""
    return elu(input, alpha, inplace=True)


def leaky_relu_(input: Tensor, negative_slope: float = _default("leaky_relu", "alpha")
                ) -> Tensor:
    """``leaky_relu(input, negative_slope, inplace=True)``."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Tensor, min_val: float = _default("hardtanh", "min_val"),
              max_val: float = _default("hardtanh", "max_val")) -> Tensor:
    """``hardtanh(input, min_val, max_val, inplace=True)``."""
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """``threshold(input, threshold, value, inplace=True)``."""
    return globals()["threshold"](input, threshold, value, inplace=True)


def celu_(input: Tensor, alpha: float = _default("celu", "alpha")) -> Tensor:
    """``celu(input, alpha, inplace=True)``."""
    return celu(input, alpha, inplace=True)


def selu_(input: Tensor) -> Tensor:
    """``selu(input, inplace=True)``."""
    return selu(input, inplace=True)


def rrelu_(input: Tensor, lower: float = _default("rrelu", "lower"),
           upper: float = _default("rrelu", "upper"), training: bool = False) -> Tensor:
    """``rrelu(input, lower, upper, training, inplace=True)``."""
    return _C.rrelu(input, lower, upper, training, True)


__all__ += ["relu_", "elu_", "leaky_relu_", "hardtanh_", "threshold_", "celu_", "selu_",
            "rrelu_"]


def unfold(input: Tensor, kernel_size: Any, dilation: Any = _default("im2col", "dilation"),
           padding: Any = _default("im2col", "padding"),
           stride: Any = _default("im2col", "stride")) -> Tensor:
    """Sliding blocks as columns (im2col): ``(N, C, H, W) -> (N, C kH kW, L)`` (or unbatched
    ``(C, H, W) -> (C kH kW, L)``), ``L`` the blocks in row-major order; the ``im2col`` op,
    whose backward is ``fold``. Not ``Tensor.unfold(dim, size, step)``."""
    return _F.im2col(input, kernel_size, dilation, padding, stride)


def fold(input: Tensor, output_size: Any, kernel_size: Any,
         dilation: Any = _default("col2im", "dilation"),
         padding: Any = _default("col2im", "padding"),
         stride: Any = _default("col2im", "stride")) -> Tensor:
    """Columns summed back into an image (col2im, the adjoint of :func:`unfold`; overlapping
    entries add up): ``(N, C kH kW, L) -> (N, C, *output_size)`` (or unbatched)."""
    return _F.col2im(input, output_size, kernel_size, dilation, padding, stride)


__all__ += ["unfold", "fold"]  # im2col / col2im (conv family)


def _export_functional_api() -> None:
    """Every other public ``flow._C`` function, under its own name."""
    g = globals()
    for name in _C.__all__:
        if name not in g:
            g[name] = getattr(_C, name)
            __all__.append(name)


_export_functional_api()
