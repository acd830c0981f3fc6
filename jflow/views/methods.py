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

import jax
import numpy as np

from .._dims import wrap_dim
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..memory_format import check_memory_format, is_contiguous_as
from ..ops import get as _get_op
from ..tensor import Tensor, _wrap, mark_constant
from .alias import _ALIAS, _as_strided_read, alias, base_of, detach, layout_of, unview
from .bounds import note_bounds_like
from .layout import Layout, flat_index, is_contiguous

__all__ = ["as_strided", "diagonal"]

_reshape = _get_op("reshape").apply
_getitem = _get_op("getitem").apply
_where = _get_op("where").apply

_INTS = (int, np.integer)


def _stride(self: Tensor, dim: int | None = None) -> Any:
    """Elements to step in the storage per step along each dim (a view reports its base's)."""
    strides = layout_of(self).strides
    if dim is None:
        return strides
    nd = len(strides)
    if isinstance(dim, bool) or not isinstance(dim, _INTS):
        raise TypeError(f"Tensor.stride(): argument 'dim' must be int, not {type(dim).__name__}")
    dim = wrap_dim("Tensor.stride", dim, nd)
    return strides[dim] if nd else 1


def _storage_offset(self: Tensor) -> int:
    """``Tensor.storage_offset()``: the offset of the first element in its base, in elements."""
    return layout_of(self).offset


def _is_contiguous(self: Tensor, memory_format: Any = None) -> bool:
    """Contiguity in ``memory_format`` (PyTorch's rules: size-1 dims and empty tensors do not
    count), judged from the strides jflow reports: row-major for every non-view tensor, so
    ``channels_last`` holds only where the two orders coincide (docs/porting.md)."""
    check_memory_format("Tensor.is_contiguous", memory_format)
    lay = layout_of(self)
    as_format = is_contiguous_as(lay.sizes, lay.strides, memory_format)
    return is_contiguous(lay) if as_format is None else as_format


def _contiguous(self: Tensor, memory_format: Any = None) -> Tensor:
    """``self`` when contiguous, else a new tensor with the same values and history that
    aliases nothing (PyTorch copies; jflow's arrays are immutable, so no data moves). A
    ``memory_format`` is checked as PyTorch checks it; the values never change with it."""
    check_memory_format("Tensor.contiguous", memory_format, self.ndim)
    if not self._aliases or is_contiguous(layout_of(self)):
        return self
    out = unview(self)
    if out._meta.dtype.kind in "iu":  # (sliced labels: their base's bounds, for a loss's check)
        note_bounds_like(out, self)
    return out


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
    if input._aliases and input.requires_grad and is_grad_enabled():
        from_base = _through_input(input, base, size, stride, offset)
    else:
        from_base = _as_strided_read(base, size, stride, offset)
    return alias(from_base, input, "as_strided", (size, stride, offset))


def _through_input(input: Tensor, base: Tensor, size: tuple, stride: tuple,  # noqa: A002
                   offset: int) -> Tensor:
    """``as_strided`` of a view that carries its own gradient (a view made a leaf with
    ``requires_grad_``, or one whose graph differs from its base's): the elements that lie in
    ``input`` are read from ``input`` (gradients reach it, as PyTorch's as_strided backward
    over the input's geometry), the others from the base, without gradient (PyTorch gives the
    storage outside the input none either)."""
    with no_grad():
        outside = _as_strided_read(base, size, stride, offset)
    flat = flat_index(Layout(size, stride, offset))
    mine = flat_index(layout_of(input)).reshape(-1)
    where = np.full(int(np.prod(base._meta.shape, dtype=np.int64)), -1, np.int64)
    where[mine[::-1]] = np.arange(mine.size, dtype=np.int64)[::-1]  # first position wins
    pos = where[flat]
    inside = pos >= 0
    flat_input = _reshape(input, shape=(int(mine.size),))
    taken = _getitem(flat_input, [_constant(np.where(inside, pos, 0))], spec="t")
    return _where(_constant(inside), taken, outside)


def _constant(a: np.ndarray) -> Tensor:
    return mark_constant(_wrap(jax.device_put(a)))


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
    if nd == 0:  # (diagonal-like views need two dims: a 0-d tensor takes no dim)
        raise IndexError(f"{fname}(): Dimension specified as {dim} but tensor has no dimensions")
    return wrap_dim(fname, dim, nd)


Tensor.stride = _stride  # type: ignore[attr-defined]
Tensor.storage_offset = _storage_offset  # type: ignore[attr-defined]
Tensor.is_contiguous = _is_contiguous  # type: ignore[attr-defined]
Tensor.contiguous = _contiguous  # type: ignore[attr-defined]
Tensor._is_view = _is_view  # type: ignore[attr-defined]
Tensor._base = property(base_of)  # type: ignore[attr-defined]
Tensor.data = property(_get_data, _set_data)  # type: ignore[attr-defined]
Tensor.as_strided = as_strided  # type: ignore[attr-defined]
Tensor.diagonal = diagonal  # type: ignore[attr-defined]
