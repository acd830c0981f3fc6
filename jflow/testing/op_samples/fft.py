"""Checker samples for jflow/ops/fft.py.

References are NumPy's ``np.fft`` (pocketfft, independent of XLA's FFT): ``fftn`` / ``ifftn``,
``rfftn`` and ``irfftn`` with the ``norm`` string that gives the op's ``normalization`` in its
direction. The float64 / complex128 samples are gradient-checked (complex values as pairs of
reals).
"""

from __future__ import annotations

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(21)


def _f(*shape, dtype=np.float32):
    return _rng.uniform(-1.0, 1.0, shape).astype(dtype)


def _c(*shape, dtype=np.complex64):
    return (_rng.uniform(-1.0, 1.0, shape) + 1j * _rng.uniform(-1.0, 1.0, shape)).astype(dtype)


def _norm(normalization: int, forward: bool) -> str:
    if normalization == 1:
        return "ortho"
    if normalization == 0:
        return "backward" if forward else "forward"
    return "forward" if forward else "backward"


def _c2c_ref(x, dim, normalization=0, forward=True):
    f = np.fft.fftn if forward else np.fft.ifftn
    return f(x, axes=dim, norm=_norm(normalization, forward)).astype(x.dtype)


def _complex_of(d):
    return np.complex128 if d == np.float64 else np.complex64


def _r2c_ref(x, dim, normalization=0, onesided=True):
    f = np.fft.rfftn if onesided else np.fft.fftn
    return f(x, axes=dim, norm=_norm(normalization, True)).astype(_complex_of(x.dtype))


def _c2r_ref(x, dim, normalization=0, last_dim_size=None):
    axes = [d % x.ndim for d in dim]
    s = [x.shape[a] for a in axes[:-1]] + [last_dim_size]
    out = np.fft.irfftn(x, s=s, axes=axes, norm=_norm(normalization, False))
    return out.astype(np.float64 if x.dtype == np.complex128 else np.float32)


register_samples(
    "fft_c2c",
    [Sample([_c(3, 8)], {"dim": (1,)}),
     Sample([_c(4, 5, 3)], {"dim": (0, 2), "normalization": 1, "forward": False}),
     Sample([_c(6, 4, dtype=np.complex128)], {"dim": (-1, 0), "normalization": 2}),
     Sample([_c(5, 3, dtype=np.complex128)], {"dim": (0,), "forward": False})],
    reference=_c2c_ref,
    errors=[ErrorSample([_f(4)], {"dim": (0,)}, TypeError, "complex64 or complex128"),
            ErrorSample([_c(4)], {"dim": (1,)}, IndexError, "out of range"),
            ErrorSample([_c(4)], {"dim": (0,), "normalization": 3}, ValueError,
                        "normalization"),
            ErrorSample([_c(4, 4)], {"dim": (0, -2)}, ValueError, "unique")])

register_samples(
    "fft_r2c",
    [Sample([_f(3, 8)], {"dim": (1,)}),
     Sample([_f(4, 5, 3)], {"dim": (0, 2), "normalization": 1}),
     Sample([_f(7, 4)], {"dim": (0,), "onesided": False}),
     Sample([_f(5, 6, dtype=np.float64)], {"dim": (1, 0), "normalization": 2}),
     Sample([_f(3, 7, dtype=np.float64)], {"dim": (1,), "onesided": False})],
    reference=_r2c_ref,
    errors=[ErrorSample([_c(4)], {"dim": (0,)}, TypeError, "float32 or float64"),
            ErrorSample([np.ones(4, np.int64)], {"dim": (0,)}, TypeError,
                        "float32 or float64")])

register_samples(
    "fft_c2r",
    [Sample([_c(3, 5)], {"dim": (1,), "last_dim_size": 8}),
     Sample([_c(4, 3, 4)], {"dim": (0, 1), "normalization": 1, "last_dim_size": 5}),
     Sample([_c(4, 6, dtype=np.complex128)], {"dim": (1,), "last_dim_size": 10,
                                               "normalization": 2}),
     Sample([_c(4, 3, dtype=np.complex128)], {"dim": (1, 0), "last_dim_size": 7})],
    reference=_c2r_ref,
    errors=[ErrorSample([_c(3, 5)], {"dim": (1,), "last_dim_size": 6}, ValueError,
                        "last_dim_size // 2 \\+ 1"),
            ErrorSample([_f(3, 5)], {"dim": (1,), "last_dim_size": 8}, TypeError,
                        "complex64 or complex128"),
            ErrorSample([_c(3, 1)], {"dim": (1,), "last_dim_size": 0}, ValueError,
                        "Invalid number of data points")])
