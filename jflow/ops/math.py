"""Elementwise math ops: unary, binary (broadcasting), comparison, logical, bitwise, where,
clamp, cast and clone — definition, xla kernel and SBP signatures side by side, one table each.

Scalar variants (``x + 2``) are functional-layer overloads over these binary primitives with
a cached 0-d operand (OneFlow's ``*_by_tensor`` ops), so a changing Python scalar never
triggers a recompile.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ..kernels.registry import forget_kernels, register_kernel
from ..sharding.sbp import elementwise
from .attrs import scalar_as
from .infer import (
    ANY,
    ANY_C,
    BOOL,
    FLOAT,
    FLOAT_C,
    INT,
    INTEGRAL,
    NUMBER,
    NUMBER_C,
    broadcast_binary,
    broadcast_shapes,
    check_dtype,
    desc,
    same_as_input,
)
from .primitive import define_op
from .registry import REQUIRED, Attr, unregister

_ELEMENTWISE = elementwise("none")
_LINEAR = elementwise("linear")
_SCALING = elementwise("first")


def _unary(name: str, fn, allowed=FLOAT, sbp=_ELEMENTWISE, attrs=(), out_dtype=None,
           traits=("NoSideEffect",), doc: str = "") -> None:
    define_op(name, inputs=["x"], outputs=["y"], attrs=attrs, sbp=sbp, traits=traits,
              infer=same_as_input(allowed, out_dtype), doc=doc)
    register_kernel(name, fn, name=f"{name}_xla")


# -- PyTorch's unary functions: one declaration, every part derived -------------------------
# ``unary_function`` declares an op together with PyTorch's surface of a one-tensor function
# (``torch.expm1(x)``, ``x.expm1()``, ``x.expm1_()``, ``torch.expm1_(x)``). The layers above
# derive their parts from it, so adding such a function touches this table, its backward rule
# and its samples only:
#   functional/functors/math.py  the functor ``Expm1`` (bool / integer inputs -> default float)
#   functional/__init__.py       the api entry ``Tensor (Tensor input) => Expm1``, bind_python
#   tensor_methods/methods.py    ``Tensor.expm1`` and ``Tensor.expm1_``
#   tensor_methods/torch_helpers.py  ``torch.expm1_`` (``INPLACE_FUNCTIONS``)

class UnaryFunction(NamedTuple):
    """PyTorch's surface of a declared unary op (see :func:`unary_function`)."""

    name: str
    #: bool / integer inputs: ``"float"`` computes them in the default float dtype,
    #: ``"identity"`` returns them unchanged (floor, ceil, round, trunc)
    integers: str = "float"
    #: whether PyTorch has ``torch.<name>_`` (it has none for erfinv, lgamma, digamma)
    inplace_function: bool = True
    #: whether the api entry ``Tensor (Tensor input) => <Functor>`` is derived; False where
    #: api.yaml writes a richer one (round's ``decimals``)
    api_entry: bool = True

    @property
    def functor(self) -> str:
        """The functor's name in api.yaml: ``log_ndtr`` -> ``LogNdtr``."""
        return "".join(p.capitalize() for p in self.name.split("_"))


#: every declared unary function, in declaration order
UNARY_FUNCTIONS: dict[str, UnaryFunction] = {}
_DERIVERS: list[tuple[Callable[[UnaryFunction], None], Callable[[str], None]]] = []


def derive_unary_parts(derive: Callable[[UnaryFunction], None],
                       forget: Callable[[str], None]) -> None:
    """A higher layer's part of every unary function: ``derive`` runs now for each one
    declared so far and later for each new one; ``forget(name)`` undoes it
    (:func:`forget_unary_function`). Called once per layer at its import."""
    _DERIVERS.append((derive, forget))
    for u in UNARY_FUNCTIONS.values():
        derive(u)


