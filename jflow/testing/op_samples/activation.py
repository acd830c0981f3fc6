"""Checker samples for jflow/ops/activation.py (NumPy references)."""

from __future__ import annotations

import math

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(0)


def _f(*shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return _rng.uniform(lo, hi, shape).astype(dtype)


_X = _f(3, 4)
_X64 = _f(3, 4, dtype=np.float64)
_I = _rng.integers(-5, 6, (3, 4)).astype(np.int64)

_erf = np.vectorize(math.erf)

register_samples("relu", [Sample([_X]), Sample([_I])], lambda x: np.maximum(x, 0))
register_samples("silu", [Sample([_X])], lambda x: x / (1 + np.exp(-x.astype(np.float64))))

register_samples("leaky_relu", [Sample([_X], {"alpha": 0.2}), Sample([_X64])],
                 lambda x, alpha=0.01: np.where(x > 0, x, alpha * x))
register_samples("elu", [Sample([_X], {"alpha": 1.5})],
                 lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(x.astype(np.float64))))
register_samples(
    "gelu", [Sample([_X]), Sample([_X], {"approximate": "tanh"})],
    lambda x, approximate="none": (
        0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x.astype(np.float64) ** 3)))
        if approximate == "tanh" else 0.5 * x * (1 + _erf(x.astype(np.float64) / np.sqrt(2)))),
    errors=[ErrorSample([_X], {"approximate": "fast"}, ValueError, "approximate")])
register_samples(
    "softplus", [Sample([_X * 15], {"beta": 2.0, "threshold": 20.0}), Sample([_X])],
    lambda x, beta=1.0, threshold=20.0: np.where(
        x * beta > threshold, x, np.log1p(np.exp(beta * x.astype(np.float64))) / beta))
register_samples("hardtanh", [Sample([_X], {"min_val": -0.5, "max_val": 1.0}), Sample([_I])],
                 lambda x, min_val=-1.0, max_val=1.0: np.clip(x, min_val, max_val).astype(x.dtype),
                 errors=[ErrorSample([_X], {"min_val": 1.0, "max_val": 0.0}, ValueError,
                                     "min_val")])
