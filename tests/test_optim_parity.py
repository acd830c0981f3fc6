"""PyTorch parity of the optimizers added in issue 14 (Adagrad, Adadelta, Adamax, NAdam,
RAdam, ASGD, Rprop) and of the learning-rate schedulers: same model, same gradients, same
steps as torch.optim; compiled (flow.jit / nn.Graph) equals eager; state dicts in torch's
structure, including loading a torch optimizer's state dict."""

import math

import jax
import numpy as np
import pytest

import jflow as flow
from jflow import nn, optim
from jflow.lazy_mode.optimizer_step import traced_steps
from jflow.nn import functional as F
from jflow.optim import lr_scheduler

torch = pytest.importorskip("torch")

STEPS = 8
RNG = np.random.default_rng(0)
W0 = RNG.standard_normal((3, 4))
B0 = RNG.standard_normal(3)
X = RNG.standard_normal((10, 4))
Y = RNG.standard_normal((10, 3))

CASES = [
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.3,
                     eps=1e-6, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.02)),
    ("Adamax", dict(lr=0.02, betas=(0.8, 0.9), weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.02)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.02)),
    ("RAdam", dict(lr=0.02, betas=(0.9, 0.6), weight_decay=0.1)),  # rho_t > 5 from step 3
    ("RAdam", dict(lr=0.02, betas=(0.9, 0.6), weight_decay=0.1, decoupled_weight_decay=True,
                   maximize=True)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1, maximize=True)),
    ("Rprop", dict(lr=0.05)),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
]
IDS = [f"{n}-{i}" for i, (n, _) in enumerate(CASES)]


def _jflow_model(dtype):
    m = nn.Linear(4, 3)
    m.weight = nn.Parameter(flow.tensor(W0, dtype=dtype))
    m.bias = nn.Parameter(flow.tensor(B0, dtype=dtype))
    return m


def _torch_model(dtype):
    m = torch.nn.Linear(4, 3)
    with torch.no_grad():
        m.weight = torch.nn.Parameter(torch.tensor(W0, dtype=dtype))
        m.bias = torch.nn.Parameter(torch.tensor(B0, dtype=dtype))
    return m


def _jflow_steps(model, opt, n=STEPS):
    x, y = flow.tensor(X, dtype=model.weight.dtype), flow.tensor(Y, dtype=model.weight.dtype)
    for _ in range(n):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()


def _torch_steps(model, opt, n=STEPS):
    x, y = torch.tensor(X, dtype=model.weight.dtype), torch.tensor(Y, dtype=model.weight.dtype)
    for _ in range(n):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()


def _same(jm, tm, rtol, atol):
    np.testing.assert_allclose(jm.weight.detach().numpy(), tm.weight.detach().numpy(), rtol=rtol,
                               atol=atol)
    np.testing.assert_allclose(jm.bias.detach().numpy(), tm.bias.detach().numpy(), rtol=rtol,
                               atol=atol)


