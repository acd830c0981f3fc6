"""Elementwise math ops: unary, binary (broadcasting), comparison, logical, bitwise, where,
clamp, cast and clone — definition, xla kernel and SBP signatures side by side, one table each.

Scalar variants (``x + 2``) are functional-layer overloads over these binary primitives with
a cached 0-d operand (OneFlow's ``*_by_tensor`` ops), so a changing Python scalar never
triggers a recompile.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from ..kernels.registry import register_kernel
from ..sharding.sbp import elementwise
from .attrs import scalar_as
from .infer import (
    ANY,
    BOOL,
    FLOAT,
    INTEGRAL,
    NUMBER,
    broadcast_binary,
    broadcast_shapes,
    check_dtype,
    desc,
    same_as_input,
)
from .primitive import define_op
from .registry import Attr

_ELEMENTWISE = elementwise("none")
_LINEAR = elementwise("linear")
_SCALING = elementwise("first")


def _unary(name: str, fn, allowed=FLOAT, sbp=_ELEMENTWISE, attrs=(), out_dtype=None,
           traits=("NoSideEffect",), doc: str = "") -> None:
    define_op(name, inputs=["x"], outputs=["y"], attrs=attrs, sbp=sbp, traits=traits,
              infer=same_as_input(allowed, out_dtype), doc=doc)
    register_kernel(name, fn, name=f"{name}_xla")


# name, kernel, allowed input dtypes, sbp
for _name, _fn, _allowed, _sbp in [
    ("abs", jnp.abs, NUMBER, _ELEMENTWISE),
    ("neg", jnp.negative, NUMBER, _LINEAR),
    ("exp", jnp.exp, FLOAT, _ELEMENTWISE),
    ("log", jnp.log, FLOAT, _ELEMENTWISE),
    ("log1p", jnp.log1p, FLOAT, _ELEMENTWISE),
    ("expm1", jnp.expm1, FLOAT, _ELEMENTWISE),
    ("sqrt", jnp.sqrt, FLOAT, _ELEMENTWISE),
    ("rsqrt", lax.rsqrt, FLOAT, _ELEMENTWISE),
    ("square", jnp.square, NUMBER, _ELEMENTWISE),
    ("reciprocal", jnp.reciprocal, FLOAT, _ELEMENTWISE),
    ("sign", jnp.sign, NUMBER, _ELEMENTWISE),
    ("floor", jnp.floor, FLOAT, _ELEMENTWISE),
    ("ceil", jnp.ceil, FLOAT, _ELEMENTWISE),
    ("round", jnp.round, FLOAT, _ELEMENTWISE),  # half to even, as torch.round
    ("sin", jnp.sin, FLOAT, _ELEMENTWISE),
    ("cos", jnp.cos, FLOAT, _ELEMENTWISE),
    ("tan", jnp.tan, FLOAT, _ELEMENTWISE),
    ("tanh", jnp.tanh, FLOAT, _ELEMENTWISE),
    ("sigmoid", jax.nn.sigmoid, FLOAT, _ELEMENTWISE),
    ("erf", lax.erf, FLOAT, _ELEMENTWISE),
]:
    _unary(_name, _fn, _allowed, _sbp)

_NOGRAD = ("NoSideEffect", "NoGrad")  # bool / integer results carry no gradient
_unary("logical_not", jnp.logical_not, ANY, out_dtype=bool, traits=_NOGRAD)
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
    ("add", jnp.add, ANY, _LINEAR),
    ("sub", jnp.subtract, NUMBER, _LINEAR),
    ("mul", jnp.multiply, ANY, elementwise("first")),
    ("div", jnp.true_divide, FLOAT, elementwise("numerator")),
    ("floor_divide", jnp.floor_divide, NUMBER, _ELEMENTWISE),
    ("trunc_divide", _trunc_divide, NUMBER, _ELEMENTWISE),
    ("remainder", jnp.remainder, NUMBER, _ELEMENTWISE),
    ("fmod", jnp.fmod, NUMBER, _ELEMENTWISE),
    ("pow", _power, NUMBER, _ELEMENTWISE),
    ("maximum", jnp.maximum, ANY, _ELEMENTWISE),
    ("minimum", jnp.minimum, ANY, _ELEMENTWISE),
    ("atan2", jnp.arctan2, FLOAT, _ELEMENTWISE),
]:
    _binary(_name, _fn, _allowed, _sbp)

for _name, _fn in [("bitwise_and", jnp.bitwise_and), ("bitwise_or", jnp.bitwise_or),
                   ("bitwise_xor", jnp.bitwise_xor)]:
    _binary(_name, _fn, INTEGRAL, _ELEMENTWISE, traits=_NOGRAD)

for _name, _fn in [("eq", jnp.equal), ("ne", jnp.not_equal), ("lt", jnp.less),
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
register_kernel("cast", lambda x, dtype: x.astype(dtype), name="cast_xla")


# -- clone -----------------------------------------------------------------------------------
# The identity as a new tensor: elementwise and linear like neg, its backward is the identity.

define_op("clone", inputs=["x"], outputs=["y"], infer=lambda x: desc(x.shape, x.dtype),
          sbp=_LINEAR, doc="A copy of x (a new tensor; JAX arrays are immutable).")
register_kernel("clone", jnp.copy, name="clone_xla")
