"""Backward rules of the complex-number ops (``jflow/ops/complex.py``).

Every rule is the plain transpose of the op's real-linear derivative (JAX's convention: the
gradient of a complex value is ``dL/dRe - i dL/dIm``); the engine conjugates complex gradients
where they meet the user, which gives PyTorch's ``dL/dRe + i dL/dIm`` there. With ``g`` the
incoming gradient in JAX's convention:

* ``complex(re, im)``: ``(real(g), -imag(g))``
* ``real(z)``: ``g + 0i``;  ``imag(z)``: ``0 - i g``;  ``conj(z)``: ``conj(g)``
* ``angle(z)``: ``-i g conj(z) / |z|^2`` (0 at z = 0, and for real inputs)
* ``view_as_real``: ``g[..., 0] - i g[..., 1]``; ``view_as_complex``: ``view_as_real(conj(g))``
"""

from __future__ import annotations

from ..rule import register_backward
from ._util import O, scalar_like, sum_to


def _zero(like):
    return O.mul(like, scalar_like(0.0, like))


@register_backward("complex")
def _complex(ctx, g):
    re_shape, im_shape = ctx.input_shapes
    gre = sum_to(O.real(g), re_shape) if ctx.needs_input_grad[0] else None
    gim = sum_to(O.neg(O.imag(g)), im_shape) if ctx.needs_input_grad[1] else None
    return gre, gim


@register_backward("real")
def _real(ctx, g):
    return O.complex(g, _zero(g))


@register_backward("imag")
def _imag(ctx, g):
    return O.complex(_zero(g), O.neg(g))


@register_backward("conj")
def _conj(ctx, g):
    return O.conj(g)


@register_backward("angle", save=["x"])
def _angle(ctx, g):
    (z,) = ctx.saved_tensors
    if ctx.input_dtypes[0].kind != "c":
        return _zero(g)  # piecewise constant in a real input, as PyTorch
    re, im = O.real(z), O.imag(z)
    r2 = O.add(O.square(re), O.square(im))
    zero = O.eq(r2, scalar_like(0.0, r2))
    scale = O.div(g, O.where(zero, scalar_like(1.0, r2), r2))
    scale = O.where(zero, scalar_like(0.0, scale), scale)
    # -i conj(z) = -i (re - i im) = -im - i re
    return O.complex(O.neg(O.mul(scale, im)), O.neg(O.mul(scale, re)))


@register_backward("view_as_real")
def _view_as_real(ctx, g):
    return O.conj(O.view_as_complex(g))


@register_backward("view_as_complex")
def _view_as_complex(ctx, g):
    return O.view_as_real(O.conj(g))
