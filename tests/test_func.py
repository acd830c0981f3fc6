"""flow.func: torch.func's transforms with Tensors in and out, on JAX's transforms and each
op's one backward rule. References: closed forms and finite differences (NumPy), and
torch.func on the same functions when PyTorch is installed."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow
from jflow import func

RNG = np.random.RandomState(0)
XA = RNG.randn(5).astype(np.float64)
MA = RNG.randn(4, 5).astype(np.float64)


def _f(lib):
    return lambda x: (lib.sin(x) * x).sum() + (x * x).sum() ** 0.5


def _g(lib):
    return lambda w, x: lib.tanh(x @ w.T).sum()


def test_grad_value_and_closed_forms():
    x = flow.tensor(XA)
    g = func.grad(lambda t: (t.sin() * t).sum())(x)
    np.testing.assert_allclose(g.numpy(), np.cos(XA) * XA + np.sin(XA), rtol=1e-12)
    assert not g.requires_grad and x.grad is None  # nothing on the tape
    (gw, gx), v = func.grad_and_value(_g(flow), argnums=(0, 1))(flow.tensor(MA), x)
    y = np.tanh(MA @ XA)
    np.testing.assert_allclose(v.numpy(), y.sum(), rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), np.outer(1 - y * y, XA), rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), MA.T @ (1 - y * y), rtol=1e-12)
    g, aux = func.grad(lambda t: ((t * t).sum(), t.mean()), has_aux=True)(x)
    np.testing.assert_allclose(g.numpy(), 2 * XA)
    np.testing.assert_allclose(aux.numpy(), XA.mean())


def test_compositions_and_jacobians():
    x = flow.tensor(XA)
    # second derivative of sum(x^3) along each coordinate: 6x
    gg = func.grad(lambda t: func.grad(lambda u: (u ** 3).sum())(t).sum())(x)
    np.testing.assert_allclose(gg.numpy(), 6 * XA, rtol=1e-12)
    h = func.hessian(lambda t: (t ** 3).sum())(x)
    np.testing.assert_allclose(h.numpy(), np.diag(6 * XA), rtol=1e-12)
    for jac in (func.jacrev, func.jacfwd):
        j = jac(lambda t: flow.tanh(flow.tensor(MA) @ t))(x)
        np.testing.assert_allclose(j.numpy(), (1 - np.tanh(MA @ XA) ** 2)[:, None] * MA,
                                   rtol=1e-12)
    out, tangent = func.jvp(lambda t: t.exp(), (x,), (flow.ones(5, dtype=flow.float64),))
    np.testing.assert_allclose(tangent.numpy(), np.exp(XA), rtol=1e-12)
    out, pull = func.vjp(lambda t: t.exp() * 2, x)
    (ct,) = pull(flow.ones(5, dtype=flow.float64))
    np.testing.assert_allclose(ct.numpy(), 2 * np.exp(XA), rtol=1e-12)


def test_vmap_per_sample_gradients_of_a_module():
    flow.manual_seed(0)
    model = flow.nn.Linear(5, 3).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    xs = flow.tensor(MA)

    def loss(p, x):
        return func.functional_call(model, p, (x,)).square().sum()

    per = func.vmap(func.grad(loss), in_dims=(None, 0))(params, xs)
    for i in range(4):  # each sample's gradient, by the tape, one at a time
        model.zero_grad()
        model(xs[i]).square().sum().backward()
        np.testing.assert_allclose(per["weight"][i].numpy(), model.weight.grad.numpy(),
                                   rtol=1e-12)
        np.testing.assert_allclose(per["bias"][i].numpy(), model.bias.grad.numpy(), rtol=1e-12)
    assert model.weight is dict(model.named_parameters())["weight"]  # module restored
    out = func.vmap(lambda x: x.sum(0), in_dims=1, out_dims=0)(xs)
    np.testing.assert_allclose(out.numpy(), MA.sum(0))


def test_functional_call_ties_weights_and_restores():
    emb = flow.nn.Embedding(4, 3)
    head = flow.nn.Linear(3, 4, bias=False)
    head.weight = emb.weight  # tied
    net = flow.nn.Sequential(emb, head)
    w = flow.ones(4, 3)
    out = func.functional_call(net, {"0.weight": w}, (flow.tensor([1, 2]),))
    np.testing.assert_allclose(out.numpy(), np.full((2, 4), 3.0))  # both uses replaced
    untied = func.functional_call(net, {"0.weight": w}, (flow.tensor([1]),), tie_weights=False)
    np.testing.assert_allclose(untied.detach().numpy(), emb.weight.sum(1).detach().numpy()[None])
    assert net[0].weight is emb.weight and net[1].weight is emb.weight
    with pytest.raises(KeyError, match="not a parameter or buffer"):
        func.functional_call(net, {"0.nope": w}, (flow.tensor([1]),))
    with pytest.raises(RuntimeError, match="missing"):
        func.functional_call(net, {}, (flow.tensor([1]),), strict=True)


def test_ensembles_with_stack_module_state():
    flow.manual_seed(1)
    models = [flow.nn.Linear(5, 2).double() for _ in range(3)]
    params, buffers = func.stack_module_state(models)
    assert params["weight"].shape == (3, 2, 5) and buffers == {}
    x = flow.tensor(MA)
    out = func.vmap(lambda p: func.functional_call(models[0], p, (x,)))(params)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].numpy(), m(x).detach().numpy(), rtol=1e-12)


def test_under_flow_jit_and_errors():
    step = flow.jit(lambda t: func.grad(lambda u: (u * u).sum())(t) * 3)
    np.testing.assert_allclose(step(flow.tensor(XA)).numpy(), 6 * XA, rtol=1e-12)
    with pytest.raises(RuntimeError, match="must return a scalar"):
        func.grad(lambda t: t * 2)(flow.tensor(XA))
    with pytest.raises(ValueError, match="argnums"):
        func.grad(lambda t: t.sum(), argnums=2)(flow.tensor(XA))
    with pytest.raises(RuntimeError, match="randomness='error'"):
        func.vmap(lambda t: t + flow.randn(5))(flow.tensor(MA))
    same = func.vmap(lambda t: t * 0 + flow.rand(5), randomness="same")(flow.tensor(MA))
    np.testing.assert_array_equal(same[0].numpy(), same[3].numpy())
    with pytest.raises(NotImplementedError, match="different"):
        func.vmap(lambda t: t, randomness="different")(flow.tensor(MA))
    g = flow.tensor(XA).to_global(flow.placement("cpu", [0]), flow.sbp.broadcast)
    with pytest.raises(TypeError, match="global tensors"):
        func.grad(lambda t: t.sum())(g)


def test_matches_torch_func_on_random_inputs():
    torch = pytest.importorskip("torch")
    import torch.func as tf
    for seed in range(3):
        r = np.random.RandomState(seed)
        w, x = r.randn(4, 5), r.randn(5)
        pairs = [
            (func.grad(_f(flow))(flow.tensor(x)), tf.grad(_f(torch))(torch.tensor(x))),
            (func.jacrev(_g(flow), argnums=0)(flow.tensor(w), flow.tensor(x)),
             tf.jacrev(_g(torch), argnums=0)(torch.tensor(w), torch.tensor(x))),
            (func.hessian(_f(flow))(flow.tensor(x)), tf.hessian(_f(torch))(torch.tensor(x))),
            (func.vmap(func.grad(_f(flow)))(flow.tensor(w)),
             tf.vmap(tf.grad(_f(torch)))(torch.tensor(w))),
        ]
        for ours, theirs in pairs:
            np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)
