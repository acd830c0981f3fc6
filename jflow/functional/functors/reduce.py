"""Functors of the reduction and scan ops: PyTorch's argument rules, then the op.

What lives here rather than in the ops (which are dtype-strict and take raw axes):

* dims are resolved against the input's rank with PyTorch's errors (``IndexError`` "Dimension
  out of range", ``RuntimeError`` for a repeated dim) and passed to the op non-negative, so one
  executable serves ``dim=-1`` and ``dim=ndim-1``; ``dim=None`` / ``[]`` means every dim;
* result dtypes: ``sum`` / ``prod`` / ``cumsum`` / ``cumprod`` of bool and integer inputs are
  int64 (the input is cast first, the op itself keeps its input dtype); ``dtype=`` casts the
  input before the op, as in PyTorch; mean/var/std/norm need a floating input (PyTorch's
  ``RuntimeError``), logsumexp computes integers in the default float dtype;
* empty inputs: max/min/amax/amin/argmax/argmin of nothing raise PyTorch's errors before the
  op is reached; sum/prod/any/all/mean/var/norm/logsumexp of nothing give their identity
  (or nan for mean/var, as PyTorch).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import dtypes as _dt
from ...ops import get
from ...tensor import Tensor
from ..promotion import cast, to_float
from ..registry import functor

_INT64 = np.dtype(np.int64)

_sum, _prod, _mean = get("reduce_sum").apply, get("reduce_prod").apply, get("reduce_mean").apply
_rmax, _rmin = get("reduce_max").apply, get("reduce_min").apply
_rany, _rall = get("reduce_any").apply, get("reduce_all").apply
_lse, _var, _norm = (get("reduce_logsumexp").apply, get("reduce_var").apply,
                     get("reduce_norm").apply)
_argmax, _argmin = get("argmax").apply, get("argmin").apply
_max_dim, _min_dim = get("max_dim").apply, get("min_dim").apply
_cumsum, _cumprod = get("cumsum").apply, get("cumprod").apply
_sqrt = get("sqrt").apply

#: PyTorch's scalar-type names, used in its dtype error messages.
_TORCH_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
                "int64": "Long", "float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
                "float64": "Double"}


def _torch_name(np_dtype: Any) -> str:
    name = np.dtype(np_dtype).name
    return _TORCH_NAMES.get(name, name)


def _is_float(np_dtype: Any) -> bool:
    return _dt.from_numpy_dtype(np.dtype(np_dtype)).is_floating_point


# -- dims ------------------------------------------------------------------------------------

def _dim(fname: str, dim: int, ndim: int) -> int:
    """One dim resolved against ``ndim`` (a 0-d tensor accepts -1 and 0), PyTorch's IndexError."""
    n = ndim if ndim else 1
    if not -n <= dim < n:
        raise IndexError(f"{fname}(): Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim % n


def _dims(fname: str, dims: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """Sorted non-negative dims; ``()`` = every dim (also for ``None`` and for 0-d inputs)."""
    if not dims:
        return ()
    out = tuple(sorted({_dim(fname, d, ndim) for d in dims}))
    if len(out) != len(dims):
        seen: set[int] = set()
        for d in dims:
            if d % max(ndim, 1) in seen:
                raise RuntimeError(f"{fname}(): dim {d % max(ndim, 1)} appears multiple times in "
                                   f"the list of dims")
            seen.add(d % max(ndim, 1))
    return out if ndim else ()


def _reduced(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return axes if axes else tuple(range(len(shape)))


def _check_nonempty(fname: str, x: Tensor, axes: tuple[int, ...], dim_given: bool,
                    exc: type[Exception] = IndexError) -> None:
    """PyTorch's errors for max/min-like reductions (no identity) over nothing."""
    shape = tuple(x._value.shape)
    if not dim_given:
        if math.prod(shape) == 0:
            raise exc(f"{fname}(): Expected reduction dim to be specified for input.numel() == 0."
                      + (" Specify the reduction dim with the 'dim' argument."
                         if exc is RuntimeError else ""))
        return
    for a in _reduced(shape, axes):
        if shape and shape[a] == 0:
            raise IndexError(f"{fname}(): Expected reduction dim {a} to have non-zero size.")


# -- dtypes ----------------------------------------------------------------------------------

def _int_to_int64(x: Tensor, dtype: Any, fname: str) -> Tensor:
    """``dtype=`` casts the input; else bool/integer inputs accumulate in int64 (PyTorch)."""
    if dtype is not None:
        if dtype == _dt.bool_:
            raise TypeError(f"{fname}(): dtype=flow.bool is not supported; use any()/all() for "
                            f"logical reductions")
        return cast(x, dtype.np)
    if x._value.dtype.kind in "biu":
        return cast(x, _INT64)
    return x


def _float_input(x: Tensor, dtype: Any, fname: str, what: str) -> Tensor:
    """mean/var/std/norm: a floating input (or ``dtype=``), PyTorch's RuntimeError otherwise."""
    if dtype is not None:
        if not dtype.is_floating_point:
            raise RuntimeError(f"{fname}(): could not infer output dtype. Optional dtype must be "
                               f"either a floating point or complex dtype. Got: "
                               f"{_torch_name(dtype.np)}")
        if what != "norm":
            x = cast(x, dtype.np)
    d = x._value.dtype
    if not _is_float(d):
        if what == "mean":
            raise RuntimeError(f"{fname}(): could not infer output dtype. Input dtype must be "
                               f"either a floating point or complex dtype. Got: {_torch_name(d)}")
        if what == "norm":
            raise RuntimeError(f"{fname}(): Expected a floating point or complex tensor as input. "
                               f"Got {_torch_name(d)}")
        raise RuntimeError(f"{fname}(): std and var only support floating point and complex "
                           f"dtypes, got {_torch_name(d)}")
    if what == "norm" and dtype is not None:
        x = cast(x, dtype.np)
    return x


# -- sum / prod / mean -------------------------------------------------------------------------

@functor("Sum")
def sum_(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool, dtype: Any) -> Tensor:
    """flow.sum: bool/int -> int64 unless ``dtype`` is given; an empty reduction is 0."""
    if dim is None and dtype is None and input._value.dtype.kind == "f":  # the hot path
        return _sum(input, axis=(), keepdim=keepdim)
    x = _int_to_int64(input, dtype, "sum")
    return _sum(x, axis=_dims("sum", dim, x._value.ndim), keepdim=keepdim)


@functor("Prod")
def prod(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool, dtype: Any) -> Tensor:
    """flow.prod: bool/int -> int64 unless ``dtype`` is given; an empty reduction is 1."""
    x = _int_to_int64(input, dtype, "prod")
    return _prod(x, axis=_dims("prod", dim, x._value.ndim), keepdim=keepdim)


@functor("Mean")
def mean(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool, dtype: Any) -> Tensor:
    """flow.mean: floating inputs only (or ``dtype=`` a floating dtype); empty -> nan."""
    x = _float_input(input, dtype, "mean", "mean")
    return _mean(x, axis=_dims("mean", dim, x._value.ndim), keepdim=keepdim)


# -- max / min -----------------------------------------------------------------------------------

@functor("Max")
def max_(input: Tensor) -> Tensor:
    """flow.max(x): the largest element as a 0-d tensor (nan if any element is nan)."""
    _check_nonempty("max", input, (), False, RuntimeError)
    return _rmax(input, axis=(), keepdim=False)


@functor("Min")
def min_(input: Tensor) -> Tensor:
    """flow.min(x): the smallest element as a 0-d tensor (nan if any element is nan)."""
    _check_nonempty("min", input, (), False, RuntimeError)
    return _rmin(input, axis=(), keepdim=False)


@functor("MaxDim")
def max_dim(input: Tensor, dim: int, keepdim: bool) -> tuple[Tensor, Tensor]:
    """flow.max(x, dim): (values, indices), the index of the first maximum (or first nan)."""
    d = _dim("max", dim, input._value.ndim)
    _check_nonempty("max", input, (d,), True)
    return _max_dim(input, axis=d, keepdim=keepdim)


@functor("MinDim")
def min_dim(input: Tensor, dim: int, keepdim: bool) -> tuple[Tensor, Tensor]:
    """flow.min(x, dim): (values, indices), the index of the first minimum (or first nan)."""
    d = _dim("min", dim, input._value.ndim)
    _check_nonempty("min", input, (d,), True)
    return _min_dim(input, axis=d, keepdim=keepdim)


@functor("Amax")
def amax(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool) -> Tensor:
    """flow.amax: max over several dims (values only)."""
    axes = _dims("amax", dim, input._value.ndim)
    _check_nonempty("amax", input, axes, bool(dim), RuntimeError)
    return _rmax(input, axis=axes, keepdim=keepdim)


@functor("Amin")
def amin(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool) -> Tensor:
    """flow.amin: min over several dims (values only)."""
    axes = _dims("amin", dim, input._value.ndim)
    _check_nonempty("amin", input, axes, bool(dim), RuntimeError)
    return _rmin(input, axis=axes, keepdim=keepdim)


@functor("Argmax")
def argmax(input: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    """flow.argmax: int64 index of the first maximum; ``dim=None`` indexes the flattened input."""
    if dim is None:
        _check_nonempty("argmax", input, (), False)
        return _argmax(input, axis=None, keepdim=keepdim)
    d = _dim("argmax", dim, input._value.ndim)
    _check_nonempty("argmax", input, (d,), True)
    return _argmax(input, axis=d, keepdim=keepdim)


@functor("Argmin")
def argmin(input: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    """flow.argmin: int64 index of the first minimum; ``dim=None`` indexes the flattened input."""
    if dim is None:
        _check_nonempty("argmin", input, (), False)
        return _argmin(input, axis=None, keepdim=keepdim)
    d = _dim("argmin", dim, input._value.ndim)
    _check_nonempty("argmin", input, (d,), True)
    return _argmin(input, axis=d, keepdim=keepdim)


# -- var / std / logsumexp / any / all -----------------------------------------------------------

@functor("Var")
def var(input: Tensor, dim: tuple[int, ...] | None, unbiased: bool, keepdim: bool) -> Tensor:
    """flow.var: unbiased (n - 1) by default; a reduction of <= 1 element (unbiased) is nan."""
    x = _float_input(input, None, "var", "var")
    return _var(x, axis=_dims("var", dim, x._value.ndim), keepdim=keepdim, unbiased=unbiased)


@functor("VarAll")
def var_all(input: Tensor, unbiased: bool) -> Tensor:
    """flow.var(x, unbiased): over every element (PyTorch's second overload)."""
    return var(input, None, unbiased, False)


@functor("Std")
def std(input: Tensor, dim: tuple[int, ...] | None, unbiased: bool, keepdim: bool) -> Tensor:
    """flow.std: sqrt of flow.var with the same arguments."""
    x = _float_input(input, None, "std", "var")
    return _sqrt(_var(x, axis=_dims("std", dim, x._value.ndim), keepdim=keepdim,
                      unbiased=unbiased))


@functor("StdAll")
def std_all(input: Tensor, unbiased: bool) -> Tensor:
    """flow.std(x, unbiased): over every element (PyTorch's second overload)."""
    return std(input, None, unbiased, False)


@functor("LogSumExp")
def logsumexp(input: Tensor, dim: tuple[int, ...], keepdim: bool) -> Tensor:
    """flow.logsumexp: stable log(sum(exp(x))); integer inputs in the default float dtype."""
    x = to_float(input)
    return _lse(x, axis=_dims("logsumexp", dim, x._value.ndim), keepdim=keepdim)


@functor("ReduceAny")
def any_(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool) -> Tensor:
    """flow.any: bool, True where some element is non-zero (nan counts); empty -> False."""
    return _rany(input, axis=_dims("any", dim, input._value.ndim), keepdim=keepdim)


@functor("ReduceAll")
def all_(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool) -> Tensor:
    """flow.all: bool, True where every element is non-zero; empty -> True."""
    return _rall(input, axis=_dims("all", dim, input._value.ndim), keepdim=keepdim)


# -- norm ------------------------------------------------------------------------------------------

@functor("Norm")
def norm(input: Tensor, p: Any, dim: tuple[int, ...] | None, keepdim: bool, dtype: Any) -> Tensor:
    """flow.norm with a numeric p: the vector p-norm over ``dim`` (every dim when None).

    p = inf / -inf: max / min of |x|; p = 0: the count of non-zeros; else (sum |x|^p)^(1/p).
    """
    if isinstance(p, bool):
        raise TypeError("norm(): argument 'p' must be a number or a string, not bool")
    if math.isnan(p):
        raise ValueError("norm(): p must not be nan")
    x = _float_input(input, dtype, "norm", "norm")
    axes = _dims("norm", dim, x._value.ndim)
    if math.isinf(p) and math.prod(x._value.shape[a] for a in _reduced(
            tuple(x._value.shape), axes)) == 0:
        raise RuntimeError("norm(): cannot compute the inf norm on an empty tensor because the "
                           "operation does not have an identity")
    return _norm(x, ord=float(p), axis=axes, keepdim=keepdim)


@functor("NormStr")
def norm_str(input: Tensor, p: str, dim: tuple[int, ...] | None, keepdim: bool,
             dtype: Any) -> Tensor:
    """flow.norm(x, 'fro'): the Frobenius norm, i.e. the 2-norm over at most two dims."""
    if p == "nuc":
        raise ValueError("norm(): p='nuc' (the nuclear norm) is not supported; use p='fro' or a "
                         "number")
    if p != "fro":
        raise ValueError(f"norm(): p={p!r} is not supported; expected a number, inf, -inf or "
                         f"'fro'")
    if dim is not None and len(dim) > 2:
        raise ValueError(f"norm(): p='fro' needs at most 2 dims (a matrix norm), got dim="
                         f"{tuple(dim)}")
    return norm(input, 2, dim, keepdim, dtype)


# -- scans ---------------------------------------------------------------------------------------

@functor("Cumsum")
def cumsum(input: Tensor, dim: int, dtype: Any) -> Tensor:
    """flow.cumsum: bool/int -> int64 unless ``dtype`` is given."""
    x = _int_to_int64(input, dtype, "cumsum")
    return _cumsum(x, dim=_dim("cumsum", dim, x._value.ndim))


@functor("Cumprod")
def cumprod(input: Tensor, dim: int, dtype: Any) -> Tensor:
    """flow.cumprod: bool/int -> int64 unless ``dtype`` is given."""
    x = _int_to_int64(input, dtype, "cumprod")
    return _cumprod(x, dim=_dim("cumprod", dim, x._value.ndim))


__all__ = ["sum_", "prod", "mean", "max_", "min_", "max_dim", "min_dim", "amax", "amin", "argmax",
           "argmin", "var", "std", "logsumexp", "any_", "all_", "norm", "cumsum", "cumprod"]