def unary_function(name: str, fn: Callable, allowed=FLOAT, sbp=None, *,
                   integers: str = "float", inplace_function: bool = True,
                   api_entry: bool = True, doc: str = "") -> UnaryFunction:
    """Declare op ``name`` (one input ``x``, one output ``y`` of its dtype, kernel ``fn``)
    and PyTorch's function of that name: every layer registered with
    :func:`derive_unary_parts` adds its part (functor, api entry, Tensor methods, torch's
    in-place function). Its backward rule and samples are still written by hand."""
    if integers not in ("float", "identity"):
        raise ValueError(f"unary_function(): argument 'integers' must be 'float' or "
                         f"'identity', got {integers!r}")
    if name in UNARY_FUNCTIONS:
        raise ValueError(f"unary_function(): '{name}' is already declared")
    _unary(name, fn, allowed, _ELEMENTWISE if sbp is None else sbp, doc=doc)
    u = UnaryFunction(name, integers, inplace_function, api_entry)
    UNARY_FUNCTIONS[name] = u
    try:
        for derive, _ in _DERIVERS:
            derive(u)  # raises where its part's name is taken (Tensor.<name>, an api entry)
    except Exception:
        forget_unary_function(name)  # nothing half-declared stays behind
        raise
    return u


def forget_unary_function(name: str) -> None:
    """Undo :func:`unary_function` (a test's throwaway op): every derived part (each layer
    removes only what it derived), then the op and its kernels."""
    if UNARY_FUNCTIONS.pop(name, None) is None:
        raise KeyError(f"forget_unary_function(): '{name}' is not a declared unary function")
    for _, forget in reversed(_DERIVERS):
        forget(name)
    unregister(name)
    forget_kernels([name])


def _sign(x):
    """PyTorch's ``(0 < x) - (x < 0)``: 0 for nan and for -0.0 (``jnp.sign`` keeps both)."""
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.sign(x)
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


# name, kernel, allowed input dtypes, sbp (functors, methods and api entries by hand)
for _name, _fn, _allowed, _sbp in [
    ("neg", jnp.negative, NUMBER_C, _LINEAR),
    ("square", jnp.square, NUMBER_C, _ELEMENTWISE),
    ("sign", _sign, NUMBER, _ELEMENTWISE),
]:
    _unary(_name, _fn, _allowed, _sbp)

# PyTorch's unary functions (every other part derived: see unary_function):
# name, kernel, allowed input dtypes[, unary_function's keywords where not the default]
_IDENTITY = {"integers": "identity"}  # integer inputs are their own result
for _name, _fn, _allowed, *_how in [
    ("exp", jnp.exp, FLOAT_C),
    ("log", jnp.log, FLOAT_C),
    ("log1p", jnp.log1p, FLOAT),
    ("expm1", jnp.expm1, FLOAT),
    ("sqrt", jnp.sqrt, FLOAT_C),
    ("rsqrt", lax.rsqrt, FLOAT_C),
    ("reciprocal", jnp.reciprocal, FLOAT_C),
    ("floor", jnp.floor, FLOAT, _IDENTITY),
    ("ceil", jnp.ceil, FLOAT, _IDENTITY),
    # half to even, as torch.round; api.yaml's entry adds ``decimals``
    ("round", jnp.round, FLOAT, {**_IDENTITY, "api_entry": False}),
    ("sin", jnp.sin, FLOAT_C),
    ("cos", jnp.cos, FLOAT_C),
    ("tan", jnp.tan, FLOAT_C),
    ("tanh", jnp.tanh, FLOAT_C),
    ("sigmoid", jax.nn.sigmoid, FLOAT_C),
    ("erf", lax.erf, FLOAT),
]:
    unary_function(_name, _fn, _allowed, **(_how[0] if _how else {}))


def _abs_infer(x):
    """abs keeps real dtypes; a complex input's modulus is real (complex64 -> float32)."""
    check_dtype(x, NUMBER_C, "input")
    d = np.dtype(x.dtype)
    return desc(x.shape, np.finfo(d).dtype if d.kind == "c" else d)


define_op("abs", inputs=["x"], outputs=["y"], sbp=_ELEMENTWISE, infer=_abs_infer)
register_kernel("abs", jnp.abs, name="abs_xla")

_NOGRAD = ("NoSideEffect", "NoGrad")  # bool / integer results carry no gradient
_unary("logical_not", jnp.logical_not, ANY_C, out_dtype=bool, traits=_NOGRAD)
_unary("bitwise_not", jnp.invert, INTEGRAL, traits=_NOGRAD)


