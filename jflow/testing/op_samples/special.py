"""Checker samples for jflow/ops/special.py (SciPy references: ``scipy.special``; the
Chebyshev V / W polynomials, which SciPy lacks, from their closed forms in ``acos x``)."""

from __future__ import annotations

import numpy as np
import scipy.special as sp

from ..samples import ErrorSample, Sample, register_samples

_rng = np.random.default_rng(0)


def _f(*shape, lo=-2.0, hi=2.0, dtype=np.float32):
    return _rng.uniform(lo, hi, shape).astype(dtype)


def _wide(fn):
    """The reference in float64 (the checker compares at the input dtype's tolerance)."""
    def ref(*args):
        with np.errstate(all="ignore"):
            return fn(*(np.asarray(a, np.float64) for a in args))
    return ref


_I = _rng.integers(1, 5, (2, 4)).astype(np.int64)
_BAD_INT = [ErrorSample([_I], {}, TypeError, "floating")]


def _spread(lo, hi, dtype=np.float32):
    """16 values, one in each sixteenth of [lo, hi), in random order, shape (4, 4): every part
    of the range (each series / asymptotic branch of the function) is sampled, and the SBP
    check splits either axis on 4 devices."""
    u = (np.arange(16) + _rng.uniform(0.0, 1.0, 16)) / 16
    return _rng.permutation(lo + (hi - lo) * u).reshape(4, 4).astype(dtype)


# name: (reference, float32 sample, float64 sample); the float64 one is gradient-checked
# for the differentiable ops
_UNARY = {
    "special_i0e": (sp.i0e, _spread(-5, 5), _spread(-5, 5, np.float64)),
    "special_i1e": (sp.i1e, _spread(-5, 5), _spread(-5, 5, np.float64)),
    "special_ndtr": (sp.ndtr, _spread(-4, 4), _spread(-4, 4, np.float64)),
    "special_ndtri": (sp.ndtri, _spread(0.02, 0.98),
                      _spread(0.02, 0.98, np.float64)),
    "special_log_ndtr": (sp.log_ndtr, _spread(-6, 4),
                         _spread(-6, 4, np.float64)),
    "special_erfcx": (sp.erfcx, _spread(-2, 5), _spread(-2, 5, np.float64)),
    "special_entr": (sp.entr, _spread(0.05, 3), _spread(0.05, 3, np.float64)),
    "special_bessel_j0": (sp.j0, _spread(-12, 12), _spread(-12, 12, np.float64)),
    "special_bessel_j1": (sp.j1, _spread(-12, 12), _spread(-12, 12, np.float64)),
    "special_bessel_y0": (sp.y0, _spread(0.1, 12), _spread(0.1, 12, np.float64)),
    "special_bessel_y1": (sp.y1, _spread(0.1, 12), _spread(0.1, 12, np.float64)),
    "special_modified_bessel_i0": (sp.i0, _spread(-10, 10),
                                   _spread(-10, 10, np.float64)),
    "special_modified_bessel_i1": (sp.i1, _spread(-10, 10),
                                   _spread(-10, 10, np.float64)),
    "special_modified_bessel_k0": (sp.k0, _spread(0.1, 6),
                                   _spread(0.1, 6, np.float64)),
    "special_modified_bessel_k1": (sp.k1, _spread(0.1, 6),
                                   _spread(0.1, 6, np.float64)),
    "special_scaled_modified_bessel_k0": (sp.k0e, _spread(0.1, 20),
                                          _spread(0.1, 20, np.float64)),
    "special_scaled_modified_bessel_k1": (sp.k1e, _spread(0.1, 20),
                                          _spread(0.1, 20, np.float64)),
    "special_spherical_bessel_j0": (lambda x: sp.spherical_jn(0, x), _spread(-10, 10),
                                    _spread(-10, 10, np.float64)),
    "special_airy_ai": (lambda x: sp.airy(x)[0], _spread(-8, 8),
                        _spread(-8, 8, np.float64)),
}
# Cephes' (and PyTorch's) Airy asymptotic form just below x = -2.09 is good to ~2e-5
_RTOL = {"special_airy_ai": 1e-4}
for _name, (_ref, _x32, _x64) in _UNARY.items():
    _rt = _RTOL.get(_name)
    # float32: Cephes' float32 evaluation (as PyTorch's) is good to a few ulps, absolute
    # near the zeros of the oscillating functions
    register_samples(_name, [Sample([_x32], rtol=_rt or 2e-5, atol=2e-6),
                             Sample([_x64], rtol=_rt)], _wide(_ref), errors=_BAD_INT)


