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
import warnings
from typing import Any

import jax
import numpy as np

from ... import dtypes as _dt
from ..._dims import wrap_dim
from ...ops import get
from ...tensor import Tensor, _wrap
from ..promotion import cast, to_float
from ..registry import api, functor
from ._checks import is_float as _is_float
from ._checks import torch_name as _torch_name

_INT64 = np.dtype(np.int64)
_BOOL = np.dtype(np.bool_)

_sum, _prod, _mean = get("reduce_sum").apply, get("reduce_prod").apply, get("reduce_mean").apply
_rmax, _rmin = get("reduce_max").apply, get("reduce_min").apply
_rany, _rall = get("reduce_any").apply, get("reduce_all").apply
_lse, _var, _norm = (get("reduce_logsumexp").apply, get("reduce_var").apply,
                     get("reduce_norm").apply)
_argmax, _argmin = get("argmax").apply, get("argmin").apply
_max_dim, _min_dim = get("max_dim").apply, get("min_dim").apply
_cumsum, _cumprod = get("cumsum").apply, get("cumprod").apply
_cummax, _cummin = get("cummax").apply, get("cummin").apply
_median, _mode, _kth = get("median_dim").apply, get("mode").apply, get("kthvalue").apply
_sqrt, _isnan = get("sqrt").apply, get("isnan").apply

# -- dims ------------------------------------------------------------------------------------