def _binary(name: str, fn, allowed=NUMBER, sbp=_ELEMENTWISE, out_dtype=None,
            traits=("NoSideEffect",)) -> None:
    define_op(name, inputs=["x", "y"], outputs=["z"], sbp=sbp, traits=traits,
              infer=broadcast_binary(allowed, out_dtype))
    register_kernel(name, fn, name=f"{name}_xla")


def _trunc_divide(x, y):
    if jnp.issubdtype(x.dtype, jnp.integer):
        return lax.div(*jnp.broadcast_arrays(x, y))  # C division truncates toward zero
    return jnp.trunc(x / y)


def _power(x, y):
    """``x ** y``, with PyTorch's result for a signed integer raised to a negative power
    (XLA's is unspecified): ``1`` for base 1, ``±1`` for base -1 (by the exponent's parity),
    else ``0`` (C's truncation of ``1 / x ** -y``)."""
    if not jnp.issubdtype(x.dtype, jnp.signedinteger):
        return jnp.power(x, y)
    x, y = jnp.broadcast_arrays(x, y)
    neg = y < 0
    pos = jnp.power(x, jnp.where(neg, jnp.zeros_like(y), y))
    minus_one = jnp.where((y & 1) == 1, -jnp.ones_like(x), jnp.ones_like(x))
    inverse = jnp.where(x == 1, x, jnp.where(x == -1, minus_one, jnp.zeros_like(x)))
    return jnp.where(neg, inverse, pos)


for _name, _fn, _allowed, _sbp in [
    ("add", jnp.add, ANY_C, _LINEAR),
    ("sub", jnp.subtract, NUMBER_C, _LINEAR),
    ("mul", jnp.multiply, ANY_C, elementwise("first")),
    ("div", jnp.true_divide, FLOAT_C, elementwise("numerator")),
    ("floor_divide", jnp.floor_divide, NUMBER, _ELEMENTWISE),
    ("trunc_divide", _trunc_divide, NUMBER, _ELEMENTWISE),
    ("remainder", jnp.remainder, NUMBER, _ELEMENTWISE),
    ("fmod", jnp.fmod, NUMBER, _ELEMENTWISE),
    ("pow", _power, NUMBER_C, _ELEMENTWISE),
    ("maximum", jnp.maximum, ANY, _ELEMENTWISE),
    ("minimum", jnp.minimum, ANY, _ELEMENTWISE),
    ("atan2", jnp.arctan2, FLOAT, _ELEMENTWISE),
]:
    _binary(_name, _fn, _allowed, _sbp)

def _pow_scalar(x, exponent: float):
    """``x ** exponent`` for a float tensor and a Python number known when the op is called,
    computed as PyTorch's CPU kernel computes it: 2, 3 and -2 by multiplication (``x * x``,
    ``x * x * x``, ``1 / (x * x)``), -1, 0.5 and -0.5 as reciprocal, sqrt and rsqrt, 1 as
    the input, any other exponent by ``pow``. Why an op of its own: ``x ** 3.0`` through
    ``pow`` passes the exponent as a runtime operand (no compile per value), and XLA's
    general ``pow`` of a runtime exponent (``exp(y * log x)`` with its sign and edge cases)
    is ~10x slower than two multiplications and rounds differently from PyTorch."""
    if exponent == 2.0:
        return x * x
    if exponent == 3.0:
        return x * x * x
    if exponent == -2.0:
        return 1 / (x * x)
    if exponent == -1.0:
        return 1 / x
    if exponent == 0.5:
        return lax.sqrt(x)
    if exponent == -0.5:
        return lax.rsqrt(x)
    if exponent == 1.0:
        return x
    return lax.pow(x, jnp.asarray(exponent, x.dtype))


_unary("pow_scalar", _pow_scalar, FLOAT,
       attrs=[Attr("exponent", "double", REQUIRED, static=True)],
       doc="x ** exponent, the exponent a Python number (static: one executable per value)")

for _name, _fn in [("bitwise_and", jnp.bitwise_and), ("bitwise_or", jnp.bitwise_or),
                   ("bitwise_xor", jnp.bitwise_xor)]:
    _binary(_name, _fn, INTEGRAL, _ELEMENTWISE, traits=_NOGRAD)

for _name, _fn in [("eq", jnp.equal), ("ne", jnp.not_equal)]:  # complex too, as PyTorch
    _binary(_name, _fn, ANY_C, _ELEMENTWISE, out_dtype=bool, traits=_NOGRAD)
