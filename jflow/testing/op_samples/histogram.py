"""Checker samples for jflow/ops/histogram.py (``histc``, ``bincount``; independent NumPy
references)."""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(1)


def _f(*shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return _rng.uniform(lo, hi, shape).astype(dtype)


def _i(*shape, lo=-5, hi=6, dtype=np.int64):
    return _rng.integers(lo, hi, shape).astype(dtype)


_XH = _f(3, 4, dtype=np.float16)
_I = _i(3, 4)


def _ref_histc(x, bins=100, min=0.0, max=0.0):  # noqa: A002
    """np.histogram over the same range (its last bin is closed, as torch's)."""
    dtype = np.asarray(x).dtype
    x = np.asarray(x, np.float64).reshape(-1)
    lo, hi = min, max
    if lo == hi and x.size:
        lo, hi = np.nanmin(x), np.nanmax(x)
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    x = x[~np.isnan(x)]
    return np.histogram(x, bins=bins, range=(lo, hi))[0].astype(dtype)


register_samples(
    "histc",
    [Sample([_f(50)], {"bins": 7}), Sample([_f(4, 6)], {"bins": 5, "min": -1.0, "max": 1.0}),
     Sample([_f(30, dtype=np.float64)], {"bins": 4, "min": -3.0, "max": 0.5}),
     Sample([np.array([1.0, 1.0, 1.0], np.float32)], {"bins": 4}, name="a point range"),
     Sample([np.array([0.0, 0.25, 0.5, 0.75, 1.0, np.nan, 2.0], np.float32)],
            {"bins": 4, "min": 0.0, "max": 1.0}, name="values on edges, nan, outside"),
     Sample([_XH], {"bins": 3}), Sample([np.zeros((0,), np.float32)], {"bins": 3})],
    _ref_histc,
    errors=[ErrorSample([_f(5)], {"bins": 0}, ValueError, "bins must be > 0"),
            ErrorSample([_f(5)], {"min": 1.0, "max": 0.0}, ValueError, "max must be larger"),
            ErrorSample([_I], {"bins": 3}, TypeError, "floating")])


def _ref_bincount(x, weights=None, length=0):
    out = np.bincount(np.asarray(x), weights=weights, minlength=length)[:length]
    return out.astype(np.int64 if weights is None else np.asarray(weights).dtype)


_BX = _i(12, lo=0, hi=6)
register_samples(
    "bincount",
    [Sample([_BX, None], {"length": 6}), Sample([_BX, None], {"length": 9}),
     Sample([_BX, _f(12)], {"length": 6}), Sample([_BX, _f(12, dtype=np.float64)], {"length": 7}),
     Sample([_BX.astype(np.uint8), None], {"length": 6}),
     Sample([np.zeros((0,), np.int64), None], {"length": 2})],
    _ref_bincount,
    errors=[ErrorSample([_I, None], {"length": 3}, ValueError, "1-d"),
            ErrorSample([_f(4), None], {"length": 3}, TypeError, "input"),
            ErrorSample([_BX, _f(3)], {"length": 6}, ValueError, "weights must be")])
