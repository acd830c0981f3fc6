"""Backward rules of the special functions (``jflow/ops/special.py``): PyTorch's formulas
(``derivatives.yaml``). The Bessel, Airy and polynomial ops are ``NoGrad`` (PyTorch gives
them no derivative); ``special_zeta`` has none in ``x`` and ``igamma`` / ``igammac`` none in
``a``: asking for one raises ``NotImplementedError`` with PyTorch's message."""

from __future__ import annotations

import math

from ..rule import register_backward
from ._util import O, scalar_like, sum_to


def _c(v: float, like):
    return scalar_like(v, like)


def _unary(name: str, save: list[str], deriv) -> None:
    @register_backward(name, save=save)
    def rule(ctx, dy):
        return O.mul(dy, deriv(*ctx.saved_tensors))
    rule.__name__ = f"{name}_backward"


def _i1e_d(x, y):
    # i0e(x) - i1e(x) (sgn(x) + 1 / x); 1/2 at x == 0
    zero = O.eq(x, _c(0.0, x))
    safe = O.where(zero, _c(1.0, x), x)
    d = O.sub(O.special_i0e(x), O.mul(y, O.add(O.sign(x), O.reciprocal(safe))))
    return O.where(zero, _c(0.5, d), d)


_SQRT_2PI = math.sqrt(2.0 * math.pi)

_D = {
    "special_i0e": (["x", "y"], lambda x, y: O.sub(O.special_i1e(x), O.mul(O.sign(x), y))),
    "special_i1e": (["x", "y"], _i1e_d),
    "special_ndtr": (["x"], lambda x: O.mul(O.exp(O.mul(O.square(x), _c(-0.5, x))),
                                            _c(1.0 / _SQRT_2PI, x))),
    "special_ndtri": (["y"], lambda y: O.mul(O.exp(O.mul(O.square(y), _c(0.5, y))),
                                             _c(_SQRT_2PI, y))),
    # exp(-x^2/2) / sqrt(2 pi) / ndtr(x) = exp(-(log_ndtr(x) + x^2/2)) / sqrt(2 pi): no
    # underflowing ndtr in the denominator
    "special_log_ndtr": (["x", "y"], lambda x, y: O.mul(
        O.exp(O.neg(O.add(y, O.mul(O.square(x), _c(0.5, x))))), _c(1.0 / _SQRT_2PI, x))),
    "special_erfcx": (["x", "y"], lambda x, y: O.sub(O.mul(O.mul(x, y), _c(2.0, x)),
                                                     _c(2.0 / math.sqrt(math.pi), x))),
    "special_entr": (["x"], lambda x: O.neg(O.add(O.log(x), _c(1.0, x)))),
}
for _name, (_save, _d) in _D.items():
    _unary(_name, _save, _d)


@register_backward("special_xlog1py", save=["x", "y"])
def _xlog1py(ctx, dz):
    """d/dx = ``xlog1py(dz, y)`` (0 where x == 0 and y <= -1), d/dy = ``dz x / (1 + y)``."""
    x, y = ctx.saved_tensors
    xs, ys = ctx.input_shapes
    gx = gy = None
    if ctx.needs_input_grad[0]:
        g = O.special_xlog1py(dz, y)
        mask = O.logical_and(O.eq(x, _c(0.0, x)), O.le(y, _c(-1.0, y)))
        gx = sum_to(O.where(mask, _c(0.0, g), g), xs)
    if ctx.needs_input_grad[1]:
        gy = sum_to(O.div(O.mul(dz, x), O.add(y, _c(1.0, y))), ys)
    return gx, gy


def _not_implemented(what: str) -> NotImplementedError:
    return NotImplementedError(f"the derivative for '{what}' is not implemented.")


def _as_float(t, like):
    return t if t._meta.dtype == like._meta.dtype else O.cast(t, dtype=like._meta.dtype)


@register_backward("special_zeta", save=["x", "q"])
def _zeta(ctx, dz):
    """d/dq zeta(x, q) = -x zeta(x + 1, q); none in x (PyTorch: not implemented)."""
    if ctx.needs_input_grad[0]:
        raise _not_implemented("zeta")
    x, q = ctx.saved_tensors
    xf = _as_float(x, q)
    d = O.mul(O.neg(xf), O.special_zeta(O.add(xf, _c(1.0, xf)), q))
    return None, sum_to(O.mul(dz, d), ctx.input_shapes[1])


def _igamma_rule(name: str, sign: float) -> None:
    @register_backward(name, save=["a", "x"])
    def rule(ctx, dz):
        """d/dx = +-exp((a - 1) log x - x - lgamma(a)); none in a (PyTorch)."""
        if ctx.needs_input_grad[0]:
            raise _not_implemented(f"{name}: input")
        a, x = ctx.saved_tensors
        af = _as_float(a, x)
        e = O.sub(O.sub(O.mul(O.sub(af, _c(1.0, af)), O.log(x)), x), O.lgamma(af))
        d = O.exp(e) if sign > 0 else O.neg(O.exp(e))
        return None, sum_to(O.mul(dz, d), ctx.input_shapes[1])
    rule.__name__ = f"{name}_backward"


_igamma_rule("igamma", 1.0)
_igamma_rule("igammac", -1.0)