for _name, _fn in [("lt", jnp.less),
                   ("le", jnp.less_equal), ("gt", jnp.greater), ("ge", jnp.greater_equal),
                   ("logical_and", jnp.logical_and), ("logical_or", jnp.logical_or),
                   ("logical_xor", jnp.logical_xor)]:
    _binary(_name, _fn, ANY, _ELEMENTWISE, out_dtype=bool, traits=_NOGRAD)


def _where_infer(condition, x, y):
    check_dtype(condition, BOOL, "condition")
    if x.dtype != y.dtype:
        raise TypeError(f"x and y must have the same dtype, got {x.dtype} and {y.dtype}")
    return desc(broadcast_shapes(condition.shape, x.shape, y.shape), x.dtype)


define_op("where", inputs=["condition", "x", "y"], outputs=["out"], infer=_where_infer,
          sbp=_ELEMENTWISE)
register_kernel("where", jnp.where, name="where_xla")


def _clamp_infer(x, min, max):  # noqa: A002
    check_dtype(x, NUMBER, "input")
    if min is None and max is None:
        raise ValueError("at least one of min and max must be given")
    return desc(x.shape, x.dtype)


def _clamp(x, min, max):  # noqa: A002
    """``min(max(x, min), max)``: with ``min > max`` every value is ``max``, as PyTorch (and
    NumPy's clip) define it, so that case is no error. ``min`` / ``max`` are dynamic (0-d
    arrays) when given; ``None`` is static, so the ``is not None`` tests stay Python."""
    if min is not None:
        x = jnp.maximum(x, scalar_as(min, x.dtype))
    if max is not None:
        x = jnp.minimum(x, scalar_as(max, x.dtype))
    return x


define_op("clamp", inputs=["x"], outputs=["y"],
          attrs=[Attr("min", "double", None), Attr("max", "double", None)],
          infer=_clamp_infer, sbp=_ELEMENTWISE)
register_kernel("clamp", _clamp, name="clamp_xla")


def _cast_infer(x, dtype):
    return desc(x.shape, dtype)


define_op("cast", inputs=["x"], outputs=["y"], attrs=[Attr("dtype", "dtype")],
          infer=_cast_infer, sbp=_ELEMENTWISE)
def _cast(x, dtype):
    # complex -> real keeps the real part (PyTorch's cast; also the backward of real -> complex).
    if jnp.iscomplexobj(x) and not jnp.issubdtype(dtype, jnp.complexfloating):
        x = jnp.real(x)
    return x.astype(dtype)


register_kernel("cast", _cast, name="cast_xla")


# -- clone -----------------------------------------------------------------------------------
# The identity as a new tensor: elementwise and linear like neg, its backward is the identity.

define_op("clone", inputs=["x"], outputs=["y"], infer=lambda x: desc(x.shape, x.dtype),
          sbp=_LINEAR, doc="A copy of x (a new tensor; JAX arrays are immutable).")
register_kernel("clone", jnp.copy, name="clone_xla")


# -- more elementwise math --------------------------------------------------------------------
# Float-only unary functions, PyTorch's binary float functions and the float predicates. The
# functors (``functional/functors/math.py``) promote integer inputs as PyTorch does.

def _digamma(x):
    """``lax.digamma`` gives nan at 0; PyTorch gives ``copysign(inf, -x)`` there (a pole)."""
    pole = jnp.copysign(jnp.asarray(jnp.inf, x.dtype), -x)
    return jnp.where(x == 0, pole, lax.digamma(x))


def _cot_derivative_coefs(n: int) -> list[int]:
    """Coefficients (lowest power first) of ``P_n`` with ``d^n/dy^n cot(y) = P_n(cot(y))``:
    ``P_0(c) = c``, ``P_{k+1}(c) = -(1 + c^2) P_k'(c)`` (exact Python integers)."""
    p = [0, 1]
    for _ in range(n):
        d = [i * p[i] for i in range(1, len(p))] + [0, 0]  # P'
        p = [-(d[i] + (d[i - 2] if i >= 2 else 0)) for i in range(len(d))]
    while len(p) > 1 and p[-1] == 0:
        p.pop()
    return p


