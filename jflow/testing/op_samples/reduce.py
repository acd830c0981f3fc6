"""Checker samples for jflow/ops/reduce.py (independent NumPy references).

Each reduction is sampled on several dtypes, on negative and repeated-free axis lists, with
and without keepdim, on 0-d inputs, and on zero-size axes where the reduction has an
identity (sum 0, prod 1, any False, all True, mean/var nan, logsumexp -inf, norm 0).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(1)


def _f(*shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return _rng.uniform(lo, hi, shape).astype(dtype)


def _i(*shape, lo=-5, hi=6, dtype=np.int64):
    return _rng.integers(lo, hi, shape).astype(dtype)


_X = _f(4, 4)
_X3 = _f(2, 4, 8)
_X64 = _f(4, 4, dtype=np.float64)
_XH = _f(4, 4, dtype=np.float16)
_I = _i(4, 4)
_I32 = _i(2, 4, 8, dtype=np.int32)
_U8 = _i(4, 4, lo=0, hi=4, dtype=np.uint8)
_B = _rng.random((4, 4)) > 0.5
_S = np.array(1.5, np.float32)  # 0-d
_E = np.zeros((0, 4), np.float32)  # zero-size first axis
_NAN = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 0.5, -1.0, 2.0]], np.float32)
_TIES = np.array([[1, 3, 3, 2], [5, 5, 0, 5]], np.int64)
# float ties (two-way only: there the central difference is the even split, 1/2 each)
_FTIES = np.array([[0.5, 1.5, 1.5, -0.25], [2.0, -3.0, -3.0, 1.0]], np.float64)
_FTIES3 = np.array([[1.5, 1.5, 1.5, -0.25], [2.0, 2.0, 2.0, 1.0]], np.float64)
# zeros for prod / cumprod / norm gradients: one zero, two zeros, an all-zero row (and a row
# without zeros: the shape of _X, _X64, so the gradient check's float64 executables serve
# both, and split evenly on the devices of the other samples)
_Z = np.array([[0.5, 0.0, -1.5, 2.0], [0.0, 1.25, 0.0, -0.75], [0.0, 0.0, 0.0, 0.0],
               [1.5, -0.5, 2.0, 0.75]], np.float64)


def _axes(x, axis):
    """The axes an op reduces, as a tuple NumPy accepts (() = all)."""
    x = np.asarray(x)
    if x.ndim == 0:
        return None
    if not axis:
        return tuple(range(x.ndim))
    return tuple(sorted(a % x.ndim for a in axis))


def _int_dtype(x):
    return x.dtype if x.dtype.kind in "iu" else None


def _ref_sum(x, axis=(), keepdim=False):
    return np.sum(x, axis=_axes(x, axis), keepdims=keepdim, dtype=_int_dtype(x))


def _ref_prod(x, axis=(), keepdim=False):
    return np.prod(x, axis=_axes(x, axis), keepdims=keepdim, dtype=_int_dtype(x))


def _ref_mean(x, axis=(), keepdim=False):
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.mean(x.astype(np.float64), axis=_axes(x, axis), keepdims=keepdim)


def _ref_var(x, axis=(), keepdim=False, correction=1.0):
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.var(x.astype(np.float64), axis=_axes(x, axis), keepdims=keepdim,
                      ddof=correction)


def _ref_logsumexp(x, axis=(), keepdim=False):
    with np.errstate(invalid="ignore"):  # inf - inf inside logaddexp: the result is right
        return np.logaddexp.reduce(x.astype(np.float64), axis=_axes(x, axis), keepdims=keepdim)


def _ref_norm(x, ord=2.0, axis=(), keepdim=False):  # noqa: A002
    """np.linalg.norm of the reduced axes moved last and flattened (a vector norm)."""
    x = np.asarray(x, np.float64)
    axes = _axes(x, axis)
    if axes is None:
        return np.asarray(np.linalg.norm(x.reshape(-1), ord))
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, kept + list(axes))
    flat = moved.reshape([x.shape[a] for a in kept] + [-1])
    out = np.linalg.norm(flat, ord, axis=-1) if flat.shape[-1] else np.zeros(flat.shape[:-1])
    if keepdim:
        out = out.reshape([1 if a in axes else x.shape[a] for a in range(x.ndim)])
    return out


def _red(fn):
    def ref(x, axis=(), keepdim=False):
        return fn(x, axis=_axes(x, axis), keepdims=keepdim)
    return ref


def _axis_errors(x=_X):
    return [ErrorSample([x], {"axis": (2,)}, ValueError, "out of range"),
            ErrorSample([x], {"axis": (1, -1)}, ValueError, "repeats")]


_COMMON = [Sample([_X]), Sample([_X], {"axis": (-1,)}), Sample([_X3], {"axis": (0, 2)}),
           Sample([_X3], {"axis": (-2,), "keepdim": True}), Sample([_X], {"keepdim": True}),
           Sample([_S]), Sample([_S], {"axis": (0,)})]

register_samples(
    "reduce_sum",
    _COMMON + [Sample([_X64], {"axis": (0,)}), Sample([_XH], {"axis": (1,)}),
               Sample([_I], {"axis": (0,)}), Sample([_I32]), Sample([_U8], {"axis": (1,)}),
               Sample([_E], {"axis": (0,)}), Sample([_E]), Sample([_E], {"axis": (1,)})],
    _ref_sum,
    errors=_axis_errors() + [ErrorSample([_B], {}, TypeError, "numeric")])

register_samples(
    "reduce_prod",
    _COMMON + [Sample([_X64], {"axis": (0,)}), Sample([_XH], {"axis": (1,)}),
               Sample([_i(2, 4, lo=-3, hi=4)], {"axis": (1,)}), Sample([_I32], {"axis": (2,)}),
               Sample([_Z], {"axis": (1,)}, name="zeros (one, two, all per row)"),
               Sample([_Z], {"axis": (0,), "keepdim": True}), Sample([_Z[:2]]),
               Sample([_Z[:1]]),
               Sample([_E], {"axis": (0,)}), Sample([_E])],
    _ref_prod,
    errors=_axis_errors() + [ErrorSample([_B], {}, TypeError, "numeric")])

register_samples(
    "reduce_mean",
    _COMMON + [Sample([_X64], {"axis": (0,)}), Sample([_XH], {"axis": (1,)}),
               Sample([_E], {"axis": (0,)}), Sample([_E], {"axis": (1,)})],
    _ref_mean,
    errors=_axis_errors() + [ErrorSample([_I], {}, TypeError, "floating")])

for _name, _fn in [("reduce_max", np.max), ("reduce_min", np.min)]:
    register_samples(
        _name,
        _COMMON + [Sample([_I], {"axis": (0,)}), Sample([_U8]), Sample([_B], {"axis": (1,)}),
                   Sample([_XH], {"axis": (-1,), "keepdim": True}),
                   # nan results: finite differences are nan
                   Sample([_NAN], {"axis": (1,)}, grad=False),
                   # two-way ties: the even split (torch.amax) equals the central difference
                   Sample([_FTIES], {"axis": (1,)}), Sample([_FTIES], {"axis": (0,)}),
                   # three-way ties: the split is 1/3 each, the central difference 1/2
                   Sample([_FTIES3], {"axis": (1,)}, grad=False),
                   Sample([_E], {"axis": (1,)})],
        _red(_fn),
        errors=_axis_errors() + [ErrorSample([_E], {"axis": (0,)}, ValueError, "size 0"),
                                 ErrorSample([_E], {}, ValueError, "no identity")])

for _name, _fn in [("reduce_any", np.any), ("reduce_all", np.all)]:
    register_samples(
        _name,
        [Sample([_B]), Sample([_B], {"axis": (-1,)}), Sample([_X > 0.5], {"axis": (0,),
                                                                          "keepdim": True}),
         Sample([np.where(_X > 0, _X, 0)], {"axis": (1,)}), Sample([_I], {"axis": (0,)}),
         Sample([_NAN * 0], {"axis": (1,)}), Sample([np.array(True)]),
         Sample([_E], {"axis": (0,)}), Sample([_E])],
        _red(lambda x, axis, keepdims, _fn=_fn: _fn(x != 0, axis=axis, keepdims=keepdims)),
        errors=_axis_errors(_B))

register_samples(
    "reduce_logsumexp",
    _COMMON + [Sample([_X64 * 400], {"axis": (1,)}), Sample([_XH], {"axis": (0,)}),
               # inf / nan results: finite differences are nan
               Sample([np.array([[np.inf, 1.0], [-np.inf, -np.inf], [np.nan, 0.0]], np.float32)],
                      {"axis": (1,)}, grad=False),
               Sample([np.array([[-np.inf, 1.0, 0.5], [0.25, -np.inf, -1.0]])], {"axis": (1,)},
                      name="-inf entries, finite results"),
               Sample([_E], {"axis": (0,)})],
    _ref_logsumexp,
    errors=_axis_errors() + [ErrorSample([_I], {}, TypeError, "floating")])

register_samples(
    "reduce_var",
    # unbiased over one element (the 0-d samples): 0 / 0 = nan; finite differences are nan
    [Sample(s.inputs, s.attrs, grad=False) if s.inputs[0] is _S else s for s in _COMMON]
    + [Sample([_X], {"axis": (1,), "correction": 0.0}), Sample([_S], {"correction": 0.0}),
               Sample([_X3], {"axis": (0, 2), "correction": 2.5}, name="fractional correction"),
               Sample([_X64], {"axis": (0,), "keepdim": True}), Sample([_XH], {"axis": (1,)}),
               Sample([_X3 + 1000], {"axis": (0, 1)}, rtol=1e-3),
               # n == 1 with unbiased: 0 / 0 = nan (as torch); finite differences are nan
               Sample([_f(2, 1)], {"axis": (1,)}, grad=False),
               Sample([_f(2, 1)], {"axis": (1,), "correction": 0.0}),
               Sample([_E], {"axis": (0,)})],
    _ref_var,
    errors=_axis_errors() + [ErrorSample([_I], {}, TypeError, "floating"),
                             ErrorSample([_X], {"correction": math.inf}, ValueError,
                                         "correction must be finite")])

register_samples(
    "reduce_norm",
    [Sample([_X]), Sample([_X], {"ord": 1.0, "axis": (-1,)}),
     Sample([_X3], {"ord": math.inf, "axis": (0, 2)}),
     Sample([_X3], {"ord": -math.inf, "axis": (1,), "keepdim": True}),
     Sample([np.where(_X > 0, _X, 0)], {"ord": 0.0, "axis": (1,)}),
     Sample([_X], {"ord": 3.0, "axis": (0,)}), Sample([_X], {"ord": 0.5}),
     Sample([_X], {"ord": -2.0, "axis": (1,)}), Sample([_X64], {"keepdim": True}),
     Sample([_XH], {"axis": (1,)}), Sample([_S]), Sample([_E], {"axis": (0,)}), Sample([_E]),
     # zero entries and an all-zero row: the subgradient 0 (the central difference there)
     *[Sample([_Z], {"ord": o, "axis": (1,)}, name=f"zeros, ord {o}")
       for o in (2.0, 1.0, 3.0, 1.5, 0.5, -2.0, math.inf, -math.inf, 0.0)],
     Sample([_FTIES], {"ord": math.inf, "axis": (1,)}, name="two-way ties, inf norm"),
     Sample([-_FTIES], {"ord": -math.inf, "axis": (0,)}, name="two-way ties, -inf norm")],
    _ref_norm,
    errors=_axis_errors() + [
        ErrorSample([_I], {}, TypeError, "floating"),
        ErrorSample([_X], {"ord": math.nan}, ValueError, "nan"),
        ErrorSample([_E], {"ord": math.inf, "axis": (0,)}, ValueError, "inf norm")])


# -- argmax / argmin / max_dim / min_dim ----------------------------------------------------------

def _ref_arg(fn):
    def ref(x, axis=None, keepdim=False):
        x = np.asarray(x)
        if axis is None:
            i = fn(x.reshape(-1))
            return np.asarray(i).reshape((1,) * x.ndim if keepdim else ())
        if x.ndim == 0:
            return np.asarray(0)
        return fn(x, axis=axis, keepdims=keepdim)
    return ref


_ARG_SAMPLES = [Sample([_X]), Sample([_X], {"axis": 1}), Sample([_X3], {"axis": -2}),
                Sample([_X3], {"axis": 0, "keepdim": True}), Sample([_X], {"keepdim": True}),
                Sample([_TIES], {"axis": 1}), Sample([_TIES]), Sample([_NAN], {"axis": 1}),
                Sample([_NAN]), Sample([_U8], {"axis": 0}), Sample([_B], {"axis": 1}),
                Sample([_XH], {"axis": 0}), Sample([_S]), Sample([_S], {"axis": 0}),
                Sample([_S], {"axis": -1, "keepdim": True}), Sample([_E], {"axis": 1})]
for _name, _fn in [("argmax", np.argmax), ("argmin", np.argmin)]:
    register_samples(
        _name, _ARG_SAMPLES, _ref_arg(_fn),
        errors=[ErrorSample([_X], {"axis": 2}, ValueError, "out of range"),
                ErrorSample([_E], {}, ValueError, "empty"),
                ErrorSample([_E], {"axis": 0}, ValueError, "size 0")])


def _ref_dim(vfn, ifn):
    def ref(x, axis, keepdim=False):
        x = np.asarray(x)
        if x.ndim == 0:
            return x, np.asarray(0)
        return vfn(x, axis=axis, keepdims=keepdim), ifn(x, axis=axis, keepdims=keepdim)
    return ref


_DIM_SAMPLES = [Sample(s.inputs, s.attrs, grad=False) if s.inputs[0] is _NAN else s
                for s in _ARG_SAMPLES if "axis" in s.attrs]  # nan: finite differences are nan
# ties: the gradient goes to the first (selected) index only, not the central difference
_DIM_SAMPLES += [Sample([_FTIES], {"axis": 1}, grad=False),
                 Sample([_FTIES3], {"axis": 0}, grad=False),
                 Sample([_X64], {"axis": 0, "keepdim": True}), Sample([_X3], {"axis": 2})]
for _name, _vfn, _ifn in [("max_dim", np.max, np.argmax), ("min_dim", np.min, np.argmin)]:
    register_samples(
        _name, _DIM_SAMPLES, _ref_dim(_vfn, _ifn),
        errors=[ErrorSample([_X], {"axis": -3}, ValueError, "out of range"),
                ErrorSample([_X], {}, TypeError, "missing.*axis"),
                ErrorSample([_E], {"axis": 0}, ValueError, "size 0")])


# -- scans --------------------------------------------------------------------------------------

def _ref_scan(fn):
    def ref(x, dim):
        x = np.asarray(x)
        if x.ndim == 0:
            return x
        return fn(x, axis=dim, dtype=_int_dtype(x))
    return ref


_SCAN_SAMPLES = [Sample([_X], {"dim": 0}), Sample([_X], {"dim": -1}), Sample([_X3], {"dim": 1}),
                 Sample([_X64], {"dim": 1}), Sample([_XH], {"dim": 1}), Sample([_I], {"dim": 0}),
                 Sample([_I32], {"dim": -1}), Sample([_U8], {"dim": 1}), Sample([_S], {"dim": 0}),
                 Sample([_E], {"dim": 0}), Sample([_E], {"dim": 1}),
                 Sample([_Z], {"dim": 1}, name="zeros along dim"),
                 Sample([_Z], {"dim": 0}, name="zeros across dim"),
                 Sample([np.array([1.5, 0.0, -2.0, 0.0, 0.5, 3.0])], {"dim": 0},
                        name="two zeros")]
for _name, _fn in [("cumsum", np.cumsum), ("cumprod", np.cumprod)]:
    register_samples(
        _name, _SCAN_SAMPLES, _ref_scan(_fn),
        errors=[ErrorSample([_X], {"dim": 2}, ValueError, "out of range"),
                ErrorSample([_X], {}, TypeError, "missing.*dim"),
                ErrorSample([_B], {"dim": 0}, TypeError, "numeric")])


# -- cummax / cummin ----------------------------------------------------------------------------

def _ref_cumext(larger):
    """A plain loop of torch's rule: take x_i when it ties or beats the running value, or is nan."""
    def ref(x, dim):
        x = np.asarray(x)
        if x.ndim == 0:
            return x, np.asarray(0)
        xm = np.moveaxis(x, dim, -1)
        vals, idx = np.empty_like(xm), np.zeros(xm.shape, np.int64)
        for pos in np.ndindex(*xm.shape[:-1]):
            best, bi = None, 0
            for i, v in enumerate(xm[pos]):
                nan_v = xm.dtype.kind == "f" and np.isnan(v)
                if best is None or nan_v or ((v >= best) if larger else (v <= best)):
                    best, bi = v, i
                vals[pos + (i,)], idx[pos + (i,)] = best, bi
        return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)
    return ref


