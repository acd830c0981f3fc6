"""The ``*_copy`` variants of PyTorch's view ops (``torch.permute_copy`` ...) and the
``unsafe_`` split forms: the view's values as new tensors that alias nothing.

PyTorch has them for functionalized graphs, where a view must not share storage; each is the
view op followed by a copy (``clone``), so gradients are the view's. They are generated from
one table of (name, view function); a view that returns several tensors copies each one.
``unsafe_chunk`` / ``unsafe_split`` / ``unsafe_split_with_sizes`` are ``chunk`` / ``split`` /
``split_with_sizes`` without PyTorch's check that the pieces are not written in place: jflow's
pieces are views like ``split``'s, so the same. The ``*_copy`` forms of PyTorch's sparse
views (``indices_copy``, ``crow_indices_copy`` ...) are refused by ``jflow/__init__.py``'s
module ``__getattr__`` (no sparse tensors).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._dims import wrap_dim
from .autograd.grad_mode import is_grad_enabled
from .functional import F
from .tensor import Tensor


def _alias(input: Tensor) -> Tensor:  # noqa: A002
    return input.view(input.shape)


def _as_strided(input: Tensor, size: Any, stride: Any, storage_offset: Any = None) -> Tensor:  # noqa: A002
    return input.as_strided(size, stride, storage_offset)


def _detach(input: Tensor) -> Tensor:  # noqa: A002
    return input.detach()


def _select(input: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    return input.select(dim, index)


def _slice(input: Tensor, dim: int = 0, start: int | None = None,  # noqa: A002
           end: int | None = None, step: int = 1) -> Tensor:
    if input.ndim == 0:
        raise IndexError("slice_copy(): slice() cannot be applied to a 0-dim tensor.")
    d = wrap_dim("slice_copy", dim, input.ndim)
    if step <= 0:
        raise RuntimeError(f"slice_copy(): slice step must be positive, got {step}")
    return input[(slice(None),) * d + (slice(start, end, step),)]


def _split(input: Tensor, split_size: int, dim: int = 0) -> Any:  # noqa: A002
    if isinstance(split_size, bool) or not isinstance(split_size, int):
        raise TypeError(f"split_copy(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size).__name__} (split_with_sizes_copy takes sizes)")
    return input.split(split_size, dim)


def _view_as_real(input: Tensor) -> Tensor:  # noqa: A002
    return F.view_as_real(input)


def _view_as_complex(input: Tensor) -> Tensor:  # noqa: A002
    if input.requires_grad and is_grad_enabled():  # (PyTorch's derivatives.yaml: none)
        raise RuntimeError("view_as_complex_copy does not support automatic differentiation "
                           "for outputs with complex dtype.")
    return F.view_as_complex(input)


def _diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    return input.diagonal(offset, dim1, dim2)


def _expand(input: Tensor, size: Any, *, implicit: bool = False) -> Tensor:  # noqa: A002
    return input.expand(*size)


def _permute(input: Tensor, dims: Any) -> Tensor:  # noqa: A002
    return input.permute(*dims)


def _split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> Any:  # noqa: A002
    if sum(int(s) for s in split_sizes) != input.shape[dim]:
        raise RuntimeError(f"split_with_sizes_copy(): split_sizes must sum to the size of "
                           f"dim {dim} ({input.shape[dim]}), got {list(split_sizes)}")
    return input.split(list(split_sizes), dim)


def _squeeze(input: Tensor, dim: Any = None) -> Tensor:  # noqa: A002
    return input.squeeze() if dim is None else input.squeeze(dim)


def _transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:  # noqa: A002
    return input.transpose(dim0, dim1)


def _unbind(input: Tensor, dim: int = 0) -> Any:  # noqa: A002
    return input.unbind(dim)


def _unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:  # noqa: A002
    return input.unfold(dimension, size, step)


def _unsqueeze(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    return input.unsqueeze(dim)


def _view(input: Tensor, size: Any) -> Tensor:  # noqa: A002
    if isinstance(size, (list, tuple)):
        return input.view(*size)
    return input.view(size)  # a dtype, or one int


def _unsafe_split_with_sizes(input: Tensor, split_sizes: Any, dim: int = 0) -> Any:  # noqa: A002
    d = wrap_dim("unsafe_split_with_sizes", dim, input.ndim)
    sizes = [int(s) for s in split_sizes]
    if sum(sizes) != input.shape[d] or any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{input.shape[d]} (input tensor's size at dimension {dim}), but "
                           f"got split_sizes={sizes}")
    return input.split(sizes, d)


def _unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> Any:  # noqa: A002
    return input.chunk(chunks, dim)


def _unsafe_split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> Any:
    return tensor.split(split_size_or_sections, dim)


def _copy(out: Any) -> Any:
    if isinstance(out, Tensor):
        return out.clone()
    return tuple(o.clone() for o in out)


def _make(name: str, view: Callable, copy: bool) -> Callable:
    def fn(input: Tensor, *args: Any, **kwargs: Any) -> Any:  # noqa: A002  (PyTorch's name)
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                            f"{type(input).__name__}")
        out = view(input, *args, **kwargs)
        return _copy(out) if copy else out
    fn.__name__ = fn.__qualname__ = name
    what = view.__name__.lstrip("_")
    fn.__doc__ = (f"``torch.{name}``: the values of ``{what}`` as new tensors that alias "
                  f"nothing (gradients are the view's)." if copy else
                  f"``torch.{name}``: ``{what.replace('unsafe_', '')}`` (jflow has no "
                  f"in-place check to skip).")
    fn.__signature__ = __import__("inspect").signature(view)  # PyTorch's argument names
    return fn


#: (PyTorch's name, the view it copies, whether the result is copied)
_TABLE: tuple[tuple[str, Callable, bool], ...] = (
    ("alias_copy", _alias, True),
    ("as_strided_copy", _as_strided, True),
    ("detach_copy", _detach, True),
    ("diagonal_copy", _diagonal, True),
    ("expand_copy", _expand, True),
    ("permute_copy", _permute, True),
    ("select_copy", _select, True),
    ("slice_copy", _slice, True),
    ("split_copy", _split, True),
    ("split_with_sizes_copy", _split_with_sizes, True),
    ("squeeze_copy", _squeeze, True),
    ("t_copy", lambda input: input.t(), True),  # noqa: A006
    ("transpose_copy", _transpose, True),
    ("unbind_copy", _unbind, True),
    ("unsqueeze_copy", _unsqueeze, True),
    ("view_copy", _view, True),
    ("view_as_real_copy", _view_as_real, True),
    ("view_as_complex_copy", _view_as_complex, True),
    ("unsafe_chunk", _unsafe_chunk, False),
    ("unsafe_split", _unsafe_split, False),
    ("unsafe_split_with_sizes", _unsafe_split_with_sizes, False),
)

if hasattr(Tensor, "unfold"):  # Tensor.unfold (sliding windows) where jflow has it
    _TABLE += (("unfold_copy", _unfold, True),)

__all__ = [row[0] for row in _TABLE]
_g = globals()
for _name, _view_fn, _copies in _TABLE:
    _g[_name] = _make(_name, _view_fn, _copies)
del _g, _name, _view_fn, _copies