def _polygamma_pos(x, n):
    """``psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x)``: JAX's formula, right for x > 0 only."""
    return jax.scipy.special.polygamma(n, x)


def _polygamma_n(x, n):
    """``psi^(n)(x)``, ``n >= 1``, for every real x. JAX's zeta-based value is wrong for
    x < 0 (``polygamma(1, -12.3)`` gave -0.078, not 15.0), so x < 1/2 goes through the
    reflection formula ``psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x))``
    (differentiate ``psi(1 - x) - psi(x) = pi cot(pi x)`` n times), with ``cot(pi x)`` taken
    at ``x - round(x)`` (exact, so large |x| keep their precision). Poles (x a non-positive
    integer) give ``(-1)^(n+1) inf``; ``+inf`` gives 0 for n == 1 and nan above, ``-inf``
    nan for n == 1 and ``(-1)^(n+1) inf`` above (PyTorch's values there)."""
    dt = x.dtype
    reflect = x < 0.5
    one = jnp.asarray(1.0, dt)
    pos = _polygamma_pos(jnp.where(reflect, one - x, x), n)
    r = x - jnp.round(x)
    pr = jnp.asarray(np.pi, dt) * r
    cot = jnp.cos(pr) / jnp.sin(jnp.where(r == 0, one, pr))
    poly = jnp.zeros_like(x)
    for c in reversed(_cot_derivative_coefs(n)):  # Horner
        poly = poly * cot + jnp.asarray(float(c), dt)
    refl = (-1.0) ** n * pos - jnp.asarray(np.pi ** (n + 1), dt) * poly
    y = jnp.where(reflect, refl, pos)
    inf = jnp.asarray(np.inf, dt)
    signed_inf = inf if n % 2 else -inf
    y = jnp.where((x <= 0) & (r == 0), signed_inf, y)
    y = jnp.where(jnp.isposinf(x), jnp.asarray(0.0 if n == 1 else np.nan, dt), y)
    return jnp.where(jnp.isneginf(x), jnp.asarray(np.nan, dt) if n == 1 else signed_inf, y)


def _polygamma(x, n):
    """The ``n``-th derivative of digamma (``n`` static); ``n == 0`` is digamma itself."""
    if n == 0:
        return _digamma(x)
    return _polygamma_n(x.astype(jnp.float32) if x.dtype.itemsize < 4 else x,
                        n).astype(x.dtype)


def _i1(x):
    return jax.scipy.special.i1(x.astype(jnp.float32) if x.dtype.itemsize < 4
                                else x).astype(x.dtype)


def _f32(fn):
    """``fn`` computed in float32 for 16-bit floats, rounded once at the end (PyTorch's CPU
    kernels do this; a composite formula in bfloat16 rounds at every step)."""
    def kernel(*args):
        dt = args[0].dtype
        if dt.itemsize >= 4:
            return fn(*args)
        return fn(*(a.astype(jnp.float32) for a in args)).astype(dt)
    kernel.__name__ = getattr(fn, "__name__", "kernel")
    return kernel


# PyTorch's unary functions (every other part derived: see unary_function):
# name, kernel, sbp[, unary_function's keywords where not the default]
_NO_TORCH_INPLACE = {"inplace_function": False}  # PyTorch has no torch.<name>_
for _name, _fn, _sbp, *_how in [
    ("asin", jnp.arcsin, _ELEMENTWISE),
    ("acos", jnp.arccos, _ELEMENTWISE),
    ("atan", jnp.arctan, _ELEMENTWISE),
    ("asinh", jnp.arcsinh, _ELEMENTWISE),
    ("acosh", jnp.arccosh, _ELEMENTWISE),
    ("atanh", jnp.arctanh, _ELEMENTWISE),
    ("sinh", jnp.sinh, _ELEMENTWISE),
    ("cosh", jnp.cosh, _ELEMENTWISE),
    ("log2", jnp.log2, _ELEMENTWISE),
    ("log10", jnp.log10, _ELEMENTWISE),
    ("exp2", jnp.exp2, _ELEMENTWISE),
    ("erfc", lax.erfc, _ELEMENTWISE),
    ("erfinv", _f32(lax.erf_inv), _ELEMENTWISE, _NO_TORCH_INPLACE),
    ("lgamma", _f32(lax.lgamma), _ELEMENTWISE, _NO_TORCH_INPLACE),
    ("digamma", _f32(_digamma), _ELEMENTWISE, _NO_TORCH_INPLACE),
    ("i0", _f32(jnp.i0), _ELEMENTWISE),
    ("sinc", _f32(jnp.sinc), _ELEMENTWISE),  # normalised: sin(pi x) / (pi x), as torch.sinc
    ("deg2rad", jnp.deg2rad, _LINEAR),
    ("rad2deg", jnp.rad2deg, _LINEAR),
    ("trunc", jnp.trunc, _ELEMENTWISE, _IDENTITY),
]:
    unary_function(_name, _fn, FLOAT, _sbp, **(_how[0] if _how else {}))

