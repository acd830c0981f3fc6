"""The compiled-call fast path (``CompiledFunction._fast``): a call reuses the last key only
while stamps prove nothing structural changed. Each test arms the fast path (steady calls),
makes one structural change, and checks that the compiled result equals eager and that the
step traced again with the right reason — a fast path that reused a stale key fails them."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow
from jflow.compiler.state import StepState

X = flow.tensor(np.random.RandomState(0).randn(4, 3).astype(np.float32))


def _net(seed: int, n_in: int = 3, n_out: int = 2) -> flow.nn.Module:
    flow.manual_seed(seed)
    return flow.nn.Linear(n_in, n_out)


def _same(compiled: flow.Tensor, eager: flow.Tensor) -> None:
    np.testing.assert_allclose(compiled.detach().numpy(), eager.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def _steady(f, *args) -> None:
    """Call until the fast path is armed, and check that a fast call computes no key."""
    for _ in range(3):
        f(*args)
    c = f._compiled if isinstance(f, flow.nn.Graph) else f
    assert c._fast is not None
    keys = StepState.key
    calls = []
    StepState.key = lambda self: calls.append(1) or keys(self)
    try:
        f(*args)
    finally:
        StepState.key = keys
    assert not calls, "a steady call computed the key"


def test_fast_path_is_used_and_matches_eager():
    model = _net(0)
    f = flow.jit(lambda x: model(x))
    _steady(f, X)
    _same(f(X), model(X))
    assert f.trace_count == 1


def test_parameter_data_replaced_with_another_shape():
    model = _net(0)
    f = flow.jit(lambda x: model(x))
    _steady(f, X)
    flow.manual_seed(5)
    model.weight.data = flow.randn(5, 3)
    model.bias.data = flow.randn(5)
    _same(f(X), model(X))
    assert "state tensor" in f.recompile_reasons[-1]


def test_parameter_replaced_by_module_attribute():
    model = _net(0)
    f = flow.jit(lambda x: model(x))
    _steady(f, X)
    model.weight = flow.nn.Parameter(flow.randn(2, 3))
    _same(f(X), model(X))
    assert f.trace_count == 2


def test_module_rebound_in_closure():
    model = _net(0)
    f = flow.jit(lambda x: model(x))
    _steady(f, X)
    model = _net(1)
    _same(f(X), model(X))
    assert "closure 'model' was rebound" in f.recompile_reasons[-1]


GLOBAL_MODEL = _net(0)


def _global_step(x):
    return GLOBAL_MODEL(x)


def test_module_rebound_in_global():
    global GLOBAL_MODEL
    f = flow.jit(_global_step)
    _steady(f, X)
    GLOBAL_MODEL = _net(1)
    _same(f(X), GLOBAL_MODEL(X))
    assert "global 'GLOBAL_MODEL' was rebound" in f.recompile_reasons[-1]


def test_module_replaced_in_dict_list_and_object():
    models = {"g": _net(0)}
    stack = [_net(1)]

    class Holder:
        pass

    h = Holder()
    h.model = _net(2)
    f = flow.jit(lambda x: models["g"](x) + stack[0](x) + h.model(x))
    eager = lambda: models["g"](X) + stack[0](X) + h.model(X)  # noqa: E731
    _steady(f, X)
    models["g"] = _net(3)
    _same(f(X), eager())
    assert "closure 'models'['g'] was rebound" in f.recompile_reasons[-1]
    _steady(f, X)
    stack[0] = _net(4)
    _same(f(X), eager())
    assert "closure 'stack'[0] was rebound" in f.recompile_reasons[-1]
    _steady(f, X)
    h.model = _net(5)
    _same(f(X), eager())
    assert "closure 'h'.model was rebound" in f.recompile_reasons[-1]


def test_training_mode_flipped():
    flow.manual_seed(0)
    model = flow.nn.Sequential(flow.nn.Linear(3, 8), flow.nn.Dropout(0.5), flow.nn.Linear(8, 2))
    f = flow.jit(lambda x: model(x))
    _steady(f, X)
    model.eval()
    _same(f(X), model(X))
    assert "module training modes changed" in f.recompile_reasons[-1]


def _graph(model, opt):
    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x):
            loss = self.model(x).sum()
            loss.backward()
            return loss
    return Step()


def _eager_step(model, opt, x):
    opt.zero_grad()
    loss = model(x).sum()
    loss.backward()
    opt.step()
    return loss


def test_graph_optimizer_param_group_added():
    model, ref = _net(0), _net(0)
    extra, ref_extra = _net(7), _net(7)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = flow.optim.SGD(ref.parameters(), lr=0.1)
    g = _graph(model, opt)
    for _ in range(4):
        g(X)
        _eager_step(ref, ref_opt, X)
    assert g._compiled._fast is not None
    opt.add_param_group({"params": list(extra.parameters()), "lr": 0.5})
    ref_opt.add_param_group({"params": list(ref_extra.parameters()), "lr": 0.5})
    # (extra's parameters get no gradient from this step: the group must still be seen)
    _same(g(X), _eager_step(ref, ref_opt, X))
    assert g.trace_count == 2
    _same(model.weight, ref.weight)


def test_graph_hyper_parameter_changed():
    model, ref = _net(0), _net(0)
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_opt = flow.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    g = _graph(model, opt)
    for _ in range(4):
        g(X)
        _eager_step(ref, ref_opt, X)
    assert g._compiled._fast is not None
    opt.param_groups[0]["momentum"] = 0.5
    ref_opt.param_groups[0]["momentum"] = 0.5
    for _ in range(2):
        _same(g(X), _eager_step(ref, ref_opt, X))
    _same(model.weight, ref.weight)
    assert "optimizer hyper-parameters" in g.recompile_reasons[-1]


def test_graph_optimizer_state_changed_in_place():
    model, ref = _net(0), _net(0)
    opt = flow.optim.Adam(model.parameters(), lr=0.1)
    ref_opt = flow.optim.Adam(ref.parameters(), lr=0.1)
    g = _graph(model, opt)
    for _ in range(4):
        g(X)
        _eager_step(ref, ref_opt, X)
    assert g._compiled._fast is not None
    opt.state.clear()
    ref_opt.state.clear()
    for _ in range(2):
        _same(g(X), _eager_step(ref, ref_opt, X))
    _same(model.weight, ref.weight)


def test_grad_presence_changed():
    model = _net(0)

    def step(x):
        loss = model(x).sum()
        loss.backward()
        return loss
    f = flow.jit(step)
    _steady(f, X)  # (grads accumulate: the first call creates them, then they are stable)
    model.zero_grad(set_to_none=True)
    f(X)
    assert "grad" in f.recompile_reasons[-1]
    ref = _net(0)
    (ref(X).sum()).backward()
    _same(model.weight.grad, ref.weight.grad)


@pytest.mark.parametrize("change", ["shape", "dtype"])
def test_argument_shape_or_dtype_changed(change):
    model = _net(0)
    f = flow.jit(lambda x: model(x.to(flow.float32)))
    _steady(f, X)
    x = flow.tensor(np.ones((6, 3), np.float32)) if change == "shape" else \
        flow.tensor(np.ones((4, 3), np.float64))
    _same(f(x), model(x.to(flow.float32)))
    assert "argument leaf 0 changed" in f.recompile_reasons[-1]


def test_captured_tensor_modified_in_place():
    scale = flow.tensor(np.float32(2.0) * np.ones(2, np.float32))
    model = _net(0)
    f = flow.jit(lambda x: model(x) * scale)
    _steady(f, X)
    scale.mul_(3.0)
    _same(f(X), model(X) * scale)
    assert "captured tensor" in f.recompile_reasons[-1]
    _same(f(X), model(X) * scale)


def test_requires_grad_flipped():
    model = _net(0)
    f = flow.jit(lambda x: model(x))
    _steady(f, X)
    model.weight.requires_grad_(False)
    _same(f(X), model(X))
    assert "requires_grad" in f.recompile_reasons[-1] or "state tensor 0" in \
        f.recompile_reasons[-1]


def test_state_written_eagerly_between_calls_is_read():
    model = _net(0)
    f = flow.jit(lambda x: model(x))
    _steady(f, X)
    with flow.no_grad():
        model.weight.mul_(2.0)
    _same(f(X), model(X))
    assert f.trace_count == 1  # (same structure: no retrace, the new value is an input)
    _steady(f, X)


def test_graph_param_added_to_a_group_list():
    model, ref = _net(0), _net(0)
    extra, ref_extra = _net(7, n_in=3, n_out=2), _net(7, n_in=3, n_out=2)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = flow.optim.SGD(ref.parameters(), lr=0.1)

    class Step(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model, self.extra = model, extra
            self.add_optimizer(opt)

        def build(self, x):
            loss = (self.model(x) + self.extra(x)).sum()
            loss.backward()
            return loss

    def eager():  # (a Graph's gradients live in the step: none accumulate on extra)
        ref_opt.zero_grad()
        ref_extra.zero_grad()
        loss = (ref(X) + ref_extra(X)).sum()
        loss.backward()
        ref_opt.step()
        return loss

    g = Step()
    for _ in range(4):
        _same(g(X), eager())
    assert g._compiled._fast is not None
    opt.param_groups[0]["params"].append(extra.weight)  # the list itself, in place
    ref_opt.param_groups[0]["params"].append(ref_extra.weight)
    for _ in range(2):
        _same(g(X), eager())
    _same(extra.weight, ref_extra.weight)
    assert g.trace_count == 2


def test_graph_param_groups_reassigned():
    model, ref = _net(0), _net(0)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = flow.optim.SGD(ref.parameters(), lr=0.1)
    g = _graph(model, opt)
    for _ in range(4):
        _same(g(X), _eager_step(ref, ref_opt, X))
    opt.param_groups = [{**opt.param_groups[0], "momentum": 0.9}]
    ref_opt.param_groups = [{**ref_opt.param_groups[0], "momentum": 0.9}]
    for _ in range(3):
        _same(g(X), _eager_step(ref, ref_opt, X))
    _same(model.weight, ref.weight)


def test_tensor_learning_rate_changed_in_place():
    model, ref = _net(0), _net(0)
    lr, ref_lr = flow.tensor(0.1), flow.tensor(0.1)
    opt = flow.optim.SGD(model.parameters(), lr=lr)
    ref_opt = flow.optim.SGD(ref.parameters(), lr=ref_lr)
    g = _graph(model, opt)
    for _ in range(4):
        _same(g(X), _eager_step(ref, ref_opt, X))
    lr.mul_(0.5)  # the same tensor object: a cached learning rate would be stale
    ref_lr.mul_(0.5)
    for _ in range(2):
        _same(g(X), _eager_step(ref, ref_opt, X))
    _same(model.weight, ref.weight)
    assert g.trace_count == 1


def test_training_attribute_assigned():
    flow.manual_seed(0)
    model = flow.nn.Sequential(flow.nn.Linear(3, 8), flow.nn.Dropout(0.5), flow.nn.Linear(8, 2))
    f = flow.jit(lambda x: model(x))
    _steady(f, X)
    for m in model.modules():
        m.training = False  # an attribute, not .eval()
    _same(f(X), model(X))
    assert "module training modes changed" in f.recompile_reasons[-1]


def test_watched_containers_bump_on_every_change():
    from jflow.optim import watched

    changes = {
        "list": [lambda x: x.append(1), lambda x: x.extend([2]), lambda x: x.insert(0, 3),
                 lambda x: x.remove(3), lambda x: x.pop(), lambda x: x.__setitem__(0, 5),
                 lambda x: x.__delitem__(0), lambda x: x.__iadd__([1, 2]),
                 lambda x: x.__imul__(2), lambda x: x.sort(), lambda x: x.reverse(),
                 lambda x: x.clear()],
        "dict": [lambda x: x.__setitem__("a", 1), lambda x: x.update(b=2),
                 lambda x: x.setdefault("c", 3), lambda x: x.pop("c"),
                 lambda x: x.__delitem__("b"), lambda x: x.__ior__({"d": 4}),
                 lambda x: x.popitem(), lambda x: x.clear()],
    }
    for kind, ops in changes.items():
        x = watched.WatchedList() if kind == "list" else watched.WatchedDict()
        for op in ops:
            before = watched.VERSION[0]
            op(x)
            assert watched.VERSION[0] > before, (kind, op)
    g = watched.WatchedGroup(lr=0.1, momentum=0.0)
    before = watched.VERSION[0]
    g["lr"] = 0.05
    g["initial_lr"] = 0.1
    assert watched.VERSION[0] == before  # (the learning rate is an input of the step)
    g["momentum"] = 0.9
    assert watched.VERSION[0] == before + 1


def test_graph_arguments_of_another_shape_leave_the_fast_path():
    model, ref = _net(0), _net(0)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    ref_opt = flow.optim.SGD(ref.parameters(), lr=0.1)
    g = _graph(model, opt)
    for _ in range(4):
        _same(g(X), _eager_step(ref, ref_opt, X))
    x6 = flow.tensor(np.random.RandomState(1).randn(6, 3).astype(np.float32))
    for x in (x6, X, x6):
        _same(g(x), _eager_step(ref, ref_opt, x))
    _same(model.weight, ref.weight)
    assert g.trace_count == 2
    assert "argument leaf 0 changed" in g.recompile_reasons[0]
