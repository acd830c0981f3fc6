"""``Dropout``, ``LayerNorm``, ``RMSNorm``, ``GroupNorm``, ``LocalResponseNorm``,
``Embedding``, ``EmbeddingBag`` over ``flow._C``."""

from __future__ import annotations

from typing import Any

import numpy as np

from jflow.functional import api_default  # absolute: ruff resolves it for B008

from ... import _C
from ...autograd import Function, FunctionCtx, no_grad
from ...creation import empty, ones, tensor, zeros
from ...tensor import Tensor
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Dropout", "LayerNorm", "RMSNorm", "GroupNorm", "Embedding", "EmbeddingBag",
           "LocalResponseNorm"]


def _shape(s: Any) -> tuple[int, ...]:
    return (int(s),) if isinstance(s, int) else tuple(int(v) for v in s)


class Dropout(Module):
    """Zeroes elements with probability ``p`` and scales the rest by ``1/(1-p)`` in training
    mode (draws from jflow's default generator); the identity in eval mode."""

    def __init__(self, p: float = api_default("dropout", "p"),
                 inplace: bool = api_default("dropout", "inplace")) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = float(p), inplace

    def forward(self, input: Tensor) -> Tensor:
        """``input`` with elements zeroed (prob. ``p``) and scaled by ``1/(1-p)`` in training."""
        return _C.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class LayerNorm(Module):
    """Normalises over the last ``len(normalized_shape)`` dims; weight 1, bias 0."""

    def __init__(self, normalized_shape: Any, eps: float = api_default("layer_norm", "eps"),
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = float(eps), elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(zeros(*self.normalized_shape, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self) -> None:
        """Sets ``weight`` to 1 and ``bias`` to 0."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` normalised over its last ``len(normalized_shape)`` dims, then affine."""
        return _C.layer_norm(input, list(self.normalized_shape), self.weight, self.bias,
                             self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class RMSNorm(Module):
    """``x / sqrt(mean(x²) + eps) * weight`` over the last dims (``eps=None``: the dtype's
    machine epsilon, as PyTorch)."""

    def __init__(self, normalized_shape: Any, eps: float | None = api_default("rms_norm", "eps"),
                 elementwise_affine: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        """Sets ``weight`` to 1."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        """``input / sqrt(mean(input²) + eps) * weight`` over the last dims."""
        return _C.rms_norm(input, list(self.normalized_shape), self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    """Normalises ``(N, C, ...)`` over groups of ``C / num_groups`` channels; per-channel
    affine weight 1 and bias 0."""

    def __init__(self, num_groups: int, num_channels: int,
                 eps: float = api_default("group_norm", "eps"), affine: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels = int(num_groups), int(num_channels)
        self.eps, self.affine = float(eps), affine
        if affine:
            self.weight = Parameter(ones(num_channels, dtype=dtype, device=device))
            self.bias = Parameter(zeros(num_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input: Tensor) -> Tensor:
        """``(N, C, *)`` normalised per sample over each group of channels, then affine."""
        return _C.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class Embedding(Module):
    """A lookup table ``weight[num_embeddings, embedding_dim]`` initialised N(0, 1); the row
    ``padding_idx`` (if given) starts at zero and gets no gradient."""

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 padding_idx: int | None = api_default("embedding", "padding_idx"),
                 max_norm: float | None = api_default("embedding", "max_norm"),
                 norm_type: float = api_default("embedding", "norm_type"),
                 scale_grad_by_freq: bool = api_default("embedding", "scale_grad_by_freq"),
                 sparse: bool = api_default("embedding", "sparse"),
                 _weight: Tensor | None = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError("padding_idx must be within num_embeddings")
            padding_idx = padding_idx % num_embeddings
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, dtype=dtype,
                                          device=device), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError("Shape of weight does not match num_embeddings and "
                                 "embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """Re-draws ``weight`` from N(0, 1) and zeroes the ``padding_idx`` row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            pad = _C.one_hot(tensor([self.padding_idx]), self.num_embeddings)
            keep = (1 - pad).reshape(self.num_embeddings, 1).to(self.weight.dtype)
            with no_grad():
                self.weight.copy_(self.weight * keep)

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, **kwargs: Any) -> Embedding:
        """An ``Embedding`` over the 2-D ``embeddings``, frozen unless ``freeze=False``."""
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, _weight=embeddings, _freeze=freeze, **kwargs)

    def forward(self, input: Tensor) -> Tensor:
        """The rows of ``weight`` picked by integer ``input``: ``(*) -> (*, embedding_dim)``."""
        return _C.embedding(input, self.weight, self.padding_idx, self.max_norm,
                            self.norm_type, self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        return s


class EmbeddingBag(Module):
    """Sums, averages or takes the max of bags of rows of ``weight[num_embeddings,
    embedding_dim]`` (initialised N(0, 1); the ``padding_idx`` row starts at zero and is left
    out of its bags) without materialising the looked-up rows per bag
    (``torch.nn.EmbeddingBag``)."""

    def __init__(self, num_embeddings: int, embedding_dim: int,
                 max_norm: float | None = api_default("embedding_bag", "max_norm"),
                 norm_type: float = api_default("embedding_bag", "norm_type"),
                 scale_grad_by_freq: bool = api_default("embedding_bag", "scale_grad_by_freq"),
                 mode: str = api_default("embedding_bag", "mode"),
                 sparse: bool = api_default("embedding_bag", "sparse"),
                 _weight: Tensor | None = None,
                 include_last_offset: bool = api_default("embedding_bag", "include_last_offset"),
                 padding_idx: int | None = api_default("embedding_bag", "padding_idx"),
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError("EmbeddingBag: padding_idx must be within num_embeddings")
            padding_idx = padding_idx % num_embeddings
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset = include_last_offset
        if _weight is None:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, dtype=dtype,
                                          device=device))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError("EmbeddingBag: shape of weight does not match num_embeddings "
                                 "and embedding_dim")
            self.weight = Parameter(_weight)

    def reset_parameters(self) -> None:
        """Re-draws ``weight`` from N(0, 1) and zeroes the ``padding_idx`` row."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        **kwargs: Any) -> EmbeddingBag:
        """An ``EmbeddingBag`` over the 2-D ``embeddings``, frozen unless ``freeze=False``."""
        rows, cols = embeddings.shape
        bag = cls(rows, cols, _weight=embeddings, **kwargs)
        bag.weight.requires_grad = not freeze
        return bag

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        """One reduced row per bag: ``(B, embedding_dim)``."""
        return _C.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                                self.scale_grad_by_freq, self.mode, self.sparse,
                                per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class LocalResponseNorm(Module):
    """Normalises each channel of (N, C, *) by the squares of its ``size`` neighbouring
    channels: ``x / (k + alpha / size * sum x^2) ** beta`` (``torch.nn.LocalResponseNorm``)."""

    def __init__(self, size: int, alpha: float = api_default("local_response_norm", "alpha"),
                 beta: float = api_default("local_response_norm", "beta"),
                 k: float = api_default("local_response_norm", "k")) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = int(size), float(alpha), float(beta), float(k)

    def forward(self, input: Tensor) -> Tensor:
        """``input`` normalised across channels."""
        return _C.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


def _lrn_window(channels: int, size: int) -> np.ndarray:
    """``M[d, c]``: how many times channel ``c``'s square enters channel ``d``'s sum in
    PyTorch's legacy ``CrossMapLRN2d`` forward (its running-window loop, replayed: channel 0
    is never removed from the window, as there)."""
    pre_pad = int((size - 1) / 2 + 1)
    m = np.zeros((channels, channels))
    m[0, :min(pre_pad, channels)] = 1
    for c in range(1, channels):
        m[c] = m[c - 1]
        if c < channels - pre_pad + 1:
            m[c, c + pre_pad - 1] += 1
        if c > pre_pad:
            m[c, c - pre_pad] -= 1
    return m


def _lrn_backward_window(channels: int, size: int) -> np.ndarray:
    """``B[c, d]``: channel ``d``'s ratio enters channel ``c``'s gradient in PyTorch's legacy
    backward (channels ``c - p .. c + size - 1 - p``, ``p = int(size - (size - 1) / 2)``)."""
    p = int(size - (size - 1) / 2)
    c = np.arange(channels)[:, None]
    d = np.arange(channels)[None, :]
    return ((d >= c - p) & (d <= c + size - 1 - p)).astype(np.float64)


def _channel_mix(x: Tensor, m: np.ndarray) -> Tensor:
    """``out[:, d] = sum_c m[d, c] * x[:, c]`` for (N, C, H, W) ``x``."""
    mt = tensor(m.T, dtype=x.dtype, device=x.device)
    return _C.matmul(x.transpose(1, 3), mt).transpose(1, 3)


class _CrossMapLRN2dFunction(Function):
    """PyTorch's legacy ``CrossMapLRN2d`` autograd function: its forward and its own backward
    formula (which is not the exact derivative of its forward at the channel edges)."""

    @staticmethod
    def forward(ctx: FunctionCtx, input: Tensor, size: int, alpha: float = 1e-4,
                beta: float = 0.75, k: float = 1) -> Tensor:
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             f"instead.")
        scale = _channel_mix(input * input, _lrn_window(input.shape[1], size)) \
            * (alpha / size) + k
        output = scale.pow(-beta) * input
        ctx.save_for_backward(input, output, scale)
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        return output

    @staticmethod
    def backward(ctx: FunctionCtx, grad_output: Tensor) -> Any:
        input, output, scale = ctx.saved_tensors
        size = ctx.size
        ratio = grad_output * output / scale
        accum = _channel_mix(ratio, _lrn_backward_window(input.shape[1], size))
        grad = scale.pow(-ctx.beta) * grad_output \
            - (2 * ctx.alpha * ctx.beta / size) * input * accum
        return grad, None, None, None, None


class CrossMapLRN2d(Module):
    """PyTorch's legacy (Lua Torch) cross-channel local response normalisation of 4-d inputs:
    ``x / (k + alpha / size * window_sum(x^2)) ** beta``, with PyTorch's window and backward
    formula (``LocalResponseNorm`` is the current form)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1
                 ) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


__all__ += ["CrossMapLRN2d"]
