"""Tensor indexing (``x[...]`` and ``x[...] = v``) and the shape methods that take varargs.

An index is split into a static part — ints, slices, None, Ellipsis, bools, written into the
``spec`` string attr of the ``getitem`` / ``setitem`` ops (grammar in
:mod:`jflow.ops.subscript`) — and index tensors passed as op inputs. So indexing is one
primitive per call: cached per spec, traceable under ``jax.jit`` / ``jax.vmap``, and it gets
autograd and SBP like any op.

Semantics are PyTorch's: ints, slices, None, Ellipsis and 0-d integer tensors are applied
first (as views), then n-d integer tensors with NumPy's advanced-indexing rules (broadcast
together; their dims replace the indexed dims when those are adjacent, else go first). Python
lists and NumPy arrays are index tensors too (a nested list is an n-d index, as in NumPy and
PyTorch >= 2.9, not the legacy "list as tuple"). Bool masks are converted eagerly with
``nonzero`` (their result shape depends on the data, so they cannot be traced) — except for
``x[mask] = value`` with a value that broadcasts over the non-masked dims, which is a traceable
``where``. Eager integer indices are bounds-checked on the host (JAX would clamp silently);
inside a trace they cannot be checked and out-of-range indices follow JAX (clamped on read,
dropped on write).

``__setitem__`` is a functional update: it replaces the tensor's value and bumps its version.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from . import dtypes as _dt
from ._dims import wrap_dim
from .autograd.graph import rebase_inplace
from .functional import F
from .functional.functors.index import checked_min_max
from .functional.promotion import cast, scalar_tensor
from .lazy_mode.checks import discard_checks_on_error
from .ops import get as _get_op
from .ops.subscript import value_fits
from .tensor import Size, Tensor, _wrap
from .views import alias, layout_of
from .views import basic_index as _basic

__all__ = ["getitem", "setitem"]

_getitem = _get_op("getitem").apply
_setitem = _get_op("setitem").apply

_INTS = (int, np.integer)
_BOOLS = (bool, np.bool_)
_SCALARS = (bool, int, float, complex, np.bool_, np.integer, np.floating, np.complexfloating)


def _traced(t: Tensor) -> bool:
    return isinstance(t._meta, Tracer)


def _slice_bound(v: Any, what: str) -> int | None:
    if v is None:
        return None
    if isinstance(v, _BOOLS):
        raise TypeError(f"slice {what} must be an integer or None, got a bool")
    if isinstance(v, Tensor):
        if _traced(v):
            raise TypeError(f"slice {what} must be a concrete integer: a traced tensor (inside "
                            f"jax.jit / vmap / grad) would give the result a data-dependent "
                            f"shape; use narrow() with a Python int or index with a tensor")
        if v._meta.dtype.kind not in "iu" or v.numel() != 1:  # (PyTorch's __index__)
            raise TypeError(f"slice {what} must be an integer, got a {v.dtype} tensor of shape "
                            f"{list(v.shape)}")
        return int(v.item())
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"slice {what} must be an integer or None, got "
                        f"{type(v).__name__}") from None


def _as_index_array(obj: Any) -> np.ndarray:
    """A Python list / tuple / NumPy array used as an index -> an int64 or bool array."""
    a = np.asarray(obj)
    if a.size == 0 and a.dtype.kind not in "iub":
        return a.astype(np.int64)
    if a.dtype.kind == "b":
        return a
    if a.dtype.kind in "iu":
        return a.astype(np.int64)
    raise IndexError(f"tensors used as indices must be long, int or bool tensors, got an "
                     f"index of dtype {a.dtype} ({obj!r})")


def _classify(index: Any) -> list[tuple[Any, ...]]:
    """Index -> items ('n',) | ('e',) | ('b', bool) | ('i', int) | ('s', a, b, c) |
    ('t', Tensor) | ('mask', Tensor | np.ndarray)."""
    if isinstance(index, list) and any(e is None or e is Ellipsis or isinstance(e, slice)
                                       for e in index):
        index = tuple(index)  # cannot be an array: PyTorch's legacy "sequence as tuple"
    if not isinstance(index, tuple):
        index = (index,)
    items: list[tuple[Any, ...]] = []
    for obj in index:
        if isinstance(obj, jax.Array):  # a raw JAX array (or tracer) indexes like a tensor
            obj = _wrap(obj)
        if obj is None:
            items.append(("n",))
        elif obj is Ellipsis:
            items.append(("e",))
        elif isinstance(obj, _BOOLS):
            items.append(("b", bool(obj)))
        elif isinstance(obj, _INTS):
            items.append(("i", int(obj)))
        elif isinstance(obj, slice):
            step = _slice_bound(obj.step, "step")
            if step is not None and step <= 0:
                raise ValueError("step must be greater than zero")
            items.append(("s", _slice_bound(obj.start, "start"), _slice_bound(obj.stop, "stop"),
                          step))
        elif isinstance(obj, Tensor):
            k = obj._meta.dtype.kind
            if k == "b":
                if obj._meta.ndim == 0 and not _traced(obj):
                    items.append(("b", bool(obj.item())))
                else:
                    items.append(("mask", obj))
            elif obj._meta.dtype == np.uint8:
                raise IndexError("uint8 index tensors are ambiguous (PyTorch treats them as "
                                 "masks, NumPy as integers): cast the index to bool or int64")
            elif k in "iu":
                items.append(("t", obj))
            else:
                raise IndexError(f"tensors used as indices must be long, int or bool tensors, "
                                 f"got {obj.dtype}")
        elif isinstance(obj, (list, tuple, np.ndarray)):
            a = _as_index_array(obj)
            if a.dtype.kind == "b":
                items.append(("mask", a) if a.ndim else ("b", bool(a)))
            else:
                items.append(("t", a))
        else:
            try:
                items.append(("i", operator.index(obj)))
            except TypeError:
                raise TypeError(f"only integers, slices (`:`), ellipsis (`...`), None and long "
                                f"or bool tensors are valid indices (got "
                                f"{type(obj).__name__})") from None
    return items


def _ndim_of(v: Any) -> int:
    return v._meta.ndim if isinstance(v, Tensor) else np.ndim(v)


def _mask_shape_check(mask_shape: Sequence[int], shape: Sequence[int], start: int) -> None:
    for j, m in enumerate(mask_shape):
        if start + j >= len(shape) or m != shape[start + j]:
            raise IndexError(f"the shape of the mask {list(mask_shape)} at index {j} does not "
                             f"match the shape of the indexed tensor {list(shape)} at index "
                             f"{start + j}")


def _bounds_check(a: np.ndarray, size: int, dim: int) -> None:
    if a.size:
        _bounds(int(a.min()), int(a.max()), size, dim)


def _bounds(lo: int, hi: int, size: int, dim: int) -> None:
    if lo < -size or hi >= size:
        bad = hi if hi >= size else lo
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def _compile(x: Tensor, index: Any, fname: str) -> tuple[str, list[Tensor]]:
    """The op spec and index tensors of ``x[index]`` (masks expanded with nonzero)."""
    items = _classify(index)
    shape = tuple(x._meta.shape)
    nd = len(shape)
    used = 0
    for it in items:
        if it[0] in ("i", "s", "t"):
            used += 1
        elif it[0] == "mask":
            used += max(_ndim_of(it[1]), 1)
    if sum(1 for it in items if it[0] == "e") > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    toks: list[str] = []
    tensors: list[Tensor] = []
    d = 0
    for it in items:
        kind = it[0]
        if kind == "n":
            toks.append("n")
        elif kind == "e":
            toks.append("e")
            d += nd - used
        elif kind == "b":
            toks.append("b1" if it[1] else "b0")
        elif kind == "i":
            toks.append(f"i{it[1]}")
            d += 1
        elif kind == "s":
            a, b, c = it[1], it[2], it[3]
            toks.append(f"s{'' if a is None else a}:{'' if b is None else b}:"
                        f"{'' if c is None else c}")
            d += 1
        elif kind == "t":
            v = it[1]
            if isinstance(v, Tensor):
                if not _traced(v):  # (a pending index in lazy mode: checked when it runs)
                    checked_min_max(v, lambda lo, hi, n=shape[d], k=d: _bounds(lo, hi, n, k))
                tensors.append(v)
            else:
                _bounds_check(v, shape[d], d)
                tensors.append(_wrap(jax.device_put(v)))  # v: a fresh int64 array
            toks.append("t")
            d += 1
        else:  # a bool mask of k dims -> k index arrays (needs its values: eager only)
            m = it[1]
            if isinstance(m, Tensor):
                if _traced(m):
                    raise TypeError(
                        f"{fname}: boolean mask indexing has a data-dependent result shape and "
                        f"cannot be traced (inside jax.jit / vmap / grad). Use "
                        f"flow.where(mask, x, other) or masked_fill, or index outside the "
                        f"trace")
                m = np.asarray(m._value)
            _mask_shape_check(m.shape, shape, d)
            for arr in np.nonzero(m):
                tensors.append(_wrap(jax.device_put(arr.astype(np.int64))))
                toks.append("t")
            d += m.ndim
    return ",".join(toks), tensors


def _bound(v: Any) -> str | None:
    if v is None:
        return ""
    return str(v) if v.__class__ is int else None


def _basic_spec(index: tuple) -> str | None:
    """The spec of an index of plain ints, int/None slices, None and one Ellipsis (None for
    anything else: the general path then parses it). Range errors come from the op."""
    toks = []
    ellipses = 0
    for obj in index:
        c = obj.__class__
        if c is int:
            toks.append(f"i{obj}")
        elif c is slice:
            a, b, st = _bound(obj.start), _bound(obj.stop), _bound(obj.step)
            if a is None or b is None or st is None or (st and int(st) <= 0):
                return None
            toks.append(f"s{a}:{b}:{st}")
        elif obj is None:
            toks.append("n")
        elif obj is Ellipsis:
            ellipses += 1
            toks.append("e")
        else:
            return None
    return ",".join(toks) if ellipses <= 1 else None


def getitem(self: Tensor, index: Any) -> Tensor:
    """``x[index]`` with PyTorch semantics (see the module docstring)."""
    if index.__class__ is int and self._meta.ndim:  # x[i], the commonest index
        spec = f"i{index}"
        return alias(_basic.get(self, spec), self, "index", (spec,))
    if index.__class__ is tuple:  # ints, slices, None, ...: a view, spec built directly
        spec = _basic_spec(index)
        if spec is not None:
            return alias(_basic.get(self, spec), self, "index", (spec,))
    return _indexed(self, index)


@discard_checks_on_error  # (a bounds check of a pending index tensor is deferred in lazy mode)
def _indexed(self: Tensor, index: Any) -> Tensor:
    """``x[index]`` for any other index (tensors among them: advanced indexing)."""
    spec, tensors = _compile(self, index, "Tensor.__getitem__")
    if tensors:  # advanced indexing: a copy, as in PyTorch
        return _getitem(self, tensors, spec=spec)
    return alias(_basic.get(self, spec), self, "index", (spec,))


def select(self: Tensor, dim: int, index: int) -> Tensor:
    """``x.select(dim, i)``: the slice at ``i`` along ``dim``, without that dim (a view)."""
    nd = self._meta.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor")
    if isinstance(dim, bool) or not isinstance(dim, _INTS):
        raise TypeError(f"select(): argument 'dim' must be int, not {type(dim).__name__}")
    dim = wrap_dim("select", dim, nd)
    size = self._meta.shape[dim]
    if isinstance(index, Tensor):
        index = operator.index(index)
    if isinstance(index, bool) or not isinstance(index, _INTS) or not -size <= index < size:
        raise IndexError(f"select(): index {index!r} out of range for tensor of size "
                         f"{list(self._meta.shape)} at dimension {dim}")
    return getitem(self, (slice(None),) * (dim % nd) + (int(index),))


def _value_tensor(value: Any, like: Tensor) -> Tensor:
    """``value`` as a tensor of ``like``'s dtype (PyTorch casts the assigned value)."""
    dt = like._meta.dtype
    if isinstance(value, jax.Array):
        value = _wrap(value)
    if isinstance(value, Tensor):
        return cast(value, dt)
    if isinstance(value, _SCALARS):
        v = value.item() if isinstance(value, np.generic) else value
        if isinstance(v, float) and dt.kind in "iub" and v == v and v != int(v):
            return cast(scalar_tensor(v, np.dtype(np.float64)), dt)  # truncates, as torch
        return scalar_tensor(v, dt)
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001  (any failure means: not array-like)
        a = np.asarray(None)
    if a.dtype == object or a.dtype.kind not in "biufc":
        raise TypeError(f"can't assign a {type(value).__name__} to a {like.dtype} tensor; the "
                        f"value must be a number, a Tensor or array-like")
    return cast(_wrap(jnp.asarray(a)), dt)


