"""LBFGS, SparseAdam and Adafactor: convergence, parity with torch.optim (trajectories on
the same problems), compiled steps (flow.jit / nn.Graph), state dict round trips and
hyper-parameter errors."""

import numpy as np
import pytest

import jflow as flow
from jflow import nn, optim
from jflow.nn import functional as F

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((12, 5))
B = RNG.standard_normal(12)


# -- LBFGS ------------------------------------------------------------------------------------
def _rosenbrock(x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def _lbfgs_run(lib, problem, x0, steps, dtype, **kw):
    """``steps`` LBFGS steps of ``problem`` ("rosen" or "lsq") from ``x0``; returns the
    iterates after each step and the final state's counters."""
    if lib == "torch":
        x = torch.tensor(x0, dtype=getattr(torch, dtype), requires_grad=True)
        opt = torch.optim.LBFGS([x], **kw)
        a, b = torch.tensor(A, dtype=x.dtype), torch.tensor(B, dtype=x.dtype)
    else:
        x = nn.Parameter(flow.tensor(x0, dtype=getattr(flow, dtype)))
        opt = optim.LBFGS([x], **kw)
        a, b = flow.tensor(A, dtype=x.dtype), flow.tensor(B, dtype=x.dtype)

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(x) if problem == "rosen" else ((a @ x - b) ** 2).sum()
        loss.backward()
        return loss

    out = []
    for _ in range(steps):
        opt.step(closure)
        out.append(x.detach().numpy().copy())
    st = opt.state[x]
    return out, st["func_evals"], st["n_iter"], opt


LSQ_SOL = np.linalg.lstsq(A, B, rcond=None)[0]


@pytest.mark.parametrize("ls", [None, "strong_wolfe"])
def test_lbfgs_converges(ls):
    traj, *_ = _lbfgs_run("jflow", "rosen", [-1.5, 2.0], 10, "float64", max_iter=50,
                          line_search_fn=ls, **({} if ls else dict(lr=0.2)))
    np.testing.assert_allclose(traj[-1], [1.0, 1.0], atol=1e-4)
    traj, *_ = _lbfgs_run("jflow", "lsq", np.zeros(5), 3, "float64", line_search_fn=ls)
    np.testing.assert_allclose(traj[-1], LSQ_SOL, atol=1e-5)


@pytest.mark.parametrize("ls", [None, "strong_wolfe"])
@pytest.mark.parametrize("problem, x0, kw", [
    ("rosen", [-1.5, 2.0], dict(lr=1, max_iter=12)),  # (without a line search, chaotic:
    # rounding differences grow quickly over more iterations)
    ("rosen", [0.5, -0.3], dict(lr=0.5, max_iter=7, history_size=3)),
    ("lsq", list(np.linspace(-1, 1, 5)), dict(lr=1, max_iter=4)),
])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_lbfgs_matches_torch(ls, problem, x0, kw, dtype):
    steps = 3 if dtype == "float64" else 2  # (float32 rounding grows along the valley)
    mine, fe, ni, _ = _lbfgs_run("jflow", problem, x0, steps, dtype, line_search_fn=ls, **kw)
    ref, tfe, tni, _ = _lbfgs_run("torch", problem, x0, steps, dtype, line_search_fn=ls, **kw)
    tol = dict(rtol=1e-9, atol=1e-10) if dtype == "float64" else dict(rtol=2e-3, atol=2e-4)
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, **tol)
    assert (fe, ni) == (tfe, tni)


def test_lbfgs_state_dict_round_trip():
    """2 steps, save, 1 more step (the saved state must not change), load into a fresh
    optimizer, 2 steps == 4 uninterrupted steps."""
    kw = dict(lr=1, max_iter=3, history_size=4, line_search_fn="strong_wolfe")
    full, fe, ni, _ = _lbfgs_run("jflow", "rosen", [-1.5, 2.0], 4, "float64", **kw)
    half, _, _, opt = _lbfgs_run("jflow", "rosen", [-1.5, 2.0], 2, "float64", **kw)
    sd = opt.state_dict()
    y0 = opt.param_groups[0]["params"][0]

    def closure0():
        opt.zero_grad()
        loss = _rosenbrock(y0)
        loss.backward()
        return loss

    opt.step(closure0)
    x = nn.Parameter(flow.tensor(half[-1], dtype=flow.float64))
    opt2 = optim.LBFGS([x], **kw)
    opt2.load_state_dict(sd)

    def closure():
        opt2.zero_grad()
        loss = _rosenbrock(x)
        loss.backward()
        return loss

    for _ in range(2):
        opt2.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), full[-1], rtol=1e-12)
    assert (opt2.state[x]["func_evals"], opt2.state[x]["n_iter"]) == (fe, ni)


