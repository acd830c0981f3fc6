"""``flow.special`` against ``torch.special``: values (float32) on random inputs and edge
values, gradients (float64, ``.backward()``), dtype promotion, PyTorch's missing derivatives,
and the polygamma / digamma fix against mpmath."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(7)
_EDGE = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -3.5, 30.0, -30.0, np.inf, -np.inf, np.nan],
                 np.float32)


def _u(lo: float, hi: float, n: int = 24) -> np.ndarray:
    return _rng.uniform(lo, hi, n).astype(np.float32)


def _close(got, want, rtol=2e-5, atol=1e-6) -> None:
    got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
    want = want.detach().numpy()
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


# name: (random-input range, also check _EDGE)
_UNARY = {
    "i0e": ((-8, 8), True), "i1": ((-8, 8), True), "i1e": ((-8, 8), True),
    "ndtr": ((-5, 5), True), "ndtri": ((0, 1), False), "log_ndtr": ((-10, 6), True),
    "erfcx": ((-3, 10), True), "entr": ((-1, 4), True),
    "bessel_j0": ((-20, 20), True), "bessel_j1": ((-20, 20), True),
    "bessel_y0": ((0, 20), True), "bessel_y1": ((0, 20), True),
    "modified_bessel_i0": ((-10, 10), True), "modified_bessel_i1": ((-10, 10), True),
    "modified_bessel_k0": ((0, 10), True), "modified_bessel_k1": ((0, 10), True),
    "scaled_modified_bessel_k0": ((0, 30), True), "scaled_modified_bessel_k1": ((0, 30), True),
    "spherical_bessel_j0": ((-15, 15), True), "airy_ai": ((-10, 10), True),
    # aliases of top-level functions
    "expit": ((-6, 6), True), "erf": ((-3, 3), True), "erfc": ((-3, 3), True),
    "erfinv": ((-1, 1), False), "exp2": ((-5, 5), True), "expm1": ((-3, 3), True),
    "log1p": ((-0.9, 3), False), "gammaln": ((0.1, 8), False), "digamma": ((-5, 5), False),
    "psi": ((0.1, 5), False), "sinc": ((-3, 3), True), "i0": ((-8, 8), True),
    "round": ((-5, 5), True),
}


@pytest.mark.parametrize("name", sorted(_UNARY))
def test_unary_values(name: str) -> None:
    (lo, hi), edges = _UNARY[name]
    x = _u(lo, hi)
    if edges:
        x = np.concatenate([x, _EDGE])
    f, t = getattr(flow.special, name), getattr(torch.special, name)
    rtol = 2e-4 if name == "airy_ai" else 2e-5
    _close(f(flow.tensor(x)), t(torch.tensor(x)), rtol=rtol)


@pytest.mark.parametrize("name", ["i0e", "bessel_j0", "i1"])
def test_integer_inputs_promote(name: str) -> None:
    """Integer and bool inputs compute in the default float dtype, as torch.special."""
    i = np.array([1, 2, 3], np.int64)
    f, t = getattr(flow.special, name), getattr(torch.special, name)
    _close(f(flow.tensor(i)), t(torch.tensor(i)))
    assert f(flow.tensor(np.array([True, False]))).dtype == flow.float32


_BINARY = {
    "xlog1py": ((-3, 3), (-0.99, 5)),
    "zeta": ((1.1, 8), (-4.5, 6)),
    "gammainc": ((0.05, 10), (0.0, 12)),
    "gammaincc": ((0.05, 10), (0.0, 12)),
    "xlogy": ((-3, 3), (0.01, 5)),
}


@pytest.mark.parametrize("name", sorted(_BINARY))
def test_binary_values(name: str) -> None:
    ra, rb = _BINARY[name]
    a, b = _u(*ra), _u(*rb)
    if name == "zeta":  # negative q needs an integer x (else nan, as PyTorch)
        a[:8] = np.round(a[:8])
    e = np.array([0.0, 1.0, 2.0, -1.0, np.inf, np.nan], np.float32)
    a2, b2 = (np.concatenate([a, np.repeat(e, len(e))]),
              np.concatenate([b, np.tile(e, len(e))]))
    f, t = getattr(flow.special, name), getattr(torch.special, name)
    rtol = 1e-4 if name in ("gammainc", "gammaincc") else 2e-5
    _close(f(flow.tensor(a2), flow.tensor(b2)), t(torch.tensor(a2), torch.tensor(b2)),
           rtol=rtol)


def test_binary_scalar_forms_and_promotion() -> None:
    x = np.array([0.5, 1.5, 3.0], np.float32)
    xi = np.array([1, 2, 3], np.int64)
    S, TS = flow.special, torch.special
    _close(S.xlog1py(flow.tensor(x), 2.0), TS.xlog1py(torch.tensor(x), 2.0))
    _close(S.xlog1py(2, flow.tensor(xi)), TS.xlog1py(2, torch.tensor(xi)))
    _close(S.zeta(3.0, flow.tensor(x)), TS.zeta(3.0, torch.tensor(x)))
    _close(S.zeta(flow.tensor(x + 2), 1), TS.zeta(torch.tensor(x + 2), 1))
    _close(S.zeta(flow.tensor(xi + 1), flow.tensor(xi)), TS.zeta(torch.tensor(xi + 1),
                                                               torch.tensor(xi)))
    x64 = x.astype(np.float64)
    _close(S.gammainc(flow.tensor(x), flow.tensor(x64)), TS.gammainc(torch.tensor(x),
                                                                     torch.tensor(x64)))
    _close(flow.igamma(flow.tensor(xi), flow.tensor(x)), torch.igamma(torch.tensor(xi),
                                                                      torch.tensor(x)))
    with pytest.raises(RuntimeError, match="igamma"):
        S.gammainc(flow.tensor(xi), flow.tensor(xi))


def test_igamma_methods() -> None:
    a, x = np.array([0.5, 2.0, 4.0], np.float32), np.array([1.0, 1.5, 0.3], np.float32)
    fa, ta = flow.tensor(a), torch.tensor(a)
    _close(fa.igamma(flow.tensor(x)), ta.igamma(torch.tensor(x)))
    _close(fa.igammac(flow.tensor(x)), ta.igammac(torch.tensor(x)))
    fa.igamma_(flow.tensor(x))
    ta.igamma_(torch.tensor(x))
    _close(fa, ta)
    fa.igammac_(flow.tensor(x))
    ta.igammac_(torch.tensor(x))
    _close(fa, ta)


_POLYS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
          "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
          "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
          "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
          "laguerre_polynomial_l", "legendre_polynomial_p"]


_PX = np.concatenate([_rng.uniform(-1.3, 1.3, 10), [-1.0, 1.0, 0.0, 0.5, 2.0, np.inf]])
_PN = np.array([-1, 0, 1, 2, 3, 5, 7, 9, 13, 40, 2.7, 130, np.inf])
_PXX, _PNN = (a.ravel() for a in np.meshgrid(_PX, _PN))


@pytest.mark.parametrize("name", _POLYS)
def test_polynomials(name: str) -> None:
    """x inside and outside [-1, 1] (with its endpoints), n from -1 up to the trigonometric
    forms' range and past the Hermite limit, non-integer and infinite n (truncated: an
    infinite n gives 0); float64 values (the shifted ones see x in (-0.15, 1.15) and more)."""
    f, t = getattr(flow.special, name), getattr(torch.special, name)
    _close(f(flow.tensor(_PXX), flow.tensor(_PNN)), t(torch.tensor(_PXX), torch.tensor(_PNN)),
           rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["chebyshev_polynomial_u", "hermite_polynomial_h",
                                  "shifted_chebyshev_polynomial_w"])
def test_polynomials_float32_and_scalar_forms(name: str) -> None:
    """float32 (long recurrences round differently: a looser tolerance), a Python-scalar x or
    n, and integer tensors (the default float dtype)."""
    f, t = getattr(flow.special, name), getattr(torch.special, name)
    x32, n32 = _PXX[:64].astype(np.float32), _PNN[:64].astype(np.float32)
    _close(f(flow.tensor(x32), flow.tensor(n32)), t(torch.tensor(x32), torch.tensor(n32)),
           rtol=1e-4, atol=1e-4)
    _close(f(0.25, flow.tensor(np.array([2, 3]))), t(0.25, torch.tensor([2, 3])))
    _close(f(flow.tensor(np.array([1, 2])), 2), t(torch.tensor([1, 2]), 2))


# -- gradients (float64) --------------------------------------------------------------------------

_GRAD_UNARY = {"i0e": (-4, 4), "i1": (-4, 4), "i1e": (-4, 4), "ndtr": (-4, 4),
               "ndtri": (0.05, 0.95), "log_ndtr": (-30, 5), "erfcx": (-2, 6), "entr": (0.1, 3),
               "digamma": (-9, 9), "expit": (-3, 3), "gammaln": (0.2, 5), "sinc": (-2, 2)}


@pytest.mark.parametrize("name", sorted(_GRAD_UNARY))
def test_unary_gradients(name: str) -> None:
    x = _rng.uniform(*_GRAD_UNARY[name], 12)
    if name in ("i1", "i1e"):
        x[0] = 0.0  # the limit 1/2
    fx = flow.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    getattr(flow.special, name)(fx).sum().backward()
    getattr(torch.special, name)(tx).sum().backward()
    _close(fx.grad, tx.grad, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["xlog1py", "zeta", "gammainc", "gammaincc"])
def test_binary_gradients(name: str) -> None:
    a = _rng.uniform(1.2, 5, 12)
    b = _rng.uniform(0.1, 4, 12)
    if name == "xlog1py":
        a[:3] = 0.0
        b[0] = -1.0
    grad_first = name == "xlog1py"
    fa, fb = flow.tensor(a, requires_grad=grad_first), flow.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=grad_first), torch.tensor(b, requires_grad=True)
    getattr(flow.special, name)(fa, fb).sum().backward()
    getattr(torch.special, name)(ta, tb).sum().backward()
    _close(fb.grad, tb.grad, rtol=1e-9, atol=1e-12)
    if grad_first:
        _close(fa.grad, ta.grad, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name, what", [("zeta", "zeta"), ("gammainc", "igamma: input"),
                                        ("gammaincc", "igammac: input")])
def test_no_derivative_in_first_argument(name: str, what: str) -> None:
    """PyTorch has no derivative of zeta in x nor of igamma / igammac in a: backward
    raises NotImplementedError (the forward works, and its output requires grad)."""
    a = flow.tensor([2.0, 3.0], dtype=flow.float64, requires_grad=True)
    y = getattr(flow.special, name)(a, flow.tensor([0.5, 1.5], dtype=flow.float64))
    assert y.requires_grad
    with pytest.raises(NotImplementedError, match=f"derivative for '{what}'"):
        y.sum().backward()


@pytest.mark.parametrize("name", ["bessel_j0", "modified_bessel_k0", "airy_ai",
                                  "spherical_bessel_j0", "modified_bessel_i0"])
def test_non_differentiable_unary(name: str) -> None:
    """As PyTorch: the output does not require grad, so backward raises RuntimeError."""
    x = flow.tensor([0.5, 1.5], requires_grad=True)
    y = getattr(flow.special, name)(x)
    assert not y.requires_grad
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.sum().backward()


def test_polynomials_non_differentiable() -> None:
    x = flow.tensor([0.5, 0.25], requires_grad=True)
    y = flow.special.chebyshev_polynomial_t(x, flow.tensor([2.0, 3.0], requires_grad=True))
    assert not y.requires_grad


# -- polygamma / digamma for negative x (the reflection formula) -----------------------------------

def test_polygamma_negative_x_against_mpmath() -> None:
    mpmath = pytest.importorskip("mpmath")
    x = np.concatenate([np.linspace(-19.95, 19.95, 57), [-12.3, -8.478, -0.5, 0.25]])
    x = x[np.abs(x - np.round(x)) > 0.02]
    for n in range(1, 5):
        want = np.array([float(mpmath.polygamma(n, v)) for v in x])
        got = flow.polygamma(n, flow.tensor(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        got32 = flow.special.polygamma(n, flow.tensor(x.astype(np.float32))).numpy()
        np.testing.assert_allclose(got32, want, rtol=5e-3)
    assert abs(flow.polygamma(1, flow.tensor([-12.3])).item() - 15.0013) < 1e-3


def test_polygamma_poles_and_infinities_as_pytorch() -> None:
    """At the poles ``(-1)^(n+1) inf`` (PyTorch's value for n >= 2; for n == 1 at a negative
    integer PyTorch's reflection returns a large finite number such as 3.2e14 at -2, jflow
    +inf), and PyTorch's values at +-inf and nan."""
    x = np.array([0.0, -0.0, -2.0, np.inf, -np.inf, np.nan], np.float32)
    for n in (2, 3):
        _close(flow.polygamma(n, flow.tensor(x)), torch.polygamma(n, torch.tensor(x)))
    x1 = np.delete(x, 2)
    _close(flow.polygamma(1, flow.tensor(x1)), torch.polygamma(1, torch.tensor(x1)))
    assert flow.polygamma(1, flow.tensor([-2.0])).item() == np.inf