def _single_mask(index: Any) -> Any:
    """The mask of ``x[mask] = v`` when the index is exactly one n-d bool tensor/array."""
    if isinstance(index, tuple):
        if len(index) != 1:
            return None
        index = index[0]
    if isinstance(index, Tensor) and index._meta.dtype.kind == "b" and index._meta.ndim:
        return index
    if isinstance(index, np.ndarray) and index.dtype.kind == "b" and index.ndim:
        return _wrap(jax.device_put(np.array(index)))  # a copy: device_put may alias it
    return None


@discard_checks_on_error  # (as _indexed)
def setitem(self: Tensor, index: Any, value: Any) -> None:
    """``x[index] = value``: ``value`` is cast to x's dtype and broadcast to the indexed shape;
    x's value is replaced and its version bumped."""
    v = _value_tensor(value, self)
    mask = _single_mask(index)
    shape = tuple(self._meta.shape)
    if mask is not None:
        k = mask._meta.ndim
        if k > len(shape):
            raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
        _mask_shape_check(mask._meta.shape, shape, 0)
        if value_fits(v._meta.shape, shape[k:]):
            out = _setitem(self, v, [mask], spec="m")
            rebase_inplace(self, out, "Tensor.__setitem__")
            return
    spec, tensors = _compile(self, index, "Tensor.__setitem__")
    out = _setitem(self, v, tensors, spec=spec) if tensors else _basic.put(self, v, spec)
    rebase_inplace(self, out, "Tensor.__setitem__")