def test_lbfgs_compiled_step_raises():
    m = nn.Linear(3, 1)
    opt = optim.LBFGS(m.parameters())
    x, y = flow.randn(4, 3), flow.randn(4, 1)

    @flow.jit
    def step(x, y):
        def closure():
            opt.zero_grad()
            loss = F.mse_loss(m(x), y)
            loss.backward()
            return loss
        return opt.step(closure)

    with pytest.raises(RuntimeError, match="LBFGS.*compiled"):
        step(x, y)

    class G(nn.Graph):
        def __init__(self):
            super().__init__()
            self.m = m
            self.add_optimizer(opt)

        def build(self, x, y):
            loss = F.mse_loss(self.m(x), y)
            loss.backward()
            return loss

    with pytest.raises(RuntimeError, match="LBFGS.*compiled"):
        G()(x, y)


def test_lbfgs_errors():
    p = nn.Parameter(flow.ones(2))
    with pytest.raises(ValueError, match="LBFGS.*lr"):
        optim.LBFGS([p], lr=-1)
    with pytest.raises(ValueError, match="LBFGS.*max_iter"):
        optim.LBFGS([p], max_iter=0)
    with pytest.raises(ValueError, match="LBFGS.*history_size"):
        optim.LBFGS([p], history_size=0)
    with pytest.raises(ValueError, match="LBFGS.*line_search_fn"):
        optim.LBFGS([p], line_search_fn="armijo")
    with pytest.raises(ValueError, match="LBFGS.*parameter groups"):
        optim.LBFGS([{"params": [p]}, {"params": [nn.Parameter(flow.ones(1))]}])
    with pytest.raises(RuntimeError, match="LBFGS.*closure"):
        optim.LBFGS([p]).step()


# -- SparseAdam -------------------------------------------------------------------------------
EMB = RNG.standard_normal((10, 3))
IDX = [[1, 4, 4], [0, 7], [4, 9, 2, 1], [3], [7, 7, 0]]  # a few (repeated) rows per step
TGT = RNG.standard_normal((4, 3))


def _sparse_adam_steps(lib, kw, steps=5):
    if lib == "torch":
        emb = torch.nn.Embedding(10, 3, sparse=True,
                                 _weight=torch.tensor(EMB, dtype=torch.float64))
        opt = torch.optim.SparseAdam(list(emb.parameters()), **kw)
        tt = torch.tensor
    else:
        emb = nn.Embedding(10, 3, _weight=flow.tensor(EMB, dtype=flow.float64))
        opt = optim.SparseAdam(list(emb.parameters()), **kw)
        tt = flow.tensor
    for idx in IDX[:steps]:
        opt.zero_grad()
        out = emb(tt(idx))
        ((out - tt(TGT[:len(idx)])) ** 2).sum().backward()
        opt.step()
    return emb, opt


@pytest.mark.parametrize("kw", [dict(lr=0.05), dict(lr=0.1, betas=(0.8, 0.95), eps=1e-6,
                                                    maximize=True)])
def test_sparse_adam_matches_torch(kw):
    je, jo = _sparse_adam_steps("jflow", kw)
    te, to = _sparse_adam_steps("torch", kw)
    np.testing.assert_allclose(je.weight.detach().numpy(), te.weight.detach().numpy(), rtol=1e-12,
                               atol=1e-13)
    untouched = [5, 6, 8]
    np.testing.assert_array_equal(je.weight.detach().numpy()[untouched], EMB[untouched])
    sd, tsd = jo.state_dict()["state"][0], to.state_dict()["state"][0]
    assert set(sd) == set(tsd)
    for k in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_allclose(sd[k].numpy(), tsd[k].numpy(), rtol=1e-12, atol=1e-14)
    assert float(sd["step"]) == tsd["step"] == len(IDX)


