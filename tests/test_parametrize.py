"""nn.utils.parametrize / parametrizations.weight_norm / the older nn.utils.weight_norm:
values and gradients against a NumPy reference (and PyTorch's, where installed), the
state-dict keys PyTorch writes, assignment, chaining, removal, caching, copies, errors."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import jflow as flow
import jflow.nn as nn
from jflow.nn.utils import parametrize

RS = np.random.RandomState(7)
W = RS.randn(6, 3, 5).astype(np.float32)   # a Conv1d(3, 6, 5) weight
X = RS.randn(2, 3, 9).astype(np.float32)


def _np_norm_except(v: np.ndarray, dim: int | None) -> np.ndarray:
    if dim is None or dim == -1:
        return np.sqrt((v.astype(np.float64) ** 2).sum())
    axes = tuple(a for a in range(v.ndim) if a != dim % v.ndim)
    return np.sqrt((v.astype(np.float64) ** 2).sum(axis=axes, keepdims=True))


def _conv(weight: np.ndarray = W) -> nn.Conv1d:
    m = nn.Conv1d(3, 6, 5)
    m.weight.data = flow.tensor(weight)
    m.bias.data = flow.zeros(6)
    return m


@pytest.mark.parametrize("dim", [0, 2, None, -2])
def test_weight_norm_parametrization_values_grads_and_keys(dim):
    m = nn.utils.parametrizations.weight_norm(_conv(), dim=dim)
    assert type(m).__name__ == "ParametrizedConv1d" and isinstance(m, nn.Conv1d)
    assert parametrize.type_before_parametrizations(m) is nn.Conv1d
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.original0",
                                      "parametrizations.weight.original1"]
    g = m.parametrizations.weight.original0
    np.testing.assert_allclose(g.detach().numpy(), _np_norm_except(W, dim), rtol=1e-6)
    np.testing.assert_array_equal(m.parametrizations.weight.original1.detach().numpy(), W)
    np.testing.assert_allclose(m.weight.detach().numpy(), W, rtol=1e-6, atol=1e-6)
    # a new magnitude scales each slice: w = g * v / ||v||
    g_new = np.asarray(RS.rand(*g.shape) + 0.5, dtype=np.float32)
    m.parametrizations.weight.original0.data = flow.tensor(g_new)
    want = g_new * W / _np_norm_except(W, dim)
    np.testing.assert_allclose(m.weight.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    # the gradient of sum(w * c) w.r.t. g: sum over the slice of c * v / ||v||
    c = RS.randn(*W.shape).astype(np.float32)
    (m.weight * flow.tensor(c)).sum().backward()
    red = tuple(range(W.ndim)) if dim is None else tuple(
        a for a in range(W.ndim) if a != dim % W.ndim)
    dg = (c * W / _np_norm_except(W, dim)).sum(axis=red, keepdims=dim is not None)
    np.testing.assert_allclose(m.parametrizations.weight.original0.grad.numpy(),
                               np.reshape(dg, g.shape), rtol=1e-4, atol=1e-5)


def test_weight_norm_matches_pytorch_forward_backward():
    torch = pytest.importorskip("torch")
    for dim in (0, 2, None):
        fm = nn.utils.parametrizations.weight_norm(_conv(), dim=dim)
        tm = torch.nn.Conv1d(3, 6, 5)
        with torch.no_grad():
            tm.weight.copy_(torch.tensor(W))
            tm.bias.zero_()
        torch.nn.utils.parametrizations.weight_norm(tm, dim=dim)
        assert list(fm.state_dict()) == list(tm.state_dict())
        fy, ty = fm(flow.tensor(X)), tm(torch.tensor(X))
        (fy * fy).sum().backward()
        (ty * ty).sum().backward()
        np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=1e-5,
                                   atol=1e-5)
        for (n, p), (tn, tp) in zip(fm.named_parameters(), tm.named_parameters()):
            assert n == tn
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-4)
        # a PyTorch checkpoint loads, and so does one of the older weight_g / weight_v form
        fm.load_state_dict({k: flow.tensor(v.detach().numpy() * 2)
                            for k, v in tm.state_dict().items()})
        np.testing.assert_allclose(fm.parametrizations.weight.original1.detach().numpy(), 2 * W)
    old = torch.nn.Conv1d(3, 6, 5)
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(old, dim=2)
    m = nn.utils.parametrizations.weight_norm(nn.Conv1d(3, 6, 5), dim=2)
    m.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in old.state_dict().items()})
    np.testing.assert_allclose(m.weight.detach().numpy(), old.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_assignment_goes_through_right_inverse_and_keeps_the_parameters():
    m = nn.utils.parametrizations.weight_norm(_conv(), dim=0)
    g, v = m.parametrizations.weight.original0, m.parametrizations.weight.original1
    w2 = RS.randn(*W.shape).astype(np.float32)
    m.weight = flow.tensor(w2)
    assert m.parametrizations.weight.original0 is g and m.parametrizations.weight.original1 is v
    np.testing.assert_allclose(g.detach().numpy(), _np_norm_except(w2, 0), rtol=1e-6)
    np.testing.assert_allclose(m.weight.detach().numpy(), w2, rtol=1e-5, atol=1e-6)
    with pytest.raises(KeyError, match="already exists"):
        m.weight = nn.Parameter(flow.tensor(w2))  # (PyTorch's error too)


class Symmetric(nn.Module):
    calls = 0

    def forward(self, x):
        Symmetric.calls += 1
        return x.triu() + x.triu(1).transpose(0, 1)

    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    def forward(self, x):
        return x * 3.0


def test_custom_parametrizations_chain_remove_and_cache():
    a = RS.randn(4, 4).astype(np.float32)
    sym = np.triu(a) + np.triu(a, 1).T
    lin = nn.Linear(4, 4)
    lin.weight.data = flow.tensor(a)
    p = lin.weight
    parametrize.register_parametrization(lin, "weight", Symmetric())
    assert lin.parametrizations.weight.original is p       # one original: the same object
    np.testing.assert_array_equal(p.detach().numpy(), np.triu(a))
    np.testing.assert_allclose(lin.weight.detach().numpy(), sym)
    parametrize.register_parametrization(lin, "weight", Scale())  # chained after Symmetric
    np.testing.assert_allclose(lin.weight.detach().numpy(), 3 * sym)
    with pytest.raises(RuntimeError, match="Scale does not implement right_inverse"):
        lin.weight = flow.tensor(a)
    Symmetric.calls = 0
    with parametrize.cached():
        w1, w2 = lin.weight, lin.weight
    assert w1 is w2 and Symmetric.calls == 1
    lin.weight  # noqa: B018  (outside the block: computed again)
    assert Symmetric.calls == 2
    # training step: the gradient reaches the original through both parametrizations
    lin.weight.sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), np.where(np.eye(4) > 0, 3.0, 6.0) * np.triu(
        np.ones((4, 4))), rtol=1e-6)
    parametrize.remove_parametrizations(lin, "weight")
    assert type(lin) is nn.Linear and not hasattr(lin, "parametrizations")
    assert lin.weight is p and isinstance(lin.weight, nn.Parameter)
    np.testing.assert_allclose(p.detach().numpy(), 3 * sym, rtol=1e-6)
    assert list(lin.state_dict()) == ["bias", "weight"]  # (re-registered last, as PyTorch)
    # leave_parametrized=False keeps the original value; a sequence of originals cannot
    parametrize.register_parametrization(lin, "bias", Scale())
    parametrize.remove_parametrizations(lin, "bias", leave_parametrized=False)
    wn = nn.utils.parametrizations.weight_norm(nn.Linear(4, 4))
    with pytest.raises(ValueError, match="leave_parametrized=False"):
        parametrize.remove_parametrizations(wn, "weight", leave_parametrized=False)
    before = wn.weight.detach().numpy()
    parametrize.remove_parametrizations(wn, "weight")
    assert type(wn) is nn.Linear and isinstance(wn.weight, nn.Parameter)
    np.testing.assert_allclose(wn.weight.detach().numpy(), before)


def test_parametrize_errors_copies_and_pickling():
    lin = nn.Linear(4, 3)
    with pytest.raises(ValueError, match="no parameter, buffer or parametrized tensor named "
                                         "'kernel'"):
        parametrize.register_parametrization(lin, "kernel", Scale())

    class Flatten(nn.Module):
        def forward(self, x):
            return x.reshape(-1)

    with pytest.raises(ValueError, match="pass unsafe=True"):
        parametrize.register_parametrization(lin, "weight", Flatten())
    assert not parametrize.is_parametrized(lin)
    parametrize.register_parametrization(lin, "weight", Flatten(), unsafe=True)
    assert lin.weight.shape == (12,)
    with pytest.raises(ValueError, match="no parametrization on 'bias'"):
        parametrize.remove_parametrizations(lin, "bias")
    m = nn.utils.parametrizations.weight_norm(nn.Linear(4, 3))
    twin = copy.deepcopy(m)
    assert type(twin) is type(m) and twin.parametrizations is not m.parametrizations
    np.testing.assert_array_equal(twin.weight.detach().numpy(), m.weight.detach().numpy())
    assert twin.parametrizations.weight.original0 is not m.parametrizations.weight.original0
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(m)


def test_older_weight_norm_hook_form():
    m = _conv()
    with pytest.warns(FutureWarning, match="deprecated"):
        nn.utils.weight_norm(m, dim=2)
    assert sorted(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    np.testing.assert_allclose(m.weight_g.detach().numpy(), _np_norm_except(W, 2), rtol=1e-6)
    with pytest.raises(RuntimeError, match="already has a weight_norm hook"), \
            pytest.warns(FutureWarning):
        nn.utils.weight_norm(m, dim=2)
    m.weight_g.data = m.weight_g * 2.0
    y = m(flow.tensor(X))  # the pre-hook recomputes the weight from weight_g / weight_v
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * W, rtol=1e-5, atol=1e-6)
    y.sum().backward()
    assert m.weight_g.grad is not None and m.weight_v.grad is not None
    nn.utils.remove_weight_norm(m)
    assert sorted(m.state_dict()) == ["bias", "weight"] and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * W, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(m)
    np.testing.assert_allclose(flow.norm_except_dim(flow.tensor(W), 2, 1).numpy(),
                               _np_norm_except(W, 1), rtol=1e-6)
    np.testing.assert_allclose(flow._weight_norm(flow.tensor(W), flow.ones(1, 3, 1), 1).numpy(),
                               W / _np_norm_except(W, 1), rtol=1e-5)


def test_weight_norm_in_a_compiled_step_matches_eager():
    eager = nn.utils.parametrizations.weight_norm(_conv(), dim=0)
    comp = nn.utils.parametrizations.weight_norm(_conv(), dim=0)

    @flow.jit
    def step(x):
        loss = (comp(x) ** 2).mean()
        loss.backward()
        return loss

    lc = step(flow.tensor(X))
    le = (eager(flow.tensor(X)) ** 2).mean()
    le.backward()
    np.testing.assert_allclose(float(lc), float(le), rtol=1e-5)
    for p, q in zip(comp.parameters(), eager.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)


def _sn_pair(torch, make_f, make_t, dim=None):
    """A jflow and a PyTorch module with spectral_norm and the same weights and power
    iteration vectors (PyTorch's state dict loaded: their random draws differ)."""
    tm = torch.nn.utils.parametrizations.spectral_norm(make_t(), dim=dim)
    fm = nn.utils.parametrizations.spectral_norm(make_f(), dim=dim)
    assert list(fm.state_dict()) == list(tm.state_dict())
    # (copies: PyTorch's forward updates its power-iteration buffers in place, and
    # .numpy() shares their memory; see the session-18 note on flow.tensor's transfer timing)
    fm.load_state_dict({k: flow.tensor(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    return fm, tm


def test_spectral_norm_matches_pytorch_in_training_and_eval():
    torch = pytest.importorskip("torch")
    for make_f, make_t, x in (
            (lambda: nn.Conv1d(3, 6, 5), lambda: torch.nn.Conv1d(3, 6, 5), X),
            (lambda: nn.ConvTranspose1d(3, 6, 5), lambda: torch.nn.ConvTranspose1d(3, 6, 5), X)):
        fm, tm = _sn_pair(torch, make_f, make_t)
        for _ in range(2):  # each training-mode read runs one more power iteration
            fy, ty = fm(flow.tensor(x)), tm(torch.tensor(x))
            np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=1e-4,
                                       atol=1e-5)
        (fy * fy).sum().backward()
        (ty * ty).sum().backward()
        for k in ("_u", "_v"):
            np.testing.assert_allclose(getattr(fm.parametrizations.weight[0], k).numpy(),
                                       getattr(tm.parametrizations.weight[0], k).numpy(),
                                       rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(fm.parametrizations.weight.original.grad.numpy(),
                                   tm.parametrizations.weight.original.grad.numpy(),
                                   rtol=1e-3, atol=1e-4)
        u = fm.parametrizations.weight[0]._u.numpy().copy()
        fm.eval()
        fm(flow.tensor(x))
        np.testing.assert_array_equal(fm.parametrizations.weight[0]._u.numpy(), u)


def test_spectral_norm_sigma_one_vectors_and_errors():
    lin = nn.utils.parametrizations.spectral_norm(nn.Linear(5, 4), n_power_iterations=3)
    for _ in range(5):
        w = lin.weight.detach().numpy()
    np.testing.assert_allclose(np.linalg.svd(w, compute_uv=False)[0], 1.0, rtol=1e-4)
    v = flow.tensor([3.0, 4.0])
    one = nn.Module()
    one.register_buffer("scale", v)
    nn.utils.parametrizations.spectral_norm(one, "scale")  # 1-D: divided by its norm
    np.testing.assert_allclose(one.scale.numpy(), [0.6, 0.8], rtol=1e-6)
    with pytest.raises(IndexError, match="dim 2 is out of range for a 2-D weight"):
        nn.utils.parametrizations.spectral_norm(nn.Linear(3, 2), dim=2)
    with pytest.raises(ValueError, match="n_power_iterations must be positive"):
        nn.utils.parametrizations.spectral_norm(nn.Linear(3, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="no parameter or buffer named 'kernel'"):
        nn.utils.parametrizations.spectral_norm(nn.Linear(3, 2), "kernel")


def test_spectral_norm_in_a_compiled_step_updates_its_vectors_as_eager():
    eager = nn.utils.parametrizations.spectral_norm(nn.Linear(5, 4))
    comp = nn.utils.parametrizations.spectral_norm(nn.Linear(5, 4))
    comp.load_state_dict(eager.state_dict())
    x = flow.tensor(RS.randn(3, 5).astype(np.float32))

    @flow.jit
    def step(x):
        loss = comp(x).square().mean()
        loss.backward()
        return loss

    for _ in range(2):
        lc = step(x)
        le = eager(x).square().mean()
        le.backward()
        np.testing.assert_allclose(float(lc), float(le), rtol=1e-5)
    for k in ("_u", "_v"):
        np.testing.assert_allclose(getattr(comp.parametrizations.weight[0], k).numpy(),
                                   getattr(eager.parametrizations.weight[0], k).numpy(),
                                   rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(comp.parametrizations.weight.original.grad.numpy(),
                               eager.parametrizations.weight.original.grad.numpy(), rtol=1e-4,
                               atol=1e-6)


def test_older_spectral_norm_hook_form_matches_pytorch():
    torch = pytest.importorskip("torch")
    tm = torch.nn.utils.spectral_norm(torch.nn.Conv1d(3, 6, 5))
    fm = nn.utils.spectral_norm(nn.Conv1d(3, 6, 5))
    assert sorted(fm.state_dict()) == sorted(tm.state_dict()) == [
        "bias", "weight_orig", "weight_u", "weight_v"]
    fm.load_state_dict({k: flow.tensor(v.detach().numpy().copy())  # (as _sn_pair)
                        for k, v in tm.state_dict().items()})
    for _ in range(2):
        fy, ty = fm(flow.tensor(X)), tm(torch.tensor(X))
        np.testing.assert_allclose(fy.detach().numpy(), ty.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
    (fy * fy).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(fm.weight_u.numpy(), tm.weight_u.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fm.weight_orig.grad.numpy(), tm.weight_orig.grad.numpy(),
                               rtol=1e-3, atol=1e-4)
    with pytest.raises(RuntimeError, match="already has a spectral_norm hook"):
        nn.utils.spectral_norm(fm)
    nn.utils.remove_spectral_norm(fm)
    torch.nn.utils.remove_spectral_norm(tm)
    assert sorted(fm.state_dict()) == ["bias", "weight"] and isinstance(fm.weight, nn.Parameter)
    np.testing.assert_allclose(fm.weight.detach().numpy(), tm.weight.detach().numpy(),
                               rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(fm)
