"""The Tensor methods about storage and aliasing, as PyTorch documents them for the layouts
jflow has: every non-view tensor is dense and row-major; a view reports the strides and
offset of the base elements it aliases (:mod:`.layout`).

``stride()`` / ``storage_offset()`` / ``is_contiguous()`` / ``contiguous()``, ``_base`` /
``_is_view()``, ``.data``, and the view makers that are not ops of their own: ``as_strided``
and ``diagonal`` (strided views of the base, read with an element gather).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..tensor import Tensor
from .alias import _ALIAS, _as_strided_read, alias, base_of, detach, layout_of, unview
from .layout import is_contiguous

__all__ = ["as_strided", "diagonal"]

_INTS = (int, np.integer)


def _stride(self: Tensor, dim: int | None = None) -> Any:
    """Elements to step in the storage per step along each dim (a view reports its base's)."""
    strides = layout_of(self).strides
    if dim is None:
        return strides
    nd = len(strides)
    if isinstance(dim, bool) or not isinstance(dim, _INTS):
        raise TypeError(f"Tensor.stride(): argument 'dim' must be int, not {type(dim).__name__}")
    if not (-nd <= dim < nd if nd else dim in (0, -1)):
        raise IndexError(f"Tensor.stride(): dimension out of range (expected to be in range of "
                         f"[{-max(nd, 1)}, {max(nd, 1) - 1}], but got {dim})")
    return strides[dim] if nd else 1


def _storage_offset(self: Tensor) -> int:
    """``Tensor.storage_offset()``: the offset of the first element in its base, in elements."""
    return layout_of(self).offset


def _is_contiguous(self: Tensor, memory_format: Any = None) -> bool:
    """Row-major contiguity (PyTorch's rule: size-1 dims and empty tensors do not count).
    Only ``memory_format=None`` / ``contiguous_format`` exists in jflow."""
    _check_format("is_contiguous", memory_format)
    return is_contiguous(layout_of(self))


def _contiguous(self: Tensor, memory_format: Any = None) -> Tensor:
    """``self`` when contiguous, else a new tensor with the same values and history that
    aliases nothing (PyTorch copies; jflow's arrays are immutable, so no data moves)."""
    _check_format("contiguous", memory_format)
    if not self._aliases or is_contiguous(layout_of(self)):
        return self
    return unview(self)


def _check_format(fname: str, memory_format: Any) -> None:
    if memory_format is not None and str(memory_format) not in ("contiguous_format",
                                                                "torch.contiguous_format"):
        raise ValueError(f"Tensor.{fname}(): memory_format {memory_format!r} is not supported "
                         f"(jflow tensors are row-major: use None / contiguous_format)")


def _is_view(self: Tensor) -> bool:
    return base_of(self) is not None


def _get_data(self: Tensor) -> Tensor:
    """The values cut from the graph, aliasing this tensor (``p.data.mul_(0.9)`` updates
    ``p``, untracked; as ``detach()``)."""
    return detach(self)


def _set_data(self: Tensor, value: Tensor) -> None:
    """``x.data = t``: ``x`` holds ``t``'s values from now on (any shape), keeping its own
    autograd flags; a view stops aliasing its base."""
    if not isinstance(value, Tensor):
        raise TypeError(f"Tensor.data must be assigned a Tensor, got {type(value).__name__}")
    if self._aliases:  # a plain tensor from now on, with the view's current autograd fields
        grad_fn, nr, req = self.grad_fn, getattr(self, "_output_nr", 0), self._requires_grad
        self.__class__ = Tensor
        self._version = 0
        self.grad_fn, self._output_nr, self._requires_grad = grad_fn, nr, req
    self._value = value._value
    self._global = value._global
    self._version += 1


def as_strided(input: Tensor, size: Sequence[int], stride: Sequence[int],
               storage_offset: int | None = None) -> Tensor:
    """A view of ``input``'s storage (its base's elements, row-major) with the given sizes,
    strides and offset (default: ``input``'s own offset), as ``torch.as_strided``. Reading
    gathers those elements; writing scatters into them (refused where elements repeat)."""
    size, stride = _ints("as_strided", "size", size), _ints("as_strided", "stride", stride)
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided(): mismatch in length of strides and shape ({len(stride)}"
                           f" strides for {len(size)} sizes)")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided(): sizes and strides must be non-negative, got size "
                           f"{list(size)} and stride {list(stride)}")
    lay = layout_of(input)
    offset = lay.offset if storage_offset is None else int(storage_offset)
    base = _ALIAS.__get__(input).base if input._aliases else input
    if base._meta.dtype != input._meta.dtype:
        raise RuntimeError(f"as_strided(): input is a {input.dtype} view of a {base.dtype} "
                           f"tensor (view_as_real / real / imag ...); jflow's as_strided "
                           f"addresses the base's elements: call it on a clone() instead")
    from_base = _as_strided_read(base, size, stride, offset)
    return alias(from_base, input, "as_strided", (size, stride, offset))


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal of the ``(dim1, dim2)`` planes as the last dim: a view (writes reach
    ``input``), as ``torch.diagonal``."""
    nd = input.ndim
    if nd < 2:
        raise RuntimeError(f"diagonal(): the input must have at least 2 dims, got {nd}")
    d1, d2 = _wrap_dim("diagonal", dim1, nd), _wrap_dim("diagonal", dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal(): dim1 and dim2 cannot be identical, got {dim1} and "
                           f"{dim2}")
    lay = layout_of(input)
    n1, n2 = lay.sizes[d1], lay.sizes[d2]
    n = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    start = lay.offset
    if n:
        start += (offset * lay.strides[d2] if offset >= 0 else -offset * lay.strides[d1])
    keep = [d for d in range(nd) if d not in (d1, d2)]
    size = tuple(lay.sizes[d] for d in keep) + (n,)
    stride = tuple(lay.strides[d] for d in keep) + (lay.strides[d1] + lay.strides[d2],)
    return as_strided(input, size, stride, start)


def _ints(fname: str, what: str, xs: Any) -> tuple[int, ...]:
    try:
        out = tuple(int(x) for x in xs if not isinstance(x, bool))
        if len(out) != len(tuple(xs)):
            raise TypeError
    except TypeError:
        raise TypeError(f"{fname}(): {what} must be a sequence of ints, got {xs!r}") from None
    return out


def _wrap_dim(fname: str, dim: int, nd: int) -> int:
    if not -nd <= dim < nd:
        raise IndexError(f"{fname}(): dimension out of range (expected to be in range of "
                         f"[{-nd}, {nd - 1}], but got {dim})")
    return dim % nd


Tensor.stride = _stride  # type: ignore[attr-defined]
Tensor.storage_offset = _storage_offset  # type: ignore[attr-defined]
Tensor.is_contiguous = _is_contiguous  # type: ignore[attr-defined]
Tensor.contiguous = _contiguous  # type: ignore[attr-defined]
Tensor._is_view = _is_view  # type: ignore[attr-defined]
Tensor._base = property(base_of)  # type: ignore[attr-defined]
Tensor.data = property(_get_data, _set_data)  # type: ignore[attr-defined]
Tensor.as_strided = as_strided  # type: ignore[attr-defined]
Tensor.diagonal = diagonal  # type: ignore[attr-defined]
