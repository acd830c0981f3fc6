"""Strided layouts: the sizes, strides and storage offset a view would have in PyTorch.

jflow arrays are immutable and always dense, so a view has no memory of its own to describe;
its *layout* says which elements of its base it aliases, exactly as PyTorch's
``(sizes, strides, storage_offset)`` over the base's storage. It answers ``stride()``,
``is_contiguous()`` and ``storage_offset()``, decides whether ``view()`` / ``reshape()`` can
alias (PyTorch's stride computation), refuses writes into overlapping (expanded) views, and
gives the flat positions a write scatters into.

Every function here is pure Python on tuples (basic indices are read with the subscript
ops' own index planner): no JAX, no tensors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..ops.subscript import index_plan

__all__ = ["Layout", "contiguous", "is_contiguous", "view_strides", "overlaps", "flat_index",
           "as_basic_index", "STEP_LAYOUT", "DTYPE_STEPS"]


class Layout(NamedTuple):
    """A strided view of a dense base: element ``i`` of the view is base element
    ``offset + sum(i[d] * strides[d])`` in row-major order."""

    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int


def contiguous_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides (a size-0 or size-1 dim counts as size 1, as PyTorch)."""
    out, acc = [], 1
    for s in reversed(sizes):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


def contiguous(sizes: Sequence[int]) -> Layout:
    """The layout of a dense tensor of ``sizes`` (what every non-view jflow tensor has)."""
    sizes = tuple(sizes)
    return Layout(sizes, contiguous_strides(sizes), 0)


def is_contiguous(layout: Layout) -> bool:
    """PyTorch's rule: empty tensors are contiguous; size-1 dims may have any stride."""
    sizes, strides = layout.sizes, layout.strides
    if any(s == 0 for s in sizes):
        return True
    expected = 1
    for s, st in zip(reversed(sizes), reversed(strides)):
        if s != 1:
            if st != expected:
                return False
            expected *= s
    return True


