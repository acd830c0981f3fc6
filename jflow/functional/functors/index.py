"""Functors of the index ops (gather, scatter, index_select, masked_fill, one_hot) and of
sorting (sort, argsort, topk).

Index values are checked here, on the host, whenever the index tensor is concrete (eager
mode): an out-of-range entry raises :class:`IndexOutOfRangeError` (an ``IndexError`` that is
also a ``RuntimeError``, so code written for either of PyTorch's exceptions catches it). JAX
itself would clamp or wrap silently. The check costs one small device reduction (min / max)
and a sync. Under tracing (``jax.jit`` / ``vmap`` / ``grad``) values are unknown and nothing
can be raised; the ops then define the result (see :mod:`jflow.ops.index`): gather and
index_select read a fill value (NaN for floats), scatter drops the entry, one_hot gives a
zero row.

Dims are normalised here (an out-of-range dim is an ``IndexError``, as in PyTorch), so ``-1``
and ``ndim - 1`` share one cached executable.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from ... import dtypes as _dt
from ...ops import get
from ...tensor import Tensor
from ..promotion import cast, scalar_tensor
from ..registry import functor

__all__ = ["IndexOutOfRangeError", "normalize_dim"]

_gather = get("dim_gather").apply
_scatter = get("dim_scatter").apply
_index_select = get("index_select").apply
_masked_fill = get("masked_fill").apply
_one_hot = get("one_hot").apply
_sort = get("sort").apply
_topk = get("topk").apply


class IndexOutOfRangeError(IndexError, RuntimeError):
    """An index value outside the valid range (PyTorch raises IndexError or RuntimeError for
    this depending on the op; this is both)."""


def normalize_dim(fname: str, dim: int, ndim: int) -> int:
    """``dim`` in ``[0, ndim)`` (a 0-d tensor accepts -1 and 0), else an IndexError."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{fname}(): dim {dim} is out of range for a {ndim}-d tensor "
                         f"(expected to be in range [{-n}, {n - 1}])")
    return dim % n


