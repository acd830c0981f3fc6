"""Checker samples for jflow/ops/activation.py (NumPy references)."""

from __future__ import annotations

import math

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(0)


def _f(*shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return _rng.uniform(lo, hi, shape).astype(dtype)


_X = _f(2, 4)
_X64 = _f(2, 4, dtype=np.float64)
_I = _rng.integers(-5, 6, (2, 4)).astype(np.int64)

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


# -- the table of pointwise activations (float64 references) -----------------------------------
_SELU_A, _SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
_W = _f(2, 4, lo=-5.0, hi=5.0)  # crosses the hard* kinks at +-3


def _d(x):
    return x.astype(np.float64)


register_samples("selu", [Sample([_X])],
                 lambda x: _SELU_S * np.where(x > 0, _d(x), _SELU_A * np.expm1(_d(x))))
register_samples("celu", [Sample([_X], {"alpha": 0.7})],
                 lambda x, alpha=1.0: np.where(x > 0, _d(x), alpha * np.expm1(_d(x) / alpha)),
                 errors=[ErrorSample([_X], {"alpha": 0.0}, ValueError, "alpha")])
register_samples("hardswish", [Sample([_W])],
                 lambda x: _d(x) * np.minimum(np.maximum(_d(x) + 3, 0), 6) / 6)
register_samples("hardsigmoid", [Sample([_W])],
                 lambda x: np.minimum(np.maximum(_d(x) + 3, 0), 6) / 6)
register_samples("hardshrink", [Sample([_X], {"lambd": 0.7})],
                 lambda x, lambd=0.5: np.where(np.abs(x) > lambd, x, 0).astype(x.dtype))
register_samples("softshrink", [Sample([_X], {"lambd": 0.7})],
                 lambda x, lambd=0.5: (np.sign(x) * np.maximum(np.abs(_d(x)) - lambd, 0)),
                 errors=[ErrorSample([_X], {"lambd": -1.0}, ValueError, "lambd")])
register_samples("tanhshrink", [Sample([_X])], lambda x: _d(x) - np.tanh(_d(x)))
register_samples("softsign", [Sample([_X])], lambda x: _d(x) / (1 + np.abs(_d(x))))
register_samples("threshold", [Sample([_X], {"threshold": 0.1, "value": 20.0})],
                 lambda x, threshold, value: np.where(x > threshold, _d(x), value))