# float-only unary ops with a surface of their own: i1 is torch.special's only (its functor in
# functors/special.py), api.yaml binds frac to its op (x - trunc(x): x's sign kept, as torch)
for _name, _fn in [("i1", _i1), ("frac", lambda x: x - jnp.trunc(x))]:
    _unary(_name, _fn, FLOAT, _ELEMENTWISE)

_unary("polygamma", _polygamma, FLOAT, attrs=[Attr("n", "int64", REQUIRED)],
       doc="The n-th derivative of digamma (n >= 0, static).")

for _name, _fn in [("isnan", jnp.isnan), ("isinf", jnp.isinf), ("isfinite", jnp.isfinite),
                   ("isposinf", jnp.isposinf), ("isneginf", jnp.isneginf)]:
    _unary(_name, _fn, ANY, out_dtype=bool, traits=_NOGRAD)


def _nan_to_num(x, nan, posinf, neginf):
    """nan, +inf and -inf replaced; an unset ``posinf`` / ``neginf`` (static ``None``) is the
    dtype's largest / lowest finite value, as PyTorch. The values are dynamic attrs (0-d
    arrays): arithmetic only."""
    info = jnp.finfo(x.dtype)
    hi = jnp.asarray(info.max, x.dtype) if posinf is None else scalar_as(posinf, x.dtype)
    lo = jnp.asarray(info.min, x.dtype) if neginf is None else scalar_as(neginf, x.dtype)
    y = jnp.where(jnp.isnan(x), scalar_as(nan, x.dtype), x)
    return jnp.where(jnp.isposinf(x), hi, jnp.where(jnp.isneginf(x), lo, y))


define_op("nan_to_num", inputs=["x"], outputs=["y"],
          attrs=[Attr("nan", "double", 0.0), Attr("posinf", "double", None),
                 Attr("neginf", "double", None)],
          infer=same_as_input(FLOAT), sbp=_ELEMENTWISE)
register_kernel("nan_to_num", _nan_to_num, name="nan_to_num_xla")


def _xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0`` unless ``y`` is nan (PyTorch)."""
    x, y = jnp.broadcast_arrays(x, y)
    zero = (x == 0) & ~jnp.isnan(y)
    return jnp.where(zero, jnp.zeros_like(x), x * jnp.log(jnp.where(zero, jnp.ones_like(y), y)))


def _logaddexp2(x, y):
    """``log2(2^x + 2^y)``, stable: ``max + log2(1 + 2^-(|x - y|))`` (equal infinities give
    the infinity, as PyTorch, rather than the nan of ``inf - inf``)."""
    m = jnp.maximum(x, y)
    d = jnp.abs(x - y)
    r = m + jnp.log1p(jnp.exp2(-d)) / jnp.asarray(jnp.log(2.0), x.dtype)
    return jnp.where(x == y, x + jnp.asarray(1.0, x.dtype), r)


def _logaddexp(x, y):
    m = jnp.maximum(x, y)
    r = m + jnp.log1p(jnp.exp(-jnp.abs(x - y)))
    return jnp.where(x == y, x + jnp.asarray(jnp.log(2.0), x.dtype), r)


for _name, _fn, _sbp in [
    ("xlogy", _f32(_xlogy), elementwise("numerator")),  # linear in x (P, B -> P)
    ("logaddexp", _f32(_logaddexp), _ELEMENTWISE),
    ("logaddexp2", _f32(_logaddexp2), _ELEMENTWISE),
    ("hypot", _f32(jnp.hypot), _ELEMENTWISE),
    ("copysign", jnp.copysign, _ELEMENTWISE),
]:
    _binary(_name, _fn, FLOAT, _sbp)


# -- integer shifts, gcd / lcm, nextafter, frexp (torch.bitwise_*_shift, gcd, lcm, ...) -------

def _shift_amount(x, y):
    """The shift counts as ``x``'s dtype and where they reach past the bit width (or are
    negative): PyTorch's result there is defined (0, or -1 for a negative value shifted
    right); XLA's is not."""
    x, y = jnp.broadcast_arrays(x, y)
    bits = np.dtype(x.dtype).itemsize * 8
    out = (y >= bits) if jnp.issubdtype(y.dtype, jnp.unsignedinteger) else (y < 0) | (y >= bits)
    return x, jnp.where(out, jnp.zeros_like(y), y), out


