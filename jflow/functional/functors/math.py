"""Functors of the elementwise math ops (``jflow/ops/math.py``): dtype promotion, then the op.

Binary ops come in three forms built by one factory: tensor-tensor (``Add``), tensor-scalar
(``ScalarAdd``) and scalar-tensor (``ScalarRAdd``, for reflected Python operators).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from ... import dtypes as _dt
from ...lazy_mode.checks import defer_check
from ...meta import no_data
from ...ops import get
from ...ops.math import UnaryFunction, derive_unary_parts
from ...tensor import Tensor, _wrap
from ..promotion import (
    assign_inplace,
    cast,
    default_float_np,
    promote,
    result_dtype,
    scalar_result_dtype,
    scalar_tensor,
    to_float,
)
from ..registry import FUNCTORS, functor
from ._checks import is_float as _is_float
from ._checks import torch_name as _torch_name

_BOOL = np.dtype(np.bool_)


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def _prepare(style: str, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    if style == "logical":
        return cast(a, _BOOL), cast(b, _BOOL)
    a, b = promote(a, b)
    if style == "true_div" and a._meta.dtype.kind in "iub":
        f = default_float_np()
        return cast(a, f), cast(b, f)
    return a, b


def _scalar_dtype(style: str, t: Tensor, s: Any) -> np.dtype:
    if style == "logical":
        return _BOOL
    d = scalar_result_dtype(t, s)
    if style == "true_div" and d.kind in "iub":
        return default_float_np()
    return d


_SUB_BOOL = ("sub: Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
             "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
#: Integer division ops whose Python-scalar form checks for a zero divisor (the kernels follow
#: XLA, which returns an unspecified value for an integer division by zero).
_INT_DIVISION = ("floor_divide", "trunc_divide", "remainder", "fmod")


def _sub_check(a: Any, b: Any) -> None:
    """PyTorch refuses ``-`` on bools (a bool tensor or a bool scalar): RuntimeError."""
    for v in (a, b):
        if (v._meta.dtype == _BOOL) if isinstance(v, Tensor) else isinstance(v, bool):
            raise RuntimeError(_SUB_BOOL)


def _check_int_divisor(op_name: str, divisor: Tensor) -> None:
    """An integer divisor holding a zero raises ZeroDivisionError, as PyTorch on CPU (XLA would
    return an unspecified value). Checked on the host for concrete values; under a trace it
    cannot be, and XLA's result stands."""
    if divisor._meta.dtype.kind not in "iu":
        return

    def check(nonzero: Any) -> None:
        if not nonzero:
            raise ZeroDivisionError(f"{op_name}: integer division by zero")
    if defer_check(_all_nonzero, (divisor,), check,  # (lazy mode: checked when it runs)
                   lambda a: (np.all(a != 0),)):
        return
    v = divisor._value
    if not isinstance(v, Tracer):
        check(np.all(np.asarray(v)))


@jax.jit
def _all_nonzero(v: Any) -> Any:
    return jnp.all(v != 0)


_pow_scalar = get("pow_scalar").apply
#: ``x ** n`` for these Python numbers runs the op ``pow_scalar`` (``jflow/ops/math.py``):
#: PyTorch's CPU kernel specializes them (multiplications, reciprocal, sqrt, rsqrt), and for
#: float32 / float64 its results are those bit for bit; XLA's general ``pow`` of a runtime
#: exponent is ~10x slower (GELU's tanh approximation ``x ** 3``, RMSNorm's ``x ** 2``).
#: Other exponents, and reduced-precision floats (PyTorch computes those in float32 and
#: rounds at different points), keep ``pow`` with the exponent as a runtime operand.
_POW_SCALAR_EXPONENTS = frozenset({2.0, 3.0, -2.0, -1.0, 0.5, -0.5})
_POW_SCALAR_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


def _check_int_power(input: Tensor, exponent: Any) -> None:
    """PyTorch refuses an integer (or bool) tensor to a negative Python integer power, whose
    result would truncate to 0 (RuntimeError). A negative *tensor* exponent is allowed, as
    in PyTorch: the kernel defines its result (see ``jflow/ops/math.py``), so no value of
    the exponent is read on the host."""
    if input._meta.dtype.kind in "iub" and isinstance(exponent, (int, np.integer)) \
            and exponent < 0:
        raise RuntimeError(f"pow(): Integers to negative integer powers are not allowed "
                           f"(input is {input.dtype}, exponent is {exponent})")