def test_sparse_adam_state_dict_round_trip_and_from_torch():
    kw = dict(lr=0.05)
    full, _ = _sparse_adam_steps("jflow", kw)
    half, jo = _sparse_adam_steps("jflow", kw, steps=2)
    _, to = _sparse_adam_steps("torch", kw, steps=2)
    tsd = to.state_dict()
    converted = {"state": {i: {k: (flow.tensor(v.numpy()) if isinstance(v, torch.Tensor)
                                   else v) for k, v in s.items()}
                           for i, s in tsd["state"].items()},
                 "param_groups": [dict(g) for g in tsd["param_groups"]]}
    for sd in (jo.state_dict(), converted):
        emb = nn.Embedding(10, 3, _weight=flow.tensor(half.weight.detach().numpy()))
        opt = optim.SparseAdam(list(emb.parameters()), **kw)
        opt.load_state_dict(sd)
        # continue with the remaining indices
        for idx in IDX[2:]:
            opt.zero_grad()
            ((emb(flow.tensor(idx)) - flow.tensor(TGT[:len(idx)])) ** 2).sum().backward()
            opt.step()
        np.testing.assert_allclose(emb.weight.detach().numpy(), full.weight.detach().numpy(),
                                   rtol=1e-12)


def test_sparse_adam_errors():
    p = nn.Parameter(flow.ones(2))
    with pytest.raises(ValueError, match="SparseAdam.*lr"):
        optim.SparseAdam([p], lr=0)
    with pytest.raises(ValueError, match="SparseAdam.*eps"):
        optim.SparseAdam([p], eps=-1)
    with pytest.raises(ValueError, match=r"SparseAdam.*betas\[0\]"):
        optim.SparseAdam([p], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match=r"SparseAdam.*betas\[1\]"):
        optim.SparseAdam([p], betas=(0.9, -0.1))


# -- Adafactor --------------------------------------------------------------------------------
SHAPES = [(5,), (4, 6), (2, 3, 4)]


def _adafactor_steps(lib, kw, steps=6, dtype="float64"):
    rng = np.random.default_rng(1)
    p0 = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(steps)]
    if lib == "torch":
        ps = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in p0]
        opt = torch.optim.Adafactor(ps, **kw)
        tt = torch.tensor
    else:
        ps = [nn.Parameter(flow.tensor(a, dtype=getattr(flow, dtype))) for a in p0]
        opt = optim.Adafactor(ps, **kw)
        tt = flow.tensor
    for gs in grads:
        for p, g in zip(ps, gs):
            p.grad = tt(g, dtype=p.dtype)
        opt.step()
    return [p.detach().numpy() for p in ps], opt


@pytest.mark.parametrize("kw", [dict(), dict(lr=0.05, weight_decay=0.1),
                                dict(lr=0.5, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=0.9 + 0.2,
                                     maximize=True, weight_decay=0.01)])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_adafactor_matches_torch(kw, dtype):
    mine, jo = _adafactor_steps("jflow", kw, dtype=dtype)
    ref, to = _adafactor_steps("torch", kw, dtype=dtype)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=1e-5, atol=1e-6)
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, **tol)
    sd, tsd = jo.state_dict(), to.state_dict()
    for i in range(len(SHAPES)):
        assert set(sd["state"][i]) == set(tsd["state"][i])
        for k, v in sd["state"][i].items():
            assert tuple(v.shape) == tuple(tsd["state"][i][k].shape), k


def test_adafactor_state_dict_round_trip_and_from_torch():
    kw = dict(lr=0.05, weight_decay=0.1)
    full, _ = _adafactor_steps("jflow", kw, steps=5)
    _, jo = _adafactor_steps("jflow", kw, steps=2)
    _, to = _adafactor_steps("torch", kw, steps=2)
    tsd = to.state_dict()
    converted = {"state": {i: {k: flow.tensor(v.numpy()) for k, v in s.items()}
                           for i, s in tsd["state"].items()},
                 "param_groups": [dict(g) for g in tsd["param_groups"]]}
    rng = np.random.default_rng(1)
    [rng.standard_normal(s) for s in SHAPES]  # (the initial values, as _adafactor_steps)
    grads = [[rng.standard_normal(s) for s in SHAPES] for _ in range(5)]
    for sd in (jo.state_dict(), converted):
        ps = [nn.Parameter(flow.tensor(p.detach().numpy())) for p in jo.param_groups[0]["params"]]
        opt = optim.Adafactor(ps, **kw)
        opt.load_state_dict(sd)
        for gs in grads[2:]:
            for p, g in zip(ps, gs):
                p.grad = flow.tensor(g)
            opt.step()
        for p, f in zip(ps, full):
            np.testing.assert_allclose(p.detach().numpy(), f, rtol=1e-12, atol=1e-14)