# -- shape methods with varargs ---------------------------------------------------------------

def _sizes(fname: str, args: tuple, kwargs: dict, kw: str) -> Any:
    """``f(2, 3)``, ``f((2, 3))``, ``f([2, 3])``, ``f(flow.Size(...))`` or ``f(kw=(2, 3))``."""
    if kwargs:
        if args or set(kwargs) != {kw}:
            raise TypeError(f"Tensor.{fname}() takes the sizes positionally or as '{kw}=', got "
                            f"{len(args)} positional and keywords {sorted(kwargs)}")
        return kwargs[kw]
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        return tuple(args[0])
    return args


def reshape(self: Tensor, *shape: Any, **kwargs: Any) -> Tensor:
    """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``; one size may be -1."""
    return F.reshape(self, _sizes("reshape", shape, kwargs, "shape"))


def view(self: Tensor, *shape: Any, **kwargs: Any) -> Tensor:
    """``x.view(2, 3)`` / ``x.view(-1)``: a view sharing ``x``'s elements (writes reach
    ``x``). ``x.view(dtype)``: the same bytes as elements of ``dtype`` (the last dim scales
    by the element size ratio), a view too, outside autograd, as in PyTorch."""
    if len(shape) == 1 and not kwargs and (isinstance(shape[0], _dt.dtype)
                                           or isinstance(shape[0], type)):
        return _view_dtype(self, _dt.as_dtype(shape[0]))
    if not shape and set(kwargs) == {"dtype"}:
        return _view_dtype(self, _dt.as_dtype(kwargs["dtype"]))
    return F.view(self, _sizes("view", shape, kwargs, "shape"))


