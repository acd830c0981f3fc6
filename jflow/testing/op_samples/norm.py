"""Checker samples for jflow/ops/norm.py (layer_norm, rms_norm, group_norm).

References are computed in float64 NumPy, row by row with the two-pass mean / biased
variance; outputs are (y, statistics...) as the ops return them.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(11)


def _f(*shape, dtype=np.float32, scale=1.0, shift=0.0):
    return (_rng.standard_normal(shape) * scale + shift).astype(dtype)


def _f64(a):
    return None if a is None else np.asarray(a).astype(np.float64)


def _layer_norm_ref(x, weight=None, bias=None, begin_norm_axis=0, eps=1e-5):
    dt = np.asarray(x).dtype
    x = _f64(x)
    lead = x.shape[:begin_norm_axis]
    rows = x.reshape(int(np.prod(lead, dtype=np.int64)), -1)
    mean = rows.mean(axis=1, keepdims=True)
    var = ((rows - mean) ** 2).mean(axis=1, keepdims=True)
    r = 1.0 / np.sqrt(var + eps)
    y = ((rows - mean) * r).reshape(x.shape)
    if weight is not None:
        y = y * _f64(weight)
    if bias is not None:
        y = y + _f64(bias)
    return y.astype(dt), mean.reshape(lead).astype(dt), r.reshape(lead).astype(dt)


def _rms_norm_ref(x, weight=None, begin_norm_axis=0, eps=1e-5):
    dt = np.asarray(x).dtype
    x = _f64(x)
    lead = x.shape[:begin_norm_axis]
    rows = x.reshape(int(np.prod(lead, dtype=np.int64)), -1)
    r = 1.0 / np.sqrt((rows ** 2).mean(axis=1, keepdims=True) + eps)
    y = (rows * r).reshape(x.shape)
    if weight is not None:
        y = y * _f64(weight)
    return y.astype(dt), r.reshape(lead).astype(dt)


def _group_norm_ref(x, weight=None, bias=None, num_groups=1, eps=1e-5):
    dt = np.asarray(x).dtype
    x = _f64(x)
    n, c = x.shape[:2]
    g = x.reshape(n, num_groups, -1)
    mean = g.mean(axis=2, keepdims=True)
    r = 1.0 / np.sqrt(((g - mean) ** 2).mean(axis=2, keepdims=True) + eps)
    y = ((g - mean) * r).reshape(x.shape)
    ps = (1, c) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * _f64(weight).reshape(ps)
    if bias is not None:
        y = y + _f64(bias).reshape(ps)
    return y.astype(dt), mean.reshape(n, num_groups).astype(dt), \
        r.reshape(n, num_groups).astype(dt)


register_samples("layer_norm", [
    Sample([_f(4, 5), _f(5), _f(5)], {"begin_norm_axis": 1}),
    Sample([_f(2, 3, 4, dtype=np.float64, shift=3.0), _f(3, 4, dtype=np.float64), None],
           {"begin_norm_axis": 1, "eps": 1e-3}, name="3-d, two normalised axes, no bias"),
    Sample([_f(2, 2, 3), None, None], {"begin_norm_axis": 2}, name="no affine"),
    Sample([_f(6), _f(6), _f(6)], {"begin_norm_axis": 0}, name="1-d, everything normalised"),
    Sample([_f(4, 8, dtype=np.float16), _f(8, dtype=np.float16), _f(8, dtype=np.float16)],
           {"begin_norm_axis": 1}),
    Sample([_f(4, 8).astype(ml_dtypes.bfloat16), None, None], {"begin_norm_axis": 1}),
], _layer_norm_ref, errors=[
    ErrorSample([_f(2, 3), _f(4), None], {"begin_norm_axis": 1}, ValueError, "weight must have"),
    ErrorSample([_f(2, 3), None, None], {"begin_norm_axis": 3}, ValueError, "out of range"),
    ErrorSample([np.ones((2, 3), np.int64), None, None], {"begin_norm_axis": 1}, TypeError,
                "floating"),
    ErrorSample([_f(2, 3), _f(3, dtype=np.float64), None], {"begin_norm_axis": 1}, TypeError,
                "dtype"),
])

register_samples("rms_norm", [
    Sample([_f(4, 5), _f(5)], {"begin_norm_axis": 1}),
    Sample([_f(2, 3, 4, dtype=np.float64), None], {"begin_norm_axis": 1, "eps": 1e-3},
           name="no weight"),
    Sample([_f(6), _f(6)], {"begin_norm_axis": 0}, name="1-d"),
    Sample([_f(4, 8, dtype=np.float16), _f(8, dtype=np.float16)], {"begin_norm_axis": 1}),
], _rms_norm_ref, errors=[
    ErrorSample([_f(2, 3), _f(4)], {"begin_norm_axis": 1}, ValueError, "weight must have"),
    ErrorSample([_f(2, 3), None], {"begin_norm_axis": -1}, ValueError, "out of range"),
])

register_samples("group_norm", [
    Sample([_f(2, 4, 3), _f(4), _f(4)], {"num_groups": 2}),
    Sample([_f(2, 6, 2, 2, dtype=np.float64), None, None], {"num_groups": 3, "eps": 1e-3},
           name="4-d, no affine"),
    Sample([_f(4, 4), _f(4), None], {"num_groups": 4}, name="2-d, one channel per group"),
    Sample([_f(2, 4, 3, dtype=np.float16), _f(4, dtype=np.float16), _f(4, dtype=np.float16)],
           {"num_groups": 1}),
], _group_norm_ref, errors=[
    ErrorSample([_f(2, 4, 3), None, None], {"num_groups": 3}, ValueError, "divide"),
    ErrorSample([_f(4), None, None], {"num_groups": 1}, ValueError, "at least 2 dims"),
    ErrorSample([_f(2, 4, 3), _f(3), None], {"num_groups": 2}, ValueError, "weight must have"),
])
