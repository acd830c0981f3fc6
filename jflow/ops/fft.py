"""Discrete Fourier transform ops (ATen's three) — definition, xla kernel and SBP side by side.

=============  ==========================================  ===================================
op             operand; attrs                              result
=============  ==========================================  ===================================
``fft_c2c``    x complex; ``dim``, ``normalization``,       complex, x's shape: the transform
               ``forward``                                  over ``dim`` (e^-i forward, e^+i
                                                            inverse)
``fft_r2c``    x float32/64; ``dim``, ``normalization``,    complex: the forward transform of a
               ``onesided``                                 real signal; ``onesided`` keeps
                                                            ``n // 2 + 1`` points of ``dim[-1]``
``fft_c2r``    x complex (half spectrum on ``dim[-1]``);    float: the inverse transform of a
               ``dim``, ``normalization``,                  Hermitian signal; ``dim[-1]`` has
               ``last_dim_size``                            ``last_dim_size`` points (its input
                                                            must have ``last_dim_size // 2 + 1``)
=============  ==========================================  ===================================

``normalization`` is ATen's ``fft_norm_mode``: 0 none, 1 divide by sqrt(n), 2 divide by n, where
n is the product of the signal sizes over ``dim`` (the real sizes for r2c / c2r). The
functional layer (``functional/functors/fft.py``) maps PyTorch's ``norm`` strings, sizes and
dims onto these ops as ATen's ``SpectralOps.cpp`` does (hfft = c2r of the conjugate, ihfft =
conjugate of r2c). c2r ignores the imaginary part of the zero-frequency point (and of the
Nyquist point when ``last_dim_size`` is even), as pocketfft / cuFFT do.

SBP: each transform is R-linear and acts along ``dim`` only, so a split on any other axis stays
that split, and P -> P.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np

from ..kernels.registry import register_kernel
from ..sharding.sbp import P, S, Signature
from .infer import desc
from .primitive import define_op
from .registry import Attr

_REAL = (np.dtype(np.float32), np.dtype(np.float64))
_COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))


def _complex_of(d: Any) -> np.dtype:
    return np.dtype(np.complex128 if np.dtype(d) == np.float64 else np.complex64)


def _real_of(d: Any) -> np.dtype:
    return np.dtype(np.float64 if np.dtype(d) == np.complex128 else np.float32)


def _dims(fname: str, ndim: int, dim: Sequence[int]) -> tuple[int, ...]:
    """``dim`` wrapped into ``[0, ndim)``; nonempty and unique."""
    out = []
    for d in dim:
        if not -ndim <= d < ndim:
            raise IndexError(f"{fname}: dimension {d} out of range for a {ndim}-d input")
        out.append(d % ndim)
    if not out:
        raise ValueError(f"{fname}: dim must name at least one dimension")
    if len(set(out)) != len(out):
        raise ValueError(f"{fname}: FFT dims must be unique, got {tuple(dim)}")
    return tuple(out)


def _check_norm(fname: str, normalization: int) -> None:
    if normalization not in (0, 1, 2):
        raise ValueError(f"{fname}: normalization must be 0 (none), 1 (1/sqrt(n)) or 2 (1/n), "
                         f"got {normalization}")


def _check_in(fname: str, x: Any, allowed: tuple, what: str) -> None:
    if np.dtype(x.dtype) not in allowed:
        raise TypeError(f"{fname}: input must be {what}, got {np.dtype(x.dtype).name}")


def _checked_dims(fname: str, x: Any, allowed: tuple, what: str, normalization: int,
                  dim: Sequence[int]) -> tuple[int, ...]:
    """What every transform's inference checks first, in ATen's order: the input dtype, the
    normalization mode, the dims (returned normalised)."""
    _check_in(fname, x, allowed, what)
    _check_norm(fname, normalization)
    return _dims(fname, len(x.shape), dim)


def _check_points(fname: str, shape: Sequence[int], dims: Sequence[int]) -> None:
    """Each transformed dim needs at least one data point."""
    for d in dims:
        if shape[d] < 1:
            raise ValueError(f"{fname}: Invalid number of data points ({shape[d]}) specified")


def _jnp_norm(normalization: int, forward: bool) -> str:
    """jnp.fft's ``norm`` string giving ATen's mode in the given direction."""
    if normalization == 1:
        return "ortho"
    if normalization == 0:
        return "backward" if forward else "forward"
    return "forward" if forward else "backward"


# -- c2c ------------------------------------------------------------------------------------

def _c2c_infer(x: Any, *, dim: Sequence[int], normalization: int, forward: bool) -> Any:
    dims = _checked_dims("fft_c2c", x, _COMPLEX, "complex64 or complex128", normalization, dim)
    _check_points("fft_c2c", x.shape, dims)
    return desc(tuple(x.shape), x.dtype)


def _c2c(x: Any, *, dim: Sequence[int], normalization: int, forward: bool) -> Any:
    axes = tuple(d % x.ndim for d in dim)
    f = jnp.fft.fftn if forward else jnp.fft.ifftn
    return f(x, axes=axes, norm=_jnp_norm(normalization, forward)).astype(x.dtype)


# -- r2c ------------------------------------------------------------------------------------

def _r2c_infer(x: Any, *, dim: Sequence[int], normalization: int, onesided: bool) -> Any:
    dims = _checked_dims("fft_r2c", x, _REAL, "float32 or float64", normalization, dim)
    _check_points("fft_r2c", x.shape, dims)
    shape = list(x.shape)
    if onesided:
        shape[dims[-1]] = shape[dims[-1]] // 2 + 1
    return desc(tuple(shape), _complex_of(x.dtype))


def _r2c(x: Any, *, dim: Sequence[int], normalization: int, onesided: bool) -> Any:
    axes = tuple(d % x.ndim for d in dim)
    norm = _jnp_norm(normalization, True)
    if onesided:
        y = jnp.fft.rfftn(x, axes=axes, norm=norm)
    else:
        y = jnp.fft.fftn(x.astype(_complex_of(x.dtype)), axes=axes, norm=norm)
    return y.astype(_complex_of(x.dtype))


# -- c2r ------------------------------------------------------------------------------------

def _c2r_infer(x: Any, *, dim: Sequence[int], normalization: int, last_dim_size: int) -> Any:
    dims = _checked_dims("fft_c2r", x, _COMPLEX, "complex64 or complex128", normalization, dim)
    if last_dim_size < 1:
        raise ValueError(f"fft_c2r: Invalid number of data points ({last_dim_size}) specified")
    if x.shape[dims[-1]] != last_dim_size // 2 + 1:
        raise ValueError(f"fft_c2r: dimension {dims[-1]} of the input must have "
                         f"last_dim_size // 2 + 1 = {last_dim_size // 2 + 1} points, got "
                         f"{x.shape[dims[-1]]}")
    _check_points("fft_c2r", x.shape, dims[:-1])
    shape = list(x.shape)
    shape[dims[-1]] = last_dim_size
    return desc(tuple(shape), _real_of(x.dtype))


def _c2r(x: Any, *, dim: Sequence[int], normalization: int, last_dim_size: int) -> Any:
    axes = tuple(d % x.ndim for d in dim)
    s = [x.shape[a] for a in axes[:-1]] + [last_dim_size]
    y = jnp.fft.irfftn(x, s=s, axes=axes, norm=_jnp_norm(normalization, False))
    return y.astype(_real_of(x.dtype))


def _sbp(in_shapes: Sequence[Sequence[int]], n_out: int = 1, *, dim: Sequence[int] = (),
         **_: Any) -> list[Signature]:
    """A split on an untransformed axis stays; the transforms are R-linear: P -> P."""
    nd = len(in_shapes[0])
    moved = {d % nd for d in dim} if nd else set()
    return [Signature((S(a),), (S(a),)) for a in range(nd) if a not in moved] + \
        [Signature((P,), (P,))]


_DIM = Attr("dim", "int64_list")
_NORM = Attr("normalization", "int64", 0)

define_op("fft_c2c", inputs=["x"], outputs=["y"],
          attrs=[_DIM, _NORM, Attr("forward", "bool", True)], infer=_c2c_infer, sbp=_sbp,
          doc="complex-to-complex DFT over dim (forward: e^-i), normalization 0/1/2 = "
              "none / 1/sqrt(n) / 1/n")
register_kernel("fft_c2c", _c2c, name="fft_c2c_xla")

define_op("fft_r2c", inputs=["x"], outputs=["y"],
          attrs=[_DIM, _NORM, Attr("onesided", "bool", True)], infer=_r2c_infer, sbp=_sbp,
          doc="real-to-complex forward DFT over dim; onesided keeps n // 2 + 1 points of "
              "dim[-1]")
register_kernel("fft_r2c", _r2c, name="fft_r2c_xla")

define_op("fft_c2r", inputs=["x"], outputs=["y"],
          attrs=[_DIM, _NORM, Attr("last_dim_size", "int64")], infer=_c2r_infer, sbp=_sbp,
          doc="complex-to-real inverse DFT of a Hermitian half spectrum over dim; dim[-1] "
              "gets last_dim_size points")
register_kernel("fft_c2r", _c2r, name="fft_c2r_xla")