def _binary_functors(op_name: str, style: str) -> None:
    apply = get(op_name).apply
    name = _camel(op_name)
    is_sub = op_name == "sub"
    is_pow = op_name == "pow"
    int_div = op_name in _INT_DIVISION
    logical = style == "logical"

    # same dtypes need no promotion, except where the op's dtype differs from the inputs'
    same_ok = style == "arith" and not is_sub and not int_div

    def tensor_tensor(input: Tensor, other: Tensor) -> Tensor:
        d = input._meta.dtype
        if d == other._meta.dtype and (same_ok or (is_sub and d != _BOOL)):  # the hot path
            return apply(input, other)
        if is_sub:
            _sub_check(input, other)
        if input._meta.dtype == other._meta.dtype and style != "logical" and (
                style != "true_div" or input._meta.dtype.kind == "f"):
            a, b = input, other
        else:
            a, b = _prepare(style, input, other)
        if int_div:
            _check_int_divisor(op_name, b)
        return apply(a, b)

    def tensor_scalar(input: Tensor, other: Any) -> Tensor:
        d = input._meta.dtype
        if is_pow and d in _POW_SCALAR_DTYPES and other.__class__ in (int, float) \
                and other in _POW_SCALAR_EXPONENTS:
            return _pow_scalar(input, exponent=float(other))
        if other.__class__ is float and d.kind == "f" and not logical:  # the hot path: a
            return apply(input, scalar_tensor(other, d))  # float never promotes a float tensor
        if is_sub:
            _sub_check(input, other)
        elif is_pow:
            _check_int_power(input, other)
        d = _scalar_dtype(style, input, other)
        if int_div and other == 0 and d.kind in "iu":
            raise ZeroDivisionError(f"{op_name}: integer division by zero")
        return apply(cast(input, d), scalar_tensor(other, d))

    def scalar_tensor_(input: Any, other: Tensor) -> Tensor:
        d = other._meta.dtype
        if input.__class__ is float and d.kind == "f" and not logical:  # (as tensor_scalar)
            return apply(scalar_tensor(input, d), other)
        if is_sub:
            _sub_check(input, other)
        d = _scalar_dtype(style, other, input)
        b = cast(other, d)
        if int_div:
            _check_int_divisor(op_name, b)
        return apply(scalar_tensor(input, d), b)

    tensor_tensor.__name__, tensor_scalar.__name__ = name, f"Scalar{name}"
    scalar_tensor_.__name__ = f"ScalarR{name}"
    functor(name, checks=int_div)(tensor_tensor)
    functor(f"Scalar{name}")(tensor_scalar)
    functor(f"ScalarR{name}", checks=int_div)(scalar_tensor_)


for _op, _style in [("mul", "arith"), ("floor_divide", "arith"), ("trunc_divide", "arith"),
                    ("remainder", "arith"), ("fmod", "arith"), ("pow", "arith"),
                    ("maximum", "arith"), ("minimum", "arith"), ("atan2", "true_div"),
                    ("div", "true_div"), ("eq", "arith"), ("ne", "arith"), ("lt", "arith"),
                    ("le", "arith"), ("gt", "arith"), ("ge", "arith"),
                    ("logical_and", "logical"), ("logical_or", "logical"),
                    ("logical_xor", "logical"), ("bitwise_and", "arith"),
                    ("bitwise_or", "arith"), ("bitwise_xor", "arith"), ("add", "arith"),
                    ("sub", "arith"),
                    # xlogy / copysign compute integers in the default float dtype
                    # (as atan2); logaddexp / logaddexp2 / hypot refuse them (the op's error)
                    ("xlogy", "true_div"), ("copysign", "true_div"), ("logaddexp", "arith"),
                    ("logaddexp2", "arith"), ("hypot", "arith")]:
    _binary_functors(_op, _style)

from ..registry import FUNCTORS as _F  # noqa: E402

