"""Backward rules of the elementwise math ops (``jflow/ops/math.py``). Binary ops broadcast,
so their gradients are summed back to each input's shape (``sum_to``)."""

from __future__ import annotations

import math

from ..rule import register_backward
from ._util import O, keep_where, scalar_like, sum_to


def _c(v: float, like):  # a cached 0-d constant of like's dtype
    return scalar_like(v, like)


# -- unary -------------------------------------------------------------------------------------

@register_backward("abs", save=["x"])
def _abs(ctx, dy):
    (x,) = ctx.saved_tensors
    if ctx.input_dtypes[0].kind == "c":  # dy conj(z) / |z| (JAX's convention), 0 at z = 0
        r = O.abs(x)
        zero = O.eq(r, _c(0.0, r))
        s = O.div(dy, O.where(zero, _c(1.0, r), r))
        s = O.where(zero, _c(0.0, s), s)
        return O.mul(O.complex(s, O.mul(s, _c(0.0, s))), O.conj(x))
    return O.mul(dy, O.sign(x))


@register_backward("neg")
def _neg(ctx, dy):
    return O.neg(dy)


@register_backward("exp", save=["y"])
def _exp(ctx, dy):
    (y,) = ctx.saved_tensors
    return O.mul(dy, y)


@register_backward("log", save=["x"])
def _log(ctx, dy):
    (x,) = ctx.saved_tensors
    return O.div(dy, x)


@register_backward("log1p", save=["x"])
def _log1p(ctx, dy):
    (x,) = ctx.saved_tensors
    return O.div(dy, O.add(x, _c(1.0, x)))


@register_backward("expm1", save=["y"])
def _expm1(ctx, dy):
    (y,) = ctx.saved_tensors
    return O.mul(dy, O.add(y, _c(1.0, y)))


@register_backward("sqrt", save=["y"])
def _sqrt(ctx, dy):
    (y,) = ctx.saved_tensors
    return O.div(O.mul(dy, _c(0.5, dy)), y)


@register_backward("rsqrt", save=["y"])
def _rsqrt(ctx, dy):
    (y,) = ctx.saved_tensors
    return O.mul(O.mul(dy, _c(-0.5, dy)), O.mul(y, O.square(y)))


@register_backward("square", save=["x"])
def _square(ctx, dy):
    (x,) = ctx.saved_tensors
    return O.mul(dy, O.mul(x, _c(2.0, x)))


@register_backward("reciprocal", save=["y"])
def _reciprocal(ctx, dy):
    (y,) = ctx.saved_tensors
    return O.neg(O.mul(dy, O.square(y)))


def _zero_grad(ctx, dy):
    """Piecewise-constant ops: the gradient is zero almost everywhere (as PyTorch)."""
    return O.mul(dy, _c(0.0, dy))


for _name in ("sign", "floor", "ceil", "round"):
    register_backward(_name)(_zero_grad)


@register_backward("sin", save=["x"])
def _sin(ctx, dy):
    (x,) = ctx.saved_tensors
    return O.mul(dy, O.cos(x))


@register_backward("cos", save=["x"])
def _cos(ctx, dy):
    (x,) = ctx.saved_tensors
    return O.neg(O.mul(dy, O.sin(x)))


@register_backward("tan", save=["y"])
def _tan(ctx, dy):
    (y,) = ctx.saved_tensors
    return O.mul(dy, O.add(O.square(y), _c(1.0, y)))


@register_backward("tanh", save=["y"])
def _tanh(ctx, dy):
    (y,) = ctx.saved_tensors
    return O.mul(dy, O.sub(_c(1.0, y), O.square(y)))


@register_backward("sigmoid", save=["y"])
def _sigmoid(ctx, dy):
    (y,) = ctx.saved_tensors
    return O.mul(dy, O.mul(y, O.sub(_c(1.0, y), y)))


