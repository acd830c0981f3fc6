"""Checker samples for jflow/ops/complex.py.

References are NumPy's complex arithmetic (``np.real``, ``np.angle``, ``a + 1j * b`` ...).
The gradient check treats complex values as pairs of reals (``grad_check.py``): each rule is
checked against finite differences of the real and imaginary parts, in PyTorch's convention
on the tape and JAX's under ``jax.grad``.
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(15)


def _f(*shape, dtype=np.float32):
    return _rng.uniform(-1.0, 1.0, shape).astype(dtype)


def _c(*shape, dtype=np.complex64):
    return (_rng.uniform(-1.0, 1.0, shape) + 1j * _rng.uniform(-1.0, 1.0, shape)).astype(dtype)


def _away_from_zero(*shape, dtype=np.complex64):
    """Complex values with modulus in [0.5, 1.5] (angle's gradient is singular at 0)."""
    r = _rng.uniform(0.5, 1.5, shape)
    t = _rng.uniform(-3.0, 3.0, shape)
    return (r * np.exp(1j * t)).astype(dtype)


register_samples(
    "complex",
    [Sample([_f(2, 4), _f(2, 4)]), Sample([_f(2, 4, dtype=np.float64), _f(4, dtype=np.float64)]),
     Sample([_f(4, 1), _f(1, 4)])],
    reference=lambda re, im: (re + 1j * im).astype(np.complex128 if re.dtype == np.float64
                                                    else np.complex64),
    errors=[ErrorSample([_f(2), _f(2, dtype=np.float64)], {}, TypeError, "same dtype"),
            ErrorSample([np.ones(2, np.int64), np.ones(2, np.int64)], {}, TypeError,
                        "float32 or float64")])

for _name, _ref in (("real", np.real), ("imag", np.imag), ("conj", np.conj)):
    register_samples(
        _name, [Sample([_c(2, 4)]), Sample([_c(4, dtype=np.complex128)])], reference=_ref,
        errors=[ErrorSample([_f(2)], {}, TypeError, "complex dtype")])

register_samples(
    "angle",
    [Sample([_away_from_zero(2, 4)]), Sample([_away_from_zero(5, dtype=np.complex128)]),
     # real input: 0 / pi, piecewise constant (zero gradient away from 0)
     Sample([np.array([-2.0, -0.5, 0.5, 3.0], np.float32)])],
    reference=lambda x: np.angle(x).astype(np.float64 if x.dtype in (np.float64, np.complex128)
                                           else np.float32),
    errors=[ErrorSample([np.ones(2, np.int64)], {}, TypeError, "floating or complex")])

register_samples(
    "view_as_real", [Sample([_c(2, 4)]), Sample([_c(3, dtype=np.complex128)])],
    reference=lambda z: np.stack([z.real, z.imag], axis=-1),
    errors=[ErrorSample([_f(2)], {}, TypeError, "complex dtype")])

register_samples(
    "view_as_complex", [Sample([_f(2, 4, 2)]), Sample([_f(4, 2, dtype=np.float64)])],
    reference=lambda x: x[..., 0] + 1j * x[..., 1],
    errors=[ErrorSample([_f(2, 3)], {}, ValueError, "last dimension of size 2"),
            ErrorSample([np.ones((2, 2), np.float16)], {}, TypeError, "float32 or float64")])