_add_tt, _add_ts, _sub_tt, _sub_ts = _F["Add"], _F["ScalarAdd"], _F["Sub"], _F["ScalarSub"]
_mul_tt, _mul_ts = _F["Mul"], _F["ScalarMul"]
_add_op = get("add").apply
_div_tt, _div_ts, _rdiv = _F["Div"], _F["ScalarDiv"], _F["ScalarRDiv"]
_fdiv_tt, _fdiv_ts, _tdiv_tt, _tdiv_ts = (_F["FloorDivide"], _F["ScalarFloorDivide"],
                                          _F["TruncDivide"], _F["ScalarTruncDivide"])
_rfdiv, _rtdiv = _F["ScalarRFloorDivide"], _F["ScalarRTruncDivide"]


def _finish(input: Tensor, out: Tensor, inplace: bool, fname: str) -> Tensor:
    return assign_inplace(input, out, fname) if inplace else out


def _check_alpha(fname: str, dtype: np.dtype, alpha: Any) -> None:
    """PyTorch's check of ``alpha`` against the result dtype of add/sub (RuntimeError): a
    bool alpha only for a bool result, a float alpha only for a floating one."""
    if isinstance(alpha, bool) and dtype != _BOOL:
        raise RuntimeError(f"{fname}(): Boolean alpha only supported for Boolean results "
                           f"(the result is {_dt.from_numpy_dtype(dtype)})")
    if isinstance(alpha, float) and dtype.kind in "iub":
        raise RuntimeError(f"{fname}(): For integral input tensors, argument alpha must not be "
                           f"a floating point number (got alpha={alpha})")


def _scaled(fname: str, input: Tensor, other: Tensor, alpha: Any) -> Tensor:
    """``alpha * other`` for add/sub, in the result dtype of ``input`` and ``other``: alpha
    takes no part in the promotion (PyTorch: ``add(bool, bool, alpha=2)`` is bool ``True``,
    not int64 ``3``)."""
    d = result_dtype(input, other)
    _check_alpha(fname, d, alpha)
    if alpha == 1:
        return other
    return _mul_ts(cast(other, d), bool(alpha) if d == _BOOL else alpha)


def _scaled_scalar(fname: str, input: Tensor, other: Any, alpha: Any) -> Any:
    """``alpha * other`` for add/sub with a Python scalar ``other``, in its category in the
    result (a bool result stays a bool: ``True`` and not ``2``)."""
    d = scalar_result_dtype(input, other)
    _check_alpha(fname, d, alpha)
    if d == _BOOL:
        return bool(other) and bool(alpha)
    return other if alpha == 1 else other * alpha


@functor("AddAlpha")
def add(input: Tensor, other: Tensor, alpha: Any, inplace: bool) -> Tensor:
    if alpha.__class__ is int and alpha == 1:  # the default: valid for every dtype
        if not inplace:  # the hot path: no extra call layers
            if input._meta.dtype == other._meta.dtype:
                return _add_op(input, other)
            return _add_tt(input, other)
    else:
        other = _scaled("add", input, other, alpha)
    return _finish(input, _add_tt(input, other), inplace, "add")


@functor("ScalarAddAlpha")
def scalar_add(input: Tensor, other: Any, alpha: Any, inplace: bool) -> Tensor:
    if alpha.__class__ is not int or alpha != 1:
        other = _scaled_scalar("add", input, other, alpha)
    return _finish(input, _add_ts(input, other), inplace, "add")


@functor("SubAlpha")
def sub(input: Tensor, other: Tensor, alpha: Any, inplace: bool) -> Tensor:
    if alpha.__class__ is not int or alpha != 1:
        _sub_check(input, other)  # before scaling casts a bool ``other`` away
        other = _scaled("sub", input, other, alpha)
    return _finish(input, _sub_tt(input, other), inplace, "sub")


@functor("ScalarSubAlpha")
def scalar_sub(input: Tensor, other: Any, alpha: Any, inplace: bool) -> Tensor:
    if alpha.__class__ is not int or alpha != 1:
        _sub_check(input, other)
        other = _scaled_scalar("sub", input, other, alpha)
    return _finish(input, _sub_ts(input, other), inplace, "sub")


