"""Checker samples for jflow/ops/fused.py (fused bias + activation).

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
