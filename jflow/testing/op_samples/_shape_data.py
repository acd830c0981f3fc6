"""Data shared by the samples of the shape families (view, join, slicing, rearrange,
subscript): one generator, the array makers and the common arrays they all sample from."""

from __future__ import annotations

import numpy as np

_rng = np.random.default_rng(2)
_rng_g = np.random.default_rng(3)


def _f(*shape, dtype=np.float32):
    return _rng.uniform(-2.0, 2.0, shape).astype(dtype)


def _g(*shape):
    """float64 data for the extra gradient samples (own generator: the data above is unchanged)."""
    return _rng_g.uniform(-2.0, 2.0, shape)


def _i(*shape, lo=-5, hi=6, dtype=np.int64):
    return _rng.integers(lo, hi, shape).astype(dtype)


_X = _f(2, 3, 4)
_X64 = _f(3, 4, dtype=np.float64)
_I = _i(2, 3, 4)
_I32 = _i(3, 4, dtype=np.int32)
_B = _rng.random((2, 3)) > 0.5
_S = np.array(1.5, np.float32)  # 0-d
_E = np.zeros((0, 3), np.float32)  # zero-size

