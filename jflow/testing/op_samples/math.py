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


_X = _f(2, 4)
_POS = _f(2, 4, lo=0.1, hi=3.0)
_X64 = _f(2, 4, dtype=np.float64)
_XH = _f(2, 4, dtype=np.float16)
_I = _i(2, 4)

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
_Y = _f(2, 4)
_ROW = _f(1, 4)
_COL = _f(2, 1)
_NZ = _f(2, 4, lo=0.5, hi=2.0) * np.where(_rng.random((2, 4)) > 0.5, 1, -1).astype(np.float32)
_J = _i(2, 4, lo=1, hi=5) * np.where(_rng.random((2, 4)) > 0.5, 1, -1)
_SHAPE_ERR = ErrorSample([_f(3, 4), _f(2, 4)], {}, ValueError, "broadcast")


def _dtype_err():
    return ErrorSample([_f(2, 4), _f(2, 4, dtype=np.float64)], {}, TypeError, "same dtype")


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
_binary("pow", np.power, [(_POS, _Y), (_i(2, 4, lo=0, hi=5), _i(2, 4, lo=0, hi=4))])
# x ** 3 by multiplication, x ** 1.5 by pow (its gradient's x ** 0.5 by sqrt)
register_samples("pow_scalar", [Sample([_X], {"exponent": 3.0}),
                                Sample([_POS.astype(np.float64)], {"exponent": 1.5})],
                 lambda x, exponent: np.power(x.astype(np.float64), exponent))
_binary("maximum", np.maximum, [(_X, _Y), (_I, _J)])
_binary("minimum", np.minimum, [(_X, _ROW), (_I, _J)])
_binary("atan2", np.arctan2, [(_X, _Y)])
for _name, _ref in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                    ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]:
    _binary(_name, _ref, [(_X, np.where(_rng.random((2, 4)) > 0.5, _X, _Y)), (_I, _J)])
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
             Sample([_X], {"dtype": np.bool_}), Sample([_X], {"dtype": np.float64}),
             Sample([_X], {"dtype": np.complex64})],
    lambda x, dtype: x.astype(dtype),
    errors=[ErrorSample([_X], {"dtype": "complex32"}, TypeError, "dtype")])
register_samples(
    "clone", [Sample([_X]), Sample([_I]), Sample([_X > 0]), Sample([np.array(1.5, np.float32)]),
              Sample([np.zeros((0, 4), np.float32)])],
    lambda x: x.copy())


# -- more elementwise math ---------------------------------------------------------------------
# References in float64 NumPy / math, written independently of JAX: series, Newton's method and
# asymptotic expansions where NumPy has no function (no SciPy).

_U = _f(2, 4, lo=-0.9, hi=0.9)  # inside (-1, 1): asin, acos, atanh, erfinv
_GT1 = _f(2, 4, lo=1.1, hi=3.0)  # acosh


def _vec(fn):
    return lambda x: np.vectorize(fn, otypes=[np.float64])(x.astype(np.float64))


def _erfinv(v: float) -> float:
    y = 0.0
    for _ in range(60):  # Newton on erf(y) = v (erf' = 2/sqrt(pi) exp(-y^2))
        y -= (math.erf(y) - v) / (2 / math.sqrt(math.pi) * math.exp(-y * y))
    return y


def _polygamma_ref(n: int, v: float) -> float:
    """(-1)^(n+1) n! sum_k 1/(v+k)^(n+1), n >= 1: 200 terms, then Euler-Maclaurin's tail."""
    k = 200
    s = sum(1.0 / (v + j) ** (n + 1) for j in range(k))
    t = v + k
    s += 1 / (n * t ** n) + 1 / (2 * t ** (n + 1)) + (n + 1) / (12 * t ** (n + 2))
    return (-1) ** (n + 1) * math.factorial(n) * s


def _digamma_ref(v: float) -> float:
    """Recurrence psi(v) = psi(v + 1) - 1/v up to v >= 10, then the asymptotic series."""
    acc = 0.0
    while v < 10:
        acc -= 1 / v
        v += 1
    return acc + math.log(v) - 1 / (2 * v) - 1 / (12 * v ** 2) + 1 / (120 * v ** 4) \
        - 1 / (252 * v ** 6)


def _i1_ref(v: float) -> float:
    return sum((v / 2) ** (2 * k + 1) / (math.factorial(k) * math.factorial(k + 1))
               for k in range(40))