def _shift_left(x, y):
    x, n, out = _shift_amount(x, y)
    return jnp.where(out, jnp.zeros_like(x), lax.shift_left(x, n))


def _shift_right(x, y):
    x, n, out = _shift_amount(x, y)
    if jnp.issubdtype(x.dtype, jnp.signedinteger):
        far = jnp.where(x < 0, -jnp.ones_like(x), jnp.zeros_like(x))
        return jnp.where(out, far, lax.shift_right_arithmetic(x, n))
    return jnp.where(out, jnp.zeros_like(x), lax.shift_right_logical(x, n))


def _lcm(x, y):
    """``|x / gcd(x, y) * y|`` (0 when either is 0), wrapping on overflow as PyTorch."""
    x, y = jnp.broadcast_arrays(x, y)
    g = jnp.gcd(x, y)
    q = lax.div(x, jnp.where(g == 0, jnp.ones_like(g), g))
    return jnp.where(g == 0, jnp.zeros_like(x), jnp.abs(q * y))


for _name, _fn in [("bitwise_left_shift", _shift_left), ("bitwise_right_shift", _shift_right),
                   ("gcd", jnp.gcd), ("lcm", _lcm)]:
    _binary(_name, _fn, INT, _ELEMENTWISE, traits=_NOGRAD)

_binary("nextafter", jnp.nextafter, FLOAT, _ELEMENTWISE)


def _frexp_infer(x):
    check_dtype(x, FLOAT, "input")
    return desc(x.shape, x.dtype), desc(x.shape, np.int32)


def _frexp(x):
    """``x = mantissa * 2 ** exponent``, ``0.5 <= |mantissa| < 1``; zero, inf and nan give
    themselves with exponent 0 (C's frexp, as PyTorch). Computed on the bits, so subnormal
    inputs are exact where a float multiply would flush them to zero."""
    fi = jnp.finfo(x.dtype)
    width, p = np.dtype(x.dtype).itemsize * 8, int(fi.nmant)
    bias = (1 << (width - p - 2)) - 1  # the exponent bias: 127 for float32
    u = {16: jnp.uint16, 32: jnp.uint32, 64: jnp.uint64}[width]
    one = u(1)
    bits = lax.bitcast_convert_type(x, u)
    frac_mask = (one << u(p)) - one
    sign = bits & ~((one << u(width - 1)) - one)
    ex = ((bits >> u(p)) & ((one << u(width - p - 1)) - one)).astype(jnp.int32)
    frac = bits & frac_mask
    sub = ex == 0  # subnormal (or zero): normalise the fraction
    shift = lax.clz(frac).astype(jnp.int32) - (width - p) + 1
    frac = jnp.where(sub, (frac << jnp.where(sub, shift, 0).astype(u)) & frac_mask, frac)
    e = jnp.where(sub, -(bias - 2) - shift, ex - (bias - 1))
    m = lax.bitcast_convert_type(sign | (u(bias - 1) << u(p)) | frac, x.dtype)
    special = (x == 0) | ~jnp.isfinite(x)
    return jnp.where(special, x, m), jnp.where(special, 0, e).astype(jnp.int32)


define_op("frexp", inputs=["x"], outputs=["mantissa", "exponent"], infer=_frexp_infer,
          sbp=_ELEMENTWISE)
register_kernel("frexp", _frexp, name="frexp_xla")
