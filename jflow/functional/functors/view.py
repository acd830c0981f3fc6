"""Functors of the view ops (``jflow/ops/view.py``): reshape / view, flatten / unflatten,
squeeze / unsqueeze, transpose / permute / movedim / t, expand / broadcast_to — PyTorch's
argument handling (negative dims, -1 sizes, int-or-list arguments), then the op.

Argument errors are raised here, naming the function as PyTorch does: ``IndexError`` for a
dim out of range, ``ValueError`` for sizes that do not fit. The functor passes normalised
attrs, so equal calls share one cached executable.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from ...ops import get
from ...ops.view import expand_shape, flatten_shape, reshape_shape
from ...tensor import Tensor
from ...views import alias, layout_of, view_strides
from ..registry import functor
from ._shape_util import in_function, wrap_dim

_reshape = get("reshape").apply
_flatten = get("flatten").apply
_squeeze = get("squeeze").apply
_unsqueeze = get("unsqueeze").apply
_transpose = get("transpose").apply
_expand = get("expand").apply


# -- reshape family ----------------------------------------------------------------------------

def _can_view(input: Tensor, shape: tuple[int, ...]) -> bool:
    """Whether ``input`` can be seen as ``shape`` without a copy (always, unless ``input`` is
    a view whose strides do not allow it, as PyTorch decides)."""
    return not input._aliases or view_strides(layout_of(input), shape) is not None


@functools.lru_cache(maxsize=1024)
def _target_shape(in_shape: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    return reshape_shape(in_shape, shape)  # (cached: a model reshapes the same way each step)


def _reshape_to(fname: str, input: Tensor, shape: Sequence[int]) -> Tensor:
    try:
        try:
            s = _target_shape(input._meta.shape, tuple(shape))
        except TypeError:  # unhashable sizes: validated (and refused) uncached
            s = reshape_shape(input._meta.shape, shape)
    except ValueError as e:
        raise in_function(fname, e) from None
    if not _can_view(input, s):
        if fname == "view":
            raise RuntimeError("view(): view size is not compatible with input tensor's size "
                               "and stride (at least one dimension spans across two "
                               "contiguous subspaces). Use .reshape(...) instead.")
        return _reshape(input, shape=s)  # a copy, as PyTorch's reshape of such a view
    return alias(_reshape(input, shape=s), input, "reshape", (s,))


@functor("Reshape")
def reshape(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    """A view of ``input`` when one is possible (writes reach ``input``), else a copy."""
    return _reshape_to("reshape", input, shape)


@functor("View")
def view(input: Tensor, shape: tuple[int, ...]) -> Tensor:
    """A view of ``input`` with another shape: writes into it reach ``input``. Raises when
    ``input``'s strides do not allow it (use reshape), as PyTorch."""
    return _reshape_to("view", input, shape)


@functor("Flatten")
def flatten(input: Tensor, start_dim: int, end_dim: int) -> Tensor:
    nd = input._meta.ndim
    s = wrap_dim("flatten", start_dim, nd)
    e = wrap_dim("flatten", end_dim, nd)
    if nd and s > e:
        raise ValueError(f"flatten(): start_dim ({start_dim}) cannot come after end_dim "
                         f"({end_dim})")
    out = _flatten(input, start_dim=s, end_dim=e)
    shape = flatten_shape(input._meta.shape, s, e)
    if not _can_view(input, shape):
        return out
    return alias(out, input, "reshape", (shape,))


@functor("Unflatten")
def unflatten(input: Tensor, dim: int, sizes: tuple[int, ...]) -> Tensor:
    shape = tuple(input._meta.shape)
    a = wrap_dim("unflatten", dim, len(shape))
    if not sizes:
        raise ValueError("unflatten(): sizes must be non-empty")
    try:
        inner = reshape_shape((shape[a],) if shape else (1,), sizes)
    except ValueError as e:
        raise ValueError(f"unflatten(): provided sizes {list(sizes)} don't multiply up to the "
                         f"size of dim {dim} ({shape[a] if shape else 1}) in the input "
                         f"tensor ({e})") from None
    return _reshape_to("unflatten", input, shape[:a] + inner + shape[a + 1:])