for _name, _ref, _x in [
    ("asin", np.arcsin, _U), ("acos", np.arccos, _U), ("atan", np.arctan, _X),
    ("asinh", np.arcsinh, _X), ("acosh", np.arccosh, _GT1), ("atanh", np.arctanh, _U),
    ("sinh", np.sinh, _X), ("cosh", np.cosh, _X), ("log2", np.log2, _POS),
    ("log10", np.log10, _POS), ("exp2", np.exp2, _X),
    ("erfc", _vec(math.erfc), _X), ("erfinv", _vec(_erfinv), _U),
    ("lgamma", _vec(math.lgamma), _POS), ("digamma", _vec(_digamma_ref), _POS),
    ("i0", lambda x: np.i0(x.astype(np.float64)), _X), ("i1", _vec(_i1_ref), _X),
    ("sinc", lambda x: np.sinc(x.astype(np.float64)), _X),
    ("deg2rad", lambda x: x.astype(np.float64) * (np.pi / 180), _X * 90),
    ("rad2deg", lambda x: x.astype(np.float64) * (180 / np.pi), _X),
    ("trunc", np.trunc, _X * 3), ("frac", lambda x: x - np.trunc(x), _X * 3),
]:
    _unary(_name, _ref, [_x], errors=_BAD_INT)

register_samples("polygamma", [Sample([_POS], {"n": 1}), Sample([_POS], {"n": 2})],
                 lambda x, n: _vec(lambda v: _polygamma_ref(n, v))(x),
                 errors=[ErrorSample([_I], {"n": 1}, TypeError, "floating")])

# nan, +inf, -inf, 0 and finite values in the one shape
_EDGE = _X.copy()
_EDGE.flat[[0, 1, 2, 3, 4]] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
for _name, _ref in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                    ("isposinf", np.isposinf), ("isneginf", np.isneginf)]:
    _unary(_name, _ref, [_EDGE], [_I, _I > 0])

register_samples(
    "nan_to_num", [
        # replaced values are constants: no finite differences at nan / inf
        Sample([_EDGE], {}, grad=False),
        Sample([_EDGE], {"nan": 1.5, "posinf": 9.0, "neginf": -9.0}, grad=False),
        Sample([_X], {"nan": -1.0}),
    ],
    lambda x, nan=0.0, posinf=None, neginf=None: np.nan_to_num(
        x, nan=nan, posinf=posinf, neginf=neginf),
    errors=_BAD_INT)


def _xlogy_ref(x, y):
    x, y = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        return np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log(y))


_ZX = np.where(_rng.random((2, 4)) > 0.6, 0.0, _X).astype(np.float32)
_ZX.flat[0] = 0.0
_EDGE_Y = np.abs(_EDGE)  # nan, inf, 0 among the logarithm's arguments
register_samples("xlogy", [
    Sample([_ZX, _POS]), Sample([_COL, _POS]),
    # nan and inf arguments: no finite differences
    Sample([_ZX, _EDGE_Y], grad=False),
], _xlogy_ref, errors=[_SHAPE_ERR, _dtype_err(), ErrorSample([_I, _J], {}, TypeError,
                                                              "floating")])
def _quiet(fn, a, b):
    with np.errstate(invalid="ignore"):  # NumPy warns on nan; the value is still nan
        return fn(a.astype(np.float64), b)


# equal arguments, infinities included: x + log(2) (log2: x + 1), never the nan of inf - inf
_INF2 = Sample([np.array([np.inf, -np.inf, 1.0, np.nan], np.float32)] * 2, grad=False)
for _name, _ref, _pairs in [
    ("logaddexp", lambda a, b: _quiet(np.logaddexp, a, b), [(_X, _Y), _INF2]),
    ("logaddexp2", lambda a, b: _quiet(np.logaddexp2, a, b), [(_COL, _ROW), _INF2]),
    ("hypot", lambda a, b: np.hypot(a.astype(np.float64), b), [(_X, _Y), (_ROW, _COL)]),
    ("copysign", np.copysign, [(_X, _NZ), (_COL, _ROW)]),
]:
    register_samples(_name, [p if isinstance(p, Sample) else Sample(list(p)) for p in _pairs],
                     _ref,
                     errors=[_SHAPE_ERR, _dtype_err(),
                             ErrorSample([_I, _J], {}, TypeError, "floating")])


# -- shifts, gcd / lcm, nextafter, frexp -------------------------------------------------------
# References on Python ints (arbitrary precision, then wrapped to the dtype's width) and on the
# IEEE bit patterns / math.frexp, independent of the XLA kernels.

