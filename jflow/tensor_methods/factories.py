"""``Tensor.new_zeros`` / ``new_ones`` / ``new_empty`` / ``new_full`` / ``new_tensor``: the
factories of ``creation.py`` with this tensor's dtype and device unless given (a plain tensor
even when ``self`` is an ``nn.Parameter``)."""

from __future__ import annotations

from typing import Any

from ..creation import _draw_device, _size_kw, empty, full, ones, tensor, zeros
from ..tensor import Tensor


def _new_kwargs(self: Tensor, dtype: Any, device: Any) -> dict[str, Any]:
    """dtype and device of a ``new_*`` tensor: ``self``'s unless given."""
    return {"dtype": self.dtype if dtype is None else dtype,
            "device": _draw_device(self) if device is None else device}


def new_zeros(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, **kw: Any) -> Tensor:
    """Zeros of ``size`` with this tensor's dtype and device (unless given); a plain tensor
    even when ``self`` is an ``nn.Parameter``."""
    return zeros(*_size_kw(size, kw, "new_zeros"), requires_grad=requires_grad,
                 **_new_kwargs(self, dtype, device))


def new_ones(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, **kw: Any) -> Tensor:
    """Ones of ``size`` (positional, or PyTorch's ``size=``) with this tensor's dtype and
    device (unless given)."""
    return ones(*_size_kw(size, kw, "new_ones"), requires_grad=requires_grad,
                **_new_kwargs(self, dtype, device))


def new_empty(self: Tensor, *size: Any, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, **kw: Any) -> Tensor:
    """``new_zeros`` (jflow has no uninitialised memory)."""
    return empty(*_size_kw(size, kw, "new_empty"), requires_grad=requires_grad,
                 **_new_kwargs(self, dtype, device))


def new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None,
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """``fill_value`` in ``size`` with this tensor's dtype and device (unless given)."""
    return full(size, fill_value, requires_grad=requires_grad,
                **_new_kwargs(self, dtype, device))


def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """A copy of ``data`` with this tensor's dtype and device (unless given), as
    ``torch.Tensor.new_tensor`` (``int_tensor.new_tensor([1.7])`` is ``[1]``)."""
    return tensor(data, requires_grad=requires_grad, **_new_kwargs(self, dtype, device))


Tensor.new_zeros = new_zeros
Tensor.new_ones = new_ones
Tensor.new_empty = new_empty
Tensor.new_full = new_full
Tensor.new_tensor = new_tensor
