"""Index ops (gather / scatter / index_select / masked_fill / one_hot) and sorting (sort /
topk) — definition, xla kernel and SBP signatures side by side.

Out-of-range indices. Values of an index tensor are data, so an op cannot reject them at
inference time; the functors check them on the host when the index is concrete (eager mode)
and raise. Inside a compiled program (``jax.jit`` / ``vmap`` / tracing) nothing can be raised,
so the kernels define the result explicitly instead of JAX's default (clamping, or NumPy's
wrap-around for negative indices):

* ``dim_gather`` / ``index_select``: an out-of-range entry (negative ones included) reads JAX's
  fill value — NaN for floating dtypes, the minimum for signed integers, the maximum for
  unsigned ones, True for bool;
* ``dim_scatter``: out-of-range entries are dropped (the input keeps its value there);
* ``one_hot``: an out-of-range class gives an all-zero row.

Index inputs may be any integer dtype (PyTorch requires int64 for some of these; jflow also
takes int32, as OneFlow does). Sort and topk are always stable, which makes them deterministic
across eager, jit and devices and satisfies PyTorch's ``stable=False`` contract too.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import B, P, S, Signature, elementwise
from . import infer
from .infer import ANY, BOOL, INT, NUMBER, broadcast_shapes, check_dtype, desc, normalize_axis
from .primitive import define_op
from .registry import Attr

_I64 = np.dtype(np.int64)


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in x.shape)


def _coords(index: Any, dim: int) -> tuple[Any, ...]:
    """Advanced-indexing coordinates of every index element: ``index`` on ``dim``, the
    element's own position (an iota) on every other axis."""
    shape = index.shape
    return tuple(index if i == dim else lax.broadcasted_iota(index.dtype, shape, i)
                 for i in range(len(shape)))


def _no_wrap(index: Any) -> Any:
    """Negative indices -> a large positive (out-of-range) one, so JAX's fill / drop modes see
    them as out of range instead of wrapping around as NumPy indexing does."""
    return jnp.where(index < 0, jnp.iinfo(index.dtype).max, index)


def _split_each_axis(ndim: int, n_in: int, n_out: int) -> list[Signature]:
    return [Signature((S(i),) * n_in, (S(i),) * n_out) for i in range(ndim)]


# -- dim_gather (torch.gather) -----------------------------------------------------------------

def _gather_like(input: Any, index: Any, dim: int, what: str = "input") -> int:
    check_dtype(index, INT, "index")
    si, sx = _shape(index), _shape(input)
    if len(si) != len(sx):
        raise ValueError(f"index must have the same number of dimensions as {what}, got "
                         f"{len(si)} and {len(sx)} (shapes {si} and {sx})")
    d = normalize_axis(dim, len(sx))
    for i, (a, b) in enumerate(zip(si, sx)):
        if i != d and a > b:
            raise ValueError(f"index {si} must be no larger than {what} {sx} in every "
                             f"dimension except dim {d}, but differs at dimension {i}")
    return d


def _dim_gather_infer(input: Any, index: Any, dim: int) -> Any:
    _gather_like(input, index, dim)
    return desc(index.shape, input.dtype)


def _dim_gather(input: Any, index: Any, dim: int) -> Any:
    if input.ndim == 0:
        return _dim_gather(input.reshape(1), index.reshape(1), 0).reshape(())
    d = dim % input.ndim
    return input.at[_coords(_no_wrap(index), d)].get(mode="fill")


def _dim_gather_sbp(in_shapes: Any, n_out: int = 1, dim: int = 0, **_: Any) -> list[Signature]:
    """Splitting the index along the gather axis splits the output (input broadcast: every
    other coordinate is the same on all ranks); on a non-gather axis where input and index
    have the same size both may be split; linear in input."""
    sx, si = (tuple(s) for s in in_shapes)
    d = dim % max(len(sx), 1)
    sigs = [Signature((B, S(d)), (S(d),))] if len(si) else []
    sigs += [Signature((S(i), S(i)), (S(i),)) for i in range(len(si))
             if i != d and si[i] == sx[i]]
    # no (P, B) -> P: an out-of-range entry reads a fill value, which is not linear in input
    return sigs


define_op("dim_gather", inputs=["input", "index"], outputs=["output"],
          attrs=[Attr("dim", "int64")], infer=_dim_gather_infer, sbp=_dim_gather_sbp,
          doc="out[i][j] = input[index[i][j]][j] for dim 0 (torch.gather)")
