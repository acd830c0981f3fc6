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
from ...tensor import Tensor
from ..promotion import cast
from ..registry import functor
from .index import normalize_dim

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
def softmax(input: Tensor, dim: Any = None, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim`` (default: the last axis), numerically stable."""
    x, d = _prepare("softmax", input, dim, dtype)
    return _softmax(x, dim=d)


@functor("LogSoftmax")
def log_softmax(input: Tensor, dim: Any = None, dtype: Any = None) -> Tensor:
    """x - logsumexp(x) along ``dim`` (default: the last axis), numerically stable."""
    x, d = _prepare("log_softmax", input, dim, dtype)
    return _log_softmax(x, dim=d)
