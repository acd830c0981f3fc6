"""Join and split ops: cat, stack and split (consecutive pieces along one dim) —
definition, xla kernel and SBP signatures side by side.

Inputs of cat / stack must share a dtype (the functors promote); any axis but the joined
one may be split, and all three ops are linear.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import P, S, Signature
from ._shape_util import dims_str
from .infer import desc, normalize_axis
from .primitive import define_op
from .registry import Attr, Input, Output


def _same_dtype(xs: Sequence[Any], what: str = "inputs") -> None:
    d0 = np.dtype(xs[0].dtype)
    for k, x in enumerate(xs[1:], 1):
        if np.dtype(x.dtype) != d0:
            raise TypeError(f"all {what} must have the same dtype (promotion happens in the "
                            f"functional layer), got {d0.name} and {np.dtype(x.dtype).name} "
                            f"(tensor {k})")


def _cat_infer(xs, dim):
    _same_dtype(xs)
    nd = len(xs[0].shape)
    if nd == 0:
        raise ValueError("zero-dimensional tensor (at position 0) cannot be concatenated")
    a = normalize_axis(dim, nd)
    out = list(xs[0].shape)
    for k, x in enumerate(xs[1:], 1):
        if len(x.shape) != nd:
            raise ValueError(f"tensors must have the same number of dimensions: got {nd} and "
                             f"{len(x.shape)} (tensor {k})")
        for i in range(nd):
            if i != a and x.shape[i] != out[i]:
                raise ValueError(f"sizes of tensors must match except in dimension {a}: "
                                 f"expected size {out[i]} but got size {x.shape[i]} for "
                                 f"tensor {k} in dimension {i}")
        out[a] += x.shape[a]
    return desc(out, xs[0].dtype)


def _cat_sbp(in_shapes, n_out=1, dim=0):
    nd = len(in_shapes[0])
    a = normalize_axis(dim, nd)
    k = len(in_shapes)
    return [Signature((S(i),) * k, (S(i),)) for i in range(nd) if i != a] + [
        Signature((P,) * k, (P,))]


define_op("cat", inputs=[Input("xs", variadic=True, min=1)], outputs=["y"],
          attrs=[Attr("dim", "int64", 0)], infer=_cat_infer, sbp=_cat_sbp)
register_kernel("cat", lambda xs, dim: jnp.concatenate(xs, axis=normalize_axis(dim, xs[0].ndim)),
                name="cat_xla")


def _stack_infer(xs, dim):
    _same_dtype(xs)
    s0 = tuple(xs[0].shape)
    for k, x in enumerate(xs[1:], 1):
        if tuple(x.shape) != s0:
            raise ValueError(f"stack expects each tensor to be equal size, but got {list(s0)} "
                             f"at entry 0 and {dims_str(x.shape)} at entry {k}")
    a = normalize_axis(dim, len(s0) + 1)
    return desc(s0[:a] + (len(xs),) + s0[a:], xs[0].dtype)


def _stack_sbp(in_shapes, n_out=1, dim=0):
    nd = len(in_shapes[0])
    a = normalize_axis(dim, nd + 1)
    k = len(in_shapes)
    return [Signature((S(i),) * k, (S(i if i < a else i + 1),)) for i in range(nd)] + [
        Signature((P,) * k, (P,))]


define_op("stack", inputs=[Input("xs", variadic=True, min=1)], outputs=["y"],
          attrs=[Attr("dim", "int64", 0)], infer=_stack_infer, sbp=_stack_sbp)
register_kernel("stack", lambda xs, dim: jnp.stack(xs, axis=normalize_axis(dim, xs[0].ndim + 1)),
                name="stack_xla")


def _split_check(dim, sizes):
    if not sizes:
        raise ValueError("sizes must name at least one piece")
    if any(s < 0 for s in sizes):
        raise ValueError(f"sizes must be non-negative, got {list(sizes)}")


def _split_infer(x, dim, sizes):
    nd = len(x.shape)
    if nd == 0:
        raise ValueError("a 0-d tensor cannot be split")
    a = normalize_axis(dim, nd)
    if sum(sizes) != x.shape[a]:
        raise ValueError(f"split sizes {list(sizes)} must sum exactly to {x.shape[a]} (the "
                         f"input's size at dimension {a}), they sum to {sum(sizes)}")
    return [desc(tuple(x.shape[:a]) + (s,) + tuple(x.shape[a + 1:]), x.dtype) for s in sizes]


def _split_kernel(x, dim, sizes):
    a = normalize_axis(dim, x.ndim)
    outs, start = [], 0
    for s in sizes:
        outs.append(lax.slice_in_dim(x, start, start + s, axis=a))
        start += s
    return tuple(outs)


def _split_sbp(in_shapes, n_out=1, dim=0, sizes=()):
    nd = len(in_shapes[0])
    a = normalize_axis(dim, nd)
    return [Signature((S(i),), (S(i),) * n_out) for i in range(nd) if i != a] + [
        Signature((P,), (P,) * n_out)]


define_op("split", inputs=["x"], outputs=[Output("outs", variadic=True)],
          attrs=[Attr("dim", "int64"), Attr("sizes", "int64_list")], check=_split_check,
          infer=_split_infer, sbp=_split_sbp,
          doc="Consecutive pieces of the given sizes along `dim` (torch.split_with_sizes).")
register_kernel("split", _split_kernel, name="split_xla")