register_kernel("dim_gather", _dim_gather, name="dim_gather_xla")


# -- dim_scatter (torch.scatter / scatter_add) --------------------------------------------------

_REDUCE = ("none", "add", "multiply", "max", "min")


def _scatter_check(dim: int, reduce: str) -> None:
    if reduce not in _REDUCE:
        raise ValueError(f"reduce must be one of {list(_REDUCE)}, got {reduce!r}")


def _dim_scatter_infer(input: Any, index: Any, src: Any, dim: int, reduce: str) -> Any:
    if np.dtype(src.dtype) != np.dtype(input.dtype):
        raise TypeError(f"src must have the dtype of input, got {np.dtype(src.dtype).name} and "
                        f"{np.dtype(input.dtype).name}")
    _gather_like(input, index, dim)
    ss, si = _shape(src), _shape(index)
    if ss:
        if len(ss) != len(si):
            raise ValueError(f"src must be 0-d (a scalar) or have the same number of dimensions "
                             f"as index, got shapes {ss} and {si}")
        for i, (a, b) in enumerate(zip(si, ss)):
            if a > b:
                raise ValueError(f"index {si} must be no larger than src {ss} in every "
                                 f"dimension, but is larger at dimension {i}")
    return desc(input.shape, input.dtype)


def _dim_scatter(input: Any, index: Any, src: Any, dim: int, reduce: str) -> Any:
    if input.ndim == 0:
        s = src if src.ndim == 0 else src.reshape(1)
        return _dim_scatter(input.reshape(1), index.reshape(1), s, 0, reduce).reshape(())
    d = dim % input.ndim
    vals = src if src.ndim == 0 else src[tuple(slice(0, n) for n in index.shape)]
    ref = input.at[_coords(_no_wrap(index), d)]
    is_bool = input.dtype == np.bool_
    if reduce == "add":
        return ref.max(vals, mode="drop") if is_bool else ref.add(vals, mode="drop")
    if reduce == "multiply":
        return ref.min(vals, mode="drop") if is_bool else ref.multiply(vals, mode="drop")
    if reduce == "max":
        return ref.max(vals, mode="drop")
    if reduce == "min":
        return ref.min(vals, mode="drop")
    return ref.set(vals, mode="drop")


def _dim_scatter_sbp(in_shapes: Any, n_out: int = 1, dim: int = 0, reduce: str = "none",
                     **_: Any) -> list[Signature]:
    """Split on a non-scatter axis where input, index (and src) agree in size; scatter-add is
    linear in (input, src) jointly: (P, B, P) -> P."""
    sx, si, ss = (tuple(s) for s in in_shapes)
    d = dim % max(len(sx), 1)
    sigs = []
    for i in range(len(sx)):
        if i != d and sx[i] == si[i] and (not ss or ss[i] == si[i]):
            sigs.append(Signature((S(i), S(i), S(i) if ss else B), (S(i),)))
    if reduce == "add":
        sigs.append(Signature((P, B, P), (P,)))
    return sigs


define_op("dim_scatter", inputs=["input", "index", "src"], outputs=["output"],
          attrs=[Attr("dim", "int64"), Attr("reduce", "string", "none")],
          check=_scatter_check, infer=_dim_scatter_infer, sbp=_dim_scatter_sbp,
          doc="input with out[index[i][j]][j] = src[i][j] for dim 0 (torch.scatter); src may be "
              "0-d; reduce 'add' / 'multiply' / 'max' / 'min' accumulates (bool add / "
              "multiply: or / and)")
register_kernel("dim_scatter", _dim_scatter, name="dim_scatter_xla")


# -- index_select ------------------------------------------------------------------------------

def _index_select_infer(input: Any, index: Any, dim: int) -> Any:
    check_dtype(index, INT, "index")
    sx, si = _shape(input), _shape(index)
    if len(si) > 1:
        raise ValueError(f"index must be 0-d or 1-D, got shape {si}")
    d = normalize_axis(dim, len(sx))
    n = int(np.prod(si, dtype=np.int64))
    if not sx:
        if n != 1:
            raise ValueError(f"index of a 0-d input must have one element, got shape {si}")
        return desc((), input.dtype)
    return desc(sx[:d] + (n,) + sx[d + 1:], input.dtype)


def _index_select(input: Any, index: Any, dim: int) -> Any:
    if input.ndim == 0:
        return _index_select(input.reshape(1), index, 0).reshape(())
    return jnp.take(input, _no_wrap(index.reshape(-1)), axis=dim % input.ndim, mode="fill")


