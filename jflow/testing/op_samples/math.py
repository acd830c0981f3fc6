"""Checker samples for jflow/ops/math.py (NumPy references)."""

from __future__ import annotations

import math

import numpy as np

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(0)


def _f(*shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return _rng.uniform(lo, hi, shape).astype(dtype)


def _i(*shape, lo=-5, hi=6, dtype=np.int64):
    return _rng.integers(lo, hi, shape).astype(dtype)


_X = _f(3, 4)
_POS = _f(3, 4, lo=0.1, hi=3.0)
_X64 = _f(3, 4, dtype=np.float64)
_XH = _f(3, 4, dtype=np.float16)
_I = _i(3, 4)

_erf = np.vectorize(math.erf)


def _unary(name, ref, float_inputs, int_inputs=(), errors=()):
    samples = [Sample([x]) for x in float_inputs] + [Sample([x]) for x in int_inputs]
    register_samples(name, samples, ref, errors=list(errors))


_BAD_INT = [ErrorSample([_I], {}, TypeError, "floating")]
_unary("abs", np.abs, [_X, _XH], [_I])
_unary("neg", np.negative, [_X], [_I])
_unary("exp", np.exp, [_X, _X64, _XH], errors=_BAD_INT)
_unary("log", np.log, [_POS])
_unary("log1p", np.log1p, [_POS])
_unary("expm1", np.expm1, [_X])
_unary("sqrt", np.sqrt, [_POS, _POS.astype(np.float64)])
_unary("rsqrt", lambda x: 1 / np.sqrt(x.astype(np.float64)), [_POS])
_unary("square", np.square, [_X], [_I])
_unary("reciprocal", lambda x: 1 / x.astype(np.float64), [_POS])
_unary("sign", np.sign, [_X], [_I])
_unary("floor", np.floor, [_X * 3])
_unary("ceil", np.ceil, [_X * 3])
register_samples("round", [Sample([_X * 3]),
                          # exact halves (ties to even): a jump, no finite difference there
                          Sample([np.array([0.5, 1.5, 2.5, -0.5, -1.7, 2.2], np.float32)],
                                 grad=False)], np.round)
_unary("sin", np.sin, [_X])
_unary("cos", np.cos, [_X])
_unary("tan", np.tan, [_X * 0.5])
_unary("tanh", np.tanh, [_X, _X64])
_unary("sigmoid", lambda x: 1 / (1 + np.exp(-x.astype(np.float64))), [_X, _X64])
_unary("erf", lambda x: _erf(x.astype(np.float64)), [_X])
_unary("logical_not", np.logical_not, [_X > 0, _I])
_unary("bitwise_not", np.invert, [], [_I, _I > 0], errors=[
    ErrorSample([_X], {}, TypeError, "integer or bool")])

# -- binary ----------------------------------------------------------------------------------
_Y = _f(3, 4)
_ROW = _f(1, 4)
_COL = _f(3, 1)
_NZ = _f(3, 4, lo=0.5, hi=2.0) * np.where(_rng.random((3, 4)) > 0.5, 1, -1).astype(np.float32)
_J = _i(3, 4, lo=1, hi=5) * np.where(_rng.random((3, 4)) > 0.5, 1, -1)
_SHAPE_ERR = ErrorSample([_f(3, 4), _f(2, 4)], {}, ValueError, "broadcast")


def _dtype_err():
    return ErrorSample([_f(3, 4), _f(3, 4, dtype=np.float64)], {}, TypeError, "same dtype")


def _binary(name, ref, pairs):
    register_samples(name, [Sample(list(p)) for p in pairs], ref,
                     errors=[_SHAPE_ERR, _dtype_err()])


_binary("add", np.add, [(_X, _Y), (_COL, _ROW), (_I, _J), (_X > 0, _Y > 0)])
_binary("sub", np.subtract, [(_X, _ROW), (_I, _J)])
_binary("mul", np.multiply, [(_X, _COL), (_I, _J), (_X64, _X64)])
_binary("div", lambda a, b: a / b.astype(np.float64), [(_X, _NZ), (_XH, _NZ.astype(np.float16))])
_binary("floor_divide", np.floor_divide, [(_X, _NZ), (_I, _J)])
_binary("trunc_divide", lambda a, b: np.trunc(a / b) if a.dtype.kind == "f" else
        (np.trunc(a / b)).astype(a.dtype), [(_X, _NZ), (_I, _J)])
_binary("remainder", np.remainder, [(_X, _NZ), (_I, _J)])
_binary("fmod", np.fmod, [(_X, _NZ), (_I, _J)])
_binary("pow", np.power, [(_POS, _Y), (_i(3, 4, lo=0, hi=5), _i(3, 4, lo=0, hi=4))])
_binary("maximum", np.maximum, [(_X, _Y), (_I, _J)])
_binary("minimum", np.minimum, [(_X, _ROW), (_I, _J)])
_binary("atan2", np.arctan2, [(_X, _Y)])
for _name, _ref in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                    ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]:
    _binary(_name, _ref, [(_X, np.where(_rng.random((3, 4)) > 0.5, _X, _Y)), (_I, _J)])
for _name, _ref in [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                    ("logical_xor", np.logical_xor)]:
    _binary(_name, _ref, [(_X > 0, _Y > 0), (_I, _J)])
for _name, _ref in [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
                    ("bitwise_xor", np.bitwise_xor)]:
    register_samples(_name, [Sample([_I, _J]), Sample([_X > 0, _Y > 0])], _ref,
                     errors=[ErrorSample([_X, _Y], {}, TypeError, "integer or bool")])

register_samples("where", [Sample([_X > 0, _X, _Y]),
                           Sample([_COL > 0, _ROW, _I.astype(np.float32)])],
                 np.where, errors=[ErrorSample([_X, _X, _Y], {}, TypeError, "bool")])
register_samples(
    "clamp", [Sample([_X], {"min": -0.5, "max": 0.5}), Sample([_I], {"min": 0.0}),
              Sample([_X], {"max": 0.0}),
              Sample([_X], {"min": 0.5, "max": -0.5})],  # min > max: all max (a zero gradient)
    lambda x, min=None, max=None: np.clip(x, min, max).astype(x.dtype),  # noqa: A002
    errors=[ErrorSample([_X], {}, ValueError, "at least one")])
register_samples(
    "cast", [Sample([_X * 3], {"dtype": np.int32}), Sample([_I], {"dtype": np.float16}),
             Sample([_X], {"dtype": np.bool_}), Sample([_X], {"dtype": np.float64})],
    lambda x, dtype: x.astype(dtype),
    errors=[ErrorSample([_X], {"dtype": "complex64"}, TypeError, "dtype")])
register_samples(
    "clone", [Sample([_X]), Sample([_I]), Sample([_X > 0]), Sample([np.array(1.5, np.float32)]),
              Sample([np.zeros((0, 3), np.float32)])],
    lambda x: x.copy())