@register_backward("erf", save=["x"])
def _erf(ctx, dy):
    (x,) = ctx.saved_tensors
    return O.mul(O.mul(dy, _c(2.0 / math.sqrt(math.pi), dy)), O.exp(O.neg(O.square(x))))


@register_backward("clamp", save=["x"])
def _clamp(ctx, dy):
    (x,) = ctx.saved_tensors
    keep = None
    if ctx.min is not None:
        keep = O.ge(x, _c(ctx.min, x))
    if ctx.max is not None:
        le = O.le(x, _c(ctx.max, x))
        keep = le if keep is None else O.logical_and(keep, le)
    return keep_where(keep, dy)


@register_backward("cast")
def _cast(ctx, dy):
    return O.cast(dy, dtype=ctx.input_dtypes[0])


@register_backward("clone")
def _clone(ctx, dy):
    return dy


# -- binary (broadcasting) ---------------------------------------------------------------------

def _binary_rule(name, save, fx, fy, save_for=None):
    """Register a broadcasting binary rule from the two unreduced partial products."""
    @register_backward(name, save=save, save_for=save_for)
    def rule(ctx, dz):
        saved = ctx.saved_tensors
        xs, ys = ctx.input_shapes
        gx = sum_to(fx(dz, *saved), xs) if ctx.needs_input_grad[0] else None
        gy = sum_to(fy(dz, *saved), ys) if ctx.needs_input_grad[1] else None
        return gx, gy
    rule.__name__ = f"{name}_backward"
    return rule


_binary_rule("add", [], lambda dz: dz, lambda dz: dz)
_binary_rule("sub", [], lambda dz: dz, lambda dz: O.neg(dz))
_binary_rule("mul", ["x", "y"], lambda dz, x, y: O.mul(dz, y), lambda dz, x, y: O.mul(dz, x),
             save_for={"x": ["y"], "y": ["x"]})
_binary_rule("div", ["y", "z"], lambda dz, y, z: O.div(dz, y),
             lambda dz, y, z: O.neg(O.div(O.mul(dz, z), y)))


def _pow_dx(dz, x, y, z):
    # y * x^(y-1); where y == 0 the gradient is 0 (also at x == 0), as PyTorch
    d = O.mul(y, O.pow(x, O.sub(y, _c(1.0, y))))
    return O.mul(dz, O.where(O.eq(y, _c(0.0, y)), _c(0.0, d), d))


def _pow_dy(dz, x, y, z):
    # z * log(x); where x == 0 (and y >= 0) the gradient is 0, as PyTorch
    d = O.mul(z, O.log(x))
    yr = O.real(y) if y._meta.dtype.kind == "c" else y  # complex: Re(y) >= 0
    safe = O.logical_and(O.eq(x, _c(0.0, x)), O.ge(yr, _c(0.0, yr)))
    return O.mul(dz, O.where(safe, _c(0.0, d), d))


_binary_rule("pow", ["x", "y", "z"], _pow_dx, _pow_dy)


def _extremum_rule(name, prefer):
    # PyTorch: the larger (smaller) input gets the gradient; ties split it in half
    def fx(dz, x, y):
        half = O.mul(dz, _c(0.5, dz))
        return O.where(O.eq(x, y), half, keep_where(prefer(x, y), dz))

    def fy(dz, x, y):
        half = O.mul(dz, _c(0.5, dz))
        return O.where(O.eq(x, y), half, keep_where(prefer(y, x), dz))

    _binary_rule(name, ["x", "y"], fx, fy)


_extremum_rule("maximum", O.gt)
_extremum_rule("minimum", O.lt)


def _atan2_d(dz, x, y):
    return O.div(dz, O.add(O.square(x), O.square(y)))


_binary_rule("atan2", ["x", "y"], lambda dz, x, y: O.mul(_atan2_d(dz, x, y), y),
             lambda dz, x, y: O.neg(O.mul(_atan2_d(dz, x, y), x)))
