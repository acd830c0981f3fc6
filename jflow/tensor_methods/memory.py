"""Tensor methods about memory and storage: ``data_ptr`` / ``const_data_ptr``,
``untyped_storage`` / ``storage`` / ``storage_type``, ``is_shared`` / ``share_memory_``,
``resize_`` / ``resize_as_`` (and the deprecated ``resize`` / ``resize_as``), ``as_strided_``,
``set_`` / ``is_set_to``, ``record_stream``.

jflow's storages are :mod:`jflow.storage`'s: a tensor's storage is its storage root's
elements (a view's base, else the tensor itself), read-only, at the address of the root's
current device buffer. What PyTorch does by re-pointing a tensor at other memory, jflow does
with its views: ``set_(source)`` makes the tensor a view of ``source``'s elements (writes
into either reach the other), ``resize_`` of a view re-slices its base. A tensor that is not
a view takes a new value instead (its version bumps): see each method.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..functional import F
from ..memory_format import check_memory_format
from ..storage import (
    TypedStorage,
    UntypedStorage,
    _TensorStorage,
    asarray,
    data_ptr,
    storage_class,
    storage_root,
    tensor_storage,
    typed_storage,
)
from ..tensor import Tensor
from ..views import as_strided, detach, layout_of
from ..views.alias import _ALIAS, _GLOBAL, _GRAD_FN, _REQ, _VALUE, Alias, View
from ..views.layout import contiguous_strides
from .inplace_shape import _rebase

__all__ = ["data_ptr_method", "untyped_storage", "storage", "storage_type", "is_shared",
           "share_memory_", "resize_", "as_strided_", "resize_as_", "resize", "resize_as", "set_",
           "is_set_to", "record_stream"]

_INTS = (int, np.integer)


def data_ptr_method(self: Tensor) -> int:
    """The address of the first element: this tensor's storage root's device buffer plus
    its storage offset in bytes (0 without elements). Equal for tensors that share elements
    in jflow (a view and its base, ``x.data``, the same tensor object), different
    otherwise. The address is that of the root's current array: an in-place op on it gives
    it a new array, and a new address (PyTorch's stays). A traced tensor has none (raises);
    a meta tensor's storage starts at 0, as PyTorch's."""
    return data_ptr(self)


def untyped_storage(self: Tensor) -> UntypedStorage:
    """This tensor's storage: the bytes of its storage root (a view's base), read-only
    (jflow.storage). ``data_ptr()`` is where they are, ``nbytes()`` how many; tensors that
    share elements share it."""
    return tensor_storage(self)


def storage(self: Tensor) -> TypedStorage:
    """PyTorch's deprecated typed storage (it warns, as PyTorch): :meth:`untyped_storage`
    read as elements of this tensor's dtype."""
    return typed_storage(self)


def _typed_storage(self: Tensor) -> TypedStorage:
    """PyTorch's internal form of :meth:`storage` (no deprecation warning)."""
    return TypedStorage(tensor_storage(self), self.dtype)


def storage_type(self: Tensor) -> type:
    """PyTorch's legacy storage class of this tensor's dtype (``FloatStorage`` ...)."""
    return storage_class(self.dtype)


def is_shared(self: Tensor) -> bool:
    """False: jflow places no tensor in memory shared between processes (see
    :meth:`share_memory_`)."""
    return False


def share_memory_(self: Tensor) -> Tensor:
    """Returns this tensor unchanged. PyTorch moves a CPU storage to shared memory for
    ``torch.multiprocessing``; jflow's arrays belong to one process's XLA runtime and
    cannot be shared with another, so nothing moves and :meth:`is_shared` stays False."""
    return self


def record_stream(self: Tensor, stream: Any) -> None:
    """Nothing to do: XLA orders every use of an array and frees it after the last one, so
    there is no caching allocator to tell about another stream's use."""
    return None


# -- resize_ -------------------------------------------------------------------------------------

