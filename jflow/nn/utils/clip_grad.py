"""Gradient clipping, as ``torch.nn.utils``: ``clip_grad_norm_`` (and PyTorch 2.6's two halves
of it, ``get_total_norm`` and ``clip_grads_with_norm_``), ``clip_grad_value_``, and the
deprecated ``clip_grad_norm``."""

from __future__ import annotations

import math
import types
import warnings
from collections.abc import Iterable
from typing import Any

from ... import _C
from ...autograd import no_grad
from ...creation import tensor
from ...tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm"]


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: Any = None) -> Tensor:
    """The ``norm_type``-norm of the tensors' norms (as if concatenated into one vector):
    ``torch.nn.utils.get_total_norm``. ``error_if_nonfinite=True`` reads it back to raise on
    NaN / inf."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        if math.isinf(norm_type) and norm_type > 0:
            norms = [_C.amax(_C.abs(g)) for g in tensors]
            total = norms[0] if len(norms) == 1 else _C.amax(_C.stack(norms))
        else:
            norms = [_C.norm(g, norm_type) for g in tensors]
            total = norms[0] if len(norms) == 1 else _C.norm(_C.stack(norms), norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           f"`parameters` is non-finite, so it cannot be clipped. To "
                           f"disable this error and scale the gradients by the non-finite "
                           f"norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                          total_norm: Tensor, foreach: Any = None) -> None:
    """Scale the parameters' gradients in place by ``min(1, max_norm / (total_norm + 1e-6))``
    (``torch.nn.utils.clip_grads_with_norm_``; ``total_norm`` usually from
    :func:`get_total_norm`). The scale is a tensor: nothing is read back to the host."""
    grads = _grads(parameters)
    max_norm = float(max_norm)
    if not grads:
        return
    if not isinstance(total_norm, Tensor):
        total_norm = tensor(float(total_norm))
    with no_grad():
        coef = _C.clamp(max_norm / (total_norm + 1e-6), None, 1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach: Any = None) -> Tensor:
    """Scale the gradients in place so that their total ``norm_type``-norm (as if
    concatenated) is at most ``max_norm``; returns the total norm before clipping:
    :func:`get_total_norm` of the gradients, then :func:`clip_grads_with_norm_`.

    The scale ``min(1, max_norm / (total + 1e-6))`` is applied as a tensor, so no value is
    read back to the host (except with ``error_if_nonfinite=True``).
    """
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)  # (a generator would be exhausted by the first pass)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will "
                          "occur.", stacklevel=2)
    grads = _grads(parameters)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float,
                   norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: Any = None) -> Tensor:
    """Deprecated: :func:`clip_grad_norm_` with PyTorch's ``FutureWarning``."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: Any = None) -> None:
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place."""
    c = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-c, c)