def _check_tensor_alpha(fname: str, dtype: np.dtype, alpha: Tensor) -> None:
    """The checks of :func:`_check_alpha` for a 0-d tensor ``alpha`` (by its category)."""
    if alpha._meta.ndim != 0:
        raise RuntimeError(f"{fname}(): a tensor alpha must be 0-dimensional, got shape "
                           f"{list(alpha._meta.shape)}")
    kind = alpha._meta.dtype.kind
    if kind == "b" and dtype != _BOOL:
        raise RuntimeError(f"{fname}(): Boolean alpha only supported for Boolean results "
                           f"(the result is {_dt.from_numpy_dtype(dtype)})")
    if kind not in "iub" and dtype.kind in "iub":
        raise RuntimeError(f"{fname}(): For integral input tensors, argument alpha must not be "
                           f"a floating point number (got a {alpha.dtype} alpha)")


def tensor_alpha(fname: str, input: Tensor, other: Any, alpha: Tensor,
                 inplace: bool = False) -> Tensor:
    """``add``/``sub`` with a 0-d tensor ``alpha`` (an optimizer's traced learning rate under
    ``flow.jit`` / ``nn.Graph``): ``input ± alpha * other``.

    As with a Python-number alpha, ``alpha`` takes no part in type promotion: ``other`` and
    ``alpha`` are multiplied in the result dtype of ``input`` and ``other`` (a float64 lr
    scales a float32 update in float32), and a floating alpha is refused for an integral
    result. ``alpha`` stays on the tape (a gradient reaches it if it requires grad).
    """
    if fname not in ("add", "sub"):
        raise ValueError(f"tensor_alpha: unknown op {fname!r}")
    is_tensor = isinstance(other, Tensor)
    if fname == "sub":
        _sub_check(input, other)
    d = result_dtype(input, other) if is_tensor else scalar_result_dtype(input, other)
    _check_tensor_alpha(fname, d, alpha)
    b = cast(other, d) if is_tensor else scalar_tensor(other, d)
    a = cast(alpha, d)
    scaled = _F["LogicalAnd"](b, a) if d == _BOOL else _mul_tt(b, a)
    out = (_add_tt if fname == "add" else _sub_tt)(input, scaled)
    return _finish(input, out, inplace, fname)


@functor("MulInplace")
def mul(input: Tensor, other: Tensor, inplace: bool) -> Tensor:
    return _finish(input, _mul_tt(input, other), inplace, "mul")


@functor("ScalarMulInplace")
def scalar_mul(input: Tensor, other: Any, inplace: bool) -> Tensor:
    return _finish(input, _mul_ts(input, other), inplace, "mul")


_ROUNDING = {None: (_div_tt, _div_ts, _rdiv), "floor": (_fdiv_tt, _fdiv_ts, _rfdiv),
             "trunc": (_tdiv_tt, _tdiv_ts, _rtdiv)}


def _rounding(mode: Any) -> tuple:
    try:
        return _ROUNDING[mode]
    except KeyError:
        raise ValueError(f"div(): rounding_mode must be None, 'floor' or 'trunc', got {mode!r}") \
            from None


@functor("DivMode")
def div(input: Tensor, other: Tensor, rounding_mode: Any, inplace: bool) -> Tensor:
    return _finish(input, _rounding(rounding_mode)[0](input, other), inplace, "div")


@functor("ScalarDivMode")
def scalar_div(input: Tensor, other: Any, rounding_mode: Any, inplace: bool) -> Tensor:
    return _finish(input, _rounding(rounding_mode)[1](input, other), inplace, "div")


@functor("ScalarRDivMode")
def scalar_rdiv(input: Any, other: Tensor, rounding_mode: Any) -> Tensor:
    return _rounding(rounding_mode)[2](input, other)


# -- unary ----------------------------------------------------------------------------------

def _unary_functor(u: UnaryFunction) -> None:
    """The functor of a declared unary function (``ops.math.unary_function``): bool /
    integer inputs are computed in the default float dtype, or (``integers="identity"``:
    floor, ceil, round, trunc) are their own result. (abs, neg, logical_not and clone take
    any dtype and are bound to their ops in api.yaml.)"""
    apply = get(u.name).apply
    int_identity = u.integers == "identity"

    def fn(input: Tensor) -> Tensor:
        if input._meta.dtype.kind in "iub":
            if int_identity:  # a new tensor (never the input: in-place ops on the
                return _wrap(input._value)  # result must not touch it); values are shared
            input = to_float(input)
        return apply(input)
    fn.__name__ = u.functor
    functor(u.functor)(fn)  # raises if another functor has the name
    _DERIVED_FUNCTORS.add(u.functor)


