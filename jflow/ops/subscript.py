"""Subscript ops ``getitem`` / ``setitem`` (``x[index]`` and ``x[index] = value``) —
definition, xla kernel and SBP signatures side by side.

They take their static index as a string attr (``spec``) and the index tensors as a
variadic input, so ``x[i, 1:3, idx]`` is one primitive: it caches per spec, traces under
``jax.jit``, batches under ``jax.vmap`` and gets SBP / autograd like any op. The spec grammar
is in :func:`parse_index_spec`; :func:`index_plan` turns a spec plus shapes into the
PyTorch semantics (ints, slices, None, Ellipsis, 0-d index tensors applied first as views,
then the n-d index tensors with NumPy's advanced-indexing rules on that view).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, P, S, Signature
from ._shape_util import dims_str
from .infer import BOOL, INT, broadcast_shapes, check_dtype, desc
from .primitive import define_op
from .registry import Attr, Input

__all__ = ["parse_index_spec", "index_plan", "IndexPlan", "value_fits"]


# -- indexing: getitem / setitem ----------------------------------------------------------------
#
# spec: comma-separated items, applied left to right like a Python index tuple:
#   i<k>          an int (negative counts from the end)
#   s<a>:<b>:<c>  a slice; empty parts mean None; step > 0
#   n             None (new axis of size 1)
#   e             Ellipsis
#   t             the next index tensor (integer dtype; 0-d acts as an int)
#   b1 / b0       a Python bool: True adds an axis of size 1, False one of size 0 (as torch:
#                 when n-d index tensors are present they become index arrays [0] / [])
#   m             (setitem only, sole item) the next index tensor is a bool mask over the
#                 leading dims; the value must broadcast to the remaining dims


@functools.lru_cache(maxsize=4096)
def parse_index_spec(spec: str) -> tuple[tuple[Any, ...], ...]:
    """Parse a spec string into items ('i', k) | ('s', a, b, c) | ('n',) | ('e',) | ('t',) |
    ('b', bool) | ('m',); ValueError on a malformed spec."""
    if spec == "":
        return ()
    items: list[tuple[Any, ...]] = []
    for tok in spec.split(","):
        try:
            if tok in ("n", "e", "t", "m"):
                items.append((tok,))
            elif tok in ("b0", "b1"):
                items.append(("b", tok == "b1"))
            elif tok[:1] == "i":
                items.append(("i", int(tok[1:])))
            elif tok[:1] == "s":
                parts = tok[1:].split(":")
                if len(parts) != 3:
                    raise ValueError
                a, b, c = (None if p == "" else int(p) for p in parts)
                if c is not None and c <= 0:
                    raise ValueError(f"index spec {spec!r}: slice step must be greater than "
                                     f"zero, got {c}")
                items.append(("s", a, b, 1 if c is None else c))
            else:
                raise ValueError
        except ValueError as e:
            if str(e):
                raise
            raise ValueError(f"malformed index spec item {tok!r} in {spec!r}") from None
    if sum(1 for it in items if it[0] == "e") > 1:
        raise ValueError(f"index spec {spec!r}: an index can only have a single ellipsis")
    if any(it[0] == "m" for it in items) and len(items) != 1:
        raise ValueError(f"index spec {spec!r}: a mask item 'm' must be the only item")
    return tuple(items)


def _check_spec(spec: str) -> None:
    parse_index_spec(spec)


@dataclass(frozen=True)
class IndexPlan:
    """How one index applies to one input shape (PyTorch semantics).

    ``view`` is the first pass (one entry per item after Ellipsis expansion):
    ('int', k) | ('slice', start, stop, step) | ('new',) | ('dyn', t) (a 0-d index tensor) |
    ('keep',) (a full slice over a dim that an n-d index tensor indexes in pass two).
    ``view_shape`` is the shape after it, ``empty_axes`` are view axes narrowed to size 0
    (``False`` without index tensors). ``adv`` lists (view axis, source) for the second pass,
    source ``('t', k)`` (index tensor k) or ``('b', bool)``; ``out_shape`` is the result
    shape. ``passthrough`` maps input axes taken whole to their output axis (for SBP);
    ``adv_out`` is the output axis where the broadcast index dims start.
    """

    view: tuple[tuple[Any, ...], ...]
    view_shape: tuple[int, ...]
    empty_axes: tuple[int, ...]
    adv: tuple[tuple[int, tuple[Any, ...]], ...]
    adv_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    passthrough: tuple[tuple[int, int], ...]
    adv_out: int


def _dims_used(items: Sequence[tuple[Any, ...]], idx_ndims: Sequence[int]) -> int:
    n, k = 0, 0
    for it in items:
        if it[0] in ("i", "s"):
            n += 1
        elif it[0] == "t":
            n += 1
            k += 1
        elif it[0] == "m":
            n += idx_ndims[k]
            k += 1
    return n


@functools.lru_cache(maxsize=4096)
def index_plan(spec: str, shape: tuple[int, ...], idx_shapes: tuple[tuple[int, ...], ...]
               ) -> IndexPlan:
    """The :class:`IndexPlan` of ``spec`` on an input of ``shape`` with index tensors of
    ``idx_shapes``; IndexError for an out-of-range int or too many indices, ValueError for a
    bad spec or index tensors that do not broadcast."""
    items = parse_index_spec(spec)
    n_t = sum(1 for it in items if it[0] in ("t", "m"))
    if n_t != len(idx_shapes):
        raise ValueError(f"index spec {spec!r} uses {n_t} index tensors, {len(idx_shapes)} "
                         f"were given")
    if any(it[0] == "m" for it in items):
        raise ValueError(f"index spec {spec!r}: mask items are only supported by setitem")
    nd = len(shape)
    used = _dims_used(items, [len(s) for s in idx_shapes])
    if used > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    has_adv = any(len(idx_shapes[k]) > 0 for k in range(len(idx_shapes)))
    view: list[tuple[Any, ...]] = []
    view_shape: list[int] = []
    view_src: list[int | None] = []  # input axis a view axis comes from, if taken whole
    empty: list[int] = []
    adv: list[tuple[int, tuple[Any, ...]]] = []
    adv_shapes: list[tuple[int, ...]] = []
    d, t = 0, 0

    def full(axis: int) -> None:
        view.append(("slice", 0, shape[axis], 1))
        view_shape.append(shape[axis])
        view_src.append(axis)

    for it in items:
        kind = it[0]
        if kind == "e":
            for _ in range(nd - used):
                full(d)
                d += 1
        elif kind == "n":
            view.append(("new",))
            view_shape.append(1)
            view_src.append(None)
        elif kind == "b":
            view.append(("new",))
            view_shape.append(1)
            view_src.append(None)
            if has_adv:
                adv.append((len(view_shape) - 1, ("b", it[1])))
                adv_shapes.append((1 if it[1] else 0,))
            elif not it[1]:
                empty.append(len(view_shape) - 1)
        elif kind == "i":
            size = shape[d]
            k = it[1]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {size}")
            view.append(("int", k % size))
            d += 1
        elif kind == "s":
            a, b, c = slice(it[1], it[2], it[3]).indices(shape[d])
            n = len(range(a, b, c))
            view.append(("slice", a, a + (n - 1) * c + 1 if n else a, c))
            view_shape.append(n)
            view_src.append(d if (a, n, c) == (0, shape[d], 1) else None)
            d += 1
        elif kind == "t":
            ts = idx_shapes[t]
            if len(ts) == 0:
                view.append(("dyn", t))
            else:
                view.append(("keep",))
                view_shape.append(shape[d])
                view_src.append(None)
                adv.append((len(view_shape) - 1, ("t", t)))
                adv_shapes.append(tuple(ts))
            t += 1
            d += 1
    while d < nd:  # trailing dims are taken whole
        full(d)
        d += 1
    out_shape = list(view_shape)
    for a in empty:
        out_shape[a] = 0
    passthrough: list[tuple[int, int]] = []
    adv_out = 0
    adv_shape: tuple[int, ...] = ()
    if adv:
        try:
            adv_shape = broadcast_shapes(*adv_shapes)
        except ValueError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                             "with shapes " + ", ".join(dims_str(s) for s in adv_shapes)) from None
        axes = [a for a, _ in adv]
        adjacent = axes == list(range(axes[0], axes[0] + len(axes)))
        adv_out = axes[0] if adjacent else 0
        rest = [i for i in range(len(view_shape)) if i not in axes]
        before = [i for i in rest if i < adv_out] if adjacent else []
        after = [i for i in rest if i not in before]
        out_shape = ([view_shape[i] for i in before] + list(adv_shape)
                     + [view_shape[i] for i in after])
        order = before + [None] * len(adv_shape) + after
    else:
        order = list(range(len(view_shape)))
    for j, v in enumerate(order):
        if v is not None and view_src[v] is not None and v not in empty:
            passthrough.append((view_src[v], j))
    return IndexPlan(tuple(view), tuple(view_shape), tuple(empty), tuple(adv), adv_shape,
                     tuple(out_shape), tuple(passthrough), adv_out)


def _check_index_dtypes(indices: Sequence[Any]) -> None:
    for k, a in enumerate(indices):
        check_dtype(a, INT, f"index tensor {k}")


def _plan_of(op: str, spec: str, x: Any, indices: Sequence[Any]) -> IndexPlan:
    try:
        return index_plan(spec, tuple(x.shape), tuple(tuple(a.shape) for a in indices))
    except IndexError as e:  # the registry prefixes TypeError / ValueError only
        raise IndexError(f"op '{op}': {e}") from None


def _getitem_infer(x, indices, spec):
    plan = _plan_of("getitem", spec, x, indices)
    _check_index_dtypes(indices)
    return desc(plan.out_shape, x.dtype)


def _view_index(plan: IndexPlan, indices: Sequence[Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for v in plan.view:
        k = v[0]
        if k == "int":
            out.append(v[1])
        elif k == "slice":
            out.append(slice(v[1], v[2], v[3]))
        elif k == "new":
            out.append(None)
        elif k == "dyn":
            out.append(indices[v[1]])
        else:
            out.append(slice(None))
    return tuple(out)


def _trivial_view(plan: IndexPlan, shape: Sequence[int]) -> bool:
    """True when the first pass takes every dim whole (only n-d index tensors do work)."""
    return len(plan.view) == len(shape) and all(
        v[0] == "keep" or (v[0] == "slice" and v[1] == 0 and v[3] == 1 and v[2] == d)
        for v, d in zip(plan.view, shape))


def _adv_index(plan: IndexPlan, indices: Sequence[Any], ndim: int) -> tuple[Any, ...]:
    idx: list[Any] = [slice(None)] * ndim
    for axis, src in plan.adv:
        if src[0] == "t":
            idx[axis] = indices[src[1]]
        else:
            idx[axis] = jnp.zeros((1 if src[1] else 0,), jnp.int32)
    return tuple(idx)


def _getitem_kernel(x, indices, spec):
    plan = index_plan(spec, tuple(x.shape), tuple(tuple(a.shape) for a in indices))
    y = x if _trivial_view(plan, x.shape) else x[_view_index(plan, indices)]
    for a in plan.empty_axes:
        y = lax.slice_in_dim(y, 0, 0, axis=a)
    if plan.adv:
        y = y[_adv_index(plan, indices, y.ndim)]
    return y


def _getitem_sbp(in_shapes, n_out=1, spec=""):
    x, idx = tuple(in_shapes[0]), tuple(tuple(s) for s in in_shapes[1:])
    plan = index_plan(spec, x, idx)
    nb = (B,) * len(idx)
    sigs = [Signature((S(i),) + nb, (S(j),)) for i, j in plan.passthrough]
    t_shapes = [idx[src[1]] for _, src in plan.adv if src[0] == "t"]
    if t_shapes and all(s == plan.adv_shape for s in t_shapes) and len(t_shapes) == len(plan.adv):
        # all index tensors split alike: each rank gathers its own slice of the result
        for k in range(len(plan.adv_shape)):
            if plan.adv_shape[k] > 1:
                ins = tuple(S(k) if len(s) > 0 else B for s in idx)
                sigs.append(Signature((B,) + ins, (S(plan.adv_out + k),)))
    sigs.append(Signature((P,) + nb, (P,)))
    return sigs


define_op("getitem", inputs=["x", Input("indices", variadic=True, min=0)], outputs=["y"],
          attrs=[Attr("spec", "string")], check=_check_spec, infer=_getitem_infer,
          sbp=_getitem_sbp,
          doc="x[index] with PyTorch semantics; the static part of the index is the `spec` "
              "string, index tensors are inputs (see jflow.ops.subscript for the grammar).")
register_kernel("getitem", _getitem_kernel, name="getitem_xla")


def _strip_leading_ones(shape: Sequence[int], ndim: int) -> tuple[int, ...]:
    shape = tuple(shape)
    while len(shape) > ndim and shape[0] == 1:
        shape = shape[1:]
    return shape


def value_fits(value_shape: Sequence[int], target: Sequence[int]) -> bool:
    v = _strip_leading_ones(value_shape, len(target))
    if len(v) > len(target):
        return False
    return all(a == b or a == 1 for a, b in zip(v, tuple(target)[len(target) - len(v):]))


def _mask_target(x_shape: Sequence[int], mask_shape: Sequence[int]) -> tuple[int, ...]:
    k = len(mask_shape)
    if k > len(x_shape):
        raise IndexError(f"too many indices for tensor of dimension {len(x_shape)}")
    for j in range(k):
        if mask_shape[j] != x_shape[j]:
            raise IndexError(f"the shape of the mask {dims_str(mask_shape)} at index {j} does not "
                             f"match the shape of the indexed tensor {dims_str(x_shape)} at "
                             f"index {j}")
    return tuple(x_shape[k:])


def _setitem_infer(x, value, indices, spec, accumulate):
    if np.dtype(value.dtype) != np.dtype(x.dtype):
        raise TypeError(f"value must have the tensor's dtype {np.dtype(x.dtype).name} (the "
                        f"functional layer casts), got {np.dtype(value.dtype).name}")
    items = parse_index_spec(spec)
    if items == (("m",),):
        check_dtype(indices[0], BOOL, "mask")
        try:
            target = _mask_target(x.shape, indices[0].shape)
        except IndexError as e:
            raise IndexError(f"op 'setitem': {e}") from None
        what = "the dims after the mask"
    else:
        _check_index_dtypes(indices)
        target = _plan_of("setitem", spec, x, indices).out_shape
        what = "indexing result"
    if not value_fits(value.shape, target):
        raise ValueError(f"shape mismatch: value tensor of shape {dims_str(value.shape)} cannot "
                         f"be broadcast to {what} of shape {dims_str(target)}")
    return desc(x.shape, x.dtype)


def _fit(value, target: Sequence[int]):
    v = value.reshape(_strip_leading_ones(value.shape, len(target)))
    return jnp.broadcast_to(v, tuple(target))


def _setitem_kernel(x, value, indices, spec, accumulate):
    items = parse_index_spec(spec)
    if items == (("m",),):
        mask = indices[0]
        rest = x.shape[mask.ndim:]
        v = _fit(value, rest)
        return jnp.where(mask.reshape(mask.shape + (1,) * len(rest)), x + v if accumulate else v,
                         x)
    plan = index_plan(spec, tuple(x.shape), tuple(tuple(a.shape) for a in indices))
    if 0 in plan.out_shape:
        return x
    v = _fit(value, plan.out_shape)

    def write(ref, val):  # duplicates: set keeps one of the values, add sums them all
        return ref.add(val) if accumulate else ref.set(val)

    if not plan.adv:
        return write(x.at[_view_index(plan, indices)], v)
    if _trivial_view(plan, x.shape):
        return write(x.at[_adv_index(plan, indices, x.ndim)], v)
    view_idx = _view_index(plan, indices)
    sub = x[view_idx]
    sub = write(sub.at[_adv_index(plan, indices, sub.ndim)], v)
    return x.at[view_idx].set(sub)


def _setitem_sbp(in_shapes, n_out=1, spec="", accumulate=False):
    x, v, idx = tuple(in_shapes[0]), tuple(in_shapes[1]), [tuple(s) for s in in_shapes[2:]]
    nb = (B,) * len(idx)
    sigs = []
    if parse_index_spec(spec) == (("m",),):
        target = tuple(x[len(idx[0]):])
        passthrough = [(len(idx[0]) + j, j) for j in range(len(target))]
        nb = (B,)  # the mask is read whole
    else:
        plan = index_plan(spec, x, tuple(idx))
        target, passthrough = plan.out_shape, plan.passthrough
    vs = _strip_leading_ones(v, len(target))
    lead = len(v) - len(vs)
    for i, j in passthrough:
        a = j - (len(target) - len(vs))
        vsbp = S(a + lead) if a >= 0 and vs[a] != 1 else B
        if x[i] > 1:
            sigs.append(Signature((S(i), vsbp) + nb, (S(i),)))
    sigs.append(Signature((P, P) + nb, (P,)))  # set / add are linear in (x, v) together
    return sigs


define_op("setitem", inputs=["x", "value", Input("indices", variadic=True, min=0)],
          outputs=["y"], attrs=[Attr("spec", "string"), Attr("accumulate", "bool", False)],
          check=lambda spec, accumulate: _check_spec(spec),
          infer=_setitem_infer, sbp=_setitem_sbp,
          doc="A copy of x with x[index] = value, or x[index] += value with accumulate=True "
              "(repeated indices add up: torch's index_put_(accumulate=True), the backward of "
              "getitem). The value broadcasts to the indexed shape; its leading size-1 dims "
              "are dropped as in torch.")
register_kernel("setitem", _setitem_kernel, name="setitem_xla")