def _index_select_sbp(in_shapes: Any, n_out: int = 1, dim: int = 0,
                      **_: Any) -> list[Signature]:
    """Split input on a non-selected axis (index B), or the index (input B) -> S(dim)."""
    sx = tuple(in_shapes[0])
    if not sx:
        return []
    d = dim % len(sx)
    sigs = [Signature((S(i), B), (S(i),)) for i in range(len(sx)) if i != d]
    if len(in_shapes[1]) == 1:
        sigs.append(Signature((B, S(0)), (S(d),)))
    # no (P, B) -> P: an out-of-range entry reads a fill value, which is not linear in input
    return sigs


define_op("index_select", inputs=["input", "index"], outputs=["output"],
          attrs=[Attr("dim", "int64")], infer=_index_select_infer, sbp=_index_select_sbp,
          doc="the entries of input at positions index along dim")
register_kernel("index_select", _index_select, name="index_select_xla")


# -- index_add ---------------------------------------------------------------------------------

def _index_add_infer(input: Any, index: Any, src: Any, dim: int) -> Any:
    check_dtype(input, infer.NUMBER_C, "input")
    check_dtype(index, INT, "index")
    if input.dtype != src.dtype:
        raise TypeError(f"src must have input's dtype {input.dtype}, got {src.dtype}")
    sx, si, ss = _shape(input), _shape(index), _shape(src)
    if len(si) != 1 or not sx:
        raise ValueError(f"index must be 1-D and input at least 1-D, got shapes {si} and {sx}")
    d = normalize_axis(dim, len(sx))
    want = sx[:d] + si + sx[d + 1:]
    if ss != want:
        raise ValueError(f"src must have input's shape with len(index) at dim {d}: {want}, "
                         f"got {ss}")
    return desc(sx, input.dtype)


def _index_add(input: Any, index: Any, src: Any, dim: int) -> Any:
    # one scatter-add of whole slices along dim (dim_scatter would scatter each element with
    # its own index); an out-of-range entry, negative ones included, adds nothing
    where = (slice(None),) * (dim % input.ndim) + (_no_wrap(index),)
    return input.at[where].add(src, mode="drop")


def _index_add_sbp(in_shapes: Any, n_out: int = 1, dim: int = 0, **_: Any) -> list[Signature]:
    """Split input and src on another axis (index B); linear in (input, src) jointly:
    (P, B, P) -> P."""
    d = dim % len(in_shapes[0])
    sigs = [Signature((S(i), B, S(i)), (S(i),)) for i in range(len(in_shapes[0])) if i != d]
    return sigs + [Signature((P, B, P), (P,))]


define_op("index_add", inputs=["input", "index", "src"], outputs=["output"],
          attrs=[Attr("dim", "int64")], infer=_index_add_infer, sbp=_index_add_sbp,
          doc="input with src's slices along dim added at positions index (repeated indices "
              "add up; torch.index_add, the backward of index_select)")
register_kernel("index_add", _index_add, name="index_add_xla")


# -- masked_fill -------------------------------------------------------------------------------

def _masked_fill_infer(input: Any, mask: Any, value: Any) -> Any:
    check_dtype(mask, BOOL, "mask")
    if _shape(value) != ():
        raise ValueError(f"value must be a 0-d tensor, got shape {_shape(value)}")
    if np.dtype(value.dtype) != np.dtype(input.dtype):
        raise TypeError(f"value must have the dtype of input, got {np.dtype(value.dtype).name} "
                        f"and {np.dtype(input.dtype).name}")
    return desc(broadcast_shapes(_shape(input), _shape(mask)), input.dtype)


_EW = elementwise("none")