# ties (float and int), nan (propagates; later nans take the index), a 0-d and an empty input;
# gradients on distinct values only (at a tie the selected entry is not the central difference)
_CUMEXT_SAMPLES = [Sample([_X], {"dim": 0}), Sample([_X], {"dim": -1}), Sample([_X3], {"dim": 1}),
                   Sample([_X64], {"dim": 1}), Sample([_XH], {"dim": 0}), Sample([_I], {"dim": 1}),
                   Sample([_TIES], {"dim": 1}), Sample([_U8], {"dim": 0}),
                   Sample([_B], {"dim": 1}),
                   Sample([_FTIES], {"dim": 1}, grad=False),
                   Sample([np.array([1.0, np.nan, 3.0, np.nan, -1.0], np.float32)], {"dim": 0},
                          grad=False),
                   Sample([_S], {"dim": 0}), Sample([_E], {"dim": 0}), Sample([_E], {"dim": 1})]
for _name, _larger in [("cummax", True), ("cummin", False)]:
    register_samples(
        _name, _CUMEXT_SAMPLES, _ref_cumext(_larger),
        errors=[ErrorSample([_X], {"dim": 2}, ValueError, "out of range"),
                ErrorSample([_X], {}, TypeError, "missing.*dim")])


# -- logcumsumexp ---------------------------------------------------------------------------------