@pytest.mark.parametrize("name, kw", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_torch(name, kw, dtype):
    """Same model, data and steps as torch.optim. float64 runs with torch's default dtype
    float64 too: torch keeps scalar state (ASGD's eta/mu, NAdam's mu_product) in the default
    dtype, jflow in the parameter's."""
    jm, tm = _jflow_model(getattr(flow, dtype)), _torch_model(getattr(torch, dtype))
    jo, to = getattr(optim, name)(jm.parameters(), **kw), getattr(torch.optim, name)(
        tm.parameters(), **kw)
    old = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))
    try:
        _jflow_steps(jm, jo)
        _torch_steps(tm, to)
    finally:
        torch.set_default_dtype(old)
    tol = (1e-5, 1e-6) if dtype == "float32" else (1e-12, 1e-13)
    _same(jm, tm, *tol)
    assert traced_steps(jo) == 1  # (the steps ran fused: one executable from the first)
    # the state has torch's names and shapes
    sd, tsd = jo.state_dict(), to.state_dict()
    assert set(sd["state"]) == set(tsd["state"]) == {0, 1}
    for i in (0, 1):
        assert set(sd["state"][i]) == set(tsd["state"][i])
        for k, v in sd["state"][i].items():
            assert tuple(v.shape) == tuple(tsd["state"][i][k].shape), k
    tgroup = {k for k in tsd["param_groups"][0]
              if k not in ("foreach", "differentiable", "capturable", "fused")}
    assert set(sd["param_groups"][0]) == tgroup


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("name, wd", [("Adam", 0.0), ("Adam", 0.05), ("AdamW", 0.1)])
def test_adam_in_place_effects_match_torch(name, wd, dtype):
    """Eager Adam / AdamW update the parameter in place (jflow donates its buffers when held
    once): random parameters and gradients, 4 steps, the values PyTorch's; what a user kept
    sees what it sees in PyTorch -- ``detach()`` and ``.data`` the updated values, a
    ``copy.deepcopy`` the values at the copy."""
    import copy

    rng = np.random.default_rng(60)
    p0 = rng.standard_normal((4, 6)).astype(np.float32)
    gs = [rng.standard_normal((4, 6)).astype(np.float32) for _ in range(4)]
    tp = torch.nn.Parameter(torch.tensor(p0).to(getattr(torch, dtype)))
    fp = nn.Parameter(flow.tensor(p0).to(getattr(flow, dtype)))
    to = getattr(torch.optim, name)([tp], lr=0.01, weight_decay=wd)
    fo = getattr(optim, name)([fp], lr=0.01, weight_decay=wd)
    kept_t = (tp.detach(), tp.data, copy.deepcopy(tp))
    kept_f = (fp.detach(), fp.data, copy.deepcopy(fp))
    for g in gs:
        tp.grad = torch.tensor(g).to(tp.dtype)
        fp.grad = flow.tensor(g).to(fp.dtype)
        to.step()
        fo.step()

    def host(t):
        return t.detach().float().numpy() if isinstance(t, torch.Tensor) else \
            t.detach().to(flow.float32).numpy()

    tol = {"float32": 1e-6, "float64": 1e-14, "bfloat16": 2e-3}[dtype]
    np.testing.assert_allclose(host(fp), host(tp), rtol=tol, atol=tol)
    for a, b in zip(kept_f, kept_t):
        np.testing.assert_allclose(host(a), host(b), rtol=tol, atol=tol)
    np.testing.assert_array_equal(host(kept_f[2]), host(torch.tensor(p0).to(tp.dtype)))


@pytest.mark.parametrize("name, kw", [CASES[1], CASES[8], CASES[11], CASES[13], CASES[15],
                                      ("Adam", dict(lr=0.02, amsgrad=True)),
                                      ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.1)),
                                      ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5))],
                         ids=["Adagrad", "NAdam", "RAdam", "ASGD", "Rprop", "Adam", "SGD",
                              "RMSprop"])
def test_state_dict_round_trip_and_from_torch(name, kw):
    """3 steps, save, load into a fresh optimizer (jflow's own state dict, and torch's with
    tensors converted), 5 more steps == 8 uninterrupted steps."""
    full = _jflow_model(flow.float64)
    _jflow_steps(full, getattr(optim, name)(full.parameters(), **kw))
    half = _jflow_model(flow.float64)
    opt = getattr(optim, name)(half.parameters(), **kw)
    _jflow_steps(half, opt, 3)
    tm = _torch_model(torch.float64)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        to = getattr(torch.optim, name)(tm.parameters(), **kw)
        _torch_steps(tm, to, 3)
    finally:
        torch.set_default_dtype(old)
    tsd = to.state_dict()
    converted = {"state": {i: {k: flow.tensor(v.numpy()) for k, v in s.items()}
                           for i, s in tsd["state"].items()},
                 "param_groups": [dict(g) for g in tsd["param_groups"]]}
    for sd in (opt.state_dict(), converted):
        resumed = _jflow_model(flow.float64)
        resumed.load_state_dict(half.state_dict())
        opt2 = getattr(optim, name)(resumed.parameters(), **kw)
        opt2.load_state_dict(sd)
        _jflow_steps(resumed, opt2, STEPS - 3)
        np.testing.assert_allclose(resumed.weight.detach().numpy(), full.weight.detach().numpy(),
                                   rtol=1e-12, atol=1e-13)
    assert opt.state_dict()["param_groups"][0]["params"] == [0, 1]


