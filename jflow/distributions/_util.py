"""Shared helpers: broadcasting parameters, logits <-> probabilities."""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import _ops


def as_param(x: Any) -> Tensor:
    """A float tensor (Python numbers take the default dtype)."""
    if isinstance(x, Tensor):
        return x if x.is_floating_point() else x.to(_ops.get_default_dtype())
    return _ops.tensor(x, dtype=_ops.get_default_dtype())


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Tensors (numbers converted) broadcast to one shape."""
    return tuple(_ops.broadcast_tensors(*(as_param(v) for v in values)))


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Softmax (or sigmoid when binary) of logits."""
    return _ops.sigmoid(logits) if is_binary else _ops.softmax(logits, -1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits of probabilities (clamped away from 0 and 1, as PyTorch)."""
    eps = _ops.finfo(probs.dtype).eps
    p = probs.clamp(eps, 1 - eps)
    return (_ops.log(p) - _ops.log1p(-p)) if is_binary else _ops.log(p)