_DERIVED_FUNCTORS: set[str] = set()


def _forget_unary_functor(name: str) -> None:
    if _camel(name) in _DERIVED_FUNCTORS:
        _DERIVED_FUNCTORS.discard(_camel(name))
        del FUNCTORS[_camel(name)]


derive_unary_parts(_unary_functor, _forget_unary_functor)

_square, _sign = get("square").apply, get("sign").apply
_INT64 = np.dtype(np.int64)


@functor("Square")
def square(input: Tensor) -> Tensor:
    """As PyTorch (``pow(x, 2)``): a bool tensor squares as int64."""
    if input._meta.dtype == _BOOL:
        input = cast(input, _INT64)
    return _square(input)


@functor("Sign")
def sign(input: Tensor) -> Tensor:
    """The sign of a bool is the bool itself (as PyTorch); the op covers numbers."""
    if input._meta.dtype == _BOOL:
        return _wrap(input._value)  # a new tensor, not the input (see _unary_functor)
    return _sign(input)

_bitwise_not = get("bitwise_not").apply
_logical_not = get("logical_not").apply


@functor("BitwiseNot")
def bitwise_not(input: Tensor) -> Tensor:
    if input._meta.dtype == _BOOL:
        return _logical_not(input)
    return _bitwise_not(input)


_clamp = get("clamp").apply
_where = get("where").apply


@functor("Clamp")
def clamp(input: Tensor, min: Any, max: Any, inplace: bool) -> Tensor:  # noqa: A002
    if min is None and max is None:
        raise ValueError("clamp(): at least one of 'min' or 'max' must not be None")
    # PyTorch: result_type(input, min, max) with the bounds as Python scalars
    d = result_dtype(input, scalars=tuple(b for b in (min, max) if b is not None))
    return _finish(input, _clamp(cast(input, d), min=min, max=max), inplace, "clamp")


@functor("Where")
def where(condition: Tensor, input: Tensor, other: Tensor) -> Tensor:
    if condition._meta.dtype != _BOOL:
        raise TypeError(f"where(): argument 'condition' must be a bool tensor, got "
                        f"{condition.dtype}")
    a, b = promote(input, other)
    return _where(condition, a, b)


@functor("ScalarWhere")
def scalar_where(condition: Tensor, input: Any, other: Any) -> Tensor:
    if condition._meta.dtype != _BOOL:
        raise TypeError(f"where(): argument 'condition' must be a bool tensor, got "
                        f"{condition.dtype}")
    a = input if isinstance(input, Tensor) else None
    b = other if isinstance(other, Tensor) else None
    ref = a if a is not None else b
    if ref is not None:
        d = scalar_result_dtype(ref, other if a is not None else input)
    else:
        d = _dt.result_type([], [], [_dt.scalar_category(input), _dt.scalar_category(other)]).np
    a = cast(a, d) if a is not None else scalar_tensor(input, d)
    b = cast(b, d) if b is not None else scalar_tensor(other, d)
    return _where(condition, a, b)


_cast_op = get("cast").apply


@functor("Cast")
def to_dtype(input: Tensor, dtype: Any) -> Tensor:
    return cast(input, dtype.np)


__all__ = ["result_dtype"]


# -- more elementwise math ---------------------------------------------------------------------

_polygamma = get("polygamma").apply
_nan_to_num = get("nan_to_num").apply
_pow_op = get("pow").apply
_FLOAT64 = np.dtype(np.float64)


@functor("Polygamma")
def polygamma(n: int, input: Tensor) -> Tensor:
    """PyTorch's argument order (``n`` first); integer inputs in the default float dtype."""
    if n < 0:
        raise RuntimeError(f"polygamma(): argument 'n' must be >= 0, got {n} (polygamma(n, x) "
                           f"does not support negative n)")
    if input._meta.dtype.kind in "iub":
        input = to_float(input)
    return _polygamma(input, n=n)


@functor("NanToNum")
def nan_to_num(input: Tensor, nan: Any, posinf: Any, neginf: Any, inplace: bool) -> Tensor:
    """Integer and bool tensors hold no nan or infinity: a copy, as PyTorch."""
    if input._meta.dtype.kind in "iub":
        out = _wrap(input._value)
    else:
        out = _nan_to_num(input, nan=nan, posinf=posinf, neginf=neginf)
    return _finish(input, out, inplace, "nan_to_num")