_binary_rule("remainder", ["x", "y"], lambda dz, x, y: dz,
             lambda dz, x, y: O.neg(O.mul(dz, O.floor(O.div(x, y)))))
_binary_rule("fmod", ["x", "y"], lambda dz, x, y: dz,
             lambda dz, x, y: O.neg(O.mul(dz, O.trunc_divide(x, y))))
# integer-valued quotients: zero gradient almost everywhere
_binary_rule("floor_divide", [], lambda dz: O.mul(dz, _c(0.0, dz)),
             lambda dz: O.mul(dz, _c(0.0, dz)))
_binary_rule("trunc_divide", [], lambda dz: O.mul(dz, _c(0.0, dz)),
             lambda dz: O.mul(dz, _c(0.0, dz)))


@register_backward("where", save=["condition"])
def _where(ctx, dout):
    (cond,) = ctx.saved_tensors
    _, xs, ys = ctx.input_shapes
    zero = _c(0.0, dout)
    gx = sum_to(O.where(cond, dout, zero), xs) if ctx.needs_input_grad[1] else None
    gy = sum_to(O.where(cond, zero, dout), ys) if ctx.needs_input_grad[2] else None
    return None, gx, gy


# -- more elementwise math -----------------------------------------------------------------------
# One table of unary rules: each entry gives the derivative from the saved input ("x") or
# output ("y"), multiplied by dy in one place.

def _one_minus_sq(x):
    return O.sub(_c(1.0, x), O.square(x))


def _sinc_d(x, y):
    # (cos(pi x) - sinc(x)) / x, 0 at x == 0 (the maximum of sinc)
    zero = O.eq(x, _c(0.0, x))
    safe = O.where(zero, _c(1.0, x), x)
    d = O.div(O.sub(O.cos(O.mul(safe, _c(math.pi, x))), y), safe)
    return O.where(zero, _c(0.0, d), d)


def _i1_d(x, y):
    # i1'(x) = i0(x) - i1(x) / x, 1/2 at x == 0
    zero = O.eq(x, _c(0.0, x))
    safe = O.where(zero, _c(1.0, x), x)
    d = O.sub(O.i0(x), O.div(y, safe))
    return O.where(zero, _c(0.5, d), d)


_UNARY_D = {
    # name: (saved, derivative from the saved tensors)
    "asin": (["x"], lambda x: O.rsqrt(_one_minus_sq(x))),
    "acos": (["x"], lambda x: O.neg(O.rsqrt(_one_minus_sq(x)))),
    "atan": (["x"], lambda x: O.reciprocal(O.add(O.square(x), _c(1.0, x)))),
    "asinh": (["x"], lambda x: O.rsqrt(O.add(O.square(x), _c(1.0, x)))),
    "acosh": (["x"], lambda x: O.rsqrt(O.sub(O.square(x), _c(1.0, x)))),
    "atanh": (["x"], lambda x: O.reciprocal(_one_minus_sq(x))),
    "sinh": (["x"], lambda x: O.cosh(x)),
    "cosh": (["x"], lambda x: O.sinh(x)),
    "log2": (["x"], lambda x: O.reciprocal(O.mul(x, _c(math.log(2.0), x)))),
    "log10": (["x"], lambda x: O.reciprocal(O.mul(x, _c(math.log(10.0), x)))),
    "exp2": (["y"], lambda y: O.mul(y, _c(math.log(2.0), y))),
    "erfc": (["x"], lambda x: O.mul(O.exp(O.neg(O.square(x))),
                                    _c(-2.0 / math.sqrt(math.pi), x))),
    "erfinv": (["y"], lambda y: O.mul(O.exp(O.square(y)), _c(math.sqrt(math.pi) / 2, y))),
    "lgamma": (["x"], lambda x: O.digamma(x)),
    "digamma": (["x"], lambda x: O.polygamma(x, n=1)),
    "i0": (["x"], lambda x: O.i1(x)),
    "i1": (["x", "y"], _i1_d),
    "sinc": (["x", "y"], _sinc_d),
}