def _ref_logcumsumexp(x, dim):
    x = np.asarray(x)
    if x.ndim == 0:
        return x
    with np.errstate(invalid="ignore"):  # inf - inf inside logaddexp: the result is right
        return np.logaddexp.accumulate(x.astype(np.float64), axis=dim)


register_samples(
    "logcumsumexp",
    [Sample([_X], {"dim": 0}), Sample([_X], {"dim": -1}), Sample([_X3], {"dim": 1}),
     Sample([_X64 * 300], {"dim": 1}, name="large values"), Sample([_XH], {"dim": 1}),
     Sample([np.array([-1000.0, 0.0, -3.0, 2.0])], {"dim": 0}, name="no underflow of -1000"),
     # -inf entries: finite results, but x +- h stays -inf, so finite differences are nan
     Sample([np.array([[-np.inf, 1.0, -np.inf], [0.5, -np.inf, -1.0]])], {"dim": 1},
            name="-inf entries, finite results", grad=False),
     Sample([np.array([1.0, np.inf, np.nan, -np.inf], np.float32)], {"dim": 0}, grad=False),
     Sample([_S], {"dim": 0}), Sample([_E], {"dim": 0}), Sample([_E], {"dim": 1})],
    _ref_logcumsumexp,
    errors=[ErrorSample([_X], {"dim": 2}, ValueError, "out of range"),
            ErrorSample([_I], {"dim": 0}, TypeError, "floating")])