class _Step(nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        loss = F.mse_loss(self.model(x), y)
        loss.backward()
        return loss


@pytest.mark.parametrize("name, kw", [CASES[11], CASES[13], CASES[15]],
                         ids=["RAdam", "ASGD", "Rprop"])
def test_compiled_equals_eager(name, kw):
    """nn.Graph and flow.jit training steps carry the state (0-d step/eta/mu tensors, RAdam's
    rho_t branch as a where) and equal eager steps; a scheduler's lr reaches them."""
    eager = _jflow_model(flow.float32)
    oe = getattr(optim, name)(eager.parameters(), **kw)
    se = lr_scheduler.ExponentialLR(oe, 0.9)
    graph_m, jit_m = _jflow_model(flow.float32), _jflow_model(flow.float32)
    og = getattr(optim, name)(graph_m.parameters(), **kw)
    sg = lr_scheduler.ExponentialLR(og, 0.9)
    oj = getattr(optim, name)(jit_m.parameters(), **kw)
    sj = lr_scheduler.ExponentialLR(oj, 0.9)
    step = _Step(graph_m, og)

    @flow.jit
    def jit_step(x, y):
        oj.zero_grad()
        loss = F.mse_loss(jit_m(x), y)
        loss.backward()
        oj.step()
        return loss

    x, y = flow.tensor(X, dtype=flow.float32), flow.tensor(Y, dtype=flow.float32)
    for _ in range(STEPS):
        oe.zero_grad()
        le = F.mse_loss(eager(x), y)
        le.backward()
        oe.step()
        se.step()
        lg = step(x, y)
        sg.step()
        lj = jit_step(x, y)
        sj.step()
        np.testing.assert_allclose(float(lg), float(le), rtol=1e-5)
        np.testing.assert_allclose(float(lj), float(le), rtol=1e-5)
    for m in (graph_m, jit_m):
        np.testing.assert_allclose(m.weight.detach().numpy(), eager.weight.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    assert len(jit_step.recompile_reasons) <= 2  # (lazy state: the first call creates it)
    assert set(og.state[graph_m.weight]) == set(oe.state[eager.weight])


def test_add_param_group_and_zero_grad():
    a, b, c = (nn.Parameter(flow.ones(2)) for _ in range(3))
    opt = optim.Adagrad([a], lr=0.1)
    opt.add_param_group({"params": b, "lr": 0.5})
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["lr_decay"] == 0
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a, c]})
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {c}})
    (a.sum() + b.sum()).backward()
    opt.zero_grad(set_to_none=False)
    assert a.grad is not None and float(a.grad.abs().sum()) == 0
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    with pytest.raises(ValueError, match="Invalid"):
        optim.Rprop([c], etas=(1.5, 1.2))
    with pytest.raises(ValueError, match="Invalid"):
        optim.NAdam([c], betas=(1.0, 0.9))


# -- schedulers -----------------------------------------------------------------------------
def _lrs(make_sched, make_opt, lib, n=30, metrics=None):
    if lib is torch:
        opt = make_opt(torch.optim, [torch.nn.Parameter(torch.ones(1))])
        sched = make_sched(torch.optim.lr_scheduler, opt)
    else:
        opt = make_opt(optim, [nn.Parameter(flow.ones(1))])
        sched = make_sched(lr_scheduler, opt)
    out = []
    for i in range(n):
        out.append([g["lr"] for g in opt.param_groups]
                   + [g.get("momentum", g.get("betas", (0,))[0]) for g in opt.param_groups])
        opt.step()
        if metrics is None:
            sched.step()
        else:
            sched.step(metrics[i])
    return out


def _sgd(lib, ps):
    return lib.SGD([{"params": ps}], lr=0.1, momentum=0.9)


def _adam(lib, ps):
    return lib.Adam(ps, lr=0.1)