def _pair(lo_a, hi_a, lo_b, hi_b, dtype=np.float32):
    return _f(2, 4, lo=lo_a, hi=hi_a, dtype=dtype), _f(4, lo=lo_b, hi=hi_b, dtype=dtype)


def _dtype_err(a, b):
    return ErrorSample([a, b.astype(np.float64)], {}, TypeError, "same dtype")


_XA, _XB = _pair(-2, 2, -0.9, 3)
_XA[0, :2] = 0.0  # x == 0 gives 0
register_samples("special_xlog1py", [
    Sample([_XA, _XB]), Sample(list(_pair(-2, 2, -0.9, 3, np.float64))),
], _wide(sp.xlog1py), errors=[_dtype_err(_XA, _XB),
                              ErrorSample([_I, _I], {}, TypeError, "floating")])

# zeta(x, q) and igamma(a, x): no derivative in the first operand (PyTorch), so the
# gradient-checked samples pass it as an integer tensor (the op casts it)
_ZI = _rng.integers(2, 6, (2, 4)).astype(np.int64)
register_samples("special_zeta", [
    Sample(list(_pair(1.5, 6, 0.2, 4)), grad=False),  # (a float x: no derivative in it)
    Sample([_ZI, _f(4, lo=0.2, hi=4, dtype=np.float64)]),
    # a negative q with an integer x: the shifted sum (no derivative asked: see above)
    Sample([_ZI.astype(np.float32), _f(4, lo=-3.9, hi=-0.1)], grad=False),
], _wide(sp.zeta), errors=[_dtype_err(*_pair(1.5, 6, 0.2, 4)),
                           ErrorSample([_ZI, _ZI], {}, TypeError, "floating")])

_GA = _rng.integers(1, 6, (2, 4)).astype(np.int64)
for _name, _ref in [("igamma", sp.gammainc), ("igammac", sp.gammaincc)]:
    # a float a (float32; no derivative in it) and the float64 kernel (an integer a, cast by
    # the op: the same kernel as a float64 a, whose series / continued fraction does not
    # branch on a being whole; its loops are most of the staged program's compile)
    register_samples(_name, [
        Sample(list(_pair(0.1, 6, 0.05, 8)), grad=False),
        Sample([_GA, _f(4, lo=0.3, hi=8, dtype=np.float64)]),
    ], _wide(_ref), errors=[_dtype_err(*_pair(0.1, 6, 0.05, 8)),
                            ErrorSample([_GA, _GA], {}, TypeError, "floating")])


# -- orthogonal polynomials: x in (-1, 1) (shifted: (0, 1)), integer-valued n as floats -------
# (SciPy's eval_* take ``(n, x)``)

def _acos_form(kind):
    def ref(n, x):
        th = np.arccos(x)
        if kind == "v":
            return np.cos((n + 0.5) * th) / np.cos(th / 2)
        return np.sin((n + 0.5) * th) / np.sin(th / 2)
    return ref


def _shifted(fn):
    return lambda n, x: fn(n, 2 * x - 1)


def _int_n(fn):
    return lambda n, x: fn(n.astype(np.int64), x)


_POLY_REFS = {
    "chebyshev_polynomial_t": sp.eval_chebyt,
    "chebyshev_polynomial_u": sp.eval_chebyu,
    "chebyshev_polynomial_v": _acos_form("v"),
    "chebyshev_polynomial_w": _acos_form("w"),
    "shifted_chebyshev_polynomial_t": sp.eval_sh_chebyt,
    "shifted_chebyshev_polynomial_u": sp.eval_sh_chebyu,
    "shifted_chebyshev_polynomial_v": _shifted(_acos_form("v")),
    "shifted_chebyshev_polynomial_w": _shifted(_acos_form("w")),
    "hermite_polynomial_h": _int_n(sp.eval_hermite),
    "hermite_polynomial_he": _int_n(sp.eval_hermitenorm),
    "laguerre_polynomial_l": sp.eval_laguerre,
    "legendre_polynomial_p": sp.eval_legendre,
}
_N = np.array([0, 1, 2, 3, 5, 12], np.float32)  # small n: the recurrence; 12: the cos form
for _name, _ref in _POLY_REFS.items():
    lo, hi = (0.02, 0.98) if _name.startswith("shifted") else (-0.98, 0.98)
    _x = _f(4, 1, lo=lo, hi=hi)
    register_samples(f"special_{_name}", [
        Sample([_x, _N], rtol=1e-4, atol=1e-4),
        Sample([_x.astype(np.float64), _N.astype(np.float64)], rtol=1e-9, atol=1e-9),
    ], lambda x, n, _r=_ref: _r(np.asarray(n, np.float64), np.asarray(x, np.float64)),
        errors=[ErrorSample([_x, _N.astype(np.float64)], {}, TypeError, "same dtype")])
