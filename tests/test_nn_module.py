"""flow.nn: Module registration and traversal, state dicts, Parameter, layers, init."""

import copy
import math
from collections import OrderedDict

import jax
import numpy as np
import pytest

import jflow as flow
from jflow import nn
from jflow.nn import functional as F
from jflow.nn import init


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 3, bias=False)
        self.register_buffer("scale", flow.ones(3))
        self.register_buffer("tmp", flow.zeros(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale


# -- Parameter ---------------------------------------------------------------------------------
def test_parameter_is_a_tensor_and_a_pytree():
    p = nn.Parameter(flow.randn(2, 3))
    assert isinstance(p, flow.Tensor) and p.requires_grad and p.is_leaf
    assert repr(p).startswith("Parameter containing:")
    y = (p * 2 + flow.sin(p)).sum()          # every op accepts it
    assert type(y) is flow.Tensor
    y.backward()
    np.testing.assert_allclose(p.grad.numpy(), 2 + np.cos(p.detach().numpy()), rtol=1e-6)
    leaves, tree = jax.tree_util.tree_flatten({"w": p})
    assert len(leaves) == 1
    back = jax.tree_util.tree_unflatten(tree, leaves)["w"]
    assert isinstance(back, nn.Parameter) and back.requires_grad
    out = jax.jit(lambda q: flow.tanh(q) * 3)(p)      # through jax.jit as a pytree
    np.testing.assert_allclose(out.detach().numpy(), np.tanh(p.detach().numpy()) * 3, rtol=1e-6)
    assert not nn.Parameter(flow.ones(2), requires_grad=False).requires_grad
    with pytest.raises(TypeError):
        nn.Parameter([1.0, 2.0])


def test_parameter_deepcopy_and_data():
    p = nn.Parameter(flow.ones(2))
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q is not p
    q.data = flow.zeros(2)
    np.testing.assert_array_equal(p.detach().numpy(), [1, 1])
    np.testing.assert_array_equal(q.detach().numpy(), [0, 0])


# -- registration and traversal ------------------------------------------------------------------
def test_registration_and_named_members():
    m = MLP()
    assert [n for n, _ in m.named_parameters()] == ["fc1.weight", "fc1.bias", "fc2.weight"]
    assert [n for n, _ in m.named_buffers()] == ["scale", "tmp"]
    assert [n for n, _ in m.named_modules()] == ["", "fc1", "act", "fc2"]
    assert [type(c).__name__ for c in m.children()] == ["Linear", "ReLU", "Linear"]
    assert m.fc2.bias is None and "bias" in m.fc2._parameters
    assert m.get_parameter("fc1.bias") is m.fc1.bias
    assert m.get_submodule("fc2") is m.fc2
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        m.nope  # noqa: B018
    with pytest.raises(TypeError, match="parameter 'weight'"):
        m.fc1.weight = flow.ones(8, 4)           # a plain tensor can't replace a parameter
    m.scale = flow.full((3,), 2.0)               # a buffer can be reassigned
    assert m.scale.numpy().tolist() == [2, 2, 2]
    del m.act
    assert [n for n, _ in m.named_children()] == ["fc1", "fc2"]


def test_shared_parameters_appear_once():
    lin = nn.Linear(3, 3)
    seq = nn.Sequential(lin, nn.Tanh(), lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.named_parameters(remove_duplicate=False))) == 4


def test_assign_before_init_is_refused():
    class Bad(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(flow.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Bad()


def test_train_eval_apply_requires_grad():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU()))
    m.eval()
    assert all(not s.training for s in m.modules())
    m.train()
    assert all(s.training for s in m.modules())
    seen = []
    m.apply(lambda s: seen.append(type(s).__name__))
    assert seen == ["Linear", "ReLU", "Sequential", "Sequential"]
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


def test_zero_grad():
    m = MLP()
    m(flow.randn(5, 4)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0 for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_to_dtype_keeps_parameter_objects():
    m = MLP()
    m.register_buffer("count", flow.tensor(3))
    w = m.fc1.weight
    m.to(flow.float64)
    assert m.fc1.weight is w and w.dtype == flow.float64 and isinstance(w, nn.Parameter)
    assert m.scale.dtype == flow.float64 and m.count.dtype == flow.int64
    assert m(flow.randn(2, 4, dtype=flow.float64)).dtype == flow.float64
    m.float()
    assert w.dtype == flow.float32
    with pytest.raises(TypeError, match="floating point"):
        m.to(flow.int32)


def test_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h = m.register_forward_hook(lambda mod, args, out: calls.append(out.shape) or out * 0)
    assert float(m(flow.ones(1, 2)).abs().sum()) == 0
    h.remove()
    assert float(m(flow.ones(1, 2)).abs().sum()) != 0
    assert calls == [flow.Size([1, 2])]


def test_repr():
    m = MLP()
    assert repr(m) == ("MLP(\n  (fc1): Linear(in_features=4, out_features=8, bias=True)\n"
                       "  (act): ReLU()\n  (fc2): Linear(in_features=8, out_features=3, "
                       "bias=False)\n)")
    assert repr(nn.Sequential()) == "Sequential()"


# -- state dicts -------------------------------------------------------------------------------
def test_state_dict_round_trip():
    flow.manual_seed(0)
    a, b = MLP(), MLP()
    sd = a.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["scale", "fc1.weight", "fc1.bias", "fc2.weight"]   # no "tmp"
    assert not any(t.requires_grad for t in sd.values())
    w = b.fc1.weight
    res = b.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert b.fc1.weight is w                     # loaded in place
    x = flow.randn(3, 4)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())


def test_load_state_dict_strict_errors():
    m = MLP()
    sd = m.state_dict()
    del sd["fc1.bias"]
    sd["extra.weight"] = flow.ones(1)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    msg = str(e.value)
    assert 'Missing key(s) in state_dict: "fc1.bias"' in msg
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in msg
    res = m.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["fc1.bias"] and res.unexpected_keys == ["extra.weight"]


def test_load_state_dict_shape_mismatch():
    m = MLP()
    sd = m.state_dict()
    sd["fc1.weight"] = flow.ones(4, 8)
    for strict in (True, False):
        with pytest.raises(RuntimeError, match=r"size mismatch for fc1.weight: copying a param "
                           r"with shape \[4, 8\] from checkpoint, the shape in current model "
                           r"is \[8, 4\]"):
            m.load_state_dict(sd, strict=strict)


def test_load_state_dict_casts_dtype():
    m = nn.Linear(2, 2)
    sd = {k: v.double() for k, v in m.state_dict().items()}
    m.load_state_dict(sd)
    assert m.weight.dtype == flow.float32


# -- containers ------------------------------------------------------------------------------------
def test_containers():
    seq = nn.Sequential(OrderedDict(a=nn.Linear(2, 3), b=nn.ReLU()))
    assert isinstance(seq[0], nn.Linear) and isinstance(seq[-1], nn.ReLU)
    assert isinstance(seq[:1], nn.Sequential) and len(seq[:1]) == 1
    seq.append(nn.Identity())
    assert len(seq) == 3
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    ml.append(nn.Tanh())
    ml.insert(0, nn.Identity())
    assert [type(x).__name__ for x in ml] == ["Identity", "Linear", "Linear", "Linear", "Tanh"]
    assert len(list(ml.parameters())) == 6
    assert [n for n, _ in ml.named_children()] == ["0", "1", "2", "3", "4"]
    md = nn.ModuleDict({"x": nn.Linear(2, 2), "y": nn.ReLU()})
    assert "x" in md and list(md.keys()) == ["x", "y"]
    assert [n for n, _ in md.named_parameters()] == ["x.weight", "x.bias"]


# -- layers ----------------------------------------------------------------------------------------
def test_linear_matches_numpy():
    lin = nn.Linear(3, 2)
    x = flow.randn(4, 3)
    ref = x.numpy() @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()
    np.testing.assert_allclose(lin(x).detach().numpy(), ref, rtol=1e-5, atol=1e-6)
    x3 = flow.randn(2, 4, 3)
    assert lin(x3).shape == flow.Size([2, 4, 2])


def test_linear_init_bounds_and_reproducible():
    flow.manual_seed(123)
    a = nn.Linear(50, 40)
    flow.manual_seed(123)
    b = nn.Linear(50, 40)
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())
    np.testing.assert_array_equal(a.bias.detach().numpy(), b.bias.detach().numpy())
    bound = 1 / math.sqrt(50)
    assert np.abs(a.weight.detach().numpy()).max() <= bound
    assert np.abs(a.bias.detach().numpy()).max() <= bound
    assert np.abs(a.weight.detach().numpy()).max() > 0.9 * bound      # uniform over the whole range
    assert nn.Linear(3, 3, dtype=flow.float64).weight.dtype == flow.float64