def test_adafactor_errors():
    p = nn.Parameter(flow.ones(2))
    with pytest.raises(ValueError, match="Adafactor.*lr"):
        optim.Adafactor([p], lr=-1)
    with pytest.raises(ValueError, match="Adafactor.*beta2_decay"):
        optim.Adafactor([p], beta2_decay=0.5)
    with pytest.raises(ValueError, match="Adafactor.*eps"):
        optim.Adafactor([p], eps=(None, -1.0))
    with pytest.raises(ValueError, match="Adafactor.*eps"):
        optim.Adafactor([p], eps=1e-3)
    with pytest.raises(ValueError, match="Adafactor.*d "):
        optim.Adafactor([p], d=0.5)
    with pytest.raises(ValueError, match="Adafactor.*weight_decay"):
        optim.Adafactor([p], weight_decay=-0.1)


# -- compiled steps ---------------------------------------------------------------------------
X = RNG.standard_normal((6, 4))
Y = RNG.standard_normal((6, 3))
W0, B0 = RNG.standard_normal((3, 4)), RNG.standard_normal(3)


class _Step(nn.Graph):
    def __init__(self, model, opt, loss_fn):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self.add_optimizer(opt)

    def build(self, x, y):
        loss = self.loss_fn(self.model, x, y)
        loss.backward()
        return loss


def _linear():
    m = nn.Linear(4, 3)
    m.weight = nn.Parameter(flow.tensor(W0, dtype=flow.float32))
    m.bias = nn.Parameter(flow.tensor(B0, dtype=flow.float32))
    return m


def _embedding():
    return nn.Embedding(10, 3, _weight=flow.tensor(EMB, dtype=flow.float32))


def _lin_loss(m, x, y):
    return F.mse_loss(m(x), y)


def _emb_loss(m, x, y):
    return ((m(x) - y) ** 2).sum()


@pytest.mark.parametrize("name, kw, make, loss_fn", [
    ("Adafactor", dict(lr=0.05, weight_decay=0.1, maximize=False), _linear, _lin_loss),
    ("SparseAdam", dict(lr=0.05), _embedding, _emb_loss),
], ids=["Adafactor", "SparseAdam"])
def test_compiled_equals_eager(name, kw, make, loss_fn):
    """nn.Graph and flow.jit training steps (0-d step tensors in the state) equal eager
    steps."""
    eager, graph_m, jit_m = make(), make(), make()
    oe, og, oj = (getattr(optim, name)(m.parameters(), **kw) for m in (eager, graph_m, jit_m))
    step = _Step(graph_m, og, loss_fn)

    @flow.jit
    def jit_step(x, y):
        oj.zero_grad()
        loss = loss_fn(jit_m, x, y)
        loss.backward()
        oj.step()
        return loss

    if name == "SparseAdam":
        batches = [(flow.tensor(i[:2]), flow.tensor(TGT[:2], dtype=flow.float32)) for i in IDX
                   if len(i) >= 2]
    else:
        batches = [(flow.tensor(X, dtype=flow.float32), flow.tensor(Y, dtype=flow.float32))] * 4
    for x, y in batches:
        oe.zero_grad()
        le = loss_fn(eager, x, y)
        le.backward()
        oe.step()
        lg, lj = step(x, y), jit_step(x, y)
        np.testing.assert_allclose(float(lg), float(le), rtol=1e-5)
        np.testing.assert_allclose(float(lj), float(le), rtol=1e-5)
    for m in (graph_m, jit_m):
        for a, b in zip(m.parameters(), eager.parameters()):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert len(jit_step.recompile_reasons) <= 2
