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
from ..._dims import wrap_dim
from ...lazy_mode.checks import defer_check, host_value
from ...ops import get
from ...tensor import Tensor, _wrap
from ...value_bounds import known as known_bounds
from ...views.bounds import SAME_VALUES, source_through
from ..promotion import cast, scalar_result_dtype, scalar_tensor
from ..registry import api, functor

__all__ = ["IndexOutOfRangeError"]

_gather = get("dim_gather").apply
_scatter = get("dim_scatter").apply
_index_select = get("index_select").apply
_index_add = get("index_add").apply
_masked_fill = get("masked_fill").apply
_one_hot = get("one_hot").apply
_sort = get("sort").apply
_topk = get("topk").apply


class IndexOutOfRangeError(IndexError, RuntimeError):
    """An index value outside the valid range (PyTorch raises IndexError or RuntimeError for
    this depending on the op; this is both)."""




@jax.jit
def _min_max(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    return jnp.min(x), jnp.max(x)




def host_min_max(t: Tensor) -> tuple[int, int] | None:
    """(min, max) of a concrete, non-empty integer tensor; None when traced or empty. Runs
    eagerly even inside a trace (a concrete tensor made while tracing jax.jit). A new
    tensor's host data pending in lazy mode (a batch from a data loader) is read from its
    host copy: nothing runs."""
    h = host_value(t)
    if h is not None:
        return (int(h.min()), int(h.max())) if h.size else None
    base = values_source(t)  # (a reshaping view's bounds are its base's: nothing replayed)
    if base is not t:
        return host_min_max(base)
    v = t._value
    if isinstance(v, Tracer) or v.size == 0 or t.is_meta:  # (meta: no values, jflow.meta)
        return None
    b = known_bounds(v)  # (made from host data on an accelerator: jflow/value_bounds.py)
    if b is not None:
        return b
    if v.is_fully_addressable and all(d.platform == "cpu" for d in v.devices()):
        # on CPU the array's own buffer, read in place: no executable to queue behind the
        # computations still running (a batch's bounds check would wait for the previous
        # step's update), only for this array's own value
        h = np.asarray(v)
        return int(h.min()), int(h.max())
    with jax.ensure_compile_time_eval():
        lo, hi = jax.device_get(_min_max(v))
    return int(lo), int(hi)


def values_source(t: Tensor) -> Tensor:
    """The tensor whose values ``t`` holds: the base of a reshaping view (its bounds are the
    base's), else ``t``. In lazy mode the view may be pending while its base is not (a
    target batch's ``y.reshape(-1)``): its check then reads the base now instead of being
    deferred — a deferred check waits for its whole segment's run before recording goes on."""
    return source_through(t, SAME_VALUES)


def checked_min_max(t: Tensor, check: Any) -> tuple[int, int] | None:
    """:func:`host_min_max` passed through ``check(lo, hi)`` (which raises on bad values);
    None when the values are not known now: traced, or pending in lazy mode — then the
    check runs when the pending ops run (jflow.lazy_mode: no flush for a bounds check), and
    the caller takes the path that is right for any values, as under a trace. A new tensor's
    host data is checked now, as eagerly (:func:`host_min_max`): the run has no check to
    wait for."""
    t = values_source(t)  # (a reshaped batch's bounds: its base's, checked now when known)
    if t._meta.size and host_value(t) is None and defer_check(
            _min_max, (t,), lambda lo, hi: check(int(lo), int(hi))):
        return None
    mm = host_min_max(t)
    if mm is not None:
        check(*mm)
    return mm


def _check_range(fname: str, index: Tensor, size: int, dim: int) -> None:
    def check(lo: int, hi: int) -> None:
        if lo < 0 or hi >= size:
            bad = lo if lo < 0 else hi
            raise IndexOutOfRangeError(f"{fname}(): index {bad} is out of bounds for "
                                       f"dimension {dim} with size {size}")
    checked_min_max(index, check)


def _int_index(fname: str, index: Tensor, arg: str = "index") -> None:
    if index._meta.dtype.kind not in "iu":
        raise TypeError(f"{fname}(): argument '{arg}' must be an integer tensor, got "
                        f"{index.dtype}")


def _size(t: Tensor, d: int) -> int:
    return int(t._meta.shape[d]) if t._meta.ndim else 1


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

@functor("DimGather", checks=True)
def gather(input: Tensor, dim: int, index: Tensor, sparse_grad: bool) -> Tensor:
    """torch.gather: ``out[i][j][k] = input[i][index[i][j][k]][k]`` for dim 1."""
    if sparse_grad:
        raise ValueError("gather(): sparse_grad=True is not supported (jflow has no sparse "
                         "tensors); gradients are dense")
    _int_index("gather", index)
    d = wrap_dim("gather", dim, input._meta.ndim)
    ni, nx = index._meta.ndim, input._meta.ndim
    if index._meta.size == 0 and max(ni, 1) != max(nx, 1):
        # PyTorch checks the dims only for a non-empty index: the result is index-shaped
        return _api().full(tuple(index._meta.shape), 0, dtype=input.dtype)
    if ni != nx and max(ni, 1) == max(nx, 1):  # a 0-d input or index counts as 1-d
        shape = tuple(index._meta.shape)
        out = _gather(_rs(input, (-1,)), _rs(index, (-1,)), dim=0)
        return _rs(out, shape)
    if index._meta.ndim == input._meta.ndim:  # else the op reports the shape error
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
    d = wrap_dim(fname, dim, input._meta.ndim)
    if index._meta.ndim == input._meta.ndim:
        _check_range(fname, index, _size(input, d), d)
    return _scatter(input, index, src, dim=d, reduce=reduce)


@functor("DimScatter", checks=True)
def scatter(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: Any) -> Tensor:
    """torch.scatter with a src tensor: ``out[index[i][j]][j] = src[i][j]`` for dim 0 (the
    input is not modified). With duplicate indices and no reduce, which src value lands is
    unspecified, as in PyTorch. ``reduce='add'`` / ``'multiply'`` accumulate instead."""
    r = _reduce("scatter", reduce)
    if src._meta.dtype != input._meta.dtype:
        raise TypeError(f"scatter(): expected src to have the dtype of input ({input.dtype}), "
                        f"got {src.dtype}")
    return _scatter_impl("scatter", input, dim, index, src, r)


@functor("DimScatterScalar", checks=True)
def scatter_value(input: Tensor, dim: int, index: Tensor, value: Any, reduce: Any) -> Tensor:
    """torch.scatter with a scalar ``value`` written at every index position."""
    r = _reduce("scatter", reduce)
    v = scalar_as("scatter", value, input._meta.dtype)
    return _scatter_impl("scatter", input, dim, index, v, r)


@functor("ScatterAdd", checks=True)
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """torch.scatter_add: ``out[index[i][j]][j] += src[i][j]`` for dim 0."""
    if src._meta.dtype != input._meta.dtype:
        raise TypeError(f"scatter_add(): expected src to have the dtype of input "
                        f"({input.dtype}), got {src.dtype}")
    return _scatter_impl("scatter_add", input, dim, index, src, "add")


@functor("IndexSelect", checks=True)
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """torch.index_select: the entries at positions ``index`` (0-d or 1-D) along ``dim``."""
    _int_index("index_select", index)
    if index._meta.ndim > 1:
        raise ValueError(f"index_select(): index must be 0-d or 1-D, got shape "
                         f"{tuple(index.shape)}")
    d = wrap_dim("index_select", dim, input._meta.ndim)
    _check_range("index_select", index, _size(input, d), d)
    return _index_select(input, index, dim=d)


# -- masked_fill / one_hot ---------------------------------------------------------------------

def _bool_mask(mask: Tensor) -> None:
    if mask._meta.dtype != np.bool_:
        raise TypeError(f"masked_fill(): mask must be a bool tensor, got {mask.dtype}")


@functor("MaskedFill")
def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """torch.masked_fill: ``value`` where ``mask`` else ``input`` (input and mask broadcast;
    the value is converted to input's dtype)."""
    _bool_mask(mask)
    return _masked_fill(input, mask, scalar_as("masked_fill", value, input._meta.dtype))


@functor("MaskedFillTensor")
def masked_fill_tensor(input: Tensor, mask: Tensor, value: Tensor) -> Tensor:
    """masked_fill with a 0-d tensor value (cast to input's dtype)."""
    _bool_mask(mask)
    if value._meta.ndim != 0:
        raise ValueError(f"masked_fill(): value must be a 0-d tensor, got a "
                         f"{value._meta.ndim}-d tensor")
    return _masked_fill(input, mask, cast(value, input._meta.dtype))


@functor("OneHot", checks=True)
def one_hot(input: Tensor, num_classes: int) -> Tensor:
    """torch.nn.functional.one_hot: int64 tensor of shape ``input.shape + (num_classes,)``.

    ``num_classes=-1`` infers ``max(input) + 1``; that needs the data, so under tracing
    num_classes must be given (out-of-range classes then give an all-zero row)."""
    _int_index("one_hot", input, "input")
    if num_classes < -1:
        raise ValueError(f"one_hot(): num_classes must be -1 (infer) or >= 0, got {num_classes}")
    if num_classes == -1:
        if isinstance(input._meta, Tracer):
            raise ValueError("one_hot(): num_classes=-1 infers the number of classes from the "
                             "values, which are unknown while tracing (jax.jit / vmap / grad); "
                             "pass num_classes explicitly")
        if input._meta.size == 0:
            raise ValueError("one_hot(): cannot infer the number of classes from an empty "
                             "tensor; pass num_classes explicitly")
    def check(lo: int, hi: int) -> None:
        if lo < 0:
            raise IndexOutOfRangeError(f"one_hot(): class values must be non-negative, got {lo}")
        if num_classes != -1 and hi >= num_classes:
            raise IndexOutOfRangeError(f"one_hot(): class values must be smaller than "
                                       f"num_classes ({num_classes}), got {hi}")
    if num_classes == -1:  # (the output's shape depends on the values: they are read)
        mm = host_min_max(input)
        if mm is not None:
            check(*mm)
            num_classes = mm[1] + 1
    else:
        checked_min_max(input, check)
    return _one_hot(input, num_classes=num_classes)


# -- sort / argsort / topk ---------------------------------------------------------------------

@functor("Sort")
def sort(input: Tensor, dim: int, descending: bool, stable: bool) -> tuple[Tensor, Tensor]:
    """torch.sort -> (values, indices). Always stable (ties keep their order), so ``stable``
    changes nothing; NaN sorts as the largest value."""
    d = wrap_dim("sort", dim, input._meta.ndim)
    return _sort(input, dim=d, descending=descending)


@functor("ArgSort")
def argsort(input: Tensor, dim: int, descending: bool, stable: bool) -> Tensor:
    """torch.argsort: the indices of :func:`sort` (always stable)."""
    d = wrap_dim("argsort", dim, input._meta.ndim)
    return _sort(input, dim=d, descending=descending)[1]


@functor("TopK")
def topk(input: Tensor, k: int, dim: int, largest: bool,
         sorted: bool) -> tuple[Tensor, Tensor]:  # noqa: A002
    """torch.topk -> (values, indices): the k largest (``largest=False``: smallest) entries
    along dim. Results are always in sorted order (``sorted=False`` allows any order, so this
    satisfies it); among equal values the lower index comes first."""
    d = wrap_dim("topk", dim, input._meta.ndim)
    n = _size(input, d)
    if not 0 <= k <= n:
        raise ValueError(f"topk(): k ({k}) is out of range for dimension {d} of size {n} "
                         f"(expected 0 <= k <= {n})")
    return _topk(input, k=k, dim=d, largest=largest, sorted=sorted)


# -- nonzero / masked_select / masked_scatter / index_add / index_put / take --------------------
#
# Compositions of existing ops (index_select, dim_scatter, where, reshape, expand), so the
# gradient, vmap and SBP of those ops apply unchanged. Ops whose result size depends on the
# data (nonzero, argwhere, masked_select, bool indices of index_put) need concrete values:
# eager only, with a clear error under tracing, as bool-mask indexing.

def _concrete(fname: str, t: Tensor, arg: str) -> np.ndarray:
    """``t``'s values on the host; a TypeError under tracing (the result's size would depend
    on them)."""
    if isinstance(t._meta, Tracer):
        raise TypeError(f"{fname}(): the result's shape depends on the values of '{arg}', "
                        f"which are unknown while tracing (jax.jit / vmap / grad); call it "
                        f"outside the trace")
    return np.asarray(jax.device_get(t._value))


def _host_tensor(arr: np.ndarray, like: Tensor) -> Tensor:
    """A host array as a tensor on ``like``'s device (an index: no gradient)."""
    dev = next(iter(like._value.devices()))
    return _wrap(jax.device_put(np.ascontiguousarray(arr), dev))


_reshape = get("reshape").apply
_expand = get("expand").apply


def _rs(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``t`` reshaped by the op itself: a new tensor, not a view, so an in-place form that
    writes the input does not invalidate what a later op saved of it."""
    return t if tuple(t._meta.shape) == tuple(shape) else _reshape(t, shape=tuple(shape))


def _bc(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``t`` broadcast to ``shape`` by the op (new leading dims allowed), not a view."""
    if tuple(t._meta.shape) == tuple(shape):
        return t
    return _expand(t, shape=tuple(shape))


def _api() -> Any:
    """The functional API, late-bound (these functors compose other entries)."""
    return api()


def _long(fname: str, t: Tensor, arg: str) -> None:
    if t._meta.dtype.kind not in "iu":
        raise TypeError(f"{fname}(): expected '{arg}' to be an integer (Long) tensor, got "
                        f"{t.dtype}")


def _same_dtype(fname: str, input: Tensor, other: Tensor, arg: str) -> None:
    if other._meta.dtype != input._meta.dtype:
        raise TypeError(f"{fname}(): expected '{arg}' to have the same dtype as self "
                        f"({input.dtype}), got {other.dtype}")


@functor("Nonzero")
def nonzero(input: Tensor, as_tuple: bool) -> Any:
    """torch.nonzero: the int64 ``(count, ndim)`` coordinates of the nonzero entries in
    row-major order, or with ``as_tuple`` one 1-D tensor per dim (a 0-d input counts as 1-D,
    as in PyTorch)."""
    a = _concrete("nonzero", input, "input")
    if as_tuple:
        return tuple(_host_tensor(c.astype(np.int64), input)
                     for c in np.nonzero(a.reshape(-1) if a.ndim == 0 else a))
    return _host_tensor(np.argwhere(a).astype(np.int64), input)


@functor("Argwhere")
def argwhere(input: Tensor) -> Tensor:
    """torch.argwhere: ``nonzero(input)``."""
    a = _concrete("argwhere", input, "input")
    return _host_tensor(np.argwhere(a).astype(np.int64), input)


def _bool_arg(fname: str, mask: Tensor, arg: str = "mask") -> None:
    if mask._meta.dtype != np.bool_:
        raise TypeError(f"{fname}(): expected '{arg}' to be a bool tensor, got {mask.dtype}")


def _broadcast_pair(fname: str, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    try:
        shape = np.broadcast_shapes(tuple(a._meta.shape), tuple(b._meta.shape))
    except ValueError:
        raise ValueError(f"{fname}(): shapes {list(a._meta.shape)} and "
                         f"{list(b._meta.shape)} are not broadcastable") from None
    return _bc(a, shape), _bc(b, shape)


@functor("MaskedSelect")
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """torch.masked_select: the entries of ``input`` where ``mask`` (broadcast together), as
    a 1-D tensor in row-major order. A gather of the flattened input: differentiable."""
    _bool_arg("masked_select", mask)
    m = _concrete("masked_select", mask, "mask")
    x, _ = _broadcast_pair("masked_select", input, mask)
    m = np.broadcast_to(m, tuple(x._meta.shape))
    flat = _rs(x, (-1,))
    return _index_select(flat, _host_tensor(np.flatnonzero(m).astype(np.int64), input), dim=0)


@functor("MaskedScatter")
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """torch.masked_scatter: ``input`` with its masked positions (row-major) taking
    ``source``'s first entries in order. Traceable: the k-th masked position reads
    ``source.flatten()[k]`` with k from a cumulative sum of the mask."""
    _bool_arg("masked_scatter", mask)
    _same_dtype("masked_scatter", input, source, "source")
    F = _api()
    x, m = _broadcast_pair("masked_scatter", input, mask)
    shape = tuple(x._meta.shape)
    mf = _rs(m, (-1,))
    n_src = int(source._meta.size)
    count = None if isinstance(mf._meta, Tracer) else int(jax.device_get(jnp.sum(mf._value)))
    if count is not None and count > n_src:
        raise ValueError(f"masked_scatter(): number of elements in source ({n_src}) < number "
                         f"of ones in mask ({count})")
    if n_src == 0:
        return F.clone(x) if count is not None else F.where(m, x, x)
    pos = F.sub(F.cumsum(F.cast(mf, _dt.int64), 0), 1)
    pos = F.clamp(pos, 0, n_src - 1)
    vals = _index_select(_rs(source, (-1,)), pos, dim=0)
    return _rs(F.where(mf, vals, _rs(x, (-1,))), shape)


# -- index_add / index_copy / index_fill ------------------------------------------------------

def _index_along(fname: str, input: Tensor, dim: int, index: Tensor,
                 src_shape: tuple[int, ...] | None) -> tuple[int, Tensor, tuple[int, ...]]:
    """PyTorch's checks for ``index_*(input, dim, index, source)``, and the index expanded to
    the shape of ``source`` (``src_shape``; None: input's with ``len(index)`` on dim) so the
    op is one ``dim_scatter``. Returns (dim, expanded index, that shape)."""
    d, src_shape = _index_checks(fname, input, dim, index, src_shape)
    n = int(index._meta.size)
    sx = tuple(input._meta.shape) or (1,)
    idx = _rs(index, tuple(n if i == d else 1 for i in range(len(sx))))
    return d, _bc(idx, tuple(src_shape)), tuple(src_shape)


def _index_checks(fname: str, input: Tensor, dim: int, index: Tensor,
                  src_shape: tuple[int, ...] | None) -> tuple[int, tuple[int, ...]]:
    """PyTorch's checks of ``_index_along``; returns (dim, source's shape)."""
    _long(fname, index, "index")
    if index._meta.ndim > 1:
        raise ValueError(f"{fname}(): index should have dimension 1 or 0 (got "
                         f"{index._meta.ndim})")
    nd = input._meta.ndim
    d = wrap_dim(fname, dim, nd)
    n = int(index._meta.size)
    sx = tuple(input._meta.shape) or (1,)
    if src_shape is None:
        src_shape = sx[:d] + (n,) + sx[d + 1:]
    else:
        ss = tuple(src_shape) or (1,)
        if len(ss) != len(sx):
            raise ValueError(f"{fname}(): source and self must have the same number of "
                             f"dimensions (got {len(src_shape)} and {nd})")
        if ss[d] != n:
            raise ValueError(f"{fname}(): number of indices ({n}) should be equal to "
                             f"source.size({d}) ({ss[d]})")
        for i, (a, b) in enumerate(zip(ss, sx)):
            if i != d and a != b:
                raise ValueError(f"{fname}(): source {list(src_shape)} and self {list(sx)} "
                                 f"must have the same size at dimension {i} (all but dim {d})")
        src_shape = ss
    _check_range(fname, index, sx[d], d)
    return d, tuple(src_shape)


def _as_nd(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    return t if tuple(t._meta.shape) == shape else _rs(t, shape)


def _index_scatter(fname: str, input: Tensor, dim: int, index: Tensor, src: Tensor,
                   reduce: str) -> Tensor:
    d, idx, ss = _index_along(fname, input, dim, index,
                              tuple(src._meta.shape) if src._meta.ndim else ())
    shape = tuple(input._meta.shape)
    x = _as_nd(input, tuple(shape) or (1,))
    out = _scatter(x, idx, _as_nd(src, ss), dim=d, reduce=reduce)
    return _as_nd(out, shape)


@functor("IndexAdd", checks=True)
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, alpha: Any) -> Tensor:
    """torch.index_add: ``out[..., index[i], ...] += alpha * source[..., i, ...]`` along dim;
    duplicate indices accumulate: the op index_add, one scatter-add of source's slices (bool
    input: a scatter with the index expanded over source, whose add is or)."""
    _same_dtype("index_add", input, source, "source")
    if alpha != 1:
        if input._meta.dtype.kind in "iub" and not isinstance(alpha, (int, np.integer)):
            raise TypeError(f"index_add(): for integral input tensors, argument alpha must not "
                            f"be a floating point number (got {alpha!r})")
        source = _api().mul(source, scalar_as("index_add", alpha, source._meta.dtype))
    if input._meta.dtype == np.bool_ or not input._meta.ndim:  # or, or one element: the
        return _index_scatter("index_add", input, dim, index, source, "add")  # general path
    d, ss = _index_checks("index_add", input, dim, index, tuple(source._meta.shape))
    return _index_add(input, _rs(index, (int(index._meta.size),)), _as_nd(source, ss), dim=d)


@functor("IndexCopy", checks=True)
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """torch.index_copy: ``out[..., index[i], ...] = source[..., i, ...]`` along dim (with
    duplicate indices, which one lands is unspecified, as in PyTorch)."""
    _same_dtype("index_copy", input, source, "source")
    return _index_scatter("index_copy", input, dim, index, source, "none")


@functor("IndexFill", checks=True)
def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """torch.index_fill: ``value`` at positions ``index`` along dim."""
    v = scalar_as("index_fill", value, input._meta.dtype)
    d, idx, _ = _index_along("index_fill", input, dim, index, None)
    shape = tuple(input._meta.shape)
    return _as_nd(_scatter(_as_nd(input, shape or (1,)), idx, v, dim=d, reduce="none"), shape)


@functor("IndexFillTensor", checks=True)
def index_fill_tensor(input: Tensor, dim: int, index: Tensor, value: Tensor) -> Tensor:
    """index_fill with a 0-d tensor value (cast to input's dtype; differentiable in it)."""
    if value._meta.ndim != 0:
        raise ValueError(f"index_fill(): only supports a 0-dimensional value tensor, but got "
                         f"tensor with {value._meta.ndim} dimension(s)")
    v = cast(value, input._meta.dtype)
    d, idx, _ = _index_along("index_fill", input, dim, index, None)
    shape = tuple(input._meta.shape)
    return _as_nd(_scatter(_as_nd(input, shape or (1,)), idx, v, dim=d, reduce="none"), shape)


# -- index_put ---------------------------------------------------------------------------------

def _put_indices(fname: str, input: Tensor, indices: Any) -> list[Tensor]:
    """Integer index tensors for the leading dims (a bool index of k dims becomes k integer
    ones: eager only), negative entries wrapped, bounds-checked when concrete."""
    F = _api()
    shape = tuple(input._meta.shape)
    out: list[Tensor] = []
    for k, t in enumerate(indices):
        if t is None:
            raise TypeError(f"{fname}(): None entries in 'indices' are not supported; index "
                            f"the leading dims (use x[:, idx] = v for others)")
        if t._meta.dtype == np.bool_:
            m = _concrete(fname, t, f"indices[{k}]")
            d0 = len(out)
            if tuple(m.shape) != shape[d0:d0 + m.ndim]:
                raise IndexError(f"{fname}(): the shape of the mask {list(m.shape)} at index "
                                 f"{k} does not match the shape of the indexed tensor "
                                 f"{list(shape[d0:d0 + m.ndim])}")
            out += [_host_tensor(c.astype(np.int64), input) for c in np.nonzero(m)]
            continue
        _long(fname, t, f"indices[{k}]")
        d = len(out)
        if d >= len(shape):
            raise IndexError(f"{fname}(): too many indices for tensor of dimension "
                             f"{len(shape)}")
        def check(lo: int, hi: int, d: int = d) -> None:
            if lo < -shape[d] or hi >= shape[d]:
                bad = lo if lo < -shape[d] else hi
                raise IndexOutOfRangeError(f"{fname}(): index {bad} is out of bounds for "
                                           f"dimension {d} with size {shape[d]}")
        mm = checked_min_max(t, check)
        if mm is None or mm[0] < 0:
            t = F.where(F.lt(t, 0), F.add(t, shape[d]), t)
        out.append(t)
    if len(out) > len(shape):
        raise IndexError(f"{fname}(): too many indices for tensor of dimension {len(shape)}")
    return out


def index_put_impl(fname: str, input: Tensor, indices: Any, values: Tensor,
                   accumulate: bool) -> Tensor:
    """``input[indices] = values`` (``+=`` with ``accumulate``, where duplicates add up) for
    integer / bool index tensors of the leading dims: the indexed dims are flattened into one,
    the indices into one linear index, then ``index_add`` / ``index_copy`` along dim 0."""
    _same_dtype(fname, input, values, "values")
    if not indices:
        raise ValueError(f"{fname}(): 'indices' must hold at least one tensor")
    F = _api()
    shape = tuple(input._meta.shape)
    idx = _put_indices(fname, input, indices)
    k = len(idx)
    try:
        bshape = np.broadcast_shapes(*(tuple(t._meta.shape) for t in idx))
    except ValueError:
        raise IndexError(f"{fname}(): shape mismatch: indexing tensors could not be broadcast "
                         f"together with shapes "
                         f"{[list(t._meta.shape) for t in idx]}") from None
    lin = None
    for d, t in enumerate(idx):
        t = F.cast(_bc(t, bshape), _dt.int64)
        stride = int(np.prod(shape[d + 1:k], dtype=np.int64))
        t = F.mul(t, stride) if stride != 1 else t
        lin = t if lin is None else F.add(lin, t)
    rest = shape[k:]
    try:
        vals = _bc(values, tuple(bshape) + rest)
    except (ValueError, RuntimeError):
        raise ValueError(f"{fname}(): shape mismatch: value tensor of shape "
                         f"{list(values._meta.shape)} cannot be broadcast to indexing result "
                         f"of shape {list(tuple(bshape) + rest)}") from None
    n = int(np.prod(bshape, dtype=np.int64))
    flat = _rs(input, (int(np.prod(shape[:k], dtype=np.int64)),) + rest)
    out = _scatter(flat, _bc(_rs(lin, (n,) + (1,) * len(rest)), (n,) + rest),
                   _rs(vals, (n,) + rest), dim=0, reduce="add" if accumulate else "none")
    return _rs(out, shape)


@functor("IndexPut", checks=True)
def index_put(input: Tensor, indices: Any, values: Tensor, accumulate: bool) -> Tensor:
    """torch.index_put: ``input[indices] = values`` out of place (``accumulate=True``:
    ``+=``, duplicate indices accumulate; without it, which duplicate lands is unspecified)."""
    return index_put_impl("index_put", input, indices, values, accumulate)


# -- take / take_along_dim ---------------------------------------------------------------------

@functor("Take", checks=True)
def take(input: Tensor, index: Tensor) -> Tensor:
    """torch.take: ``input.flatten()[index]`` in index's shape; negative indices count from
    the end."""
    _long("take", index, "index")
    F = _api()
    n = int(input._meta.size)
    def check(lo: int, hi: int) -> None:
        if lo < -n or hi >= n:
            bad = lo if lo < -n else hi
            raise IndexOutOfRangeError(f"take(): out of range: tried to access index {bad} on "
                                       f"a tensor of {n} elements")
    mm = checked_min_max(index, check)
    idx = _rs(index, (-1,))
    if mm is None or mm[0] < 0:
        idx = F.where(F.lt(idx, 0), F.add(idx, n), idx)
    out = _index_select(_rs(input, (-1,)), idx, dim=0)
    return _rs(out, tuple(index._meta.shape))


@functor("TakeAlongDim")
def take_along_dim(input: Tensor, indices: Tensor, dim: Any) -> Tensor:
    """torch.take_along_dim: gather along ``dim`` with input and indices broadcast on the
    other dims; ``dim=None`` gathers from the flattened input."""
    _long("take_along_dim", indices, "indices")
    if dim is None:
        return gather(_rs(input, (-1,)), 0, _rs(indices, (-1,)), False)
    sx, si = tuple(input._meta.shape), tuple(indices._meta.shape)
    if len(sx) != len(si):
        raise ValueError(f"take_along_dim(): input and indices should have the same number of "
                         f"dimensions, but got {len(sx)} dimensions for input, and {len(si)} "
                         f"dimensions for indices")
    d = wrap_dim("take_along_dim", dim, len(sx))
    if sx and sx[d]:
        # PyTorch (2.13) takes the indices along a given dim modulo its size: -1 is the last
        indices = _api().remainder(indices, sx[d])
    if sx:
        try:
            b = list(np.broadcast_shapes(sx[:d] + (1,) + sx[d + 1:],
                                         si[:d] + (1,) + si[d + 1:]))
        except ValueError:
            raise ValueError(f"take_along_dim(): input {list(sx)} and indices {list(si)} are "
                             f"not broadcastable outside dim {d}") from None
        bx, bi = list(b), list(b)
        bx[d], bi[d] = sx[d], si[d]
        if tuple(bx) != sx:
            input = _bc(input, tuple(bx))
        if tuple(bi) != si:
            indices = _bc(indices, tuple(bi))
    return gather(input, d, indices, False)


# -- scatter_reduce ----------------------------------------------------------------------------

_SCATTER_REDUCE = {"sum": "add", "prod": "multiply", "mean": "add", "amax": "max",
                   "amin": "min"}


def _identity(reduce: str, dtype: np.dtype) -> Any:
    """The value a reduction starts from (written over the targets for include_self=False)."""
    d = np.dtype(dtype)
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    big = True if d.kind == "b" else (np.iinfo(d).max if d.kind in "iu" else math.inf)
    small = False if d.kind == "b" else (np.iinfo(d).min if d.kind in "iu" else -math.inf)
    return small if reduce == "amax" else big


@functor("ScatterReduce", checks=True)
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str,
                   include_self: bool) -> Tensor:
    """torch.scatter_reduce: ``src`` reduced into ``input`` at ``index`` along dim with
    ``'sum'`` / ``'prod'`` / ``'mean'`` / ``'amax'`` / ``'amin'``; ``include_self=False``
    leaves the input's own value out at the targets (they start from the reduction's
    identity). One ``dim_scatter`` (``mean``: a sum divided by the count of contributions,
    floor division for integers, as PyTorch); amax / amin share the gradient evenly among
    ties."""
    if reduce not in _SCATTER_REDUCE:
        raise ValueError(f"scatter_reduce(): reduce argument must be either sum, prod, mean, "
                         f"amax or amin, got {reduce!r}")
    if src._meta.dtype != input._meta.dtype:
        raise TypeError(f"scatter_reduce(): expected src to have the dtype of input "
                        f"({input.dtype}), got {src.dtype}")
    if src._meta.ndim != input._meta.ndim:
        raise ValueError(f"scatter_reduce(): index and src must have the same number of "
                         f"dimensions as input, got {src._meta.ndim} and "
                         f"{input._meta.ndim}")
    dt = input._meta.dtype
    base = input
    if not include_self:
        # a clone first: the op below saves its input, which the in-place form
        # (scatter_reduce_) would otherwise overwrite before the backward reads it
        base = _scatter_impl("scatter_reduce", _api().clone(input), dim, index,
                             scalar_as("scatter_reduce", _identity(reduce, dt), dt), "none")
    out = _scatter_impl("scatter_reduce", base, dim, index, src, _SCATTER_REDUCE[reduce])
    if reduce != "mean":
        return out
    F = _api()
    d = wrap_dim("scatter_reduce", dim, input._meta.ndim)
    ones = F.full(tuple(index._meta.shape), 1, dtype=input.dtype)
    start = F.full(tuple(input._meta.shape), 1 if include_self else 0, dtype=input.dtype)
    count = _scatter(start, index, ones, dim=d, reduce="add")
    count = F.where(F.eq(count, 0), 1, count)
    if dt.kind in "iu":
        return F.floor_divide(out, count)
    return F.div(out, count)


@functor("WhereNonzero")
def where_nonzero(condition: Tensor) -> tuple[Tensor, ...]:
    """torch.where(condition): ``nonzero(condition, as_tuple=True)`` (eager only)."""
    return nonzero(condition, True)


# -- more sorting and membership (msort, isin & co.) ---------------------------------------------
# Compositions of sort / eq / index_copy (their gradients and SBP).

@functor("Msort")
def msort(input: Tensor) -> Tensor:
    """torch.msort: ``sort(input, dim=0).values``."""
    if input._meta.ndim == 0:
        raise ValueError("msort(): argument 'input' must have at least 1 dimension")
    return api().sort(input, 0)[0]


@functor("Isin")
def isin(elements: Any, test_elements: Any, assume_unique: bool, invert: bool) -> Tensor:
    """torch.isin: whether each of ``elements`` equals one of ``test_elements`` (bool, the
    shape of ``elements``; compared after type promotion, as ``==``)."""
    f = api()
    if not isinstance(elements, Tensor):  # a number: a 0-d tensor (promoted dtype)
        elements = scalar_tensor(elements, scalar_result_dtype(test_elements, elements))
    if not isinstance(test_elements, Tensor):
        hit = f.eq(elements, test_elements)
    else:
        flat = f.reshape(elements, (-1, 1))
        hit = f.any(f.eq(flat, f.reshape(test_elements, (1, -1))), 1)
        hit = f.reshape(hit, tuple(elements.shape))
    return f.logical_not(hit) if invert else hit


def _scatter_dim(fname: str, input: Tensor, dim: int) -> tuple[int, int]:
    nd = input._meta.ndim
    if nd == 0:
        raise ValueError(f"{fname}(): argument 'input' must have at least 1 dimension")
    a = wrap_dim(fname, dim, nd)
    return a, input._meta.shape[a]


def _copy_at(input: Tensor, dim: int, positions: list[int], src: Tensor) -> Tensor:
    """``input`` with ``src`` written at ``positions`` along ``dim`` (index_copy; the gradient
    of the overwritten part of ``input`` is 0, ``src`` gets its slots')."""
    f = api()
    idx = _wrap(jnp.asarray(np.asarray(positions, np.int64)))
    return f.index_copy(input, dim, idx, cast(src, input._meta.dtype))


def _check_src(fname: str, src: Tensor, shape: tuple[int, ...]) -> None:
    if tuple(src.shape) != tuple(shape):
        raise RuntimeError(f"{fname}(): expected argument 'src' to have the size "
                           f"{list(shape)}, but got {list(src.shape)}")


@functor("SelectScatter")
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """torch.select_scatter: ``input`` with ``input.select(dim, index)`` replaced by ``src``
    (a new tensor)."""
    a, n = _scatter_dim("select_scatter", input, dim)
    if not -n <= index < n:
        raise IndexError(f"select_scatter(): index {index} out of range for dim {dim} of "
                         f"size {n}")
    shape = tuple(s for i, s in enumerate(input.shape) if i != a)
    _check_src("select_scatter", src, shape)
    return _copy_at(input, a, [index % n], api().unsqueeze(src, a))


@functor("SliceScatter")
def slice_scatter(input: Tensor, src: Tensor, dim: int, start: Any, end: Any,
                  step: int) -> Tensor:
    """torch.slice_scatter: ``input`` with ``input[..., start:end:step, ...]`` (along ``dim``)
    replaced by ``src`` (a new tensor); ``start`` / ``end`` as Python slice bounds."""
    a, n = _scatter_dim("slice_scatter", input, dim)
    if step <= 0:
        raise ValueError(f"slice_scatter(): argument 'step' must be positive, got {step}")
    positions = list(range(n))[slice(start, end, step)]
    shape = tuple(len(positions) if i == a else s for i, s in enumerate(input.shape))
    _check_src("slice_scatter", src, shape)
    if not positions:
        return api().clone(input)
    return _copy_at(input, a, positions, src)


@functor("DiagonalScatter")
def diagonal_scatter(input: Tensor, src: Tensor, offset: int, dim1: int, dim2: int
                     ) -> Tensor:
    """torch.diagonal_scatter: ``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced
    by ``src`` (a new tensor; ``src``'s last dim runs along the diagonal)."""
    nd = input._meta.ndim
    if nd < 2:
        raise ValueError("diagonal_scatter(): argument 'input' must have at least 2 dimensions")
    a = wrap_dim("diagonal_scatter", dim1, nd)
    b = wrap_dim("diagonal_scatter", dim2, nd)
    if a == b:
        raise ValueError(f"diagonal_scatter(): dim1 and dim2 cannot be equal, got {dim1} "
                         f"and {dim2}")
    f = api()
    x = f.movedim(input, [a, b], [-2, -1])
    m, n = x.shape[-2], x.shape[-1]
    rows = range(max(0, -offset), m)
    cells = [(i, i + offset) for i in rows if 0 <= i + offset < n]
    _check_src("diagonal_scatter", src, tuple(x.shape[:-2]) + (len(cells),))
    lead = tuple(x.shape[:-2])
    flat = f.reshape(x, lead + (m * n,))
    if cells:
        flat = _copy_at(flat, len(lead), [i * n + j for i, j in cells], src)
    else:
        flat = f.clone(flat)
    return f.movedim(f.reshape(flat, lead + (m, n)), [-2, -1], [a, b])


# -- put / index_reduce ------------------------------------------------------------------------

@functor("Put", checks=True)
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool) -> Tensor:
    """torch.put: ``source`` written at the flat positions ``index`` of ``input`` (row-major,
    negative positions from the end); ``accumulate=True`` adds, duplicates adding up. An
    ``index_put`` on the flattened input."""
    _long("put", index, "index")
    _same_dtype("put", input, source, "source")
    ni, ns = int(index._meta.size), int(source._meta.size)
    if ni != ns:
        raise ValueError(f"put(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {ns}, index.numel() = {ni}")
    shape = tuple(input._meta.shape)
    n = int(input._meta.size)
    if n == 0 and ni:
        raise IndexError("put(): cannot put values into an empty tensor")
    if ni == 0:
        return _api().clone(input)
    out = index_put_impl("put", _rs(input, (n,)), [_rs(index, (ni,))], _rs(source, (ns,)),
                         accumulate)
    return _rs(out, shape)


_INDEX_REDUCE = ("prod", "mean", "amax", "amin")


@functor("IndexReduce", checks=True)
def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str,
                 include_self: bool) -> Tensor:
    """torch.index_reduce: ``source[..., i, ...]`` reduced into ``input[..., index[i], ...]``
    along dim with ``'prod'`` / ``'mean'`` / ``'amax'`` / ``'amin'`` (``include_self=False``:
    the input's own values at the targets take no part). ``scatter_reduce`` with the index
    expanded over ``source``, so the gradients are scatter_reduce's."""
    if reduce not in _INDEX_REDUCE:
        raise ValueError(f"index_reduce(): reduce argument must be one of prod, mean, amax or "
                         f"amin, got {reduce!r}")
    _same_dtype("index_reduce", input, source, "source")
    d, idx, ss = _index_along("index_reduce", input, dim, index,
                              tuple(source._meta.shape) if source._meta.ndim else ())
    shape = tuple(input._meta.shape)
    out = scatter_reduce(_as_nd(input, shape or (1,)), d, idx, _as_nd(source, ss), reduce,
                         include_self)
    return _as_nd(out, shape)