def _float_power(a: Any, b: Any, inplace: bool = False) -> Tensor:
    """``pow`` in float64 whatever the inputs (PyTorch's float_power); in place only into a
    float64 tensor (PyTorch refuses to round the result down)."""
    if inplace and a._meta.dtype != _FLOAT64:
        raise RuntimeError(f"float_power_(): the base given to float_power_ has dtype "
                           f"{a.dtype} but the operation's result requires dtype float64")
    a = cast(a, _FLOAT64) if isinstance(a, Tensor) else scalar_tensor(a, _FLOAT64)
    b = cast(b, _FLOAT64) if isinstance(b, Tensor) else scalar_tensor(b, _FLOAT64)
    return _pow_op(a, b)


@functor("FloatPower")
def float_power(input: Tensor, exponent: Any, inplace: bool) -> Tensor:
    out = _float_power(input, exponent, inplace)
    return _finish(input, out, inplace, "float_power")


@functor("ScalarRFloatPower")
def scalar_rfloat_power(input: Any, exponent: Tensor) -> Tensor:
    return _float_power(input, exponent)


@functor("ClampMin")
def clamp_min(input: Tensor, min: Any, inplace: bool) -> Tensor:  # noqa: A002
    if isinstance(min, Tensor):
        return clamp_tensor(input, min, None, inplace)
    return clamp(input, min, None, inplace)


@functor("ClampMax")
def clamp_max(input: Tensor, max: Any, inplace: bool) -> Tensor:  # noqa: A002
    if isinstance(max, Tensor):
        return clamp_tensor(input, None, max, inplace)
    return clamp(input, None, max, inplace)


_round = _F["Round"]


@functor("RoundDecimals")
def round_decimals(input: Tensor, decimals: int) -> Tensor:
    """PyTorch's ``round(x, decimals=d)``: ``round(x * 10^d) / 10^d`` in the input's dtype
    (``round(x / 10^-d) * 10^-d`` for ``d < 0``; float32 for 16-bit floats), halves to even.
    Integer inputs only with ``decimals=0`` (PyTorch: not implemented for them)."""
    if decimals == 0:
        return _round(input)
    if input._meta.dtype.kind in "iub":
        raise RuntimeError(f"round(): argument 'decimals' needs a floating input, got "
                           f"{input.dtype} with decimals={decimals}")
    x = input
    if x._meta.dtype.itemsize < 4:  # 16-bit floats: in float32 and rounded once (as
        x = cast(x, np.dtype(np.float32))  # PyTorch's CPU kernel; x * 10^d may overflow)
    if decimals > 0:
        y = _div_ts(_round(_mul_ts(x, 10.0 ** decimals)), 10.0 ** decimals)
    else:
        y = _mul_ts(_round(_div_ts(x, 10.0 ** -decimals)), 10.0 ** -decimals)
    return cast(y, input._meta.dtype)


_lt = _F["Lt"]
_gt = _F["Gt"]


@functor("ClampTensor")
def clamp_tensor(input: Tensor, min: Any, max: Any, inplace: bool) -> Tensor:  # noqa: A002
    """``clamp`` with tensor bounds (broadcasting): ``x < min`` takes ``min``, then a value
    above ``max`` takes ``max`` (so ``min > max`` gives ``max``, as PyTorch). Built from
    ``where``, the gradient goes to whichever of ``input``, ``min``, ``max`` was picked; a
    tie keeps ``input`` (PyTorch's clamp_backward)."""
    if min is None and max is None:
        raise ValueError("clamp(): at least one of 'min' or 'max' must not be None")
    bounds = tuple(b for b in (min, max) if b is not None)
    d = result_dtype(input, *bounds)
    out = cast(input, d)
    if min is not None:
        lo = cast(min, d)
        out = _where(_lt(out, lo), lo, out)
    if max is not None:
        hi = cast(max, d)
        out = _where(_gt(out, hi), hi, out)
    return _finish(input, out, inplace, "clamp")



# -- more elementwise math (fmax / fmin & co.) ---------------------------------------------------
# Compositions of existing functional calls (gradients and SBP come with them).