_bitcast = _get_op("bitcast").apply


def _view_dtype(self: Tensor, dtype: _dt.dtype) -> Tensor:
    """PyTorch's ``view(dtype)`` checks (the layout must allow reading the bytes in place),
    then the ``bitcast`` op, aliasing ``self`` (jflow.views: writes go through)."""
    src, dst = self._meta.dtype, np.dtype(dtype.np)
    a, b = src.itemsize, dst.itemsize
    if a != b:
        names = f"{self.dtype} as {dtype}"
        if self.ndim == 0:
            raise RuntimeError(f"view(dtype): self.dim() cannot be 0 to view {names} "
                               f"(different element sizes)")
        lay = layout_of(self)
        if lay.strides[-1] != 1:
            raise RuntimeError(f"view(dtype): self.stride(-1) must be 1 to view {names} "
                               f"(different element sizes), but got {lay.strides[-1]}")
        k = b // a if b > a else 1
        if k > 1 and (lay.sizes[-1] % k or lay.offset % k
                      or any(s % k for s in lay.strides[:-1])):
            raise RuntimeError(f"view(dtype): to view {names}, the last dim's size, the "
                               f"storage offset and the other strides must be multiples of "
                               f"{k}; got size {lay.sizes[-1]}, offset {lay.offset}, strides "
                               f"{list(lay.strides)}")
    out = _bitcast(self, dtype=dst)
    return alias(out, self, "bitcast", (src.name, dst.name))


def permute(self: Tensor, *dims: Any, **kwargs: Any) -> Tensor:
    """``x.permute(1, 0)`` or ``x.permute((1, 0))``."""
    return F.permute(self, _sizes("permute", dims, kwargs, "dims"))


