"""Functors of softmax and log_softmax.

``dim=None`` means the last axis (OneFlow's default). PyTorch's ``F.softmax(x)`` without a dim
instead guesses (dim 0 for 0-, 1- and 3-d inputs, else 1) and warns that this is deprecated;
jflow does not reproduce the guess — pass ``dim`` for PyTorch-identical results.

Like PyTorch, integer and bool inputs are refused unless ``dtype=`` names a floating dtype,
which casts the input before the op (PyTorch's way to get a float32 softmax of float16 data).
"""

from __future__ import annotations

from typing import Any

from ...ops import get
from ...random import default_generator
from ...tensor import Tensor
from ..promotion import assign_inplace, cast
from ..registry import functor
from .index import IndexOutOfRangeError, _int_index, normalize_dim
from .loss import host_min_max

_softmax = get("softmax").apply
_log_softmax = get("log_softmax").apply


def _prepare(fname: str, input: Tensor, dim: Any, dtype: Any) -> tuple[Tensor, int]:
    if dtype is not None:
        if not dtype.is_floating_point:
            raise TypeError(f"{fname}(): dtype must be a floating dtype, got {dtype}")
        input = cast(input, dtype.np)
    elif not input.is_floating_point():
        raise TypeError(f"{fname}(): expected a floating point input, got {input.dtype}; pass "
                        f"dtype=flow.float32 to compute it in floating point")
    return input, normalize_dim(fname, -1 if dim is None else dim, input._value.ndim)


@functor("Softmax")
def softmax(input: Tensor, dim: Any, dtype: Any) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (default: the last axis), numerically stable."""
    x, d = _prepare("softmax", input, dim, dtype)
    return _softmax(x, dim=d)


@functor("LogSoftmax")
def log_softmax(input: Tensor, dim: Any, dtype: Any) -> Tensor:
    """x - logsumexp(x) along ``dim`` (default: the last axis), numerically stable."""
    x, d = _prepare("log_softmax", input, dim, dtype)
    return _log_softmax(x, dim=d)


# -- embedding, dropout --------------------------------------------------------------------------

_embedding = get("embedding").apply
_dropout = get("dropout").apply


@functor("Embedding")
def embedding(input: Tensor, weight: Tensor, padding_idx: Any, max_norm: Any,
              scale_grad_by_freq: bool, sparse: bool) -> Tensor:
    """weight[input]; the ``padding_idx`` row gets no gradient. ``max_norm``,
    ``scale_grad_by_freq`` and ``sparse`` are not supported (an error if set)."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding(): max_norm, scale_grad_by_freq and sparse are "
                                  "not supported by jflow")
    _int_index("embedding", input, "input")
    n = int(weight._value.shape[0]) if weight._value.ndim == 2 else 0
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise ValueError(f"embedding(): padding_idx {padding_idx} must be within "
                             f"num_embeddings ({n})")
        padding_idx %= n
    mm = host_min_max(input) if weight._value.ndim == 2 else None
    if mm is not None and (mm[0] < 0 or mm[1] >= n):
        bad = mm[0] if mm[0] < 0 else mm[1]
        raise IndexOutOfRangeError(f"embedding(): index {bad} is out of bounds for "
                                   f"num_embeddings {n}")

    return _embedding(weight, input, padding_idx=padding_idx)


@functor("Dropout")
def dropout(input: Tensor, p: float, training: bool, inplace: bool, generator: Any) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1 / (1 - p) when
    ``training``; the identity otherwise. Draws from ``generator`` (default: the global one)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if not input.is_floating_point():
        raise TypeError(f"dropout(): expected a floating point input, got {input.dtype}")
    key, counter = (generator or default_generator)._next()
    y, _ = _dropout(input, key, counter, p=float(p))
    return assign_inplace(input, y, "dropout") if inplace else y