from ...autograd.grad_mode import is_grad_enabled  # noqa: E402
from ..registry import api  # noqa: E402


def _fminmax(fname: str, input: Tensor, other: Tensor, pick_first: Any) -> Tensor:
    """``fmax`` / ``fmin``: the larger / smaller, a NaN only where both are NaN. The gradient
    goes to ``input`` where it is picked (ties included) or ``other`` is NaN, else to
    ``other``, as PyTorch."""
    a, b = promote(input, other)
    f = api()
    return _where(f.logical_or(pick_first(a, b), f.isnan(b)), a, b)


@functor("Fmax")
def fmax(input: Tensor, other: Tensor) -> Tensor:
    """torch.fmax: elementwise maximum ignoring NaN (NaN only where both are NaN)."""
    return _fminmax("fmax", input, other, api().ge)


@functor("Fmin")
def fmin(input: Tensor, other: Tensor) -> Tensor:
    """torch.fmin: elementwise minimum ignoring NaN (NaN only where both are NaN)."""
    return _fminmax("fmin", input, other, api().le)


@functor("Heaviside")
def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """torch.heaviside: 0 where ``input < 0``, ``values`` where ``input == 0``, 1 where
    ``input > 0`` (NaN gives 0). Both tensors must share one dtype; no derivative (PyTorch
    has none: asking for one raises)."""
    if input._meta.dtype != values._meta.dtype:
        raise RuntimeError(f"heaviside(): argument 'values' must have the dtype of 'input' "
                           f"({input.dtype}), got {values.dtype} (heaviside is not yet "
                           f"implemented for tensors with different dtypes)")
    if is_grad_enabled() and (input.requires_grad or values.requires_grad):
        raise RuntimeError("heaviside(): the derivative for 'heaviside' is not implemented "
                           "(argument 'input' / 'values' must not require grad)")
    f = api()
    d = input._meta.dtype
    step = cast(f.gt(input, 0), d)
    return _where(f.eq(input, 0), cast(values, d), step)


@functor("Ldexp")
def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """torch.ldexp: ``input * 2 ** other`` (PyTorch's result dtype of that product: integer
    inputs give the default float dtype)."""
    f = api()
    return f.mul(input, f.pow(2.0, other))


@functor("Logit")
def logit(input: Tensor, eps: Any) -> Tensor:
    """torch.logit: ``log(z / (1 - z))`` with ``z = clamp(input, eps, 1 - eps)`` (no clamp
    when ``eps`` is None); integer inputs in the default float dtype. The gradient is 0
    outside ``[eps, 1 - eps]``, as PyTorch's."""
    if input._meta.dtype.kind in "iub":
        input = to_float(input)
    f = api()
    z = input if eps is None else f.clamp(input, eps, 1.0 - eps)
    return f.log(f.div(z, f.add(f.neg(z), 1.0)))


@functor("Signbit")
def signbit(input: Tensor) -> Tensor:
    """torch.signbit: whether the sign bit is set (True for -0.0 and negative NaN's bit as
    IEEE says: ``copysign(1, x) < 0``); bool result, no gradient."""
    f = api()
    x = input.detach()
    k = x._meta.dtype.kind
    if k == "b":
        return f.ne(x, x)
    if k in "iu":
        return f.lt(x, 0)
    ones = f.full(tuple(x.shape), 1.0, dtype=x.dtype)
    return f.lt(f.copysign(ones, x), 0)


@functor("Mvlgamma")
def mvlgamma(input: Tensor, p: int) -> Tensor:
    """torch.mvlgamma: ``p (p - 1) / 4 log(pi) + sum_j lgamma(input - j / 2)`` for
    ``j < p``. Every element must exceed ``(p - 1) / 2`` (checked on eager values, as
    PyTorch); integer inputs in the default float dtype."""
    if p < 1:
        raise RuntimeError(f"mvlgamma(): argument 'p' must be >= 1, got {p}")
    if input._meta.dtype.kind in "iub":
        input = to_float(input)
    if not isinstance(input._meta, Tracer) and bool(np.any(np.asarray(
            api().le(input.detach(), (p - 1) / 2.0)._value))):
        raise RuntimeError(f"mvlgamma(): All elements must be greater than (p-1)/2 = "
                           f"{(p - 1) / 2} (argument 'input')")
    f = api()
    out = None
    for j in range(p):
        term = f.lgamma(f.sub(input, j / 2.0) if j else input)
        out = term if out is None else f.add(out, term)
    return f.add(out, p * (p - 1) / 4.0 * float(np.log(np.pi)))


