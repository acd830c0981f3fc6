"""``flow.autograd.functional`` (vjp, jvp, jacobian, hessian, vhp, hvp) against
``torch.autograd.functional`` on the same float64 inputs: values, the result structures
(tensor / tuple inputs and outputs), ``create_graph`` and ``strict``, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")

AF, TF = flow.autograd.functional, torch.autograd.functional
_rng = np.random.default_rng(0)
X, Y, V = _rng.standard_normal(3), _rng.standard_normal(3), _rng.standard_normal(3)


def _both(fn, *arrays):
    return fn(AF, flow, *(flow.tensor(a) for a in arrays)), \
        fn(TF, torch, *(torch.tensor(a) for a in arrays))


def _same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10,
                               atol=1e-12)


def _f(lib):
    return lambda a, b: (a.sin() * b, (a * a).sum() * b.exp())


def _scalar(lib):
    return lambda a: (a ** 3).sum() * a.prod()


def test_jacobian_and_its_structures() -> None:
    _same(*_both(lambda A, lib, a, b: A.jacobian(_f(lib), (a, b)), X, Y))     # tuple of tuples
    _same(*_both(lambda A, lib, a: A.jacobian(lambda t: t.tanh() * 2, a), X))  # one tensor
    _same(*_both(lambda A, lib, a: A.jacobian(lambda t: t.tanh(), (a,)), X))   # tuple of one
    _same(*_both(lambda A, lib, a, b: A.jacobian(lambda s, t: (s * t).sum(), (a, b)), X, Y))
    _same(*_both(lambda A, lib, a: A.jacobian(lambda t: (t, t.exp()), a), X))  # outputs tuple
    _same(*_both(lambda A, lib, a: A.jacobian(lambda t: lib.ones(2), a), X))   # zeros
    _same(*_both(lambda A, lib, a: A.jacobian(lambda t: t.sin(), a, vectorize=True,
                                              strategy="forward-mode"), X))


def test_products_and_hessian_match_pytorch() -> None:
    _same(*_both(lambda A, lib, a, v: A.vjp(lambda t: t.sin() * t, a, v), X, V))
    _same(*_both(lambda A, lib, a, b, v: A.vjp(_f(lib), (a, b), (v, v)), X, Y, V))
    _same(*_both(lambda A, lib, a: A.vjp(lambda t: (t * t).sum(), a), X))      # v left out
    _same(*_both(lambda A, lib, a, v: A.jvp(lambda t: t.sin() * t, a, v), X, V))
    _same(*_both(lambda A, lib, a, b, v: A.jvp(_f(lib), (a, b), (v, v)), X, Y, V))
    _same(*_both(lambda A, lib, a: A.hessian(_scalar(lib), a), X))
    _same(*_both(lambda A, lib, a, b: A.hessian(lambda s, t: (s * t.exp()).sum() * s.sum(),
                                                (a, b)), X, Y))
    _same(*_both(lambda A, lib, a, v: A.hvp(_scalar(lib), a, v), X, V))
    _same(*_both(lambda A, lib, a, v: A.vhp(_scalar(lib), a, v), X, V))


def test_create_graph_keeps_results_differentiable() -> None:
    got = []
    for A, lib in ((AF, flow), (TF, torch)):
        x = lib.tensor(X, requires_grad=True)
        _, g = A.vjp(lambda t: (t ** 3).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)         # d/dx sum(3 x^2) = 6 x
        got.append(gg.detach().numpy())
    np.testing.assert_allclose(got[0], got[1], rtol=1e-12)
    np.testing.assert_allclose(got[0], 6 * X, rtol=1e-12)
    x = flow.tensor(X, requires_grad=True)
    _, g = AF.vjp(lambda t: (t ** 3).sum(), x)
    assert not g.requires_grad                        # without create_graph: detached


def test_errors_are_pytorchs() -> None:
    x = flow.tensor(X)
    cases = [
        (lambda A, lib, t: A.vjp(lambda u: u.sin(), t), RuntimeError,
         "can only be None if the user-provided function returns a single Tensor"),
        (lambda A, lib, t: A.vjp(lambda u: u.sin(), t, t[:2]), RuntimeError,
         "v has invalid size"),
        (lambda A, lib, t: A.jvp(lambda u: u.sin(), t), RuntimeError,
         "can only be None if the input to the user-provided function"),
        (lambda A, lib, t: A.hessian(lambda u: u.sin(), t), RuntimeError,
         "should contain a single element"),
        (lambda A, lib, t: A.jacobian(lambda u: lib.ones(2), t, strict=True), RuntimeError,
         "does not require gradients"),
        (lambda A, lib, t: A.jacobian(lambda u: u, 3), TypeError,
         "must be either a Tensor or a tuple of Tensors"),
        (lambda A, lib, t: A.jacobian(lambda u: 3, t), TypeError,
         "outputs of the user-provided function given to jacobian must be"),
        (lambda A, lib, t: A.jacobian(lambda u: u, t, strategy="sideways"), AssertionError,
         "Expected strategy to be either"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn(AF, flow, x)
        with pytest.raises(exc, match=msg):
            fn(TF, torch, torch.tensor(X))