@pytest.mark.parametrize("mod, ref", [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
    (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    (nn.Tanh(), np.tanh),
    (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    (nn.ELU(), lambda x: np.where(x > 0, x, np.expm1(x))),
    (nn.Softplus(), lambda x: np.log1p(np.exp(x))),
    (nn.Hardtanh(), lambda x: np.clip(x, -1, 1)),
    (nn.GELU(), lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
    (nn.Softmax(dim=-1), lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
    (nn.LogSoftmax(dim=1), lambda x: x - np.log(np.exp(x).sum(1, keepdims=True))),
    (nn.Identity(), lambda x: x),
    (nn.Flatten(0), lambda x: x.reshape(-1)),
])
def test_activations(mod, ref):
    x = flow.randn(3, 4, dtype=flow.float64)
    np.testing.assert_allclose(mod(x).numpy(), ref(x.numpy()), rtol=1e-6, atol=1e-9)


def test_functional_names():
    x = flow.randn(2, 3)
    np.testing.assert_allclose(F.relu(x).numpy(), np.maximum(x.numpy(), 0))
    np.testing.assert_allclose(F.softmax(x, dim=1).numpy().sum(1), [1, 1], rtol=1e-6)
    assert F.one_hot(flow.tensor([0, 2]), 3).numpy().tolist() == [[1, 0, 0], [0, 0, 1]]
    y = flow.randn(3)
    F.relu(y, inplace=True)
    assert (y.numpy() >= 0).all()
    assert F.sum is flow._C.sum              # the rest of the functional API is re-exported


def test_init_functions():
    flow.manual_seed(0)
    w = flow.empty(200, 100)
    init.uniform_(w, -2, 3)
    assert -2 <= w.numpy().min() and w.numpy().max() < 3
    init.normal_(w, 1.0, 0.5)
    assert abs(w.numpy().mean() - 1.0) < 0.01 and abs(w.numpy().std() - 0.5) < 0.01
    init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert np.abs(w.numpy()).max() <= 0.5
    init.xavier_uniform_(w)
    assert np.abs(w.numpy()).max() <= math.sqrt(6 / 300)
    init.kaiming_normal_(w, nonlinearity="relu")
    assert abs(w.numpy().std() - math.sqrt(2 / 100)) < 0.01
    init.constant_(w, 0.25)
    assert (w.numpy() == 0.25).all()
    e = flow.empty(3, 5)
    init.eye_(e)
    np.testing.assert_array_equal(e.numpy(), np.eye(3, 5))
    q = flow.empty(6, 4)
    init.orthogonal_(q)
    np.testing.assert_allclose(q.numpy().T @ q.numpy(), np.eye(4), atol=1e-5)
    assert init.calculate_gain("tanh") == 5 / 3
    # init on a parameter works outside no_grad and keeps it a leaf
    p = nn.Parameter(flow.empty(3, 3))
    init.zeros_(p)
    assert p.is_leaf and p.requires_grad and float(p.abs().sum()) == 0


def test_mlp_backward_matches_jax_grad():
    m = MLP()
    x = flow.randn(5, 4)

    def loss_fn(params):
        out = flow.relu(x @ params["w1"].T + params["b1"]) @ params["w2"].T
        return (out * out).mean()

    params = {"w1": m.fc1.weight, "b1": m.fc1.bias, "w2": m.fc2.weight}
    g = jax.grad(lambda p: loss_fn(p)._value)(params)
    loss = (m(x) ** 2).mean()
    loss.backward()
    np.testing.assert_allclose(m.fc1.weight.grad.numpy(), np.asarray(g["w1"]._value),
                               rtol=1e-5, atol=1e-7)


def test_deepcopy_module():
    m = MLP()
    c = copy.deepcopy(m)
    assert c.fc1.weight is not m.fc1.weight and isinstance(c.fc1.weight, nn.Parameter)
    x = flow.randn(2, 4)
    np.testing.assert_array_equal(c(x).detach().numpy(), m(x).detach().numpy())


def test_module_to_global():
    placement = flow.placement("cpu", [0, 1, 2, 3])
    m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x = flow.randn(8, 4)
    ref = m(x).detach().numpy()
    w = m[0].weight
    m.to_global(placement, flow.sbp.broadcast)
    assert m[0].weight is w and w.is_global and isinstance(w, nn.Parameter)
    out = m(x.to_global(placement, flow.sbp.split(0)))
    assert out.is_global
    np.testing.assert_allclose(out.detach().numpy(), ref, rtol=1e-5, atol=1e-6)


# -- layers over the nn ops (dropout, norms, embedding, losses) -----------------------------
def test_dropout_module():
    d = nn.Dropout(0.5)
    x = flow.ones(1000)
    flow.manual_seed(1)
    y = d(x).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0} and 0.4 < (y == 0).mean() < 0.6
    flow.manual_seed(1)
    np.testing.assert_array_equal(d(x).numpy(), y)          # reproducible from the seed
    d.eval()
    np.testing.assert_array_equal(d(x).numpy(), x.numpy())
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def test_norm_modules_against_numpy():
    x = flow.randn(2, 6, 4, dtype=flow.float64)
    a = x.numpy()
    ln = nn.LayerNorm(4).double()
    ref = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(ln(x).detach().numpy(), ref, rtol=1e-6, atol=1e-9)
    assert [n for n, _ in ln.named_parameters()] == ["weight", "bias"]
    rms = nn.RMSNorm([6, 4], eps=1e-6).double()
    ref = a / np.sqrt((a * a).mean((1, 2), keepdims=True) + 1e-6)
    np.testing.assert_allclose(rms(x).detach().numpy(), ref, rtol=1e-6, atol=1e-9)
    gn = nn.GroupNorm(3, 6).double()
    g = a.reshape(2, 3, -1)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5))
    np.testing.assert_allclose(gn(x).detach().numpy(), ref.reshape(a.shape), rtol=1e-6, atol=1e-9)
    assert repr(ln) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True)"
    assert nn.LayerNorm(4, elementwise_affine=False).weight is None