def _sizes(fname: str, sizes: tuple) -> tuple[int, ...]:
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    out = []
    for s in sizes:
        if isinstance(s, Tensor) and s.numel() == 1 and not s.is_floating_point():
            s = int(s)
        if isinstance(s, bool) or not isinstance(s, _INTS):
            raise TypeError(f"{fname}(): argument 'size' must be a tuple of ints, but found "
                            f"element of type {type(s).__name__}")
        out.append(int(s))
    if any(s < 0 for s in out):
        raise RuntimeError(f"{fname}(): sizes must be non-negative, got {out}")
    return tuple(out)


def _as_view_of(self: Tensor, v: Tensor) -> Tensor:
    """Make ``self`` (a plain ``Tensor`` or a view) the view ``v`` is: the same base, steps
    and current value, keeping ``self``'s own ``requires_grad`` (no history: the callers
    refuse tensors that require grad while grad mode is on)."""
    m = _ALIAS.__get__(v)
    req = self._requires_grad
    value = _VALUE.__get__(v)
    glob = _GLOBAL.__get__(v)
    self.__class__ = View
    _ALIAS.__set__(self, Alias(m.base, m.steps, m.grad, m.multi, m.origin))
    _VALUE.__set__(self, value)
    _GLOBAL.__set__(self, glob)
    _GRAD_FN.__set__(self, None)
    _REQ.__set__(self, req)
    return self


def _can_become_view(self: Tensor) -> bool:
    """Only a plain ``Tensor`` (or a view) can turn into a view: a subclass instance
    (``nn.Parameter``) keeps its class."""
    return type(self) is Tensor or type(self) is View


def resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """PyTorch's ``resize_``: this tensor takes ``sizes``; the elements it keeps are its
    first ones in row-major order, new ones (when it grows) are zeros (PyTorch leaves them
    uninitialised). Same sizes: nothing changes (no version bump). A tensor that requires
    grad is refused, as in PyTorch.

    A view is re-sliced in its base (contiguous from its storage offset, still aliasing it:
    ``x.data.resize_(n)`` leaves ``x`` as it is); it cannot grow past its base's elements
    (PyTorch would enlarge the shared storage). Views taken of a non-view tensor before it
    is resized replay their steps on its new shape (PyTorch's keep the old storage)."""
    sizes = _sizes("resize_", sizes)
    check_memory_format("resize_", memory_format, len(sizes))
    if self.requires_grad:
        raise RuntimeError("resize_(): cannot resize variables that require grad")
    if tuple(self.shape) == sizes:
        return self
    n = math.prod(sizes)
    if self._aliases:
        root = storage_root(self)
        offset = layout_of(self).offset
        if root._meta.dtype != self._meta.dtype:
            raise NotImplementedError(
                "resize_(): this view reads its base as another dtype (view(dtype), "
                "view_as_real, real / imag); jflow re-slices a view in its base's elements: "
                "resize a clone() instead")
        if offset + n > root.numel():
            raise RuntimeError(
                f"resize_(): a view of {root.numel()} base elements from storage offset "
                f"{offset} cannot grow to {n} elements (jflow's views cannot enlarge their "
                f"base's storage); resize the base, or a clone() of the view")
        return _as_view_of(self, as_strided(self, sizes, contiguous_strides(sizes), offset))
    with no_grad():
        flat = self.reshape(-1)
        if n <= flat.shape[0]:
            new = flat[:n]
        else:
            new = F.cat([flat, self.new_zeros(n - flat.shape[0])])
        new = new.reshape(sizes)
    return _rebase(self, new, "resize_")


def as_strided_(self: Tensor, size: Any, stride: Any, storage_offset: int | None = None
                ) -> Tensor:
    """PyTorch's ``as_strided_``: this tensor becomes ``as_strided(size, stride,
    storage_offset)`` of its storage, in place. A tensor that is not a view takes that value
    (its version bumps, its history continues through the strided read, as PyTorch's; a leaf
    that requires grad is refused in grad mode, as PyTorch); its storage is then its new
    elements, so a later ``as_strided_`` reaches only those (PyTorch's keeps the old storage:
    reaching past the new elements raises here). A view is re-pointed into its base (still
    aliasing it), and refused when it requires grad in grad mode (jflow's views take their
    gradient from their base's: use the out-of-place ``as_strided``)."""
    if self._aliases:
        if self.requires_grad and is_grad_enabled():
            raise RuntimeError("as_strided_(): a view that requires grad cannot be re-strided "
                               "in place in jflow; use the out-of-place as_strided(), or call "
                               "it under no_grad()")
        return _as_view_of(self, as_strided(self, size, stride, storage_offset))
    return _rebase(self, as_strided(self, size, stride, storage_offset), "as_strided_")