def _unary_rule(name: str, save: list[str], deriv) -> None:
    @register_backward(name, save=save)
    def rule(ctx, dy):
        return O.mul(dy, deriv(*ctx.saved_tensors))
    rule.__name__ = f"{name}_backward"


for _name, (_save, _d) in _UNARY_D.items():
    _unary_rule(_name, _save, _d)


@register_backward("pow_scalar", save=["x"])
def _pow_scalar(ctx, dy):
    # PyTorch's pow_backward for a number exponent: dy * (e * x ** (e - 1)), the power
    # computed as the forward computes it (x ** 1 is x); zero for e == 0 (also at x == 0)
    (x,) = ctx.saved_tensors
    e = ctx.exponent
    if e == 0.0:
        return O.mul(dy, _c(0.0, dy))
    return O.mul(dy, O.mul(_c(e, x), O.pow_scalar(x, exponent=e - 1.0)))


@register_backward("polygamma", save=["x"])
def _polygamma(ctx, dy):
    (x,) = ctx.saved_tensors
    return O.mul(dy, O.polygamma(x, n=ctx.n + 1))


@register_backward("deg2rad")
def _deg2rad(ctx, dy):
    return O.mul(dy, _c(math.pi / 180.0, dy))


@register_backward("rad2deg")
def _rad2deg(ctx, dy):
    return O.mul(dy, _c(180.0 / math.pi, dy))


register_backward("trunc")(_zero_grad)


@register_backward("frac")
def _frac(ctx, dy):
    return dy


@register_backward("nan_to_num", save=["x"])
def _nan_to_num(ctx, dy):
    (x,) = ctx.saved_tensors
    return keep_where(O.isfinite(x), dy)  # replaced values are constants


# d/dx is log(y) also where x == 0 (the value's 0 there is a convention, not a constant), as
# PyTorch
_binary_rule("xlogy", ["x", "y"], lambda dz, x, y: O.mul(dz, O.log(y)),
             lambda dz, x, y: O.mul(dz, O.div(x, y)), save_for={"x": ["y"]})
_binary_rule("logaddexp", ["x", "y", "z"], lambda dz, x, y, z: O.mul(dz, O.exp(O.sub(x, z))),
             lambda dz, x, y, z: O.mul(dz, O.exp(O.sub(y, z))))
_binary_rule("logaddexp2", ["x", "y", "z"],
             lambda dz, x, y, z: O.mul(dz, O.exp2(O.sub(x, z))),
             lambda dz, x, y, z: O.mul(dz, O.exp2(O.sub(y, z))))
_binary_rule("hypot", ["x", "y", "z"], lambda dz, x, y, z: O.mul(dz, O.div(x, z)),
             lambda dz, x, y, z: O.mul(dz, O.div(y, z)))


def _copysign_dx(dz, x, z):
    # z / x (= ±1), 0 where x == 0, as PyTorch
    zero = O.eq(x, _c(0.0, x))
    r = O.div(z, O.where(zero, _c(1.0, x), x))
    return O.mul(dz, O.where(zero, _c(0.0, r), r))


_binary_rule("copysign", ["x", "z"], _copysign_dx, lambda dz, x, z: O.mul(dz, _c(0.0, dz)))


# -- nextafter, frexp --------------------------------------------------------------------------
# nextafter moves one ulp: the gradient is the identity for ``input`` and zero for ``other``,
# as PyTorch's derivatives.yaml
_binary_rule("nextafter", [], lambda dz: dz, lambda dz: O.mul(dz, _c(0.0, dz)))


@register_backward("frexp", save=["exponent"])
def _frexp(ctx, dm, de):
    # mantissa = x * 2 ** -exponent with the exponent piecewise constant (PyTorch's rule)
    (e,) = ctx.saved_tensors
    return O.mul(dm, O.exp2(O.neg(O.cast(e, dtype=ctx.input_dtypes[0]))))