def test_group_norm_of_an_empty_batch_as_pytorch():
    """A batch of 0 samples: an empty output and zero weight / bias gradients, as PyTorch
    (the kernel reshaped to (n, groups, -1), which divides by n: a ZeroDivisionError)."""
    gn = nn.GroupNorm(3, 6)
    x = flow.zeros(0, 6, 4, requires_grad=True)
    y = gn(x)
    assert y.shape == flow.Size([0, 6, 4])
    (y * 2).sum().backward()
    assert x.grad.shape == flow.Size([0, 6, 4])
    np.testing.assert_array_equal(gn.weight.grad.numpy(), np.zeros(6, np.float32))
    np.testing.assert_array_equal(gn.bias.grad.numpy(), np.zeros(6, np.float32))


def test_embedding_module():
    flow.manual_seed(0)
    emb = nn.Embedding(10, 3, padding_idx=2)
    assert float(emb.weight[2].abs().sum()) == 0 and float(emb.weight[3].abs().sum()) > 0
    idx = flow.tensor([[1, 2], [3, 2]])
    out = emb(idx)
    np.testing.assert_array_equal(out.detach().numpy(), emb.weight.detach().numpy()[idx.numpy()])
    out.sum().backward()
    assert float(emb.weight.grad[2].abs().sum()) == 0      # padding row gets no gradient
    pre = nn.Embedding.from_pretrained(flow.ones(4, 2))
    assert not pre.weight.requires_grad and pre(flow.tensor([0])).shape == flow.Size([1, 2])