def resize_as_(self: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    """``resize_(the_template.shape)``."""
    if not isinstance(the_template, Tensor):
        raise TypeError(f"resize_as_(): argument 'the_template' (position 1) must be Tensor, "
                        f"not {type(the_template).__name__}")
    return resize_(self, tuple(the_template.shape), memory_format=memory_format)


def resize(self: Tensor, *sizes: Any) -> Tensor:
    """PyTorch's deprecated out-of-place ``resize`` (it warns, as PyTorch): this tensor's
    elements in ``sizes``, which must hold as many (a view where ``view`` would be one)."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    sizes = _sizes("resize", sizes)
    n = math.prod(sizes)
    if n != self.numel():
        raise RuntimeError(
            f"requested resize to {'x'.join(map(str, sizes))} ({n} elements in total), but "
            f"the given tensor has a size of {'x'.join(map(str, self.shape))} "
            f"({self.numel()} elements). autograd's resize can only change the shape of a "
            f"given tensor, while preserving the number of elements. ")
    return self.reshape(sizes)


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """PyTorch's deprecated out-of-place ``resize_as``: ``resize(tensor.shape)``."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"resize_as(): argument 'tensor' must be Tensor, not "
                        f"{type(tensor).__name__}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resize(self, tuple(tensor.shape))


# -- set_ / is_set_to -----------------------------------------------------------------------------

def _check_set(self: Tensor, source: Any) -> None:
    if is_grad_enabled():
        if self.grad_fn is None and self.requires_grad:
            raise RuntimeError("set_(): a leaf Variable that requires grad is being used in "
                               "an in-place operation (wrap it in flow.no_grad())")
        if isinstance(source, Tensor) and source.requires_grad:
            raise RuntimeError("set_(): autograd cannot record set_ to a source that requires "
                               "grad (PyTorch records a backward that raises); call it under "
                               "flow.no_grad() or on source.detach()")


def set_(self: Tensor, source: Any = None, storage_offset: int = 0, size: Any = None,
         stride: Any = None) -> Tensor:
    """PyTorch's ``set_``, by jflow's views.

    - ``set_(source)`` (a tensor of the same dtype and device): this tensor becomes a view
      of ``source``'s elements (its sizes, strides, offset), so writes into either reach the
      other and ``is_set_to(source)`` holds. An ``nn.Parameter`` (a subclass instance,
      which cannot become a view) takes ``source``'s current value and shape instead.
    - ``set_(storage, storage_offset=0, size=None, stride=None)``: the elements of a
      tensor's ``untyped_storage()`` at that offset, sizes and strides (a view of that
      tensor, as above); a storage read from a file or bytes gives a copy of those elements
      (jflow's storages are read-only).
    - ``set_()``: an empty tensor of this dtype (no longer a view of anything).

    A leaf that requires grad is refused while grad mode is on, as in PyTorch; so is a
    ``source`` that requires grad (PyTorch records a backward that raises)."""
    _check_set(self, source)
    if source is None:
        if size is not None or stride is not None or storage_offset:
            raise TypeError("set_(): a size, stride or storage_offset needs a source storage")
        self.data = self.new_zeros(0)  # (a plain tensor again, aliasing nothing)
        return self
    if isinstance(source, Tensor):
        if size is not None or stride is not None or storage_offset:
            raise TypeError("set_(): set_(source: Tensor) takes no storage_offset, size or "
                            "stride (pass source.untyped_storage() for those)")
        _same_kind(self, source)
        if source is self:
            return self
        if storage_root(source) is self:
            raise NotImplementedError(
                "set_(): source is a view of this tensor; jflow cannot re-point a tensor at "
                "its own elements (use self.data = source.clone())")
        v = detach(source)
    elif isinstance(source, (UntypedStorage, TypedStorage)):
        v = _storage_view(self, source, storage_offset, size, stride)
    else:
        raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not "
                        f"{type(source).__name__}")
    if v._aliases and _can_become_view(self):
        return _as_view_of(self, v)
    with no_grad():  # (a subclass instance or a copy of a storage's bytes: the value only)
        return _rebase(self, v, "set_")


