"""Gradient clipping, as ``torch.nn.utils.clip_grad_norm_`` / ``clip_grad_value_``."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ... import _C
from ...autograd import no_grad
from ...creation import tensor
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: Any = None) -> Tensor:
    """Scale the gradients in place so that their total ``norm_type``-norm (as if
    concatenated) is at most ``max_norm``; returns the total norm before clipping.

    The scale ``min(1, max_norm / (total + 1e-6))`` is applied as a tensor, so no value is
    read back to the host (except with ``error_if_nonfinite=True``).
    """
    grads = _grads(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return tensor(0.0)
    with no_grad():
        if math.isinf(norm_type):
            norms = [_C.amax(_C.abs(g)) for g in grads]
            total = norms[0] if len(norms) == 1 else _C.amax(_C.stack(norms))
        else:
            norms = [_C.norm(g, norm_type) for g in grads]
            total = norms[0] if len(norms) == 1 else _C.norm(_C.stack(norms), norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                               f"`parameters` is non-finite, so it cannot be clipped. To "
                               f"disable this error and scale the gradients by the non-finite "
                               f"norm anyway, set `error_if_nonfinite=False`")
        coef = _C.clamp(max_norm / (total + 1e-6), None, 1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: Any = None) -> None:
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    c = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-c, c)