def test_loss_modules_against_numpy():
    flow.manual_seed(0)
    x = flow.randn(5, 4, dtype=flow.float64)
    t = flow.randn(5, 4, dtype=flow.float64)
    a, b = x.numpy(), t.numpy()
    np.testing.assert_allclose(float(nn.MSELoss()(x, t)), ((a - b) ** 2).mean())
    np.testing.assert_allclose(float(nn.L1Loss(reduction="sum")(x, t)), np.abs(a - b).sum())
    y = flow.tensor([0, 3, 1, 1, 2])
    logp = a - np.log(np.exp(a).sum(1, keepdims=True))
    nll = -logp[np.arange(5), y.numpy()]
    np.testing.assert_allclose(float(nn.CrossEntropyLoss()(x, y)), nll.mean())
    np.testing.assert_allclose(float(nn.NLLLoss()(flow.tensor(logp), y)), nll.mean())
    yi = flow.tensor([0, -100, 1, 1, 2])
    np.testing.assert_allclose(float(nn.CrossEntropyLoss()(x, yi)), nll[[0, 2, 3, 4]].mean())
    tgt = flow.rand(5, 4, dtype=flow.float64)
    p = tgt.numpy()
    bce = -(p * np.log(1 / (1 + np.exp(-a))) + (1 - p) * np.log(1 - 1 / (1 + np.exp(-a))))
    np.testing.assert_allclose(float(nn.BCEWithLogitsLoss()(x, tgt)), bce.mean(), rtol=1e-6)
    with pytest.raises(ValueError, match="reduction"):
        nn.MSELoss(reduction="avg")