def expand(self: Tensor, *sizes: Any, **kwargs: Any) -> Tensor:
    """``x.expand(2, 3)`` / ``x.expand(-1, 4)``; new dims go in front."""
    return F.expand(self, _sizes("expand", sizes, kwargs, "size"))


def repeat(self: Tensor, *repeats: Any, **kwargs: Any) -> Tensor:
    """``x.repeat(2, 1)``: tile ``x`` that many times per dim (new dims in front)."""
    return F.repeat(self, _sizes("repeat", repeats, kwargs, "repeats"))


def tile(self: Tensor, *dims: Any, **kwargs: Any) -> Tensor:
    """``x.tile(2, 1)`` or ``x.tile((2,))``: as repeat, with missing leading reps = 1."""
    return F.tile(self, _sizes("tile", dims, kwargs, "dims"))


def flip(self: Tensor, *dims: Any, **kwargs: Any) -> Tensor:
    """``x.flip(0)``, ``x.flip(0, 1)`` or ``x.flip([0, 1])``."""
    if not dims and not kwargs:
        raise TypeError("Tensor.flip() missing 1 required positional argument: 'dims'")
    return F.flip(self, _sizes("flip", dims, kwargs, "dims"))


def expand_as(self: Tensor, other: Tensor) -> Tensor:
    """``x.expand(other.shape)``."""
    return F.expand(self, tuple(other.shape))


def view_as(self: Tensor, other: Tensor) -> Tensor:
    """``x.view(other.shape)``."""
    return F.view(self, tuple(other.shape))


def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    """``x.reshape(other.shape)``."""
    return F.reshape(self, tuple(other.shape))


def _T(self: Tensor) -> Tensor:
    """All dims reversed (``x.permute(n-1, ..., 0)``)."""
    return F.permute(self, tuple(range(self._meta.ndim - 1, -1, -1)))


def _mT(self: Tensor) -> Tensor:
    """The last two dims swapped (batched matrix transpose)."""
    if self._meta.ndim < 2:
        raise ValueError(f"tensor.mT is only supported on matrices or batches of matrices, "
                         f"got a {self._meta.ndim}-d tensor")
    return F.transpose(self, -2, -1)


Tensor.__getitem__ = getitem  # type: ignore[method-assign]
Tensor.__setitem__ = setitem  # type: ignore[method-assign]
Tensor.T = property(_T)  # type: ignore[attr-defined]
Tensor.mT = property(_mT)  # type: ignore[attr-defined]


# -- conjugate transposes (Tensor.H / Tensor.mH) -----------------------------------------------

def _conj_if_complex(t: Tensor) -> Tensor:
    return t.conj() if t.is_complex() else t


def _H(self: Tensor) -> Tensor:
    """The conjugate transpose of a matrix (a 0-d tensor is its own conjugate)."""
    if self._meta.ndim not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self._meta.ndim}-D tensor.")
    return _conj_if_complex(_T(self) if self._meta.ndim else self)


def _mH(self: Tensor) -> Tensor:
    """The conjugate transpose of each matrix of a batch (the last two dims)."""
    if self._meta.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {self._meta.ndim}-D tensor.")
    return _conj_if_complex(F.transpose(self, -2, -1))


Tensor.H = property(_H)  # type: ignore[attr-defined]
Tensor.mH = property(_mH)  # type: ignore[attr-defined]
for _fn in (reshape, view, permute, expand, repeat, tile, flip, expand_as, view_as, reshape_as,
            select):
    setattr(Tensor, _fn.__name__, _fn)
del _fn


# -- PyTorch's varargs forms of meshgrid / block_diag / cartesian_prod -------------------------
# (their api.yaml entries take one list; jflow/__init__.py may re-export these as flow.<name>)

def _tensor_args(args: tuple) -> list:
    """``f(a, b)`` or ``f([a, b])``."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0])
    return list(args)


def meshgrid(*tensors: Any, indexing: str = "ij") -> tuple[Tensor, ...]:
    """torch.meshgrid(*tensors, indexing='ij'): ``F.meshgrid`` with varargs."""
    return tuple(F.meshgrid(_tensor_args(tensors), indexing=indexing))


def block_diag(*tensors: Any) -> Tensor:
    """torch.block_diag(*tensors): ``F.block_diag`` with varargs."""
    return F.block_diag(_tensor_args(tensors))


def cartesian_prod(*tensors: Any) -> Tensor:
    """torch.cartesian_prod(*tensors): ``F.cartesian_prod`` with varargs."""
    return F.cartesian_prod(_tensor_args(tensors))
