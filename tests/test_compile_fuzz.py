"""Compiled steps never run on stale state, found by random sequences: two twin models and
optimizers (same weights, same settings), one trained by a compiled step (``flow.jit`` or
``nn.Graph``), the other by the same step run eagerly; between steps, random changes are made
to both twins alike (learning rate, momentum, in-place and ``.data`` writes, train/eval,
frozen parameters, a parameter appended to a group, optimizer state cleared, a layer
replaced, a batch of another size). After every step the losses and all parameters and
buffers must agree. A compiled call that reused a key it should not have (a stale
executable, stale fast-path stamps) diverges here."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

F = flow.nn.functional


def _model(seed: int) -> flow.nn.Module:
    flow.manual_seed(seed)
    return flow.nn.Sequential(flow.nn.Linear(5, 8), flow.nn.BatchNorm1d(8), flow.nn.ReLU(),
                              flow.nn.Linear(8, 3))


def _twin(seed: int) -> tuple[flow.nn.Module, flow.optim.Optimizer]:
    m = _model(seed)
    # the last layer's bias starts outside the optimizer (an event appends it to the group)
    params = [p for n, p in m.named_parameters() if n != "3.bias"]
    return m, flow.optim.SGD(params, lr=0.05, momentum=0.0)


def _loss(m: flow.nn.Module, x: flow.Tensor, y: flow.Tensor) -> flow.Tensor:
    return F.cross_entropy(m(x), y)


def _events(rs: np.random.RandomState):
    """(name, fn(model, opt, state)) changes, applied to both twins alike."""
    def lr(m, o, s):
        o.param_groups[0]["lr"] = s["lr"]

    def momentum(m, o, s):
        o.param_groups[0]["momentum"] = s["momentum"]

    def scale_in_place(m, o, s):
        with flow.no_grad():
            m[0].weight.mul_(s["scale"])

    def data_assigned(m, o, s):
        m[3].weight.data = flow.tensor(s["w3"])

    def train_eval(m, o, s):
        m.train(s["train"])

    def freeze(m, o, s):
        m[0].bias.requires_grad_(s["rg"])

    def append_param(m, o, s):
        ps = o.param_groups[0]["params"]
        if not any(p is m[3].bias for p in ps):
            ps.append(m[3].bias)

    def clear_state(m, o, s):
        o.state.clear()

    def replace_layer(m, o, s):
        flow.manual_seed(s["seed"])
        new = flow.nn.Linear(8, 3)
        old = m[3]
        m[3] = new
        for g in o.param_groups:  # the optimizer follows the layer, as a user would write it
            g["params"][:] = [new.weight if p is old.weight else new.bias if p is old.bias
                              else p for p in g["params"]]
        o.state.clear()

    def batch(m, o, s):
        s["n"] = s["n_next"]

    return [("lr", lr), ("momentum", momentum), ("scale_in_place", scale_in_place),
            ("data_assigned", data_assigned), ("train_eval", train_eval), ("freeze", freeze),
            ("append_param", append_param), ("clear_state", clear_state),
            ("replace_layer", replace_layer), ("batch", batch), ("nothing", None)]


def _draw(rs: np.random.RandomState, s: dict) -> None:
    """The random values of this round's events (shared by both twins)."""
    s.update(lr=float(rs.choice([0.01, 0.05, 0.1])), momentum=float(rs.choice([0.0, 0.5, 0.9])),
             scale=float(rs.uniform(0.8, 1.2)), w3=rs.randn(3, 8).astype(np.float32) * 0.3,
             train=bool(rs.rand() < 0.7), rg=bool(rs.rand() < 0.6),
             seed=int(rs.randint(1000)), n_next=int(rs.choice([6, 8])))


def _close(a: flow.nn.Module, b: flow.nn.Module, what: str) -> None:
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=2e-5, atol=2e-6,
                                   err_msg=f"{what}: {name}")


@pytest.mark.parametrize("kind,seed", [("jit", 0), ("jit", 1), ("graph", 2), ("graph", 3)])
def test_compiled_step_follows_eager_through_random_changes(kind, seed):
    rs = np.random.RandomState(seed)
    mc, oc = _twin(0)
    me, oe = _twin(0)

    def step(x, y):
        oc.zero_grad()
        loss = _loss(mc, x, y)
        loss.backward()
        oc.step()
        return loss

    if kind == "jit":
        compiled = flow.jit(step)
    else:
        class Step(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = mc
                self.add_optimizer(oc)

            def build(self, x, y):
                loss = _loss(self.model, x, y)
                loss.backward()
                return loss
        compiled = Step()
    events = _events(rs)
    s = {"n": 8}
    history = []
    for _ in range(14):
        _draw(rs, s)
        name, fn = events[rs.randint(len(events))]
        if kind == "graph" and name == "replace_layer":
            name, fn = "nothing", None  # (a Graph's modules are fixed at construction)
        history.append(name)
        if fn is not None:
            fn(mc, oc, dict(s))
            fn(me, oe, s)
        x = flow.tensor(rs.randn(s["n"], 5).astype(np.float32))
        y = flow.tensor(rs.randint(0, 3, s["n"]))
        lc = compiled(x, y)
        oe.zero_grad()
        le = _loss(me, x, y)
        le.backward()
        oe.step()
        what = f"{kind} seed {seed} after {history}"
        np.testing.assert_allclose(lc.numpy(), le.detach().numpy(), rtol=2e-5, atol=2e-6,
                                   err_msg=what)
        _close(mc, me, what)