def _dims(fname: str, dims: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """Sorted non-negative dims; ``()`` = every dim (also for ``None`` and for 0-d inputs)."""
    if not dims:
        return ()
    out = tuple(sorted({wrap_dim(fname, d, ndim) for d in dims}))
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
    shape = tuple(x._meta.shape)
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
    if x._meta.dtype.kind in "biu":
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
    d = x._meta.dtype
    if what == "mean" and d.kind == "c":  # mean of complex values (sum is complex too)
        return x
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
    if dim is None and dtype is None and input._meta.dtype.kind == "f":  # the hot path
        return _sum(input, axis=(), keepdim=keepdim)
    x = _int_to_int64(input, dtype, "sum")
    return _sum(x, axis=_dims("sum", dim, x._meta.ndim), keepdim=keepdim)


@functor("Prod")
def prod(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool, dtype: Any) -> Tensor:
    """flow.prod: bool/int -> int64 unless ``dtype`` is given; an empty reduction is 1."""
    x = _int_to_int64(input, dtype, "prod")
    return _prod(x, axis=_dims("prod", dim, x._meta.ndim), keepdim=keepdim)


@functor("Mean")
def mean(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool, dtype: Any) -> Tensor:
    """flow.mean: floating inputs only (or ``dtype=`` a floating dtype); empty -> nan."""
    x = _float_input(input, dtype, "mean", "mean")
    return _mean(x, axis=_dims("mean", dim, x._meta.ndim), keepdim=keepdim)


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
    d = wrap_dim("max", dim, input._meta.ndim)
    _check_nonempty("max", input, (d,), True)
    return _max_dim(input, axis=d, keepdim=keepdim)


@functor("MinDim")
def min_dim(input: Tensor, dim: int, keepdim: bool) -> tuple[Tensor, Tensor]:
    """flow.min(x, dim): (values, indices), the index of the first minimum (or first nan)."""
    d = wrap_dim("min", dim, input._meta.ndim)
    _check_nonempty("min", input, (d,), True)
    return _min_dim(input, axis=d, keepdim=keepdim)


@functor("Amax")
def amax(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool) -> Tensor:
    """flow.amax: max over several dims (values only)."""
    axes = _dims("amax", dim, input._meta.ndim)
    _check_nonempty("amax", input, axes, bool(dim), RuntimeError)
    return _rmax(input, axis=axes, keepdim=keepdim)


@functor("Amin")
def amin(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool) -> Tensor:
    """flow.amin: min over several dims (values only)."""
    axes = _dims("amin", dim, input._meta.ndim)
    _check_nonempty("amin", input, axes, bool(dim), RuntimeError)
    return _rmin(input, axis=axes, keepdim=keepdim)


@functor("Argmax")
def argmax(input: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    """flow.argmax: int64 index of the first maximum; ``dim=None`` indexes the flattened input."""
    if dim is None:
        _check_nonempty("argmax", input, (), False)
        return _argmax(input, axis=None, keepdim=keepdim)
    d = wrap_dim("argmax", dim, input._meta.ndim)
    _check_nonempty("argmax", input, (d,), True)
    return _argmax(input, axis=d, keepdim=keepdim)


@functor("Argmin")
def argmin(input: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    """flow.argmin: int64 index of the first minimum; ``dim=None`` indexes the flattened input."""
    if dim is None:
        _check_nonempty("argmin", input, (), False)
        return _argmin(input, axis=None, keepdim=keepdim)
    d = wrap_dim("argmin", dim, input._meta.ndim)
    _check_nonempty("argmin", input, (d,), True)
    return _argmin(input, axis=d, keepdim=keepdim)


# -- var / std / logsumexp / any / all -----------------------------------------------------------

def _correction(fname: str, unbiased: bool | None, correction: Any) -> float:
    """PyTorch's two spellings of the divisor: ``unbiased`` (deprecated) or ``correction``."""
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{fname}(): cannot specify both 'unbiased' and 'correction'")
    if correction is None:
        return 0.0 if unbiased is False else 1.0
    if isinstance(correction, bool) or not math.isfinite(correction):
        raise TypeError(f"{fname}(): argument 'correction' must be a finite number, got "
                        f"{correction!r}")
    return float(correction)


def _var_of(fname: str, input: Tensor, dim: tuple[int, ...] | None, unbiased: bool | None,
            keepdim: bool, correction: Any) -> Tensor:
    x = _float_input(input, None, fname, "var")
    return _var(x, axis=_dims(fname, dim, x._meta.ndim), keepdim=keepdim,
                correction=_correction(fname, unbiased, correction))


@functor("Var")
def var(input: Tensor, dim: tuple[int, ...] | None, unbiased: bool | None, keepdim: bool,
        correction: Any) -> Tensor:
    """flow.var: divisor n - correction (1 by default; ``unbiased=False`` is correction 0); a
    reduction of <= correction elements is nan/inf, as PyTorch."""
    return _var_of("var", input, dim, unbiased, keepdim, correction)


@functor("VarAll")
def var_all(input: Tensor, unbiased: bool) -> Tensor:
    """flow.var(x, unbiased): over every element (PyTorch's second overload)."""
    return var(input, None, unbiased, False, None)


@functor("Std")
def std(input: Tensor, dim: tuple[int, ...] | None, unbiased: bool | None, keepdim: bool,
        correction: Any) -> Tensor:
    """flow.std: sqrt of flow.var with the same arguments."""
    return _sqrt(_var_of("std", input, dim, unbiased, keepdim, correction))


@functor("StdAll")
def std_all(input: Tensor, unbiased: bool) -> Tensor:
    """flow.std(x, unbiased): over every element (PyTorch's second overload)."""
    return std(input, None, unbiased, False, None)


@functor("LogSumExp")
def logsumexp(input: Tensor, dim: tuple[int, ...], keepdim: bool) -> Tensor:
    """flow.logsumexp: stable log(sum(exp(x))); integer inputs in the default float dtype."""
    x = to_float(input)
    return _lse(x, axis=_dims("logsumexp", dim, x._meta.ndim), keepdim=keepdim)


@functor("ReduceAny")
def any_(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool) -> Tensor:
    """flow.any: bool, True where some element is non-zero (nan counts); empty -> False."""
    return _rany(input, axis=_dims("any", dim, input._meta.ndim), keepdim=keepdim)


@functor("ReduceAll")
def all_(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool) -> Tensor:
    """flow.all: bool, True where every element is non-zero; empty -> True."""
    return _rall(input, axis=_dims("all", dim, input._meta.ndim), keepdim=keepdim)


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
    axes = _dims("norm", dim, x._meta.ndim)
    if math.isinf(p) and math.prod(x._meta.shape[a] for a in _reduced(
            tuple(x._meta.shape), axes)) == 0:
        raise RuntimeError("norm(): cannot compute the inf norm on an empty tensor because the "
                           "operation does not have an identity")
    return _norm(x, ord=float(p), axis=axes, keepdim=keepdim)


@functor("NormStr")
def norm_str(input: Tensor, p: str, dim: tuple[int, ...] | None, keepdim: bool,
             dtype: Any) -> Tensor:
    """flow.norm(x, 'fro'): the Frobenius norm, i.e. the 2-norm over at most two dims."""
    if p == "nuc":   # the nuclear norm: the sum of the singular values over two dims
        if dim is None and input._meta.ndim != 2:
            raise ValueError(f"norm(): p='nuc' needs a 2-D input or dim=(d0, d1), got a "
                             f"{input._meta.ndim}-D input")
        return api().linalg_matrix_norm(input, "nuc", dim, keepdim, dtype=dtype)
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
    return _cumsum(x, dim=wrap_dim("cumsum", dim, x._meta.ndim))


@functor("Cumprod")
def cumprod(input: Tensor, dim: int, dtype: Any) -> Tensor:
    """flow.cumprod: bool/int -> int64 unless ``dtype`` is given."""
    x = _int_to_int64(input, dtype, "cumprod")
    return _cumprod(x, dim=wrap_dim("cumprod", dim, x._meta.ndim))


# -- var_mean / std_mean / nansum / nanmean / count_nonzero / aminmax ------------------------------
# Compositions of the ops above (and of other functional entries through ``api()``), so their
# gradients are those of the pieces: nan entries of nansum/nanmean get 0, var_mean's two
# outputs each carry theirs. Counts (count_nonzero) have no gradient, as in PyTorch.

def _zero_nans(x: Tensor) -> Tensor:
    """x with nan entries replaced by 0 (a masked_fill: the gradient there is 0)."""
    if not _is_float(x._meta.dtype):
        return x
    return api().masked_fill(x, _isnan(x), 0)


def _var_mean_of(fname: str, input: Tensor, dim: tuple[int, ...] | None, unbiased: bool | None,
                 keepdim: bool, correction: Any, sqrt: bool) -> tuple[Tensor, Tensor]:
    x = _float_input(input, None, fname, "var")
    axes = _dims(fname, dim, x._meta.ndim)
    v = _var(x, axis=axes, keepdim=keepdim, correction=_correction(fname, unbiased, correction))
    return (_sqrt(v) if sqrt else v), _mean(x, axis=axes, keepdim=keepdim)


@functor("VarMean")
def var_mean(input: Tensor, dim: tuple[int, ...] | None, unbiased: bool | None, keepdim: bool,
             correction: Any) -> tuple[Tensor, Tensor]:
    """flow.var_mean: (var, mean) with var's arguments (PyTorch returns them in this order)."""
    return _var_mean_of("var_mean", input, dim, unbiased, keepdim, correction, False)


@functor("VarMeanAll")
def var_mean_all(input: Tensor, unbiased: bool) -> tuple[Tensor, Tensor]:
    """flow.var_mean(x, unbiased): over every element."""
    return _var_mean_of("var_mean", input, None, unbiased, False, None, False)


@functor("StdMean")
def std_mean(input: Tensor, dim: tuple[int, ...] | None, unbiased: bool | None, keepdim: bool,
             correction: Any) -> tuple[Tensor, Tensor]:
    """flow.std_mean: (std, mean) with std's arguments."""
    return _var_mean_of("std_mean", input, dim, unbiased, keepdim, correction, True)


@functor("StdMeanAll")
def std_mean_all(input: Tensor, unbiased: bool) -> tuple[Tensor, Tensor]:
    """flow.std_mean(x, unbiased): over every element."""
    return _var_mean_of("std_mean", input, None, unbiased, False, None, True)


@functor("NanSum")
def nansum(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool, dtype: Any) -> Tensor:
    """flow.nansum: sum treating nan as 0; bool/int -> int64 unless ``dtype`` (as sum)."""
    return sum_(_zero_nans(input), dim, keepdim, dtype)


@functor("NanMean")
def nanmean(input: Tensor, dim: tuple[int, ...] | None, keepdim: bool, dtype: Any) -> Tensor:
    """flow.nanmean: the mean of the non-nan entries (nan where all are nan, as PyTorch);
    floating inputs only."""
    if dtype is None and not _is_float(input._meta.dtype):
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got "
                           f"{_torch_name(input._meta.dtype)}")
    x = _float_input(input, dtype, "nanmean", "mean")
    axes = _dims("nanmean", dim, x._meta.ndim)
    count = _sum(cast(get("logical_not").apply(_isnan(x)), x._meta.dtype), axis=axes,
                 keepdim=keepdim)
    return api().div(_sum(_zero_nans(x), axis=axes, keepdim=keepdim), count)


@functor("CountNonzero")
def count_nonzero(input: Tensor, dim: tuple[int, ...] | None) -> Tensor:
    """flow.count_nonzero: int64 count of x != 0 (nan counts) over ``dim`` (every dim: None)."""
    nz = cast(cast(input, _BOOL), _INT64)
    return _sum(nz, axis=_dims("count_nonzero", dim, nz._meta.ndim), keepdim=False)


@functor("Aminmax")
def aminmax(input: Tensor, dim: int | None, keepdim: bool) -> tuple[Tensor, Tensor]:
    """flow.aminmax: (amin, amax) over ``dim`` (every dim when None; keepdim keeps them all)."""
    if dim is None:
        axes: tuple[int, ...] = ()
        _check_nonempty("aminmax", input, axes, False, RuntimeError)
    else:
        axes = (wrap_dim("aminmax", dim, input._meta.ndim),) if input._meta.ndim else ()
        _check_nonempty("aminmax", input, axes, True)
    return _rmin(input, axis=axes, keepdim=keepdim), _rmax(input, axis=axes, keepdim=keepdim)


@functor("Cummax")
def cummax(input: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """flow.cummax: (values, indices); the index is that of the last maximum so far (ties go to
    the later entry, as PyTorch's kernel), a nan propagates with its own index."""
    return _cummax(input, dim=wrap_dim("cummax", dim, input._meta.ndim))


@functor("Cummin")
def cummin(input: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """flow.cummin: as :func:`cummax` with the running minimum."""
    return _cummin(input, dim=wrap_dim("cummin", dim, input._meta.ndim))


@functor("LogCumSumExp")
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """flow.logcumsumexp: log(cumsum(exp(x))) along dim, stably; floating inputs (PyTorch
    has no integer kernel either)."""
    if not _is_float(input._meta.dtype):
        raise RuntimeError(f"logcumsumexp(): expected a floating point input, got "
                           f"{_torch_name(input._meta.dtype)}")
    return get("logcumsumexp").apply(input, dim=wrap_dim("logcumsumexp", dim, input._meta.ndim))


# -- order statistics: median / nanmedian / mode / kthvalue -----------------------------------

def _order_dim(fname: str, input: Tensor, dim: int) -> int:
    d = wrap_dim(fname, dim, input._meta.ndim)
    _check_nonempty(fname, input, (d,), True)
    return d


def _median_all(fname: str, input: Tensor, ignore_nan: bool) -> Tensor:
    """The lower median of every element (a 0-d tensor); of nothing, nan (as PyTorch)."""
    if input._meta.size == 0:
        if not _is_float(input._meta.dtype):
            raise RuntimeError(f"{fname}(): cannot compute the median of an empty "
                               f"{_torch_name(input._meta.dtype)} tensor")
        return _mean(input, axis=(), keepdim=False)  # nan
    flat = api().reshape(input, (-1,))
    return _median(flat, axis=0, keepdim=False, ignore_nan=ignore_nan)[0]


@functor("Median")
def median(input: Tensor) -> Tensor:
    """flow.median(x): the lower median of all elements (nan if any is nan)."""
    return _median_all("median", input, False)


@functor("MedianDim")
def median_dim(input: Tensor, dim: int, keepdim: bool) -> tuple[Tensor, Tensor]:
    """flow.median(x, dim): (values, indices), the lower median; a slice holding nan gives its
    first nan. Among equal values the index is the stable sort's (PyTorch's is its
    quickselect's: the same value, possibly another of its indices)."""
    return _median(input, axis=_order_dim("median", input, dim), keepdim=keepdim,
                   ignore_nan=False)


@functor("NanMedian")
def nanmedian(input: Tensor) -> Tensor:
    """flow.nanmedian(x): the lower median of the non-nan elements (nan if there are none)."""
    return _median_all("nanmedian", input, True)


@functor("NanMedianDim")
def nanmedian_dim(input: Tensor, dim: int, keepdim: bool) -> tuple[Tensor, Tensor]:
    """flow.nanmedian(x, dim): as median(x, dim), ignoring nan."""
    return _median(input, axis=_order_dim("nanmedian", input, dim), keepdim=keepdim,
                   ignore_nan=True)


@functor("Mode")
def mode(input: Tensor, dim: int, keepdim: bool) -> tuple[Tensor, Tensor]:
    """flow.mode: the most frequent value along dim (the smallest on a tie of counts) and its
    last index, as PyTorch; nan equals nothing, so each nan counts once."""
    return _mode(input, axis=_order_dim("mode", input, dim), keepdim=keepdim)


@functor("KthValue")
def kthvalue(input: Tensor, k: int, dim: int, keepdim: bool) -> tuple[Tensor, Tensor]:
    """flow.kthvalue: the k-th smallest value along dim (1-based; nan is the largest)."""
    d = _order_dim("kthvalue", input, dim)
    n = input._meta.shape[d] if input._meta.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k={k} out of range for dimension {d} "
                           f"of size {n}")
    return _kth(input, axis=d, keepdim=keepdim, k=k)


# -- quantile / nanquantile ---------------------------------------------------------------------
# A composition (sort, gather, lerp), so the gradient is sort's and gather's: each quantile's
# gradient goes to the one or two sorted entries it interpolates between, as PyTorch's.

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(fname: str, input: Tensor, q: Any, dim: int | None, keepdim: bool,
              interpolation: str, ignore_nan: bool) -> Tensor:
    F = api()
    if not _is_float(input._meta.dtype):
        raise RuntimeError(f"{fname}() input tensor must be either float or double dtype, got "
                           f"{_torch_name(input._meta.dtype)}")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{fname}() interpolation must be one of {list(_INTERPOLATIONS)}, "
                         f"got {interpolation!r}")
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{fname}() q must be in the range [0, 1] but got {q}")
        qt = _wrap(jax.device_put(np.asarray([float(q)], input._meta.dtype)))
    else:
        if q._meta.ndim > 1:
            raise RuntimeError(f"{fname}() q must be a scalar or 1D tensor, got "
                               f"{q._meta.ndim} dims")
        if q._meta.dtype != input._meta.dtype:
            raise RuntimeError(f"{fname}() q tensor must be same dtype as the input tensor "
                               f"({_torch_name(input._meta.dtype)}), got "
                               f"{_torch_name(q._meta.dtype)}")
        if not isinstance(q._meta, jax.core.Tracer):  # a value check needs concrete values
            qv = np.asarray(q._value)
            if qv.size and not ((qv >= 0) & (qv <= 1)).all():
                raise RuntimeError(f"{fname}() q values must be in the range [0, 1]")
        scalar_q = q._meta.ndim == 0
        qt = F.reshape(q, (-1,))
    nd = input._meta.ndim
    if dim is None:
        x = F.reshape(input, (-1,))
    else:
        d = wrap_dim(fname, dim, nd)
        x = F.movedim(input, d, -1) if nd else F.reshape(input, (1,))
    n = x._meta.shape[-1]
    if n == 0:
        raise IndexError(f"{fname}() input tensor must be non-empty along the reduced dim")
    srt = F.sort(x, -1).values  # nan last
    nanmask = _isnan(srt)
    if ignore_nan:  # rank within the numbers; an all-nan slice lands on a nan
        valid = F.sum(F.logical_not(nanmask), -1, True, dtype=input.dtype)
        rank = F.mul(qt, F.clamp(F.sub(valid, 1), min=0))  # (..., Q)
    else:  # a slice holding nan: the last entry, a nan
        rank = F.mul(qt, float(n - 1))
        rank = F.where(F.any(nanmask, -1, True), F.add(F.mul(rank, 0.0), float(n - 1)), rank)
    lo, hi = F.floor(rank), F.ceil(rank)
    if interpolation == "nearest":
        lo = hi = F.round(rank)  # half to even, as PyTorch
    elif interpolation == "lower":
        hi = lo
    elif interpolation == "higher":
        lo = hi
    v_lo = F.gather(srt, -1, cast(lo, _INT64).expand(*rank.shape))
    v_hi = F.gather(srt, -1, cast(hi, _INT64).expand(*rank.shape))
    if interpolation == "midpoint":
        out = F.add(v_lo, F.mul(F.sub(v_hi, v_lo), 0.5))
    elif interpolation == "linear":
        out = F.add(v_lo, F.mul(F.sub(v_hi, v_lo), F.sub(rank, lo)))
    else:
        out = v_lo
    out = F.movedim(out, -1, 0)  # (Q, ...)
    if keepdim:
        if dim is None:
            out = F.reshape(out, (out._meta.shape[0],) + (1,) * nd)
        elif nd:
            out = F.unsqueeze(out, wrap_dim(fname, dim, nd) + 1)
    return F.squeeze(out, 0) if scalar_q else out


@functor("Quantile")
def quantile(input: Tensor, q: Tensor, dim: int | None, keepdim: bool,
             interpolation: str) -> Tensor:
    """flow.quantile: q-th quantiles along dim (flattened when None), PyTorch's interpolation
    modes; a slice holding nan gives nan. A 1-D q puts its axis first."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@functor("QuantileScalar")
def quantile_scalar(input: Tensor, q: float, dim: int | None, keepdim: bool,
                    interpolation: str) -> Tensor:
    """flow.quantile with a Python float q."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@functor("NanQuantile")
def nanquantile(input: Tensor, q: Tensor, dim: int | None, keepdim: bool,
                interpolation: str) -> Tensor:
    """flow.nanquantile: quantile of the non-nan entries (nan for an all-nan slice)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


@functor("NanQuantileScalar")
def nanquantile_scalar(input: Tensor, q: float, dim: int | None, keepdim: bool,
                       interpolation: str) -> Tensor:
    """flow.nanquantile with a Python float q."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


__all__ = ["sum_", "prod", "mean", "max_", "min_", "max_dim", "min_dim", "amax", "amin", "argmax",
           "argmin", "var", "std", "logsumexp", "any_", "all_", "norm", "cumsum", "cumprod",
           "var_mean", "std_mean", "nansum", "nanmean", "count_nonzero", "aminmax", "cummax",
           "cummin", "logcumsumexp", "median", "median_dim", "nanmedian", "nanmedian_dim", "mode",
           "kthvalue", "quantile", "nanquantile"]


# -- more reductions (dist & co.) ----------------------------------------------------------------
# Compositions of existing functional calls (their gradients and SBP).

@functor("Dist")
def dist(input: Tensor, other: Tensor, p: float) -> Tensor:
    """torch.dist: the ``p``-norm of ``input - other`` (broadcast) over all elements; float
    inputs only, as PyTorch."""
    f = api()
    for arg, t in (("input", input), ("other", other)):
        if not _is_float(t._meta.dtype):
            raise RuntimeError(f"dist(): argument '{arg}' must be a floating point tensor, got "
                               f"{t.dtype}")
    return f.linalg_vector_norm(f.sub(input, other), p)


def _obs_weights(fname: str, w: Tensor | None, n: int, arg: str, integral: bool
                 ) -> Tensor | None:
    if w is None:
        return None
    if w._meta.ndim > 1 or (w._meta.ndim == 1 and w._meta.shape[0] != n):
        raise RuntimeError(f"{fname}(): argument '{arg}' must be a scalar or a 1-D tensor of "
                           f"{n} observations, got shape {list(w.shape)}")
    if integral and _is_float(w._meta.dtype):
        raise RuntimeError(f"{fname}(): argument '{arg}' must be an integer tensor, got "
                           f"{w.dtype}")
    if not integral and not _is_float(w._meta.dtype):
        raise RuntimeError(f"{fname}(): argument '{arg}' must be a floating point tensor, got "
                           f"{w.dtype}")
    if not isinstance(w._meta, jax.core.Tracer) and bool(np.any(np.asarray(w._value) < 0)):
        raise RuntimeError(f"{fname}(): argument '{arg}' cannot have negative values")
    return w


@functor("Cov")
def cov(input: Tensor, correction: int, fweights: Tensor | None, aweights: Tensor | None
        ) -> Tensor:
    """torch.cov: the covariance of the variables in ``input``'s rows (a 1-D input is one
    variable), observations in columns; ``fweights`` (integer counts) and ``aweights``
    (float weights) weight the observations; ``correction`` is subtracted from the
    (weighted) count, which is clamped at 0 as PyTorch."""
    f = api()
    nd = input._meta.ndim
    if nd > 2:
        raise ValueError(f"cov(): argument 'input' must have at most 2 dimensions, got {nd}")
    x = f.reshape(input, (1, -1)) if nd < 2 else input
    if not _is_float(x._meta.dtype):
        x = cast(x, _dt.get_default_dtype().np)
    n = x._meta.shape[1]
    fw = _obs_weights("cov", fweights, n, "fweights", True)
    aw = _obs_weights("cov", aweights, n, "aweights", False)
    w = fw if aw is None else (aw if fw is None else f.mul(fw, aw))
    if w is None:
        avg = f.mean(x, [1], True)
        fact: Any = max(n - correction, 0)
    else:
        w = cast(f.broadcast_to(w, (n,)), x._meta.dtype)
        w_sum = f.sum(w)
        avg = f.div(f.sum(f.mul(x, w), [1], True), w_sum)
        if aw is None or correction == 0:
            fact = f.sub(w_sum, correction)
        else:
            a = cast(f.broadcast_to(aw, (n,)), x._meta.dtype)
            fact = f.sub(w_sum, f.div(f.mul(f.sum(f.mul(w, a)), correction), w_sum))
        fact = f.clamp_min(fact, 0)
    xc = f.sub(x, avg)
    xw = xc if w is None else f.mul(xc, w)
    if w is None and fact == 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=2)
    c = f.div(f.matmul(xw, f.t(xc)), fact)
    # one variable (a 1-d input or a single row) gives a 0-d result, as PyTorch's squeeze
    return f.reshape(c, ()) if x._meta.shape[0] == 1 else c


@functor("Corrcoef")
def corrcoef(input: Tensor) -> Tensor:
    """torch.corrcoef: ``cov(input)`` normalised by the standard deviations, clipped to
    [-1, 1]."""
    f = api()
    c = cov(input, 1, None, None)
    if c._meta.ndim == 0:
        return f.div(c, c)
    std = f.sqrt(f.diag(c, 0))
    c = f.div(f.div(c, f.unsqueeze(std, 1)), f.unsqueeze(std, 0))
    return f.clamp(c, -1, 1)


def _trapezoid_terms(fname: str, y: Tensor, x: Tensor | None, dx: Any, dim: int) -> Tensor:
    """The trapezoids' areas along ``dim`` (one fewer than ``y``'s size there)."""
    f = api()
    nd = y._meta.ndim
    if nd == 0:
        raise ValueError(f"{fname}(): argument 'y' must have at least 1 dimension")
    a = wrap_dim(fname, dim, nd)
    n = y._meta.shape[a]
    m = max(n - 1, 0)
    mid = f.div(f.add(f.narrow(y, a, min(1, n), m), f.narrow(y, a, 0, m)), 2.0)
    if x is None:
        return mid if dx is None or dx == 1 else f.mul(mid, dx)
    if x._meta.ndim == 1:
        if x._meta.shape[0] != n:
            raise RuntimeError(f"{fname}(): argument 'x' (1-D) must have {n} elements (the "
                               f"size of y along dim {dim}), got {x._meta.shape[0]}")
        d = f.diff(x)
        d = f.reshape(d, tuple(max(n - 1, 0) if i == a else 1 for i in range(nd)))
    else:
        if x._meta.ndim != nd:
            raise RuntimeError(f"{fname}(): argument 'x' must be 1-D or have y's number of "
                               f"dimensions ({nd}), got {x._meta.ndim}")
        d = f.diff(x, 1, dim)
    return f.mul(mid, d)


@functor("Trapezoid")
def trapezoid(y: Tensor, x: Tensor, dim: int) -> Tensor:
    """torch.trapezoid with sample points ``x`` (1-D along ``dim``, or broadcasting)."""
    return api().sum(_trapezoid_terms("trapezoid", y, x, None, dim), [wrap_dim("trapezoid", dim,
                                                                            max(y.ndim, 1))])


@functor("TrapezoidDx")
def trapezoid_dx(y: Tensor, dx: Any, dim: int) -> Tensor:
    """torch.trapezoid with a constant spacing ``dx`` (default 1)."""
    return api().sum(_trapezoid_terms("trapezoid", y, None, dx, dim), [wrap_dim("trapezoid", dim,
                                                                             max(y.ndim, 1))])


@functor("CumulativeTrapezoid")
def cumulative_trapezoid(y: Tensor, x: Tensor, dim: int) -> Tensor:
    """torch.cumulative_trapezoid with sample points ``x``: the running sums of the
    trapezoids (one fewer element than ``y`` along ``dim``)."""
    return api().cumsum(_trapezoid_terms("cumulative_trapezoid", y, x, None, dim), dim)


@functor("CumulativeTrapezoidDx")
def cumulative_trapezoid_dx(y: Tensor, dx: Any, dim: int) -> Tensor:
    """torch.cumulative_trapezoid with a constant spacing ``dx`` (default 1)."""
    return api().cumsum(_trapezoid_terms("cumulative_trapezoid", y, None, dx, dim), dim)