SCHEDULERS = {
    "OneCycleLR": (lambda s, o: s.OneCycleLR(o, max_lr=1.0, total_steps=31), _sgd),
    "OneCycleLR-linear-3phase": (lambda s, o: s.OneCycleLR(
        o, max_lr=0.5, total_steps=31, anneal_strategy="linear", three_phase=True), _adam),
    "CyclicLR": (lambda s, o: s.CyclicLR(o, 0.01, 0.1, step_size_up=4), _sgd),
    "CyclicLR-triangular2": (lambda s, o: s.CyclicLR(
        o, 0.01, 0.1, step_size_up=3, step_size_down=5, mode="triangular2"), _adam),
    "CyclicLR-exp_range": (lambda s, o: s.CyclicLR(
        o, 0.01, 0.1, step_size_up=4, mode="exp_range", gamma=0.95,
        cycle_momentum=False), _sgd),
    "PolynomialLR": (lambda s, o: s.PolynomialLR(o, total_iters=20, power=2.0), _sgd),
    "LinearLR": (lambda s, o: s.LinearLR(o, start_factor=0.2, end_factor=0.9,
                                         total_iters=10), _sgd),
    "ConstantLR": (lambda s, o: s.ConstantLR(o, factor=0.3, total_iters=7), _sgd),
    "ExponentialLR": (lambda s, o: s.ExponentialLR(o, gamma=0.9), _sgd),
    "MultiStepLR": (lambda s, o: s.MultiStepLR(o, milestones=[5, 12, 20], gamma=0.5), _sgd),
    "CosineAnnealingWarmRestarts": (lambda s, o: s.CosineAnnealingWarmRestarts(
        o, T_0=4, T_mult=2, eta_min=0.001), _sgd),
    "CosineAnnealingWarmRestarts-1": (lambda s, o: s.CosineAnnealingWarmRestarts(
        o, T_0=6), _sgd),
    "SequentialLR": (lambda s, o: s.SequentialLR(o, [s.LinearLR(o, 0.1, total_iters=5),
                                                     s.ExponentialLR(o, 0.9),
                                                     s.CosineAnnealingLR(o, T_max=8)],
                                                 milestones=[5, 15]), _sgd),
    "ChainedScheduler": (lambda s, o: s.ChainedScheduler(
        [s.ConstantLR(o, factor=0.5, total_iters=6), s.ExponentialLR(o, gamma=0.9),
         s.MultiStepLR(o, [10, 20], 0.3)]), _sgd),
}


@pytest.mark.parametrize("key", list(SCHEDULERS))
def test_scheduler_matches_torch(key):
    make_sched, make_opt = SCHEDULERS[key]
    got = _lrs(make_sched, make_opt, flow)
    want = _lrs(make_sched, make_opt, torch)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_reduce_lr_on_plateau_matches_torch():
    metrics = [1.0, 0.9, 0.9, 0.9, 0.95, 0.8, 0.8, 0.8, 0.8, 0.8] * 3
    for kw in (dict(patience=2), dict(mode="max", factor=0.5, patience=1, cooldown=2,
                                      threshold_mode="abs", threshold=0.01, min_lr=0.02)):
        def make(s, o, kw=kw):
            return s.ReduceLROnPlateau(o, **kw)

        got = _lrs(make, _sgd, flow, metrics=metrics)
        want = _lrs(make, _sgd, torch, metrics=metrics)
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_scheduler_state_dicts():
    opt = optim.SGD([nn.Parameter(flow.ones(1))], lr=1.0)
    s = lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)
    for _ in range(5):
        s.step()
    opt2 = optim.SGD([nn.Parameter(flow.ones(1))], lr=1.0)
    s2 = lr_scheduler.CosineAnnealingWarmRestarts(opt2, T_0=3, T_mult=2)
    s2.load_state_dict(s.state_dict())
    s.step()
    s2.step()
    assert s.get_last_lr() == s2.get_last_lr()
    assert math.isfinite(s2.get_last_lr()[0])
    p = optim.SGD([nn.Parameter(flow.ones(1))], lr=1.0)
    r = lr_scheduler.ReduceLROnPlateau(p, patience=0)
    r.step(1.0)
    r.step(2.0)
    assert p.param_groups[0]["lr"] == pytest.approx(0.1)
    assert "optimizer" not in r.state_dict()