@jax.jit
def _min_max(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    return jnp.min(x), jnp.max(x)


def host_min_max(t: Tensor) -> tuple[int, int] | None:
    """(min, max) of a concrete, non-empty integer tensor; None when traced or empty. Runs
    eagerly even inside a trace (a concrete tensor made while tracing jax.jit)."""
    v = t._value
    if isinstance(v, Tracer) or v.size == 0:
        return None
    with jax.ensure_compile_time_eval():
        lo, hi = jax.device_get(_min_max(v))
    return int(lo), int(hi)


def _check_range(fname: str, index: Tensor, size: int, dim: int) -> None:
    mm = host_min_max(index)
    if mm is None:
        return
    lo, hi = mm
    if lo < 0 or hi >= size:
        bad = lo if lo < 0 else hi
        raise IndexOutOfRangeError(f"{fname}(): index {bad} is out of bounds for dimension "
                                   f"{dim} with size {size}")


def _int_index(fname: str, index: Tensor, arg: str = "index") -> None:
    if index._value.dtype.kind not in "iu":
        raise TypeError(f"{fname}(): argument '{arg}' must be an integer tensor, got "
                        f"{index.dtype}")


def _size(t: Tensor, d: int) -> int:
    return int(t._value.shape[d]) if t._value.ndim else 1


def scalar_as(fname: str, value: Any, np_dtype: np.dtype) -> Tensor:
    """A Python scalar converted to ``np_dtype`` as PyTorch converts a fill value: floats into
    integer dtypes truncate toward zero, anything into bool is ``value != 0``; a value that
    overflows the dtype is an error."""
    nd = np.dtype(np_dtype)
    try:
        if nd.kind == "b":
            value = bool(value)
        elif nd.kind in "iu":
            if isinstance(value, float) and not math.isfinite(value):
                raise OverflowError(f"value {value} cannot be converted to "
                                    f"{_dt.from_numpy_dtype(nd)} without overflow")
            value = int(value)  # a float truncates toward zero
        else:
            value = float(value)
        return scalar_tensor(value, nd)
    except OverflowError as e:
        raise OverflowError(f"{fname}(): {e}") from None


# -- gather / scatter / index_select -----------------------------------------------------------

@functor("DimGather")
def gather(input: Tensor, dim: int, index: Tensor, sparse_grad: bool) -> Tensor:
    """torch.gather: ``out[i][j][k] = input[i][index[i][j][k]][k]`` for dim 1."""
    if sparse_grad:
        raise ValueError("gather(): sparse_grad=True is not supported (jflow has no sparse "
                         "tensors); gradients are dense")
    _int_index("gather", index)
    d = normalize_dim("gather", dim, input._value.ndim)
    if index._value.ndim == input._value.ndim:  # else the op reports the shape error
        _check_range("gather", index, _size(input, d), d)
    return _gather(input, index, dim=d)


_REDUCE = {None: "none", "add": "add", "multiply": "multiply"}


def _reduce(fname: str, reduce: Any) -> str:
    try:
        return _REDUCE[reduce]
    except (KeyError, TypeError):
        raise ValueError(f"{fname}(): reduce must be None, 'add' or 'multiply', got "
                         f"{reduce!r}") from None


def _scatter_impl(fname: str, input: Tensor, dim: int, index: Tensor, src: Tensor,
                  reduce: str) -> Tensor:
    _int_index(fname, index)
    d = normalize_dim(fname, dim, input._value.ndim)
    if index._value.ndim == input._value.ndim:
        _check_range(fname, index, _size(input, d), d)
    return _scatter(input, index, src, dim=d, reduce=reduce)


@functor("DimScatter")
def scatter(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: Any) -> Tensor:
    """torch.scatter with a src tensor: ``out[index[i][j]][j] = src[i][j]`` for dim 0 (the
    input is not modified). With duplicate indices and no reduce, which src value lands is
    unspecified, as in PyTorch. ``reduce='add'`` / ``'multiply'`` accumulate instead."""
    r = _reduce("scatter", reduce)
    if src._value.dtype != input._value.dtype:
        raise TypeError(f"scatter(): expected src to have the dtype of input ({input.dtype}), "
                        f"got {src.dtype}")
    return _scatter_impl("scatter", input, dim, index, src, r)


@functor("DimScatterScalar")
def scatter_value(input: Tensor, dim: int, index: Tensor, value: Any, reduce: Any) -> Tensor:
    """torch.scatter with a scalar ``value`` written at every index position."""
    r = _reduce("scatter", reduce)
    v = scalar_as("scatter", value, input._value.dtype)
    return _scatter_impl("scatter", input, dim, index, v, r)


@functor("ScatterAdd")
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """torch.scatter_add: ``out[index[i][j]][j] += src[i][j]`` for dim 0."""
    if src._value.dtype != input._value.dtype:
        raise TypeError(f"scatter_add(): expected src to have the dtype of input "
                        f"({input.dtype}), got {src.dtype}")
    return _scatter_impl("scatter_add", input, dim, index, src, "add")


@functor("IndexSelect")
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """torch.index_select: the entries at positions ``index`` (0-d or 1-D) along ``dim``."""
    _int_index("index_select", index)
    if index._value.ndim > 1:
        raise ValueError(f"index_select(): index must be 0-d or 1-D, got shape "
                         f"{tuple(index.shape)}")
    d = normalize_dim("index_select", dim, input._value.ndim)
    _check_range("index_select", index, _size(input, d), d)
    return _index_select(input, index, dim=d)


# -- masked_fill / one_hot ---------------------------------------------------------------------

def _bool_mask(mask: Tensor) -> None:
    if mask._value.dtype != np.bool_:
        raise TypeError(f"masked_fill(): mask must be a bool tensor, got {mask.dtype}")


@functor("MaskedFill")
def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """torch.masked_fill: ``value`` where ``mask`` else ``input`` (input and mask broadcast;
    the value is converted to input's dtype)."""
    _bool_mask(mask)
    return _masked_fill(input, mask, scalar_as("masked_fill", value, input._value.dtype))


@functor("MaskedFillTensor")
def masked_fill_tensor(input: Tensor, mask: Tensor, value: Tensor) -> Tensor:
    """masked_fill with a 0-d tensor value (cast to input's dtype)."""
    _bool_mask(mask)
    if value._value.ndim != 0:
        raise ValueError(f"masked_fill(): value must be a 0-d tensor, got a "
                         f"{value._value.ndim}-d tensor")
    return _masked_fill(input, mask, cast(value, input._value.dtype))


@functor("OneHot")
def one_hot(input: Tensor, num_classes: int) -> Tensor:
    """torch.nn.functional.one_hot: int64 tensor of shape ``input.shape + (num_classes,)``.

    ``num_classes=-1`` infers ``max(input) + 1``; that needs the data, so under tracing
    num_classes must be given (out-of-range classes then give an all-zero row)."""
    _int_index("one_hot", input, "input")
    if num_classes < -1:
        raise ValueError(f"one_hot(): num_classes must be -1 (infer) or >= 0, got {num_classes}")
    if num_classes == -1:
        if isinstance(input._value, Tracer):
            raise ValueError("one_hot(): num_classes=-1 infers the number of classes from the "
                             "values, which are unknown while tracing (jax.jit / vmap / grad); "
                             "pass num_classes explicitly")
        if input._value.size == 0:
            raise ValueError("one_hot(): cannot infer the number of classes from an empty "
                             "tensor; pass num_classes explicitly")
    mm = host_min_max(input)
    if mm is not None:
        lo, hi = mm
        if lo < 0:
            raise IndexOutOfRangeError(f"one_hot(): class values must be non-negative, got {lo}")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise IndexOutOfRangeError(f"one_hot(): class values must be smaller than "
                                       f"num_classes ({num_classes}), got {hi}")
    return _one_hot(input, num_classes=num_classes)


# -- sort / argsort / topk ---------------------------------------------------------------------

@functor("Sort")
def sort(input: Tensor, dim: int, descending: bool, stable: bool) -> tuple[Tensor, Tensor]:
    """torch.sort -> (values, indices). Always stable (ties keep their order), so ``stable``
    changes nothing; NaN sorts as the largest value."""
    d = normalize_dim("sort", dim, input._value.ndim)
    return _sort(input, dim=d, descending=descending)


@functor("ArgSort")
def argsort(input: Tensor, dim: int, descending: bool, stable: bool) -> Tensor:
    """torch.argsort: the indices of :func:`sort` (always stable)."""
    d = normalize_dim("argsort", dim, input._value.ndim)
    return _sort(input, dim=d, descending=descending)[1]


@functor("TopK")
def topk(input: Tensor, k: int, dim: int, largest: bool,
         sorted: bool) -> tuple[Tensor, Tensor]:  # noqa: A002
    """torch.topk -> (values, indices): the k largest (``largest=False``: smallest) entries
    along dim. Results are always in sorted order (``sorted=False`` allows any order, so this
    satisfies it); among equal values the lower index comes first."""
    d = normalize_dim("topk", dim, input._value.ndim)
    n = _size(input, d)
    if not 0 <= k <= n:
        raise ValueError(f"topk(): k ({k}) is out of range for dimension {d} of size {n} "
                         f"(expected 0 <= k <= {n})")
    return _topk(input, k=k, dim=d, largest=largest, sorted=sorted)
