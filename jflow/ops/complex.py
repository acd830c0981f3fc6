"""Complex-number ops (complex64 / complex128): building a complex tensor from its parts,
taking parts, conjugation, the argument, and the two reinterpreting views —
definition, xla kernel and SBP signatures side by side.

``complex(real, imag)`` and ``view_as_complex`` make complex values from float ones;
``real`` / ``imag`` / ``conj`` / ``angle`` / ``view_as_real`` take them apart. The
functional layer (``functional/functors/complex.py``) makes ``real``, ``imag``, ``conj``,
``view_as_real`` and ``view_as_complex`` views that alias their input, as PyTorch does.

Gradients follow PyTorch's convention at the user boundary (``.grad`` of a complex leaf is
``dL/dRe + i dL/dIm``); inside, every backward rule is a plain transpose (JAX's convention,
the conjugate) and the autograd engine conjugates where gradients meet the user
(docs/autograd.md, "Complex numbers").
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import P, S, Signature, elementwise
from .infer import COMPLEX, FLOAT, FLOAT_C, broadcast_shapes, check_dtype, desc
from .primitive import define_op

_LINEAR = elementwise("linear")
_ELEMENTWISE = elementwise("none")
_F32_64 = (np.dtype(np.float32), np.dtype(np.float64))


def _part_dtype(d: Any) -> np.dtype:
    """complex64 -> float32, complex128 -> float64."""
    return np.finfo(np.dtype(d)).dtype


def _complex_dtype(d: Any) -> np.dtype:
    """float32 -> complex64, float64 -> complex128."""
    return np.dtype(np.complex128 if np.dtype(d) == np.float64 else np.complex64)


# -- complex(real, imag) ---------------------------------------------------------------------

def _complex_infer(real: Any, imag: Any) -> Any:
    for name, t in (("real", real), ("imag", imag)):
        if np.dtype(t.dtype) not in _F32_64:
            raise TypeError(f"{name} must be float32 or float64, got {np.dtype(t.dtype).name}")
    if np.dtype(real.dtype) != np.dtype(imag.dtype):
        raise TypeError(f"real and imag must have the same dtype, got "
                        f"{np.dtype(real.dtype).name} and {np.dtype(imag.dtype).name}")
    return desc(broadcast_shapes(real.shape, imag.shape), _complex_dtype(real.dtype))


define_op("complex", inputs=["real", "imag"], outputs=["out"], infer=_complex_infer,
          sbp=_LINEAR, doc="real + i * imag (broadcasting): a complex tensor from its parts")
register_kernel("complex", lambda re, im: lax.complex(*jnp.broadcast_arrays(re, im)),
                name="complex_xla")


# -- real / imag / conj / angle ----------------------------------------------------------------

def _part_infer(x: Any) -> Any:
    check_dtype(x, COMPLEX, "input")
    return desc(x.shape, _part_dtype(x.dtype))


def _conj_infer(x: Any) -> Any:
    check_dtype(x, COMPLEX, "input")
    return desc(x.shape, x.dtype)


def _angle_infer(x: Any) -> Any:
    check_dtype(x, FLOAT_C, "input")
    d = np.dtype(x.dtype)
    return desc(x.shape, _part_dtype(d) if d.kind == "c" else d)


def _angle(x: Any) -> Any:
    """atan2(imag, real); for real inputs PyTorch's 0 (x >= 0), pi (x < 0), nan for nan."""
    if jnp.iscomplexobj(x):
        return jnp.angle(x)
    pi = jnp.asarray(np.pi, x.dtype)
    return jnp.where(jnp.isnan(x), x, jnp.where(x < 0, pi, jnp.zeros_like(x)))


# real, imag and conj are R-linear: partial sums stay partial
define_op("real", inputs=["x"], outputs=["y"], infer=_part_infer, sbp=_LINEAR,
          doc="the real part of a complex tensor (float)")
register_kernel("real", jnp.real, name="real_xla")
define_op("imag", inputs=["x"], outputs=["y"], infer=_part_infer, sbp=_LINEAR,
          doc="the imaginary part of a complex tensor (float)")
register_kernel("imag", jnp.imag, name="imag_xla")
define_op("conj", inputs=["x"], outputs=["y"], infer=_conj_infer, sbp=_LINEAR,
          doc="the complex conjugate")
register_kernel("conj", jnp.conj, name="conj_xla")
define_op("angle", inputs=["x"], outputs=["y"], infer=_angle_infer, sbp=_ELEMENTWISE,
          doc="the argument atan2(imag, real), in (-pi, pi]; float for float or complex input")
register_kernel("angle", _angle, name="angle_xla")


# -- view_as_real / view_as_complex -------------------------------------------------------------
# (..., ) complex <-> (..., 2) float. Split on any dim but the pair dim; R-linear.

def _pairs_sbp(pair_dim_in: bool) -> Any:
    def fn(in_shapes: Any, n_out: int = 1, **_: Any) -> list[Signature]:
        nd = len(in_shapes[0]) - (1 if pair_dim_in else 0)
        return [Signature((S(a),), (S(a),)) for a in range(nd)] + [Signature((P,), (P,))]
    fn.__name__ = "pairs_sbp"
    return fn


def _as_real_infer(x: Any) -> Any:
    check_dtype(x, COMPLEX, "input")
    return desc(tuple(x.shape) + (2,), _part_dtype(x.dtype))


def _as_complex_infer(x: Any) -> Any:
    check_dtype(x, FLOAT, "input")
    if np.dtype(x.dtype) not in _F32_64:
        raise TypeError(f"input must be float32 or float64, got {np.dtype(x.dtype).name}")
    if len(x.shape) == 0 or x.shape[-1] != 2:
        raise ValueError(f"input must have a last dimension of size 2 (real, imag), got shape "
                         f"{tuple(x.shape)}")
    return desc(tuple(x.shape)[:-1], _complex_dtype(x.dtype))


define_op("view_as_real", inputs=["x"], outputs=["y"], infer=_as_real_infer,
          sbp=_pairs_sbp(False), doc="a complex tensor as float pairs (..., 2): (real, imag)")
register_kernel("view_as_real", lambda x: jnp.stack([jnp.real(x), jnp.imag(x)], axis=-1),
                name="view_as_real_xla")
define_op("view_as_complex", inputs=["x"], outputs=["y"], infer=_as_complex_infer,
          sbp=_pairs_sbp(True), doc="float pairs (..., 2) as a complex tensor (...)")
register_kernel("view_as_complex", lambda x: lax.complex(x[..., 0], x[..., 1]),
                name="view_as_complex_xla")
