"""Caller 2 of the one backward rule: JAX's own transformations on functions written with jflow
ops, eagerly and under jax.jit, against the same function written with jax.numpy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jflow as flow

T = flow.utils.from_jax

A = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])
B = np.array([[0.2, 0.7], [-0.3, 0.1], [0.5, -0.4]])


def f_flow(x: jax.Array) -> jax.Array:
    """A small network of jflow ops: matmul, softmax, tanh, mul, exp, sum."""
    t = T(x)
    h = (t @ T(jnp.asarray(B))).tanh()
    p = flow.softmax(h * 2.0, dim=1)
    return (p * h.exp()).sum()._value


def f_jnp(x: jax.Array) -> jax.Array:
    h = jnp.tanh(x @ B)
    p = jax.nn.softmax(h * 2.0, axis=1)
    return jnp.sum(p * jnp.exp(h))


def g_flow(x: jax.Array) -> jax.Array:
    """Vector-valued: for jacfwd / jacrev."""
    t = T(x)
    return (t.sigmoid() * t.sin()).reshape(-1)._value


def g_jnp(x: jax.Array) -> jax.Array:
    return (jax.nn.sigmoid(x) * jnp.sin(x)).reshape(-1)


def close(a, b, tol=1e-10) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def ref(transform, *args):
    """The jax.numpy reference under one jax.jit: one compile per reference instead of one per
    primitive of an eager transformation (the jflow side is what runs eagerly here)."""
    return jax.jit(transform)(*args)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_grad_vjp_jvp(jit: bool) -> None:
    w = (lambda f: jax.jit(f)) if jit else (lambda f: f)
    x = jnp.asarray(A)
    close(w(jax.grad(f_flow))(x), ref(jax.grad(f_jnp), x))
    y, pull = jax.vjp(g_flow, x)
    ct = jnp.linspace(-1, 1, y.size)

    def vjp_ref(v: jax.Array, c: jax.Array) -> tuple[jax.Array, jax.Array]:
        y_ref, pull_ref = jax.vjp(g_jnp, v)
        return y_ref, pull_ref(c)[0]

    y_ref, ct_ref = ref(vjp_ref, x, ct)
    close(y, y_ref)
    close(pull(ct)[0], ct_ref)
    t = jnp.cos(x)
    close(w(lambda v: jax.jvp(f_flow, (v,), (t,)))(x)[1],
          ref(lambda v: jax.jvp(f_jnp, (v,), (t,))[1], x))


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_jacobians_and_hessian(jit: bool) -> None:
    w = (lambda f: jax.jit(f)) if jit else (lambda f: f)
    x = jnp.asarray(A)
    close(w(jax.jacfwd(g_flow))(x), ref(jax.jacfwd(g_jnp), x))
    close(w(jax.jacrev(g_flow))(x), ref(jax.jacrev(g_jnp), x))
    close(w(jax.hessian(f_flow))(x), ref(jax.hessian(f_jnp), x), 1e-9)


def test_checkpoint_and_vmap_compositions() -> None:
    x = jnp.asarray(A)
    close(jax.grad(jax.checkpoint(f_flow))(x), ref(jax.grad(f_jnp), x))
    xs = jnp.stack([x, 2 * x, -x])
    # both references are the per-row gradient, by the two routes the jflow side takes
    want_vg, want_gv = ref(lambda v: (jax.vmap(jax.grad(f_jnp))(v),
                                      jax.grad(lambda u: jax.vmap(f_jnp)(u).sum())(v)), xs)
    close(jax.vmap(jax.grad(f_flow))(xs), want_vg)
    close(jax.jit(jax.vmap(jax.grad(f_flow)))(xs), want_vg)
    # vmap inside grad: the batched primitive's JVP re-enters vmap
    close(jax.grad(lambda v: jax.vmap(f_flow)(v).sum())(xs), want_gv)
    close(jax.vmap(jax.hessian(f_flow))(xs[:2]), ref(jax.vmap(jax.hessian(f_jnp)), xs[:2]), 1e-9)


def test_integer_inputs_and_nograd_ops_under_jax_grad() -> None:
    idx = jnp.asarray([2, 0])

    def f(x: jax.Array) -> jax.Array:
        t = T(x)
        m = flow.argmax(t, dim=1)  # NoGrad: no tangent flows through it
        return (t * (m == T(idx)).to(flow.float64).unsqueeze(1)).sum()._value

    x = jnp.asarray(A)
    want = np.zeros_like(A)
    want[np.argmax(A, 1) == np.asarray(idx)] = 1.0
    close(jax.grad(f)(x), want)


def test_jvp_emits_the_linear_primitive_and_grad_its_transpose() -> None:
    x = jnp.asarray(A)
    jaxpr = jax.make_jaxpr(lambda v: jax.jvp(g_flow, (v,), (v,)))(x)
    names = {e.primitive.name for e in jaxpr.jaxpr.eqns}
    assert "jflow.sigmoid_lin" in names and "jflow.sigmoid" in names
    grad_jaxpr = jax.make_jaxpr(jax.grad(lambda v: g_flow(v).sum()))(x)
    # reverse mode runs the backward rule (jflow ops), not the linear primitive
    assert not any(e.primitive.name.endswith("_lin") for e in grad_jaxpr.jaxpr.eqns)