def test_layers_match_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((3, 5, 8))
    pairs = [(nn.LayerNorm(8), torch.nn.LayerNorm(8)),
             (nn.GroupNorm(5, 5), torch.nn.GroupNorm(5, 5)),
             (nn.Linear(8, 4), torch.nn.Linear(8, 4))]
    for ours, theirs in pairs:
        ours.double()
        theirs.double()
        with torch.no_grad():
            for (n, p), (tn, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
                assert n == tn
                tp.copy_(torch.tensor(p.detach().numpy()))
        np.testing.assert_allclose(ours(flow.tensor(x)).detach().numpy(),
                                   theirs(torch.tensor(x)).detach().numpy(), rtol=1e-6,
                                   atol=1e-9)
    logits = np.random.default_rng(1).standard_normal((6, 4))
    target = np.array([0, 3, 1, -100, 2, 2])
    ours = nn.CrossEntropyLoss(label_smoothing=0.1)(flow.tensor(logits), flow.tensor(target))
    theirs = torch.nn.CrossEntropyLoss(label_smoothing=0.1)(torch.tensor(logits),
                                                             torch.tensor(target))
    np.testing.assert_allclose(float(ours), float(theirs), rtol=1e-6)


def test_parameter_data_aliases_the_parameter() -> None:
    # arrays are immutable: p.data must write through, or p.data.mul_() would silently do
    # nothing (the PyTorch idiom for untracked updates)
    p = flow.nn.Parameter(flow.ones(3))
    p.data.mul_(0.5)
    np.testing.assert_array_equal(p.detach().numpy(), [0.5, 0.5, 0.5])
    assert p.is_leaf and p.requires_grad and p.grad_fn is None
    d = p.data
    assert not d.requires_grad and d.grad_fn is None
    np.testing.assert_array_equal((d + 1).numpy(), [1.5, 1.5, 1.5])