#: optimizers (and options) of the loops whose structure changes: first-step fusion and state
_CHANGING_LOOPS = [("Adam", dict(lr=0.01, weight_decay=0.1)), ("AdamW", dict(lr=0.02)),
                   ("Adam", dict(lr=0.01, amsgrad=True)), ("RMSprop", dict(lr=0.01)),
                   ("SGD", dict(lr=0.1, momentum=0.9))]


@pytest.mark.parametrize("name,kw", _CHANGING_LOOPS)
def test_parameters_that_get_gradients_late_or_sometimes_match_torch(name, kw):
    """Eager steps where one parameter first gets a gradient at step 3 and another every
    other step (the fused first step makes state only for parameters with a gradient; new
    structures fuse later): values and the state dict's entries equal torch's, random
    inputs, two seeds."""
    torch.set_num_threads(1)
    shapes = [(3, 4), (5,), (2, 3, 2)]
    for seed in range(2):
        rng = np.random.default_rng(seed)
        p0 = [rng.standard_normal(s) for s in shapes]
        tp = [torch.nn.Parameter(torch.tensor(a)) for a in p0]
        jp = [nn.Parameter(flow.tensor(a)) for a in p0]
        to, jo = getattr(torch.optim, name)(tp, **kw), getattr(optim, name)(jp, **kw)
        for step in range(6):
            has = (True, step >= 2, step % 2 == 0)
            for i, (t, j) in enumerate(zip(tp, jp)):
                g = rng.standard_normal(shapes[i])
                t.grad = torch.tensor(g) if has[i] else None
                j.grad = flow.tensor(g) if has[i] else None
            to.step()
            jo.step()
            for t, j in zip(tp, jp):
                np.testing.assert_allclose(j.detach().numpy(), t.detach().numpy(),
                                           rtol=1e-10, atol=1e-12)
            assert sorted(jo.state_dict()["state"]) == sorted(to.state_dict()["state"])


@pytest.mark.parametrize("name,kw", _CHANGING_LOOPS)
def test_loops_with_backward_match_torch(name, kw):
    """The same loops with gradients from ``backward()`` (a random quadratic of the
    parameters the step uses): the first step runs the update compiled ahead during the first
    backward, with the state made for it (but Adam / AdamW's, op by op by default); values
    and state-dict entries equal torch's, two seeds."""
    from jflow.lazy_mode import optimizer_step

    torch.set_num_threads(1)
    shapes = [(3, 4), (5,), (2, 3, 2)]
    for seed in range(2):
        rng = np.random.default_rng(seed + 10)
        p0 = [rng.standard_normal(s) for s in shapes]
        tp = [torch.nn.Parameter(torch.tensor(a)) for a in p0]
        jp = [nn.Parameter(flow.tensor(a)) for a in p0]
        to, jo = getattr(torch.optim, name)(tp, **kw), getattr(optim, name)(jp, **kw)
        for step in range(5):
            used = [i for i, h in enumerate((True, step >= 2, step % 2 == 0)) if h]
            cs = [rng.standard_normal(shapes[i]) for i in used]
            for lib, ps, o in ((torch, tp, to), (flow, jp, jo)):
                o.zero_grad()
                loss = sum(((lib.tensor(c) * ps[i] + 0.5) * ps[i]).sum()
                           for i, c in zip(used, cs))
                loss.backward()
                o.step()
            if step == 0 and optimizer_step.fuses(jo):
                (hit,) = [v for v in optimizer_step._STEPS[jo].values()
                          if v.__class__ is optimizer_step._Traced]
                assert isinstance(hit.ahead, jax.stages.Compiled)
            elif step == 0:  # (Adam / AdamW by default: op by op, nothing compiled ahead)
                assert name in ("Adam", "AdamW") and optimizer_step.traced_steps(jo) == 0
            for t, j in zip(tp, jp):
                np.testing.assert_allclose(j.detach().numpy(), t.detach().numpy(),
                                           rtol=1e-10, atol=1e-12)
            assert sorted(jo.state_dict()["state"]) == sorted(to.state_dict()["state"])
