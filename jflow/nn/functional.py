"""``flow.nn.functional``: the functional API under ``torch.nn.functional`` names.

Activations take PyTorch's arguments (``inplace`` included); every other function is the
``flow._C`` function of the same name, picked up when this module is imported, so ops added
to api.yaml (``dropout``, ``layer_norm``, losses, ...) appear here without further wiring.
"""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from jflow.functional import api_default as _default  # absolute: ruff resolves it for B008

from .. import _C
from ..autograd.function import Function, FunctionCtx
from ..autograd.graph import history_handle
from ..creation import rand as _rand
from ..functional import F as _F
from ..functional.functors.attention import attention_math
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
__all__ += ["selu", "celu", "hardswish", "hardsigmoid", "threshold"]  # inplace
__all__ += ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "upsample",
            "upsample_nearest", "upsample_bilinear"]  # _functional_layout.py
__all__ += ["native_channel_shuffle", "conv_tbc"]

#: ``torch.nn.functional.native_channel_shuffle``: :func:`channel_shuffle`
native_channel_shuffle = channel_shuffle


def _tbc_arg(name: str, x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"conv_tbc(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:  # noqa: A002
    """``torch.conv_tbc`` (fairseq's time-batch-channel convolution): input (T, B, C_in),
    weight (K, C_in, C_out), bias (C_out,), ``pad`` zeros at both ends of time; output
    (T + 2 pad - K + 1, B, C_out)."""
    for name, t, nd in (("input", input, 3), ("weight", weight, 3), ("bias", bias, 1)):
        if _tbc_arg(name, t).ndim != nd:
            raise RuntimeError(f"conv_tbc(): {name} must have {nd} dims, got shape "
                               f"{list(t.shape)}")
    y = _C.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return y.permute(2, 0, 1)



def _inplace(input: Tensor, out: Tensor, inplace: bool) -> Tensor:
    return input.copy_(out) if inplace else out


def _original(input: Tensor, inplace: bool) -> Tensor:
    """What an in-place function made of several ops computes from: ``input`` itself when not
    in place, else a handle on its value and history that the final write leaves valid (the
    ops' saved inputs would otherwise be ``input``, modified by that write)."""
    return history_handle(input) if inplace and isinstance(input, Tensor) else input


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
    """``input * sigmoid(input)`` elementwise (a.k.a. swish); complex inputs too, as
    PyTorch (the composition: the op's kernel is real)."""
    if isinstance(input, Tensor) and input.is_complex():
        x = _original(input, inplace)
        return _inplace(input, x * _C.sigmoid(x), inplace)
    return _inplace(input, _C.silu(input), inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``input * tanh(softplus(input))`` elementwise."""
    x = _original(input, inplace)
    return _inplace(input, x * _C.tanh(_C.softplus(x)), inplace)


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


def _get_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    """PyTorch's legacy implicit dim (0 for 0-, 1- and 3-d inputs, else 1), with its warning."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  f"to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = _default("softmax", "dim"), _stacklevel: int = 3,
            dtype: Any = _default("softmax", "dtype")) -> Tensor:
    """``exp(input)`` normalised to sum to 1 along ``dim``, computed in ``dtype`` if given;
    ``dim=None`` is PyTorch's deprecated implicit dim (with its warning)."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return _C.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = _default("log_softmax", "dim"),
                _stacklevel: int = 3, dtype: Any = _default("log_softmax", "dtype")) -> Tensor:
    """``log(softmax(input))`` along ``dim``, computed stably (in ``dtype`` if given);
    ``dim=None`` is PyTorch's deprecated implicit dim (with its warning)."""
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return _C.log_softmax(input, dim, dtype=dtype)


def softmin(input: Tensor, dim: int | None = _default("softmax", "dim"), _stacklevel: int = 3,
            dtype: Any = _default("softmax", "dtype")) -> Tensor:
    """``softmax(-input)`` along ``dim`` (in ``dtype`` if given); ``dim=None`` is PyTorch's
    deprecated implicit dim (with its warning)."""
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
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


# PyTorch's in-place activation functions (``f_(x)`` is
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


# -- fractional max pooling, triplet loss with a distance function, multi-head attention ----------

def _fractional_max_pool(nd: int, input: Tensor, kernel_size: Any, output_size: Any,
                         output_ratio: Any, return_indices: bool, _random_samples: Any) -> Any:
    fname = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{fname} requires specifying either an output_size or an "
                         f"output_ratio")
    if output_size is None:
        ratio = (output_ratio,) * nd if isinstance(output_ratio, (int, float)) else \
            tuple(output_ratio)
        if len(ratio) == 1:
            ratio = ratio * nd
        if len(ratio) != nd:
            raise ValueError(f"{fname} requires output_ratio to either be a single Int or "
                             f"tuple of {nd} Ints.")
        output_size = [int(input.size(i - nd) * float(r)) for i, r in enumerate(ratio)]
    if _random_samples is None:
        n = 1 if input.dim() == nd + 1 else input.size(0)
        _random_samples = _rand(n, input.size(-nd - 1), nd, dtype=input.dtype,
                                      device=input.device)
    out, idx = getattr(_C, fname)(input, kernel_size, output_size, _random_samples)
    return (out, idx) if return_indices else out


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """2-d fractional max pooling (Graham): windows of ``kernel_size`` at pseudo-random
    starts, to ``output_size`` (or ``input size * output_ratio``); the starts come from
    ``_random_samples`` (N, C, 2) in [0, 1), drawn from jflow's generator when not given
    (with them given, results equal PyTorch's)."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None,
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Any = None) -> Any:
    """3-d fractional max pooling; ``_random_samples`` (N, C, 3) as in
    :func:`fractional_max_pool2d`."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Any = None) -> Any:
    """:func:`fractional_max_pool2d` returning ``(output, indices)``."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, True,
                                _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any, output_size: Any = None,
                                       output_ratio: Any = None, return_indices: bool = False,
                                       _random_samples: Any = None) -> Any:
    """:func:`fractional_max_pool3d` returning ``(output, indices)``."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, True,
                                _random_samples)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Any = None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` with any distance ``d`` (default
    ``pairwise_distance``); ``swap`` uses ``min(d(a, n), d(p, n))``, reduced."""
    fname = "triplet_margin_with_distance_loss"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{fname}(): {reduction!r} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"{fname}(): margin must be greater than 0, got {margin}")
    if not (anchor.dim() == positive.dim() == negative.dim()):
        raise RuntimeError(f"{fname}(): the anchor, positive, and negative tensors are expected "
                           f"to have the same number of dimensions, but got: anchor "
                           f"{anchor.dim()}D, positive {positive.dim()}D, and negative "
                           f"{negative.dim()}D inputs")
    dist = distance_function if distance_function is not None else _C.pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = _C.minimum(d_neg, dist(positive, negative))
    loss = _C.clamp_min(margin + d_pos - d_neg, 0.0)
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _mha_mask(fname: str, mask: Any, name: str, dtype: Any) -> Any:
    if mask is None:
        return None
    if mask._meta.dtype != np.dtype(np.bool_) and not mask.is_floating_point():
        raise TypeError(f"{fname}: only bool and floating types of {name} are supported, got "
                        f"{mask.dtype}")
    return mask


def _as_float_mask(mask: Tensor, dtype: Any) -> Tensor:
    """PyTorch's bool mask (True = masked) as an additive float mask (-inf where masked)."""
    if mask.is_floating_point():
        return mask.to(dtype)
    return (mask.to(dtype) * 0.0).masked_fill(mask, -math.inf)


def _pad_last(mask: Any) -> Any:
    """One more key column (attended: False / 0.0), as PyTorch's ``pad(mask, (0, 1))``."""
    return None if mask is None else _C.pad(mask, [0, 1])


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Any, in_proj_bias: Any, bias_k: Any, bias_v: Any, add_zero_attn: bool,
        dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Any, training: bool = True,
        key_padding_mask: Any = None, need_weights: bool = True, attn_mask: Any = None,
        use_separate_proj_weight: bool = False, q_proj_weight: Any = None,
        k_proj_weight: Any = None, v_proj_weight: Any = None, static_k: Any = None,
        static_v: Any = None, average_attn_weights: bool = True, is_causal: bool = False
) -> tuple[Tensor, Any]:
    """PyTorch's multi-head attention on (L, N, E) query and (S, N, E) key / value (or
    unbatched (L, E) / (S, E)): projections, optional ``bias_k`` / ``bias_v`` rows and a zero
    attention row, masks (bool: True = masked, or additive float), attention (the fused op
    when the weights are not needed, else materialised), ``out_proj``. Returns
    ``(output, weights or None)``, weights (N, L, S) averaged over heads or (N, H, L, S).
    ``nn.MultiheadAttention`` runs this function. Differences from PyTorch: a query row with
    every key masked gives zeros (PyTorch: NaN), and ``is_causal=True`` without
    ``attn_mask`` applies the causal mask (PyTorch raises)."""
    fname = "multi_head_attention_forward()"
    if query.dim() not in (2, 3):
        raise RuntimeError(f"{fname}: query should be unbatched 2D or batched 3D tensor but "
                           f"received {query.dim()}-D query tensor")
    batched = query.dim() == 3
    if key.dim() != query.dim() or value.dim() != query.dim():
        raise RuntimeError(f"{fname}: for {'batched' if batched else 'unbatched'} "
                           f"({query.dim()}-D) query, expected key and value to be "
                           f"{query.dim()}-D but found {key.dim()}-D and {value.dim()}-D "
                           f"tensors respectively")
    if not batched:
        query, key, value = (t.unsqueeze(1) for t in (query, key, value))
        if key_padding_mask is not None:
            if key_padding_mask.dim() != 1:
                raise RuntimeError(f"{fname}: for unbatched (2-D) query, expected "
                                   f"key_padding_mask to be None or 1-D but found "
                                   f"{key_padding_mask.dim()}-D tensor instead")
            key_padding_mask = key_padding_mask.unsqueeze(0)
    n_l, n, e = (int(v) for v in query.shape)
    n_s = int(key.shape[0])
    if e != embed_dim_to_check:
        raise RuntimeError(f"{fname}: was expecting embedding dimension of "
                           f"{embed_dim_to_check}, but got {e}")
    h = int(num_heads)
    d = e // h
    if d * h != e:
        raise RuntimeError(f"{fname}: embed_dim {e} not divisible by num_heads {h}")
    if tuple(key.shape[:2]) != tuple(value.shape[:2]):
        raise RuntimeError(f"{fname}: key shape {list(key.shape)} does not match value shape "
                           f"{list(value.shape)}")
    key_padding_mask = _mha_mask(fname, key_padding_mask, "key_padding_mask", query.dtype)
    attn_mask = _mha_mask(fname, attn_mask, "attn_mask", query.dtype)
    # projections
    bq = bk = bv = None
    if in_proj_bias is not None:
        bq, bk, bv = in_proj_bias.chunk(3)
    if use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise RuntimeError(f"{fname}: use_separate_proj_weight is True but q_proj_weight, "
                               f"k_proj_weight or v_proj_weight is None")
        q = linear(query, q_proj_weight, bq)
        k = linear(key, k_proj_weight, bk)
        v = linear(value, v_proj_weight, bv)
    else:
        if in_proj_weight is None:
            raise RuntimeError(f"{fname}: use_separate_proj_weight is False but "
                               f"in_proj_weight is None")
        if query is key and key is value:   # self-attention: one product
            q, k, v = linear(query, in_proj_weight, in_proj_bias).chunk(3, dim=-1)
        else:
            wq, wk, wv = in_proj_weight.chunk(3)
            q, k, v = linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)
    # masks, (N, H, L, S)-broadcastable, PyTorch's convention (True / -inf = masked)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (n_l, n_s):
                raise RuntimeError(f"{fname}: the shape of the 2D attn_mask is "
                                   f"{list(attn_mask.shape)}, but should be {[n_l, n_s]}.")
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (n * h, n_l, n_s):
                raise RuntimeError(f"{fname}: the shape of the 3D attn_mask is "
                                   f"{list(attn_mask.shape)}, but should be "
                                   f"{[n * h, n_l, n_s]}.")
        else:
            raise RuntimeError(f"{fname}: attn_mask's dimension {attn_mask.dim()} is not "
                               f"supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise RuntimeError(f"{fname}: bias cannot be added to static key / value")
        k = _C.cat([k, bias_k.reshape(1, 1, e).expand(1, n, e)], 0)
        v = _C.cat([v, bias_v.reshape(1, 1, e).expand(1, n, e)], 0)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise RuntimeError(f"{fname}: bias_k and bias_v must both be given or both be None")
    q = q.reshape(n_l, n, h, d).permute(1, 2, 0, 3)
    heads = []
    for t, static, name in ((k, static_k, "static_k"), (v, static_v, "static_v")):
        if static is None:
            heads.append(t.reshape(t.shape[0], n, h, d).permute(1, 2, 0, 3))
            continue
        if static.dim() != 3 or static.shape[0] != n * h or static.shape[2] != d:
            raise RuntimeError(f"{fname}: expected {name} of shape [{n * h}, S, {d}], got "
                               f"{list(static.shape)}")
        heads.append(static.reshape(n, h, static.shape[1], d))
    k, v = heads
    if add_zero_attn:
        k = _C.cat([k, k.new_zeros((n, h, 1, d))], 2)
        v = _C.cat([v, v.new_zeros((n, h, 1, d))], 2)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    n_s = int(k.shape[2])
    masks = []
    if attn_mask is not None:
        masks.append(attn_mask if attn_mask.dim() == 2 else attn_mask.reshape(n, h, n_l, n_s))
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (n, n_s):
            raise RuntimeError(f"{fname}: expecting key_padding_mask shape of {[n, n_s]}, but "
                               f"got {list(key_padding_mask.shape)}")
        masks.append(key_padding_mask.reshape(n, 1, 1, n_s))
    if is_causal and attn_mask is not None and key_padding_mask is None and not need_weights \
            and not add_zero_attn and bias_k is None:
        masks = []              # the hint: the fused op applies the causal mask itself
    elif is_causal and attn_mask is not None:
        is_causal = False       # the given mask is the causal one (PyTorch's reading)
    mask = None
    if masks and builtins.all(not m.is_floating_point() for m in masks):
        mask = masks[0].logical_not()       # the op's convention: True = attend
        for m in masks[1:]:
            mask = mask & m.logical_not()
    elif masks:
        mask = _as_float_mask(masks[0], q.dtype)
        for m in masks[1:]:
            mask = mask + _as_float_mask(m, q.dtype)
    p = float(dropout_p) if training else 0.0
    weights = None
    if need_weights:
        out, weights = attention_math(q, k, v, mask, p, bool(is_causal), scale=None,
                                      generator=None)
    else:
        out = _C.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p,
                                              is_causal=bool(is_causal))
    out = linear(out.permute(2, 0, 1, 3).reshape(n_l, n, e), out_proj_weight, out_proj_bias)
    if weights is not None and average_attn_weights:
        weights = weights.mean(dim=1)
    if not batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights


__all__ += ["fractional_max_pool2d", "fractional_max_pool3d",
            "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices",
            "triplet_margin_with_distance_loss", "multi_head_attention_forward"]

# linear + cross_entropy in one call
def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,  # noqa: A002
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options: Any = None) -> Tensor:
    """``torch.nn.functional.linear_cross_entropy``: ``cross_entropy(linear(input,
    linear_weight, linear_bias), target, ...)``. ``input`` is ``(in_features,)`` or
    ``(N, in_features)``; ``linear_weight`` ``(C, in_features)`` or ``(C, d_1 ..., d_K,
    in_features)`` (K-dimensional loss over logits ``(N, C, d_1 ..., d_K)``, batched input
    only), ``linear_bias`` ``(C, d_1 ..., d_K)``. ``ignore_index=None`` means -100 for class
    indices and is the only value allowed for probability targets (PyTorch's rule).
    ``options`` (PyTorch's ``LinearCrossEntropyOptions``: chunking the batch to save memory)
    is accepted and changes nothing: the values and gradients are the same either way, and
    jflow computes the reference path."""
    fname = "linear_cross_entropy()"
    for name, x in (("input", input), ("linear_weight", linear_weight), ("target", target)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{fname}: argument '{name}' must be Tensor, not "
                            f"{type(x).__name__}")
    if options is not None and not hasattr(options, "batch_chunk_size"):
        raise TypeError(f"{fname}: 'options' must be a LinearCrossEntropyOptions or None, got "
                        f"{type(options).__name__}")
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"{fname}: expected input with dimensionality 1 or 2, got "
                           f"{input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"{fname}: expected linear_weight with dimensionality at least 2, "
                           f"got {linear_weight.dim()}")
    batch = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"{fname}: expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and "
                           f"{linear_weight.shape[-1]}, respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"{fname}: expected linear_bias shape {(num_classes, *out_features)}"
                           f", got {tuple(linear_bias.shape)}")
    if out_features and not batch:
        raise RuntimeError(f"{fname}: K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, "
                           f"(N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = (*batch, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError(f"{fname}: ignore_index cannot be specified when target contains "
                           f"probabilities")
    if out_features:
        linear_weight = linear_weight.reshape(-1, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(-1)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return _C.cross_entropy(logits, target, weight=weight, reduction=reduction,
                            ignore_index=-100 if ignore_index is None else ignore_index,
                            label_smoothing=label_smoothing)

__all__ += ["linear_cross_entropy"]
