"""Checker samples for jflow/ops/fused.py (fused bias + activation; softmax grad ops).

References are float64 NumPy formulas.
"""

from __future__ import annotations

import math

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(71)


def _f(*shape, dtype=np.float32, scale=1.0):
    return (_rng.standard_normal(shape) * scale).astype(dtype)


def _d(a):
    return np.asarray(a).astype(np.float64)


_erf = np.vectorize(math.erf)


def _fba_ref(x, bias, activation="gelu"):
    z = _d(x) + _d(bias)
    if activation == "silu":
        y = z / (1.0 + np.exp(-z))
    elif activation == "gelu_tanh":
        y = 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))
    else:
        y = 0.5 * z * (1 + _erf(z / math.sqrt(2.0)))
    return y.astype(np.asarray(x).dtype)


register_samples("fused_bias_add_activation", [
    Sample([_f(3, 5), _f(5)], {"activation": "gelu"}),
    Sample([_f(2, 3, 4, dtype=np.float64), _f(4, dtype=np.float64)], {"activation": "gelu_tanh"},
           name="3-d, gelu_tanh"),
    Sample([_f(4, 3), _f(3)], {"activation": "silu"}),
    Sample([_f(6), _f(6)], {"activation": "silu"}, name="1-d"),
    Sample([_f(4, 8, dtype=np.float16), _f(8, dtype=np.float16)], {"activation": "gelu"}),
], _fba_ref, errors=[
    ErrorSample([_f(3, 4), _f(3)], {}, ValueError, "bias must have shape"),
    ErrorSample([_f(3, 4), _f(4, dtype=np.float64)], {}, TypeError, "dtype"),
    ErrorSample([_f(3, 4), _f(4)], {"activation": "relu6"}, ValueError, "activation must be"),
])


def _axis(y, dim):
    return dim % y.ndim


def _sg_ref(y, dy, dim=-1):
    y64, g = _d(y), _d(dy)
    if y64.ndim == 0:
        return (y64 * (g - g * y64)).astype(np.asarray(y).dtype)
    d = _axis(y64, dim)
    return (y64 * (g - (g * y64).sum(axis=d, keepdims=True))).astype(np.asarray(y).dtype)


def _lsg_ref(y, dy, dim=-1):
    y64, g = _d(y), _d(dy)
    if y64.ndim == 0:
        return (g - np.exp(y64) * g).astype(np.asarray(y).dtype)
    d = _axis(y64, dim)
    return (g - np.exp(y64) * g.sum(axis=d, keepdims=True)).astype(np.asarray(y).dtype)


def _probs(*shape, dim=-1, dtype=np.float32):
    e = np.exp(_rng.standard_normal(shape))
    return (e / e.sum(axis=dim, keepdims=True)).astype(dtype)


def _logprobs(*shape, dim=-1, dtype=np.float32):
    x = _rng.standard_normal(shape)
    return (x - np.log(np.exp(x).sum(axis=dim, keepdims=True))).astype(dtype)


_SG_ERR = [ErrorSample([_f(3, 4), _f(3, 5)], {}, ValueError, "dy must have"),
           ErrorSample([np.ones((2, 2), np.int64), np.ones((2, 2), np.int64)], {}, TypeError,
                       "floating")]

register_samples("softmax_grad", [
    Sample([_probs(3, 4), _f(3, 4)], {"dim": -1}),
    Sample([_probs(2, 3, 2, dim=1, dtype=np.float64), _f(2, 3, 2, dtype=np.float64)], {"dim": 1},
           name="middle axis"),
    Sample([_probs(4, 8, dtype=np.float16), _f(4, 8, dtype=np.float16)], {"dim": -1}),
], _sg_ref, errors=_SG_ERR)

register_samples("log_softmax_grad", [
    Sample([_logprobs(3, 4), _f(3, 4)], {"dim": -1}),
    Sample([_logprobs(2, 3, 2, dim=0, dtype=np.float64), _f(2, 3, 2, dtype=np.float64)],
           {"dim": 0}, name="first axis"),
    Sample([_logprobs(4, 8, dtype=np.float16), _f(4, 8, dtype=np.float16)], {"dim": -1}),
], _lsg_ref, errors=_SG_ERR)


# -- layer_norm_grad / rms_norm_grad (ops in jflow/ops/norm.py) --------------------------------

def _norm_bwd_ref(x, mean, r, dy, dmean, dr, weight, b):
    x64, g0 = _d(x), _d(dy)
    axes = tuple(range(b, x64.ndim))
    bshape = x64.shape[:b] + (1,) * len(axes)
    n = int(np.prod(x64.shape[b:]))
    rb = _d(r).reshape(bshape)
    xc = x64 - _d(mean).reshape(bshape) if mean is not None else x64
    xhat = xc * rb
    g = g0 if weight is None else g0 * _d(weight)
    dx = rb * (g - xhat * (g * xhat).mean(axis=axes, keepdims=True)
               - (g.mean(axis=axes, keepdims=True) if mean is not None else 0.0))
    dx = dx - _d(dr).reshape(bshape) * rb ** 2 * xhat / n
    if mean is not None:
        dx = dx + _d(dmean).reshape(bshape) / n
    dt = np.asarray(x).dtype
    lead = tuple(range(b))
    return (dx.astype(dt), (g0 * xhat).sum(axis=lead).astype(dt), g0.sum(axis=lead).astype(dt))


def _lng_ref(x, mean, inv_std, dy, dmean, dinv_std, weight=None, begin_norm_axis=1):
    return _norm_bwd_ref(x, mean, inv_std, dy, dmean, dinv_std, weight, begin_norm_axis)


def _rmsg_ref(x, inv_rms, dy, dinv_rms, weight=None, begin_norm_axis=1):
    return _norm_bwd_ref(x, None, inv_rms, dy, None, dinv_rms, weight, begin_norm_axis)[:2]


def _stats(x, b, centered, dtype):
    x64 = _d(x)
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