def _masked_fill_sbp(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
    """Elementwise in (input, mask); the 0-d value is broadcast."""
    return [Signature(s.inputs + (B,), s.outputs) for s in _EW(in_shapes[:2], n_out)]


define_op("masked_fill", inputs=["input", "mask", "value"], outputs=["output"],
          infer=_masked_fill_infer, sbp=_masked_fill_sbp,
          doc="value where mask else input (input and mask broadcast; value is 0-d)")
register_kernel("masked_fill", lambda input, mask, value: jnp.where(mask, value, input),
                name="masked_fill_xla")


# -- one_hot -----------------------------------------------------------------------------------

def _one_hot_check(num_classes: int, dtype: np.dtype) -> None:
    if num_classes < 0:
        raise ValueError(f"num_classes must be >= 0, got {num_classes}")


def _one_hot_infer(indices: Any, num_classes: int, dtype: np.dtype) -> Any:
    check_dtype(indices, INT, "indices")
    return desc(_shape(indices) + (num_classes,), dtype)


def _one_hot(indices: Any, num_classes: int, dtype: np.dtype) -> Any:
    classes = lax.broadcasted_iota(indices.dtype, (num_classes,), 0)
    return (indices[..., None] == classes).astype(dtype)


define_op("one_hot", inputs=["indices"], outputs=["out"],
          attrs=[Attr("num_classes", "int64"), Attr("dtype", "dtype", np.int64)],
          check=_one_hot_check, infer=_one_hot_infer, traits=("NoSideEffect", "NoGrad"),
          sbp=lambda in_shapes, n_out=1, **_: _split_each_axis(len(in_shapes[0]), 1, n_out),
          doc="out[..., c] = (indices[...] == c); out-of-range classes give a zero row")
register_kernel("one_hot", _one_hot, name="one_hot_xla")


# -- sort / topk -------------------------------------------------------------------------------

def _sort_kernel(x: Any, dim: int, descending: bool) -> tuple[Any, Any]:
    """Stable sort along ``dim``. Descending = reverse, stable ascending sort, reverse: ties
    keep their original order and NaNs (last ascending) come first, as in PyTorch."""
    if x.ndim == 0:
        return x, jnp.zeros((), _I64)
    d = dim % x.ndim
    idx = lax.broadcasted_iota(_I64, x.shape, d)
    if descending:
        x, idx = jnp.flip(x, d), jnp.flip(idx, d)
    v, i = lax.sort((x, idx), dimension=d, is_stable=True, num_keys=1)
    if descending:
        v, i = jnp.flip(v, d), jnp.flip(i, d)
    return v, i


def _sort_infer(x: Any, dim: int, descending: bool) -> Any:
    check_dtype(x, ANY, "input")
    normalize_axis(dim, len(_shape(x)))
    return desc(x.shape, x.dtype), desc(x.shape, _I64)


def _split_except(in_shapes: Any, n_out: int = 1, dim: int = -1, **_: Any) -> list[Signature]:
    """Split any axis but the one the op works along."""
    nd = len(in_shapes[0])
    if nd == 0:
        return []
    d = dim % nd
    return [Signature((S(i),) * len(in_shapes), (S(i),) * n_out) for i in range(nd) if i != d]


define_op("sort", inputs=["x"], outputs=["values", "indices"],
          attrs=[Attr("dim", "int64", -1), Attr("descending", "bool", False)],
          infer=_sort_infer, sbp=_split_except,
          doc="stable sort along dim; NaN sorts as the largest value; int64 indices")
register_kernel("sort", _sort_kernel, name="sort_xla")


def _topk_check(k: int, dim: int, largest: bool, sorted: bool) -> None:  # noqa: A002
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")


def _topk_infer(x: Any, k: int, dim: int, largest: bool, sorted: bool) -> Any:  # noqa: A002
    check_dtype(x, NUMBER, "input")
    sx = _shape(x)
    d = normalize_axis(dim, len(sx))
    n = sx[d] if sx else 1
    if not sx and k != 1:
        raise ValueError(f"k must be 1 for a 0-d input, got {k}")
    if k > n:
        raise ValueError(f"k ({k}) is out of range: dim {d} has size {n}")
    out = sx[:d] + (k,) + sx[d + 1:] if sx else ()
    return desc(out, x.dtype), desc(out, _I64)


def _topk(x: Any, k: int, dim: int, largest: bool, sorted: bool) -> tuple[Any, Any]:  # noqa: A002
    v, i = _sort_kernel(x, dim, largest)
    if x.ndim == 0:
        return v, i
    d = dim % x.ndim
    return lax.slice_in_dim(v, 0, k, axis=d), lax.slice_in_dim(i, 0, k, axis=d)


define_op("topk", inputs=["x"], outputs=["values", "indices"],
          attrs=[Attr("k", "int64"), Attr("dim", "int64", -1), Attr("largest", "bool", True),
                 Attr("sorted", "bool", True)],
          check=_topk_check, infer=_topk_infer, sbp=_split_except,
          doc="the k largest (smallest) entries along dim, always in sorted order; ties by "
              "position; NaN counts as the largest value")
register_kernel("topk", _topk, name="topk_xla")