def _same_kind(self: Tensor, source: Tensor) -> None:
    if source.dtype != self.dtype:
        raise RuntimeError(f"set_(): could not set a tensor of type {self.dtype} to a tensor "
                           f"of type {source.dtype} (the dtypes must match)")
    if source.device != self.device:
        raise RuntimeError(f"set_(): could not set a tensor on {self.device} to a tensor on "
                           f"{source.device} (the devices must match)")


def _storage_view(self: Tensor, storage: Any, offset: Any, size: Any, stride: Any) -> Tensor:
    """The elements ``set_(storage, offset, size, stride)`` gives: a view of the storage's
    tensor where it has one (same dtype and device), else a copy of its bytes."""
    if isinstance(storage, TypedStorage):
        if storage.dtype != self.dtype:
            raise RuntimeError(f"set_(): expected a storage of type {self.dtype}, got one of "
                               f"type {storage.dtype}")
        storage = storage.untyped()
    itemsize = self.element_size()
    if isinstance(offset, bool) or not isinstance(offset, _INTS) or offset < 0:
        raise RuntimeError(f"set_(): storage_offset must be a non-negative int, got {offset!r}")
    if size is None:
        if offset:
            raise TypeError("set_(): a storage_offset needs a size")
        size = (storage.nbytes() // itemsize,)
    size = _sizes("set_", (size,))
    stride = contiguous_strides(size) if stride is None else _sizes("set_", (stride,))
    if len(stride) != len(size):
        raise RuntimeError(f"set_(): {len(stride)} strides for {len(size)} sizes")
    root = storage._root if isinstance(storage, _TensorStorage) else None
    if root is not None and root.dtype == self.dtype and root.device == self.device:
        return as_strided(detach(root), size, stride, int(offset))
    flat = asarray(storage, dtype=self.dtype, device=self.device)
    return as_strided(flat, size, stride, int(offset)).clone()


def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors are the same elements of the same storage: one storage root and
    equal sizes, strides and storage offset (``x.is_set_to(x.detach())`` holds,
    ``x.is_set_to(x.clone())`` does not)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    return storage_root(self) is storage_root(tensor) and layout_of(self) == layout_of(tensor)


Tensor.data_ptr = data_ptr_method  # type: ignore[attr-defined]
Tensor.const_data_ptr = data_ptr_method  # type: ignore[attr-defined]
Tensor.untyped_storage = untyped_storage  # type: ignore[attr-defined]
Tensor.storage = storage  # type: ignore[attr-defined]
Tensor.storage_type = storage_type  # type: ignore[attr-defined]
Tensor._typed_storage = _typed_storage  # type: ignore[attr-defined]
Tensor.is_shared = is_shared  # type: ignore[attr-defined]
Tensor.share_memory_ = share_memory_  # type: ignore[attr-defined]
Tensor.record_stream = record_stream  # type: ignore[attr-defined]
Tensor.resize_ = resize_  # type: ignore[attr-defined]
Tensor.resize_as_ = resize_as_  # type: ignore[attr-defined]
Tensor.as_strided_ = as_strided_  # type: ignore[attr-defined]
Tensor.resize = resize  # type: ignore[attr-defined]
Tensor.resize_as = resize_as  # type: ignore[attr-defined]
Tensor.set_ = set_  # type: ignore[attr-defined]
Tensor.is_set_to = is_set_to  # type: ignore[attr-defined]
data_ptr_method.__name__ = data_ptr_method.__qualname__ = "data_ptr"
