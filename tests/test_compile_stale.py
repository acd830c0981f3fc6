"""flow.jit / nn.Graph never run on stale state: a model reached through a rebound closure
variable, a rebound global, a dict or list, or an attribute of a plain object is found again on
every call (a rebinding retraces, with the path as the reason), and a tensor the trace read as
a constant is guarded (if it changes, the step traces again with it as an input). After each
change the compiled result equals eager."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

X = flow.tensor(np.random.RandomState(0).randn(4, 3).astype(np.float32))


def _net(seed: int) -> flow.nn.Module:
    flow.manual_seed(seed)
    return flow.nn.Linear(3, 2)


def _same(compiled: flow.Tensor, eager: flow.Tensor) -> None:
    np.testing.assert_allclose(compiled.detach().numpy(), eager.detach().numpy(), rtol=1e-6,
                               atol=1e-6)


def test_rebound_closure_variable():
    model = _net(0)
    f = flow.jit(lambda x: model(x))
    _same(f(X), model(X))
    model = _net(1)  # noqa: F841  (the lambda reads the new binding)
    _same(f(X), model(X))
    assert "closure 'model' was rebound" in f.recompile_reasons[-1]


GLOBAL_MODEL = _net(0)


def _global_step(x):
    return GLOBAL_MODEL(x)


def test_rebound_module_global():
    global GLOBAL_MODEL
    f = flow.jit(_global_step)
    _same(f(X), GLOBAL_MODEL(X))
    old = GLOBAL_MODEL
    try:
        GLOBAL_MODEL = _net(2)
        _same(f(X), GLOBAL_MODEL(X))
        assert "global 'GLOBAL_MODEL' was rebound" in f.recompile_reasons[-1]
    finally:
        GLOBAL_MODEL = old


def test_model_in_a_dict_and_in_a_list():
    models = {"g": _net(0)}
    nets = [_net(1)]
    f = flow.jit(lambda x: models["g"](x) + nets[0](x))
    _same(f(X), models["g"](X) + nets[0](X))
    models["g"] = _net(3)
    _same(f(X), models["g"](X) + nets[0](X))
    assert "closure 'models'['g'] was rebound" in f.recompile_reasons[-1]
    nets[0] = _net(4)
    _same(f(X), models["g"](X) + nets[0](X))
    assert "closure 'nets'[0] was rebound" in f.recompile_reasons[-1]


class Trainer:
    def __init__(self) -> None:
        self.model = _net(0)
        self.heads = [_net(1)]

    def predict(self, x):
        return self.model(x) * 2 + self.heads[0](x)


def test_plain_object_holding_the_model():
    t = Trainer()
    f = flow.jit(t.predict)
    _same(f(X), t.predict(X))
    t.model = _net(5)
    _same(f(X), t.predict(X))
    assert "self.model was rebound" in f.recompile_reasons[-1]
    t.heads[0] = _net(6)
    _same(f(X), t.predict(X))
    assert "self.heads[0] was rebound" in f.recompile_reasons[-1]


def test_in_place_change_of_the_same_model_is_seen_without_retrace():
    model = _net(0)
    f = flow.jit(lambda x: model(x))
    f(X)
    with flow.no_grad():
        model.weight.mul_(3.0)
    _same(f(X), model(X))
    assert f.trace_count == 1


def test_captured_tensor_is_guarded_and_becomes_an_input():
    scale = flow.tensor([1.0, 2.0])
    f = flow.jit(lambda x: x * scale, explain=True)
    with pytest.warns(flow.compiler.RecompileWarning, match=r"read as constants.*\[2\]"):
        _same(f(flow.ones(2)), flow.ones(2) * scale)
    assert f.captured_constants and "Tensor[2]" in f.captured_constants[0]
    scale.add_(10.0)  # an eager in-place change after the trace
    with pytest.warns(flow.compiler.RecompileWarning, match="captured tensor"):
        _same(f(flow.ones(2)), flow.ones(2) * scale)
    assert "changed since it was traced as a constant" in f.recompile_reasons[-1]
    scale.mul_(2.0)  # now an input: seen without another trace
    traces = f.trace_count
    _same(f(flow.ones(2)), flow.ones(2) * scale)
    assert f.trace_count == traces


def test_scalar_operands_are_not_reported_as_captured():
    f = flow.jit(lambda x: x * 2.0 + 1.0, explain=True)
    f(flow.ones(3))
    assert f.captured_constants == []


class _Step(flow.nn.Graph):
    def __init__(self) -> None:
        super().__init__()
        self.towers = [_net(0)]  # a plain list attribute: not registered by nn.Graph

    def build(self, x):
        return self.towers[0](x)


def test_graph_reaches_modules_in_plain_attributes():
    g = _Step()
    _same(g(X), g.towers[0](X))
    g.towers[0] = _net(7)
    _same(g(X), g.towers[0](X))
    assert "towers[0] was rebound" in g.recompile_reasons[-1]


class _LazyMask(flow.nn.Module):
    """Builds its causal mask on first use and keeps it on ``self`` (a common idiom)."""

    def __init__(self) -> None:
        super().__init__()
        self.mask = None

    def forward(self, x):
        if self.mask is None:
            n = x.shape[-1]
            self.mask = flow.tril(flow.ones(n, n)) * x.sum()  # computed from the input
        return (x * self.mask).sum()


class _MaskGraph(flow.nn.Graph):
    def __init__(self, m) -> None:
        super().__init__()
        self.m = m

    def build(self, x):
        return self.m(x)


@pytest.mark.parametrize("how", ["jit", "graph"])
def test_a_tensor_cached_on_a_module_inside_the_step_is_refused_not_leaked(how):
    m = _LazyMask()
    step = flow.jit(lambda x: m(x)) if how == "jit" else _MaskGraph(m)
    x = flow.ones(3, 3)
    with pytest.raises(RuntimeError, match=r"_LazyMask\.mask.*register_buffer"):
        step(x)
    assert m.mask is None  # the attribute is put back: no tracer stays behind
    del m.mask
    m.register_buffer("mask", flow.tril(flow.ones(3, 3)))  # what the error says to do
    _same(step(x), (x * flow.tril(flow.ones(3, 3))).sum())
    assert not isinstance(m.mask._value, __import__("jax").core.Tracer)