def view_strides(layout: Layout, shape: Sequence[int]) -> tuple[int, ...] | None:
    """Strides for viewing ``layout`` as ``shape`` without copying, or None when some new
    dim would span two non-contiguous chunks (then PyTorch's ``view`` raises and ``reshape``
    copies). The same chunk-matching walk as PyTorch's ``computeStride``."""
    old, ostr = layout.sizes, layout.strides
    shape = tuple(shape)
    if not old:  # a 0-d tensor: every new dim has size 1
        return contiguous_strides(shape)
    numel = math.prod(old)  # (Python ints: exact, and ~10x cheaper than np.prod here)
    if numel == 0:
        return ostr if old == shape else contiguous_strides(shape)
    new = [0] * len(shape)
    view_d = len(shape) - 1
    chunk_base = ostr[-1]
    tensor_numel = view_numel = 1
    for d in range(len(old) - 1, -1, -1):
        tensor_numel *= old[d]
        if d == 0 or (old[d - 1] != 1 and ostr[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or shape[view_d] == 1):
                new[view_d] = view_numel * chunk_base
                view_numel *= shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = ostr[d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(new)


def overlaps(layout: Layout) -> bool:
    """True when two view elements alias one base element (an expanded dim: stride 0 with
    size > 1) of a non-empty view. PyTorch refuses in-place writes into such views; so does
    jflow."""
    if 0 in layout.sizes:
        return False
    return any(st == 0 and s > 1 for s, st in zip(layout.sizes, layout.strides))


def flat_index(layout: Layout) -> np.ndarray:
    """The base's row-major position of every view element (an int64 array of the view's
    shape)."""
    idx = np.full(layout.sizes, layout.offset, dtype=np.int64)
    for d, (s, st) in enumerate(zip(layout.sizes, layout.strides)):
        shape = [1] * len(layout.sizes)
        shape[d] = s
        idx = idx + (np.arange(s, dtype=np.int64) * st).reshape(shape)
    return idx


class BasicIndex(NamedTuple):
    """A view expressed as a basic index of its base plus a rearrangement: the view equals
    ``base[spec]`` with its dims permuted by ``perm`` and reshaped to the view's sizes
    (size-1 dims inserted). Writes through it are slice updates, no element scatter."""

    spec: str
    perm: tuple[int, ...]
    shape: tuple[int, ...]  # the shape of base[spec]


def as_basic_index(base_shape: Sequence[int], lay: Layout) -> BasicIndex | None:
    """The :class:`BasicIndex` selecting exactly ``lay``'s elements of a dense base of
    ``base_shape``, or None when no basic index does (a reshape that merges dims, a
    diagonal, an overlap). Checked against :func:`flat_index`, so a wrong match cannot
    pass."""
    shape = tuple(base_shape)
    if not shape or 0 in lay.sizes or overlaps(lay):
        return None
    cstr = contiguous_strides(shape)
    start, rem = [], lay.offset
    for n, c in zip(shape, cstr):
        q, rem = divmod(rem, c)
        if q >= n:
            return None
        start.append(q)
    used: dict[int, int] = {}  # base dim -> view dim
    steps: dict[int, int] = {}
    for i, (n, st) in enumerate(zip(lay.sizes, lay.strides)):
        if n == 1:
            continue
        for d in range(len(shape)):
            c = cstr[d]
            if shape[d] > 1 and d not in used and st % c == 0 and st >= c \
                    and start[d] + (n - 1) * (st // c) < shape[d]:
                used[d], steps[d] = i, st // c
                break
        else:
            return None
    items, sel_shape = [], []
    for d in range(len(shape)):
        if d in used:
            k = lay.sizes[used[d]]
            items.append(f"s{start[d]}:{start[d] + (k - 1) * steps[d] + 1}:{steps[d]}")
            sel_shape.append(k)
        else:
            items.append(f"i{start[d]}")
    order = sorted(used, key=lambda d: used[d])  # base dims in view order
    sel_dims = sorted(used)
    perm = tuple(sel_dims.index(d) for d in order)
    plan = BasicIndex(",".join(items), perm, tuple(sel_shape))
    # proof: the same elements in the same order
    pos = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    picked = pos[tuple(slice(start[d], start[d] + (lay.sizes[used[d]] - 1) * steps[d] + 1,
                             steps[d]) if d in used else start[d] for d in range(len(shape)))]
    if not np.array_equal(np.transpose(picked, perm).reshape(lay.sizes), flat_index(lay)):
        return None
    return plan


# -- one rule per view step: the layout after it ----------------------------------------------
#
# A step is ``(kind, args)``; see jflow.views.alias for how each is replayed on a value.

def _unsqueeze_stride(sizes: Sequence[int], strides: Sequence[int], dim: int) -> int:
    return sizes[dim] * strides[dim] if dim < len(sizes) else 1


def _reshape(lay: Layout, shape: tuple[int, ...]) -> Layout | None:
    st = view_strides(lay, shape)
    return None if st is None else Layout(tuple(shape), st, lay.offset)


def _transpose(lay: Layout, perm: tuple[int, ...]) -> Layout:
    return Layout(tuple(lay.sizes[p] for p in perm), tuple(lay.strides[p] for p in perm),
                  lay.offset)


def _squeeze(lay: Layout, axes: tuple[int, ...]) -> Layout:
    keep = [d for d in range(len(lay.sizes)) if d not in axes]
    return Layout(tuple(lay.sizes[d] for d in keep), tuple(lay.strides[d] for d in keep),
                  lay.offset)


def _unsqueeze(lay: Layout, dim: int) -> Layout:
    st = _unsqueeze_stride(lay.sizes, lay.strides, dim)
    return Layout(lay.sizes[:dim] + (1,) + lay.sizes[dim:],
                  lay.strides[:dim] + (st,) + lay.strides[dim:], lay.offset)


def _expand(lay: Layout, shape: tuple[int, ...]) -> Layout:
    lead = len(shape) - len(lay.sizes)
    strides = [0] * lead
    for s, (old, st) in zip(shape[lead:], zip(lay.sizes, lay.strides)):
        strides.append(st if s == old else 0)
    return Layout(tuple(shape), tuple(strides), lay.offset)


def _narrow(lay: Layout, dim: int, start: int, length: int) -> Layout:
    sizes = list(lay.sizes)
    sizes[dim] = length
    return Layout(tuple(sizes), lay.strides, lay.offset + start * lay.strides[dim])


def _slice(lay: Layout, start: tuple[int, ...], stop: tuple[int, ...],
           step: tuple[int, ...]) -> Layout:
    sizes, strides, offset = [], [], lay.offset
    for d, (a, b, c) in enumerate(zip(start, stop, step)):
        a, b, c = slice(a, b, c).indices(lay.sizes[d])
        sizes.append(len(range(a, b, c)))
        strides.append(lay.strides[d] * c)
        offset += a * lay.strides[d]
    return Layout(tuple(sizes), tuple(strides), offset)


def _basic_index(lay: Layout, spec: str) -> Layout:
    """A basic index (a ``getitem`` spec without index tensors: int / slice / None / ...)
    applied to ``lay``."""
    plan = index_plan(spec, lay.sizes, ())
    sizes, strides, offset, d = [], [], lay.offset, 0
    for item in plan.view:
        kind = item[0]
        if kind == "int":
            offset += item[1] * lay.strides[d]
            d += 1
        elif kind == "slice":
            a, b, c = item[1], item[2], item[3]
            sizes.append(len(range(a, b, c)))
            strides.append(lay.strides[d] * c)
            offset += a * lay.strides[d]
            d += 1
        else:  # "new"
            sizes.append(1)
            strides.append(_unsqueeze_stride(lay.sizes, lay.strides, d))
    sizes += lay.sizes[d:]
    strides += lay.strides[d:]
    for a in plan.empty_axes:
        sizes[a] = 0
    return Layout(tuple(sizes), tuple(strides), offset)


def _as_strided(lay: Layout, size: tuple[int, ...], stride: tuple[int, ...],
                offset: int) -> Layout:
    return Layout(tuple(size), tuple(stride), offset)


# Complex views change the element type: a complex element is two float ones (real, imag), so
# past ``real`` / ``imag`` / ``view_as_real`` a layout counts float elements (strides double,
# as PyTorch reports them), past ``view_as_complex`` complex ones (strides halve).

def _part(lay: Layout, which: int) -> Layout:
    return Layout(lay.sizes, tuple(2 * s for s in lay.strides), 2 * lay.offset + which)


def _as_real(lay: Layout) -> Layout:
    return Layout(lay.sizes + (2,), tuple(2 * s for s in lay.strides) + (1,), 2 * lay.offset)


def _as_complex(lay: Layout) -> Layout:
    return Layout(lay.sizes[:-1], tuple(s // 2 for s in lay.strides[:-1]), lay.offset // 2)


def _bitcast(lay: Layout, src_size: int, dst_size: int) -> Layout:
    """``view(dtype)``: past it a layout counts the new elements (``src_size`` /
    ``dst_size`` bytes); the last dim is contiguous (Tensor.view checks it)."""
    if src_size == dst_size or not lay.sizes:
        return lay
    if src_size > dst_size:
        r = src_size // dst_size
        return Layout(lay.sizes[:-1] + (lay.sizes[-1] * r,),
                      tuple(s * r for s in lay.strides[:-1]) + (1,), lay.offset * r)
    k = dst_size // src_size
    return Layout(lay.sizes[:-1] + (lay.sizes[-1] // k,),
                  tuple(s // k for s in lay.strides[:-1]) + (1,), lay.offset // k)


#: view steps that change the element type (complex <-> float, ``view(dtype)``): see
#: ``_scatter_chain`` in ``alias.py``
DTYPE_STEPS = frozenset({"real", "imag", "conj", "view_as_real", "view_as_complex", "bitcast"})

#: kind -> fn(layout, *args) -> layout (None: not expressible as a view)
STEP_LAYOUT = {
    "reshape": _reshape, "transpose": _transpose, "squeeze": _squeeze,
    "unsqueeze": _unsqueeze, "expand": _expand, "narrow": _narrow, "slice": _slice,
    "index": _basic_index, "as_strided": _as_strided,
    "real": lambda lay: _part(lay, 0), "imag": lambda lay: _part(lay, 1),
    "conj": lambda lay: lay, "view_as_real": _as_real, "view_as_complex": _as_complex,
    "bitcast": lambda lay, src, dst: _bitcast(lay, np.dtype(src).itemsize, np.dtype(dst).itemsize),
}