def test_digamma_gradient_at_negative_x() -> None:
    """digamma's backward is polygamma(1, x): 9.806 at x = -8.478 (JAX's formula gave 7.754)."""
    x = flow.tensor([-8.478, -0.5, -3.3], dtype=flow.float64, requires_grad=True)
    flow.digamma(x).sum().backward()
    t = torch.tensor([-8.478, -0.5, -3.3], dtype=torch.float64, requires_grad=True)
    torch.digamma(t).sum().backward()
    _close(x.grad, t.grad, rtol=1e-9)
    assert abs(x.grad.numpy()[0] - 9.8056) < 1e-3


def test_polygamma_and_multigammaln_gradients() -> None:
    x = _rng.uniform(-6, 6, 10)
    fx, tx = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    flow.special.polygamma(2, fx).sum().backward()
    torch.special.polygamma(2, tx).sum().backward()
    _close(fx.grad, tx.grad, rtol=1e-8)
    x = _rng.uniform(2, 6, 10)
    fx, tx = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    flow.special.multigammaln(fx, 3).sum().backward()
    torch.special.multigammaln(tx, 3).sum().backward()
    _close(fx.grad, tx.grad, rtol=1e-9)


def test_aliases_with_arguments() -> None:
    x = _u(-2, 2, 12).reshape(3, 4)
    S, TS = flow.special, torch.special
    fx, tx = flow.tensor(x), torch.tensor(x)
    _close(S.softmax(fx, 1), TS.softmax(tx, 1))
    _close(S.log_softmax(fx, 0), TS.log_softmax(tx, 0))
    _close(S.logsumexp(fx, 1), TS.logsumexp(tx, 1))
    _close(S.round(fx, decimals=1), TS.round(tx, decimals=1))
    p = flow.tensor(np.abs(x) / 3)
    _close(S.logit(p, eps=0.1), TS.logit(torch.tensor(np.abs(x) / 3), eps=0.1))
    _close(S.xlogy(fx, 2.0), TS.xlogy(tx, 2.0))
    _close(S.multigammaln(fx + 3, 2), TS.multigammaln(tx + 3, 2))
    assert S.gammainc is not None and S.psi is S.digamma