@functor("Squeeze")
def squeeze(input: Tensor, dim: tuple[int, ...] | None) -> Tensor:
    shape = input._meta.shape
    nd = len(shape)
    if dim is None:
        axes = tuple(i for i, s in enumerate(shape) if s == 1)
    else:
        norm = {wrap_dim("squeeze", d, nd) for d in dim}
        axes = tuple(sorted(a for a in norm if nd and shape[a] == 1))
    return alias(_squeeze(input, axes=axes), input, "squeeze", (axes,))


@functor("Unsqueeze")
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    d = wrap_dim("unsqueeze", dim, input._meta.ndim, extra=1)
    return alias(_unsqueeze(input, dim=d), input, "unsqueeze", (d,))


# -- permutations ----------------------------------------------------------------------------

@functor("Transpose")
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    nd = input._meta.ndim
    a, b = wrap_dim("transpose", dim0, nd), wrap_dim("transpose", dim1, nd)
    perm = list(range(nd))
    if nd:
        perm[a], perm[b] = perm[b], perm[a]
    return _permuted(input, tuple(perm))


@functor("Permute")
def permute(input: Tensor, dims: tuple[int, ...]) -> Tensor:
    nd = input._meta.ndim
    if len(dims) != nd:
        raise ValueError(f"permute(): number of dims don't match: the input has {nd} dims but "
                         f"dims has {len(dims)} entries ({list(dims)})")
    perm = tuple(wrap_dim("permute", d, nd) for d in dims)
    if len(set(perm)) != nd:
        raise ValueError(f"permute(): repeated dim in {list(dims)}")
    return _permuted(input, perm)


def _permuted(input: Tensor, perm: tuple[int, ...]) -> Tensor:
    return alias(_transpose(input, perm=perm), input, "transpose", (perm,))


@functor("Movedim")
def movedim(input: Tensor, source: tuple[int, ...], destination: tuple[int, ...]) -> Tensor:
    nd = input._meta.ndim
    if len(source) != len(destination):
        raise ValueError(f"movedim(): invalid source or destination dims: source "
                         f"({list(source)} dims) should contain the same number of dims as "
                         f"destination ({list(destination)} dims)")
    src = [wrap_dim("movedim", d, nd) for d in source]
    dst = [wrap_dim("movedim", d, nd) for d in destination]
    if len(set(src)) != len(src):
        raise ValueError(f"movedim(): repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise ValueError(f"movedim(): repeated dim in `destination` ({list(destination)})")
    perm: list[int | None] = [None] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(i for i in range(nd) if i not in src)
    final = tuple(p if p is not None else next(rest) for p in perm)
    return _permuted(input, final)


@functor("T")
def t(input: Tensor) -> Tensor:
    nd = input._meta.ndim
    if nd > 2:
        raise ValueError(f"t() expects a tensor with <= 2 dimensions, but input is {nd}D")
    return _permuted(input, (1, 0) if nd == 2 else tuple(range(nd)))


# -- expand ----------------------------------------------------------------------------------

def _expand_to(fname: str, input: Tensor, size: Sequence[int]) -> Tensor:
    try:
        s = expand_shape(input._meta.shape, size)
    except ValueError as e:
        raise in_function(fname, e) from None
    return alias(_expand(input, shape=s), input, "expand", (s,))


@functor("Expand")
def expand(input: Tensor, size: tuple[int, ...]) -> Tensor:
    return _expand_to("expand", input, size)


@functor("BroadcastTo")
def broadcast_to(input: Tensor, size: tuple[int, ...]) -> Tensor:
    return _expand_to("broadcast_to", input, size)


# -- more views (ravel, adjoint & co.) -----------------------------------------------------------

@functor("Ravel")
def ravel(input: Tensor) -> Tensor:
    """torch.ravel: ``input`` as 1-D (a view when one is possible, else a copy)."""
    return _reshape_to("ravel", input, (-1,))


@functor("Adjoint")
def adjoint(input: Tensor) -> Tensor:
    """torch.adjoint of a real tensor: its last two dims swapped (a view)."""
    nd = input._meta.ndim
    if nd < 2:
        raise ValueError(f"adjoint(): argument 'input' must have at least 2 dimensions "
                         f"(a matrix or a batch of matrices), got {nd}")
    return transpose(input, -2, -1)
