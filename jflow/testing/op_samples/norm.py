"""Checker samples for jflow/ops/norm.py (layer_norm, rms_norm, group_norm, batch_norm, its
running statistics' update and the grad ops of layer_norm / rms_norm).

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


# -- batch_norm (training statistics) ------------------------------------------------------------

def _batch_norm_ref(x, weight=None, bias=None, eps=1e-5):
    dt = np.asarray(x).dtype
    x = np.asarray(x, np.float64)
    c = x.shape[1]
    rows = np.moveaxis(x, 1, 0).reshape(c, -1)
    mean = rows.mean(axis=1)
    r = 1.0 / np.sqrt(((rows - mean[:, None]) ** 2).mean(axis=1) + eps)
    ps = (1, c) + (1,) * (x.ndim - 2)
    y = (x - mean.reshape(ps)) * r.reshape(ps)
    if weight is not None:
        y = y * np.asarray(weight, np.float64).reshape(ps)
    if bias is not None:
        y = y + np.asarray(bias, np.float64).reshape(ps)
    return y.astype(dt), mean.astype(dt), r.astype(dt)


register_samples("batch_norm", [
    Sample([_f(3, 2, 2, 2), _f(2), _f(2)], {}, name="4-d"),
    Sample([_f(4, 3, dtype=np.float64), None, None], {"eps": 1e-3}, name="2-d, no affine"),
    Sample([_f(2, 3, 4), _f(3), None], {}, name="3-d, weight only"),
    Sample([_f(4, 2, 3, dtype=np.float16), _f(2, dtype=np.float16), _f(2, dtype=np.float16)],
           {}, grad=False, name="float16"),
], _batch_norm_ref, errors=[
    ErrorSample([_f(4), None, None], {}, ValueError, "at least 2 dims"),
    ErrorSample([_f(2, 3, 4), _f(4), None], {}, ValueError, "weight must have"),
    ErrorSample([_f(2, 3, 4), _f(3, dtype=np.float64), None], {}, TypeError, "dtype"),
])


# -- batch_norm_stats (the running statistics' update) ---------------------------------------------

def _batch_norm_stats_ref(rm, rv, mean, inv_std, momentum=0.1, eps=1e-5, count=2):
    dt = np.asarray(rm).dtype
    rm, rv, mean, r = (np.asarray(a, np.float64) for a in (rm, rv, mean, inv_std))
    var = (1.0 / (r * r) - eps) * count / (count - 1)  # unbiased, from the biased 1/r² - eps
    return ((1 - momentum) * rm + momentum * mean).astype(dt), \
        ((1 - momentum) * rv + momentum * var).astype(dt)


def _stats(c, dtype=np.float32):
    return [_f(c, dtype=dtype), np.abs(_f(c, dtype=dtype)) + 0.5, _f(c, dtype=dtype),
            np.abs(_f(c, dtype=dtype)) + 0.5]


register_samples("batch_norm_stats", [
    Sample(_stats(4), {"count": 6}, grad=False),
    Sample(_stats(3, np.float64), {"momentum": 0.3, "eps": 1e-3, "count": 40}, grad=False,
           name="float64, momentum 0.3"),
], _batch_norm_stats_ref, errors=[
    ErrorSample(_stats(4)[:3] + [_f(3)], {"count": 6}, ValueError, "inv_std must have"),
    ErrorSample(_stats(4), {"count": 1}, ValueError, "count must be at least 2"),
    ErrorSample([_stats(4)[0], _stats(4, np.float64)[1]] + _stats(4)[2:], {"count": 6},
                TypeError, "running_var must have running_mean's dtype"),
])


# -- layer_norm_grad / rms_norm_grad --------------------------------------------------------------

def _norm_bwd_ref(x, mean, r, dy, dmean, dr, weight, b):
    x64, g0 = _f64(x), _f64(dy)
    axes = tuple(range(b, x64.ndim))
    bshape = x64.shape[:b] + (1,) * len(axes)
    n = int(np.prod(x64.shape[b:]))
    rb = _f64(r).reshape(bshape)
    xc = x64 - _f64(mean).reshape(bshape) if mean is not None else x64
    xhat = xc * rb
    g = g0 if weight is None else g0 * _f64(weight)
    dx = rb * (g - xhat * (g * xhat).mean(axis=axes, keepdims=True)
               - (g.mean(axis=axes, keepdims=True) if mean is not None else 0.0))
    dx = dx - _f64(dr).reshape(bshape) * rb ** 2 * xhat / n
    if mean is not None:
        dx = dx + _f64(dmean).reshape(bshape) / n
    dt = np.asarray(x).dtype
    lead = tuple(range(b))
    return (dx.astype(dt), (g0 * xhat).sum(axis=lead).astype(dt), g0.sum(axis=lead).astype(dt))


def _lng_ref(x, mean, inv_std, dy, dmean, dinv_std, weight=None, begin_norm_axis=1):
    return _norm_bwd_ref(x, mean, inv_std, dy, dmean, dinv_std, weight, begin_norm_axis)


def _rmsg_ref(x, inv_rms, dy, dinv_rms, weight=None, begin_norm_axis=1):
    return _norm_bwd_ref(x, None, inv_rms, dy, None, dinv_rms, weight, begin_norm_axis)[:2]


def _stats(x, b, centered, dtype):
    x64 = _f64(x)
    axes = tuple(range(b, x64.ndim))
    m = x64.mean(axis=axes) if centered else None
    c = x64 - m.reshape(m.shape + (1,) * len(axes)) if centered else x64
    r = 1 / np.sqrt((c * c).mean(axis=axes) + 1e-5)
    return (None if m is None else m.astype(dtype)), r.astype(dtype)


def _lng_sample(shape, b, dtype=np.float32, weight=True, **kw):
    x = _f(*shape, dtype=dtype)
    m, r = _stats(x, b, True, dtype)
    lead = shape[:b]
    return Sample([x, m, r, _f(*shape, dtype=dtype), _f(*lead, dtype=dtype, scale=0.3),
                   _f(*lead, dtype=dtype, scale=0.3),
                   _f(*shape[b:], dtype=dtype) if weight else None],
                  {"begin_norm_axis": b}, **kw)


def _rmsg_sample(shape, b, dtype=np.float32, weight=True, **kw):
    x = _f(*shape, dtype=dtype)
    _, r = _stats(x, b, False, dtype)
    lead = shape[:b]
    return Sample([x, r, _f(*shape, dtype=dtype), _f(*lead, dtype=dtype, scale=0.3),
                   _f(*shape[b:], dtype=dtype) if weight else None],
                  {"begin_norm_axis": b}, **kw)


register_samples("layer_norm_grad", [
    _lng_sample((3, 5), 1),
    _lng_sample((2, 2, 3), 1, dtype=np.float64, weight=False, name="no weight, 2 axes"),
    _lng_sample((4, 8), 1, dtype=np.float16, rtol=2e-2, atol=2e-2),
], _lng_ref, errors=[
    ErrorSample([_f(3, 4), _f(3), _f(3), _f(3, 5), _f(3), _f(3), None], {"begin_norm_axis": 1},
                ValueError, "dy must have shape"),
])

register_samples("rms_norm_grad", [
    _rmsg_sample((3, 5), 1),
    _rmsg_sample((2, 3, 2), 2, dtype=np.float64, weight=False, name="no weight"),
    _rmsg_sample((4, 8), 1, dtype=np.float16, rtol=2e-2, atol=2e-2),
], _rmsg_ref, errors=[
    ErrorSample([_f(3, 4), _f(3), _f(3, 4), _f(3), _f(5)], {"begin_norm_axis": 1},
                ValueError, "weight must have shape"),
])