# -- shifts, gcd / lcm, nextafter: PyTorch's promotion, then the op (its dtype errors) ---------
for _op in ("bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm", "nextafter"):
    _binary_functors(_op, "arith")


# -- rsub: ``other - alpha * input`` (torch.rsub's argument order) -----------------------------
@functor("RSubAlpha")
def rsub(input: Tensor, other: Tensor, alpha: Any) -> Tensor:
    """torch.rsub(input, other, alpha=1): ``other - alpha * input``."""
    return sub(other, input, alpha, False)


@functor("ScalarRSubAlpha")
def scalar_rsub(input: Tensor, other: Any, alpha: Any) -> Tensor:
    """torch.rsub(input, number, alpha=1): ``number - alpha * input``."""
    _sub_check(input, other)
    if alpha.__class__ is not int or alpha != 1:
        _check_alpha("rsub", scalar_result_dtype(input, other), alpha)
        input = _mul_ts(input, alpha)
    return _F["ScalarRSub"](other, input)


# -- isclose / allclose / equal: elementwise comparisons (and their all()) ----------------------
# Compositions of eq/abs/sub/le (and reduce_all), so no op of their own; predicates and Python
# answers have no gradient, as in PyTorch.

_isnan, _rall = get("isnan").apply, get("reduce_all").apply


@functor("IsClose")
def isclose(input: Tensor, other: Tensor, rtol: float, atol: float, equal_nan: bool) -> Tensor:
    """flow.isclose: |input - other| <= atol + rtol * |other|, elementwise (bool), PyTorch's
    formula: equal values (infinities included) are close; nan only with ``equal_nan``;
    integer inputs are compared in the default float dtype."""
    a_dt, b_dt = input._meta.dtype, other._meta.dtype
    if a_dt != b_dt:
        raise RuntimeError(f"isclose(): expected input and other to have the same dtype, but got "
                           f"{_torch_name(a_dt)} and {_torch_name(b_dt)}")
    for name, v in (("rtol", rtol), ("atol", atol)):
        if v < 0:
            raise RuntimeError(f"isclose(): {name} must be greater than or equal to zero, but "
                               f"got {v}")
    F = api()
    close = F.eq(input, other)
    if equal_nan and _is_float(a_dt):
        close = F.logical_or(close, F.logical_and(_isnan(input), _isnan(other)))
    if rtol == 0 and atol == 0:
        return close
    a, b = to_float(input), to_float(other)
    err = F.abs(F.sub(a, b))
    allowed = F.add(F.abs(F.mul(b, rtol)), atol)
    return F.logical_or(close, F.logical_and(F.isfinite(err), F.le(err, allowed)))


def _host_bool(t: Tensor, fname: str) -> bool:
    """A 0-d bool tensor as a Python bool: the answer is a host value (as PyTorch's)."""
    if t.is_meta:
        raise no_data(f"{fname}()")
    try:
        return bool(t._value)
    except Exception as e:  # a tracer: no concrete answer inside jax.jit / vmap
        raise RuntimeError(f"{fname}() returns a Python bool, which needs concrete values; it "
                           f"cannot run under tracing (use flow.isclose(...).all() there)") from e


@functor("AllClose")
def allclose(input: Tensor, other: Tensor, rtol: float, atol: float, equal_nan: bool) -> bool:
    """flow.allclose: every entry isclose (after broadcasting), as a Python bool."""
    return _host_bool(_rall(isclose(input, other, rtol, atol, equal_nan), axis=(),
                            keepdim=False), "allclose")


@functor("Equal")
def equal(input: Tensor, other: Tensor) -> bool:
    """flow.equal: same shape and equal values (nan never equals), as a Python bool; the
    dtypes are promoted as ``==`` does."""
    if tuple(input._meta.shape) != tuple(other._meta.shape):
        return False
    return _host_bool(_rall(api().eq(input, other), axis=(), keepdim=False), "equal")
