"""In-place writes of a given value: ``zero_``, ``fill_``, ``copy_``, ``fill_diagonal_``, and
``torch.fill`` (a new filled tensor).

Each result goes through ``assign_inplace``, so views of the tensor see the write and the
graph is kept as PyTorch's (a filled tensor with history still requires grad; a 0-d ``value``
that requires grad gets the gradient's sum). Random fills are in ``random_fills.py``.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from ..autograd.grad_mode import is_grad_enabled
from ..creation import tensor
from ..functional import F
from ..functional.promotion import assign_inplace, cast
from ..sharding.sbp import broadcast as _broadcast
from ..tensor import Tensor, _wrap
from ._forward import _SCALARS, _tensors


def zero_(self: Tensor) -> Tensor:
    """Fill with zeros in place."""
    return fill_(self, 0)


def fill_(self: Tensor, value: Any) -> Tensor:
    """Fill with ``value`` (a number or a 0-d tensor) in place. As PyTorch, the graph is kept:
    a tensor with history still requires grad (a zero gradient reaches its old value), and a
    ``value`` that requires grad gets the sum of this tensor's gradient."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.ndim} dimensions")
        if value._requires_grad and is_grad_enabled():
            filled = F.broadcast_to(cast(value, self._meta.dtype), tuple(self.shape))
            return assign_inplace(self, filled, "fill_")
        value = value.item()
    if not isinstance(value, _SCALARS):
        raise TypeError(f"fill_(): argument 'value' must be a Number, not {type(value).__name__}")
    filled = F.full(tuple(self.shape), value, dtype=self.dtype,
                    device="meta" if self.is_meta else None)
    return assign_inplace(self, filled, "fill_")


def copy_(self: Tensor, src: Any) -> Tensor:
    """Copy ``src`` (broadcast to this shape, cast to this dtype) into this tensor."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src.is_meta != self.is_meta:  # PyTorch's rules for the meta device (jflow.meta)
        if src.is_meta:
            raise NotImplementedError("copy_(): Cannot copy out of meta tensor; no data! "
                                      "(meta tensors have shape and dtype only)")
        src = src.to("meta")  # into a meta tensor: a no-op on data, checked as a copy
    v = cast(src, self._meta.dtype)
    if tuple(v.shape) != tuple(self.shape):
        v = F.broadcast_to(v, tuple(self.shape))
    return assign_inplace(self, v, "copy_")


def fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Write ``fill_value`` on the main diagonal in place (PyTorch's ``fill_diagonal_``): a
    2-d tensor, or any rank with all dimensions equal; ``wrap=True`` restarts the diagonal
    every ``columns + 1`` rows of a tall matrix."""
    shape = tuple(self.shape)
    if len(shape) < 2:
        raise RuntimeError(f"fill_diagonal_: dimensions must be larger than 1, got {len(shape)}")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise RuntimeError(f"fill_diagonal_: all dimensions of input must be of equal length, "
                           f"got shape {list(shape)}")
    n = int(np.prod(shape))
    strides = np.cumprod((1,) + shape[:0:-1])[::-1]
    step = int(strides.sum())
    stop = n if (wrap and len(shape) == 2) else min(shape) * step
    mask = np.zeros(n, bool)
    mask[0:min(stop, n):step] = True
    keep = _wrap(jax.numpy.asarray(mask.reshape(shape)))
    if self._global is not None:   # the mask laid out like ``self``, on every device
        keep = keep.to_global(self.placement, [_broadcast] * len(self.sbp))
    out = cast(F.where(keep, fill_value, self), self._meta.dtype)
    return assign_inplace(self, out, "fill_diagonal_")


def fill(input: Tensor, value: Any) -> Tensor:
    """``torch.fill``: a new tensor of ``input``'s shape and dtype filled with ``value`` (a
    number or a 0-d tensor, which gets the gradient's sum)."""
    _tensors("fill", input)
    # the result requires grad when input does (a zero gradient reaches input, as PyTorch's
    # FillBackward), and a 0-d value tensor gets the gradient's sum
    out = fill_(F.clone(input.detach()), value)
    if input.requires_grad and is_grad_enabled():
        out = F.where(flow_true(), out, input)
    return out


def flow_true() -> Tensor:
    """A 0-d bool True (a where() that keeps its first operand and joins the second's graph)."""
    return tensor(True)


Tensor.zero_ = zero_
Tensor.fill_ = fill_
Tensor.copy_ = copy_
Tensor.fill_diagonal_ = fill_diagonal_