def _wrap_int(v: int, dt: np.dtype) -> int:
    bits = dt.itemsize * 8
    v &= (1 << bits) - 1
    return v - (1 << bits) if dt.kind == "i" and v >= 1 << (bits - 1) else v


def _intwise(fn):
    def ref(a, b):
        a, b = np.broadcast_arrays(a, b)
        dt = a.dtype
        out = [_wrap_int(fn(int(x), int(y), dt.itemsize * 8), dt) for x, y in zip(a.flat, b.flat)]
        return np.array(out, dt).reshape(a.shape)
    return ref


def _lshift(x: int, n: int, bits: int) -> int:
    return 0 if n < 0 or n >= bits else x << n


def _rshift(x: int, n: int, bits: int) -> int:
    return (-1 if x < 0 else 0) if n < 0 or n >= bits else x >> n


_SH_X = np.array([[1, -8, 5, -1], [127, -128, 3, 0]], np.int8)
_SH_N = np.array([[1, 9, -1, 7], [0, 3, 8, 2]], np.int8)
_SH_U = np.array([255, 1, 128, 7], np.uint8)
_SH_I64 = np.array([[-1, 3, -(2 ** 40), 5]], np.int64)
_SH_N64 = np.array([[63, 64, 70, -2]], np.int64)
_INT_ONLY = [ErrorSample([_i(3, 4), _i(2, 4)], {}, ValueError, "broadcast"),
             ErrorSample([_X, _Y], {}, TypeError, "integer"),
             ErrorSample([_X > 0, _Y > 0], {}, TypeError, "integer")]
for _name, _fn in [("bitwise_left_shift", _lshift), ("bitwise_right_shift", _rshift)]:
    register_samples(_name, [Sample([_SH_X, _SH_N]), Sample([_SH_U, np.uint8(3)]),
                             Sample([_SH_I64, _SH_N64]), Sample([_I, np.abs(_J)])],
                     _intwise(_fn), errors=_INT_ONLY)


def _gcd(x: int, y: int, bits: int) -> int:
    return math.gcd(x, y)


def _lcm(x: int, y: int, bits: int) -> int:
    g = math.gcd(x, y)
    return 0 if g == 0 else abs(x // g * y)


_G_X = np.array([[-4, 0, 12, 7], [0, 9, -15, 1]], np.int64)
_G_Y = np.array([[6, 0, -18, 0], [5, 0, 25, 1]], np.int64)
register_samples("gcd", [Sample([_G_X, _G_Y]), Sample([_I, _J]),
                         Sample([_I.astype(np.int16), _J[:1].astype(np.int16)])],
                 _intwise(_gcd), errors=_INT_ONLY)
register_samples("lcm", [Sample([_G_X, _G_Y]), Sample([_I, _J]),
                         Sample([_I.astype(np.int32), _J[:, :1].astype(np.int32)])],
                 _intwise(_lcm), errors=_INT_ONLY)


def _nextafter_ref(x, y):
    """One step of the bit pattern toward ``y`` (NumPy's nextafter is the C library's)."""
    return np.nextafter(*np.broadcast_arrays(x, y))


_NA_EDGE = np.array([0.0, -0.0, 1.0, np.inf, np.nan, 1.0, 1e-45], np.float32)
_NA_TO = np.array([1.0, -1.0, 1.0, 0.0, 1.0, np.nan, 0.0], np.float32)
register_samples("nextafter", [Sample([_X, _Y]), Sample([_COL, _ROW]),
                               Sample([_X64, np.zeros((1, 4))]),
                               Sample([_NA_EDGE, _NA_TO], grad=False)],  # nan / inf / ties
                 _nextafter_ref,
                 errors=[_SHAPE_ERR, _dtype_err(), ErrorSample([_I, _J], {}, TypeError,
                                                               "floating")])


def _frexp_ref(x):
    pairs = [math.frexp(float(v)) if math.isfinite(v) else (float(v), 0) for v in x.flat]
    m = np.array([p[0] for p in pairs], x.dtype).reshape(x.shape)
    e = np.array([p[1] for p in pairs], np.int32).reshape(x.shape)
    return m, e


_FX_EDGE = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -7e-45, 3.0, -0.75, 1e30],
                    np.float32)
register_samples("frexp", [Sample([_X * 10]), Sample([_X64]), Sample([_XH]),
                           Sample([_FX_EDGE], grad=False)],  # inf / nan / zeros
                 _frexp_ref, errors=[ErrorSample([_I], {}, TypeError, "floating")])
