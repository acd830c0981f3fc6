"""flow.nn.grad (the convolution input / weight gradients) and nn.LinearCrossEntropyLoss /
nn.functional.linear_cross_entropy against PyTorch on random inputs.

nn.grad: conv1d/2d/3d_input and _weight with stride, padding, dilation and groups equal
PyTorch's; their own gradient (they are differentiable) equals PyTorch's double backward;
PyTorch's errors. LinearCrossEntropyLoss: parameter shapes and state-dict keys (a PyTorch
state dict loads), repr, the loss and the gradients of input, weight and bias for class
indices (plain, K-dimensional with bias and label smoothing, class weights with
ignore_index) and class probabilities; the constructor's and the function's errors.

Shapes are tiny and shared between the cases.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")
TG = pytest.importorskip("torch.nn.grad")

RS = np.random.RandomState(0)

# -- nn.grad -------------------------------------------------------------------------------------

CONV_CASES = {
    "1d": (1, (2, 4, 9), (6, 2, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}),
    "1d_plain": (1, (2, 4, 9), (6, 4, 3), {}),
    "2d": (2, (2, 4, 7, 6), (6, 2, 3, 2),
           {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2), "groups": 2}),
    "2d_depthwise": (2, (2, 4, 7, 6), (4, 1, 3, 3), {"groups": 4, "padding": 1}),
    "3d": (3, (1, 2, 5, 4, 6), (4, 1, 2, 3, 2),
           {"stride": (1, 2, 2), "padding": 1, "dilation": (2, 1, 1), "groups": 2}),
}


def _conv_case(name: str):
    nd, xs, ws, kw = CONV_CASES[name]
    x = RS.randn(*xs).astype(np.float32)
    w = RS.randn(*ws).astype(np.float32)
    y = getattr(torch.nn.functional, f"conv{nd}d")(torch.tensor(x), torch.tensor(w), **kw)
    gy = RS.randn(*y.shape).astype(np.float32)
    return nd, xs, ws, kw, x, w, gy


@pytest.mark.parametrize("name", list(CONV_CASES))
def test_conv_input_and_weight_grads_match_torch(name: str) -> None:
    nd, xs, ws, kw, x, w, gy = _conv_case(name)
    for kind, args_t, args_f in (
            ("input", (xs, torch.tensor(w), torch.tensor(gy)),
             (xs, flow.tensor(w), flow.tensor(gy))),
            ("weight", (torch.tensor(x), ws, torch.tensor(gy)),
             (flow.tensor(x), ws, flow.tensor(gy)))):
        t = getattr(TG, f"conv{nd}d_{kind}")(*args_t, **kw)
        f = getattr(flow.nn.grad, f"conv{nd}d_{kind}")(*args_f, **kw)
        assert tuple(f.shape) == tuple(t.shape) == (xs if kind == "input" else ws)
        np.testing.assert_allclose(f.numpy(), t.numpy(), rtol=1e-5, atol=2e-5, err_msg=kind)


def test_conv_grads_are_differentiable_as_torch() -> None:
    nd, xs, ws, kw, x, w, gy = _conv_case("2d")
    g2 = RS.randn(*xs).astype(np.float32)
    tw, tg = torch.tensor(w, requires_grad=True), torch.tensor(gy, requires_grad=True)
    fw, fg = flow.tensor(w, requires_grad=True), flow.tensor(gy, requires_grad=True)
    (TG.conv2d_input(xs, tw, tg, **kw) * torch.tensor(g2)).sum().backward()
    (flow.nn.grad.conv2d_input(xs, fw, fg, **kw) * flow.tensor(g2)).sum().backward()
    for a, b in ((fw, tw), (fg, tg)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=2e-5)


def _plain(msg: str) -> str:
    return re.sub(r"\b(torch|jflow|flow)\.", "", msg)


def _same_error(fn, exact: bool = True) -> None:
    """The same exception type (and, if ``exact``, PyTorch's first line in jflow's)."""
    with pytest.raises(Exception) as te:
        fn(torch)
    with pytest.raises(type(te.value)) as fe:
        fn(flow)
    if exact:
        assert _plain(str(te.value).splitlines()[0]) in _plain(str(fe.value))


def test_conv_grad_errors_match_torch() -> None:
    G = {torch: TG, flow: flow.nn.grad}
    _same_error(lambda lib: G[lib].conv2d_input((2, 4, 7, 6), lib.ones(6, 2, 3, 2),
                                                lib.ones(2, 6, 5, 5), stride=(1, 2, 3),
                                                groups=2))
    _same_error(lambda lib: G[lib].conv2d_weight(lib.ones(2, 4, 7, 6), (6, 3, 3, 2),
                                                 lib.ones(2, 6, 5, 5), groups=2))
    # a grad_output of the wrong size, a 3-entry input_size: both RuntimeErrors
    _same_error(lambda lib: G[lib].conv2d_input((2, 4, 7, 6), lib.ones(6, 2, 3, 2),
                                                lib.ones(2, 6, 3, 3), groups=2), exact=False)
    _same_error(lambda lib: G[lib].conv2d_input((4, 7, 6), lib.ones(6, 2, 3, 2),
                                                lib.ones(2, 6, 5, 5), groups=2), exact=False)
    with pytest.raises(TypeError, match="conv1d_input.*'padding'"):
        flow.nn.grad.conv1d_input((2, 4, 9), flow.ones(6, 4, 3), flow.ones(2, 6, 7),
                                  padding="same")


# -- LinearCrossEntropyLoss / linear_cross_entropy ------------------------------------------------

C, IN = 4, 5
XL = RS.randn(6, IN).astype(np.float32)
CLASS_WEIGHT = np.arange(1, C + 1, dtype=np.float32)

LCE_CASES = {
    "plain": ({}, (6,)),
    "k_dim_bias_smoothing": ({"bias": True, "out_features": (3,), "reduction": "sum",
                              "label_smoothing": 0.1}, (6, 3)),
    "weights_ignore_index": ({"bias": True, "weight": "w", "ignore_index": 1,
                              "reduction": "none"}, (6,)),
}


def _lce_pair(kw: dict):
    def make(lib):
        d = dict(kw)
        if d.get("weight") == "w":
            d["weight"] = lib.tensor(CLASS_WEIGHT)
        return lib.nn.LinearCrossEntropyLoss(IN, C, **d)

    tm, fm = make(torch), make(flow)
    fm.load_state_dict({k: flow.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return tm, fm


def _check_loss(tm, fm, ttarget, ftarget) -> None:
    tx, fx = torch.tensor(XL, requires_grad=True), flow.tensor(XL, requires_grad=True)
    tl, fl = tm(tx, ttarget), fm(fx, ftarget)
    assert tuple(fl.shape) == tuple(tl.shape)
    np.testing.assert_allclose(fl.detach().numpy(), tl.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = np.asarray(RS.rand(*tl.shape), dtype=np.float32)
    tl.backward(torch.tensor(g))
    fl.backward(flow.tensor(g))
    pairs = [(fx, tx), (fm.linear.weight, tm.linear.weight)]
    if tm.linear.bias is not None:
        pairs.append((fm.linear.bias, tm.linear.bias))
    for a, b in pairs:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", list(LCE_CASES))
def test_linear_cross_entropy_loss_matches_torch(name: str) -> None:
    kw, tshape = LCE_CASES[name]
    tm, fm = _lce_pair(kw)
    # PyTorch's parameters (a 2-d weight, a flat bias), keys and repr
    assert list(fm.state_dict()) == list(tm.state_dict())
    assert [tuple(v.shape) for v in fm.state_dict().values()] == \
        [tuple(v.shape) for v in tm.state_dict().values()]
    assert _plain(repr(fm)) == _plain(repr(tm))
    target = RS.randint(0, C, tshape)
    _check_loss(tm, fm, torch.tensor(target), flow.tensor(target))


def test_linear_cross_entropy_probability_targets_and_function() -> None:
    tm, fm = _lce_pair({"bias": True})
    probs = RS.rand(6, C).astype(np.float32)
    probs /= probs.sum(1, keepdims=True)
    _check_loss(tm, fm, torch.tensor(probs), flow.tensor(probs))
    # the function with an unbatched input
    w = RS.randn(C, IN).astype(np.float32)
    t = torch.nn.functional.linear_cross_entropy(torch.tensor(XL[0]), torch.tensor(w),
                                                 torch.tensor(2))
    f = flow.nn.functional.linear_cross_entropy(flow.tensor(XL[0]), flow.tensor(w),
                                                flow.tensor(2))
    np.testing.assert_allclose(f.numpy(), t.numpy(), rtol=1e-5)


def test_linear_cross_entropy_errors_match_torch() -> None:
    _same_error(lambda lib: lib.nn.LinearCrossEntropyLoss(IN, C, weight=lib.ones(3)))
    _same_error(lambda lib: lib.nn.LinearCrossEntropyLoss(IN, C, label_smoothing=1.5))
    F = {torch: torch.nn.functional, flow: flow.nn.functional}
    x, w = XL, RS.randn(C, IN).astype(np.float32)
    w3 = RS.randn(C, 3, IN).astype(np.float32)
    probs = np.full((6, C), 1 / C, np.float32)
    _same_error(lambda lib: F[lib].linear_cross_entropy(lib.tensor(x[None]), lib.tensor(w),
                                                        lib.zeros(1, 6, dtype=lib.int64)))
    _same_error(lambda lib: F[lib].linear_cross_entropy(lib.tensor(x[:, :3]), lib.tensor(w),
                                                        lib.zeros(6, dtype=lib.int64)))
    _same_error(lambda lib: F[lib].linear_cross_entropy(lib.tensor(x), lib.tensor(w),
                                                        lib.zeros(6, dtype=lib.int64),
                                                        linear_bias=lib.ones(3)))
    _same_error(lambda lib: F[lib].linear_cross_entropy(lib.tensor(x[0]), lib.tensor(w3),
                                                        lib.zeros(3, dtype=lib.int64)))
    _same_error(lambda lib: F[lib].linear_cross_entropy(lib.tensor(x), lib.tensor(w),
                                                        lib.tensor(probs), ignore_index=0))
