"""Checker samples for jflow/ops/optim.py (fused optimizer updates), against NumPy float64."""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(83)


def _f(*shape, dtype=np.float32):
    return _rng.standard_normal(shape).astype(dtype)


def _adam_ref(p, g, m, v, step, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0,
              decoupled=False):
    dt = np.asarray(p).dtype
    p, g, m, v = (np.asarray(a, np.float64) for a in (p, g, m, v))
    t, lr = float(step), float(lr)
    if weight_decay:
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    p = p - lr / (1 - beta1 ** t) * m / (np.sqrt(v) / np.sqrt(1 - beta2 ** t) + eps)
    return tuple(a.astype(dt) for a in (p, m, v))


def _state(*shape, dtype=np.float32):
    return [_f(*shape, dtype=dtype), _f(*shape, dtype=dtype), _f(*shape, dtype=dtype),
            np.abs(_f(*shape, dtype=dtype))]


register_samples("adam_update", [
    Sample(_state(4, 8) + [np.float32(1), np.float32(0.01)], {}, grad=False),
    Sample(_state(6, dtype=np.float64) + [np.float64(7), np.float64(0.1)],
           {"weight_decay": 0.01, "decoupled": True, "beta1": 0.8}, grad=False,
           name="AdamW, float64"),
    Sample(_state(2, 5) + [np.float32(3), np.float32(0.05)], {"weight_decay": 0.1},
           grad=False, name="L2 weight decay"),
], _adam_ref, errors=[
    ErrorSample(_state(3, 2)[:3] + [_f(2, 3), np.float32(1), np.float32(0.1)], {},
                ValueError, "exp_avg_sq must have the param's shape"),
    ErrorSample(_state(3) + [np.ones(2, np.float32), np.float32(0.1)], {}, ValueError,
                "step must be a 0-d tensor"),
    ErrorSample([a.astype(np.int32) for a in _state(3)] + [np.float32(1), np.float32(0.1)],
                {}, TypeError, "param"),
])