# -- kthvalue / median_dim / mode ------------------------------------------------------------------

def _slices(x, axis, keepdim, pick):
    """Apply ``pick(slice) -> (value, index)`` to every 1-d slice along axis (a plain loop)."""
    x = np.asarray(x)
    if x.ndim == 0:
        return x, np.asarray(0)
    xm = np.moveaxis(x, axis, -1)
    vals, idx = np.empty(xm.shape[:-1], x.dtype), np.zeros(xm.shape[:-1], np.int64)
    for pos in np.ndindex(*xm.shape[:-1]):
        vals[pos], idx[pos] = pick(xm[pos])
    if keepdim:
        vals, idx = np.expand_dims(vals, axis), np.expand_dims(idx, axis)
    return vals, idx


def _isnan_np(v):
    return np.isnan(v) if v.dtype.kind == "f" else np.zeros(v.shape, bool)


def _nth(v, k):
    """The k-th (0-based) entry in stable ascending order with nans last."""
    order = [i for i in range(len(v)) if not _isnan_np(v)[i]]
    order.sort(key=lambda i: v[i])  # Python's sort is stable
    order += [i for i in range(len(v)) if _isnan_np(v)[i]]
    return v[order[k]], order[k]


def _ref_kth(x, axis, k, keepdim=False):
    return _slices(x, axis, keepdim, lambda v: _nth(v, k - 1))


