"""Checker samples for jflow/ops/nn.py (softmax, log_softmax).

References are computed row by row in Python floats with ``math.fsum`` (exact summation) and
the max-shift identity, in float64 whatever the input dtype.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(3)


def _f(*shape, scale=2.0, dtype=np.float32):
    return (_rng.uniform(-1.0, 1.0, shape) * scale).astype(dtype)


def _rows(x, dim, fn):
    """Apply ``fn(list_of_floats) -> list_of_floats`` to every 1-d slice along ``dim``."""
    x = np.asarray(x).astype(np.float64)
    if x.ndim == 0:
        return np.asarray(fn([float(x)])[0])
    d = dim % x.ndim
    xm = np.moveaxis(x, d, -1)
    out = np.empty_like(xm)
    for pos in np.ndindex(*xm.shape[:-1]):
        if xm.shape[-1]:
            out[pos] = fn([float(v) for v in xm[pos]])
    return np.moveaxis(out, -1, d)


def _softmax_row(row):
    m = max(row)
    if m == -math.inf:
        return [math.nan] * len(row)
    e = [math.exp(v - m) for v in row]
    s = math.fsum(e)
    return [v / s for v in e]


def _log_softmax_row(row):
    m = max(row)
    if m == -math.inf:
        return [math.nan] * len(row)
    lse = m + math.log(math.fsum(math.exp(v - m) for v in row))
    return [v - lse for v in row]


_NEG_INF_ROW = np.array([[0.5, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]], np.float32)
_BIG = np.array([[1000.0, 999.0, -1000.0], [88.0, 89.0, 90.0]], np.float32)
_SOME_NEG_INF = np.array([[0.5, -np.inf, 1.0], [-np.inf, 2.0, -0.5]], np.float64)


def _samples(log: bool = False):
    extra = [] if log else [
        # softmax is 0 at -inf with zero gradient: checkable (log_softmax is -inf there, and
        # the loss with it, so its finite differences are nan)
        Sample([_SOME_NEG_INF], {"dim": 1}, name="-inf entries, no all -inf row")]
    return extra + [
        Sample([_f(3, 5)], {"dim": -1}),
        Sample([_f(3, 5)], {"dim": 0}),
        Sample([_f(2, 3, 4, dtype=np.float64)], {"dim": 1}),
        Sample([_f(4, 6, dtype=np.float16)], {"dim": -1}),
        Sample([_f(4, 6).astype(ml_dtypes.bfloat16)], {"dim": 0}),
        Sample([_BIG], {"dim": 1}, name="large values (no overflow)"),
        Sample([_f(3, 7, scale=30.0)], {"dim": 1}),
        # the outputs hold nan (and -inf for log_softmax): finite differences are nan
        Sample([_NEG_INF_ROW], {"dim": 1}, name="-inf entries; an all -inf row is NaN",
               grad=False),
        Sample([np.float32(1.5)], {"dim": 0}, name="0-d"),
        Sample([_f(2, 0)], {"dim": 1}, name="empty softmax axis"),
        Sample([_f(0, 3)], {"dim": 1}, name="no rows"),
    ]


def _errors():
    return [
        ErrorSample([np.arange(6).reshape(2, 3)], {"dim": 1}, TypeError, "floating"),
        ErrorSample([_f(2, 3)], {"dim": 2}, ValueError, "out of range"),
    ]


register_samples("softmax", _samples(), lambda x, dim=-1: _rows(x, dim, _softmax_row),
                 errors=_errors())
register_samples("log_softmax", _samples(log=True),
                 lambda x, dim=-1: _rows(x, dim, _log_softmax_row), errors=_errors())