def _ref_median(x, axis, keepdim=False, ignore_nan=False):
    def pick(v):
        c = int((~_isnan_np(v)).sum())
        if c == len(v) or (ignore_nan and c):
            return _nth(v, (c - 1) // 2)
        return _nth(v, c if not ignore_nan else (len(v) - 1) // 2)
    return _slices(x, axis, keepdim, pick)


def _ref_mode(x, axis, keepdim=False):
    def pick(v):
        best = None
        for i in range(len(v)):  # nan equals nothing: a count of 1
            same = [j for j in range(len(v)) if v[j] == v[i]] or [i]
            key = (-len(same), v[i] if not _isnan_np(v)[i] else np.inf, _isnan_np(v)[i])
            if best is None or key < best[0]:
                best = (key, v[i], max(same))
        return best[1], best[2]
    return _slices(x, axis, keepdim, pick)


_NAN_ROWS = np.array([[1.0, np.nan, 3.0, np.nan, 0.0], [np.nan] * 5, [1.0, 2.0, np.nan, 4.0, 3.0]],
                     np.float32)
_ORDER_SAMPLES = [Sample([_X], {"axis": 1}), Sample([_X3], {"axis": -2}),
                  Sample([_X3], {"axis": 0, "keepdim": True}), Sample([_X64], {"axis": 0}),
                  Sample([_XH], {"axis": 1}), Sample([_S], {"axis": 0}),
                  Sample([_S], {"axis": -1, "keepdim": True}),
                  # ties and nans: the index is the stable order's; no finite differences
                  Sample([_TIES], {"axis": 1}), Sample([_I32], {"axis": 2}),
                  Sample([_U8], {"axis": 0}), Sample([_FTIES], {"axis": 1}, grad=False),
                  Sample([_NAN_ROWS], {"axis": 1}, grad=False)]
_ORDER_ERRORS = [ErrorSample([_X], {"axis": 2}, ValueError, "out of range"),
                 ErrorSample([_E], {"axis": 0}, ValueError, "size 0")]
register_samples(
    "kthvalue",
    [Sample(s.inputs, {**s.attrs, "k": 1 + i % 2}, grad=s.grad)
     for i, s in enumerate(_ORDER_SAMPLES) if s.inputs[0] is not _S]
    + [Sample([_S], {"axis": 0, "k": 1}), Sample([_X], {"axis": 1, "k": 4}),
       Sample([_NAN_ROWS], {"axis": 1, "k": 4}, grad=False)],
    _ref_kth,
    errors=[ErrorSample(e.inputs, {**e.attrs, "k": 1}, e.exc, e.match) for e in _ORDER_ERRORS]
    + [ErrorSample([_X], {"axis": 1, "k": 5}, ValueError, "k=5"),
                            ErrorSample([_X], {"axis": 1, "k": 0}, ValueError, "k=0")])
register_samples(
    "median_dim",
    _ORDER_SAMPLES + [Sample([_NAN_ROWS], {"axis": 1, "ignore_nan": True}, grad=False),
                      Sample([_X], {"axis": 0, "ignore_nan": True})],
    _ref_median, errors=_ORDER_ERRORS)
register_samples(
    "mode",
    _ORDER_SAMPLES + [Sample([_i(4, 9, lo=0, hi=3)], {"axis": 1}),
                      Sample([_FTIES3], {"axis": 1}, grad=False)],
    _ref_mode, errors=_ORDER_ERRORS)
