"""flow.jit and nn.Graph: compiled steps agree with eager ones, state is written back,
recompiles happen only when the signature changes (and say why), random draws aren't frozen."""

import copy
import warnings

import _compiles
import numpy as np
import pytest

import jflow as flow
import jflow.nn as nn
import jflow.nn.functional as F

RS = np.random.RandomState(0)
X = RS.randn(16, 6).astype(np.float32)
Y = RS.randint(0, 3, 16)


def _model() -> nn.Module:
    flow.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 12), nn.LayerNorm(12), nn.GELU(), nn.Dropout(0.25),
                         nn.Linear(12, 3))


class TrainStep(nn.Graph):
    def __init__(self, model, opt, sched=None, clip=None):
        super().__init__()
        self.model = model
        self.clip = clip
        self.add_optimizer(opt, lr_sch=sched)

    def build(self, x, y):
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        if self.clip is not None:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        return loss


def _eager_steps(model, opt, n, sched=None, clip=None):
    x, y = flow.tensor(X), flow.tensor(Y)
    losses = []
    for _ in range(n):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if sched is not None:
            sched.step()
        losses.append(float(loss))
    return losses


def _assert_same_params(a, b, tol=2e-5):
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=tol, atol=tol,
                                   err_msg=name)


@pytest.mark.parametrize("make_opt", [
    lambda ps: flow.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
    lambda ps: flow.optim.Adam(ps, lr=0.01, weight_decay=1e-3),
], ids=["sgd", "adam"])
def test_graph_matches_eager_after_20_steps(make_opt):
    """Same seed, same data: 20 eager steps == 20 nn.Graph steps (dropout included)."""
    eager, compiled = _model(), _model()
    oe, oc = make_opt(eager.parameters()), make_opt(compiled.parameters())
    flow.manual_seed(7)
    le = _eager_steps(eager, oe, 20)
    step = TrainStep(compiled, oc)
    flow.manual_seed(7)
    lc = [float(step(flow.tensor(X), flow.tensor(Y))) for _ in range(20)]
    np.testing.assert_allclose(lc, le, rtol=2e-5)
    _assert_same_params(eager, compiled)
    # the optimizer state was written back too (same tensors as eager's, by value)
    for p, q in zip(eager.parameters(), compiled.parameters()):
        for k, v in oe.state[p].items():
            np.testing.assert_allclose(np.asarray(oc.state[q][k].numpy()), v.numpy(),
                                       rtol=2e-5, atol=2e-6, err_msg=k)
    # the graph creates the optimizer state up front: one trace, no recompiles
    assert step.trace_count == 1, step.recompile_reasons
    # the eager .grad of parameters is untouched by the graph (OneFlow's graph mode)
    assert all(p.grad is None for p in compiled.parameters())


def test_graph_scheduler_and_clipping_no_recompile_and_eager_mix():
    """A scheduler changes lr every step without recompiling; eager and graph steps can be
    interleaved on the same model and optimizer."""
    def setup():
        m = _model()
        opt = flow.optim.AdamW(m.parameters(), lr=0.05)
        return m, opt, flow.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

    eager, oe, se = setup()
    flow.manual_seed(3)
    _eager_steps(eager, oe, 9, se, clip=0.5)

    mixed, om, sm = setup()
    step = TrainStep(mixed, om, sm, clip=0.5)
    flow.manual_seed(3)
    for _ in range(4):
        step(flow.tensor(X), flow.tensor(Y))
    _eager_steps(mixed, om, 1, sm, clip=0.5)      # an eager step in between
    for _ in range(4):
        step(flow.tensor(X), flow.tensor(Y))
    assert sm.get_last_lr() == se.get_last_lr()
    _assert_same_params(eager, mixed)
    assert step.trace_count == 1, step.recompile_reasons


def test_graph_recompiles_on_shape_change_with_reason():
    m = _model()
    step = TrainStep(m, flow.optim.SGD(m.parameters(), lr=0.1))
    step(flow.tensor(X), flow.tensor(Y))
    step(flow.tensor(X), flow.tensor(Y))
    step(flow.tensor(X[:8]), flow.tensor(Y[:8]))
    assert step.trace_count == 2
    (reason,) = step.recompile_reasons
    assert "argument leaf 0" in reason and "[16, 6]" in reason and "[8, 6]" in reason
    m.eval()
    step(flow.tensor(X[:8]), flow.tensor(Y[:8]))
    assert "training mode" in step.recompile_reasons[-1]


def test_graph_dropout_not_frozen_and_reproducible():
    """Random draws are inputs of the executable: each call draws anew, the same seed
    replays the same numbers, and they equal the eager draws."""
    class Noise(nn.Graph):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.5)

        def build(self, x):
            return self.drop(x)

    g, ones = Noise(), flow.ones(64)
    flow.manual_seed(11)
    a, b = g(ones).numpy(), g(ones).numpy()
    assert not np.array_equal(a, b)
    flow.manual_seed(11)
    eager = nn.Dropout(0.5)
    np.testing.assert_array_equal(eager(ones).numpy(), a)
    np.testing.assert_array_equal(g(ones).numpy(), b)   # continues the eager draw count
    assert g.trace_count == 1


def test_graph_donation_keeps_aliases_valid_and_errors():
    m = _model()
    snapshot = copy.deepcopy(m)          # shares m's (immutable) arrays
    w_before = m[0].weight.clone()       # so does a copy
    w_view = m[0].weight.detach()        # a detached view follows the parameter (PyTorch)
    step = TrainStep(m, flow.optim.SGD(m.parameters(), lr=0.5))
    step(flow.tensor(X), flow.tensor(Y))
    step(flow.tensor(X), flow.tensor(Y))
    # the copies still hold the old values (a donated buffer is never one someone else holds)
    np.testing.assert_array_equal(snapshot[0].weight.detach().numpy(), w_before.detach().numpy())
    assert not np.allclose(m[0].weight.detach().numpy(), w_before.detach().numpy())
    np.testing.assert_array_equal(w_view.numpy(), m[0].weight.detach().numpy())

    class NoBackward(nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = m
            self.add_optimizer(flow.optim.SGD(m.parameters(), lr=0.1))

        def build(self, x):
            return self.model(x).sum()

    with pytest.raises(RuntimeError, match=r"NoBackward.build\(\).*loss.backward\(\)"):
        NoBackward()(flow.tensor(X))
    with pytest.raises(TypeError, match="add_optimizer.*Optimizer"):
        TrainStep(m, "sgd")


def test_jit_function_of_modules_tracks_grads_and_inplace_args():
    """flow.jit of a function with backward: .grad accumulates into the parameters exactly
    as eager; an in-place update of an argument is written back."""
    model, twin = _model().eval(), _model().eval()

    @flow.jit
    def loss_and_grad(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        return loss

    x, y = flow.tensor(X), flow.tensor(Y)
    for _ in range(2):                     # grads accumulate over the two calls
        lc = loss_and_grad(x, y)
        le = F.cross_entropy(twin(x), y)
        le.backward()
    np.testing.assert_allclose(float(lc), float(le), rtol=1e-6)
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert loss_and_grad.trace_count == 2   # the second call has grads as inputs

    @flow.jit
    def bump(t, k):
        t.add_(k)
        return t * 2

    t = flow.zeros(3)
    out = bump(t, 1.5)
    np.testing.assert_array_equal(t.numpy(), [1.5] * 3)
    np.testing.assert_array_equal(out.numpy(), [3.0] * 3)


def test_jit_explains_recompiles_and_bounds_cache():
    calls = []

    @flow.jit(explain=True, max_cache_size=2)
    def f(a, scale):
        calls.append(1)
        return a * scale

    f(flow.ones(2), 2.0)
    f(flow.ones(2), 2.0)
    assert len(calls) == 1
    with pytest.warns(flow.compiler.RecompileWarning, match=r"argument leaf 0.*\[2\].*\[3\]"):
        f(flow.ones(3), 2.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(f(flow.ones(3), 5.0).numpy(), [5.0] * 3)
        assert "argument leaf 1 changed: 2.0 -> 5.0" in f.recompile_reasons[-1]
        assert f.cache_size == 2

    g = flow.Generator()

    @flow.jit
    def noisy(a):
        return a + flow.rand(2, generator=g)

    with pytest.raises(RuntimeError, match="not the default generator"):
        noisy(flow.ones(2))
    with pytest.raises(TypeError, match="returned a Sequential"):
        flow.jit(lambda m: m)(nn.Sequential())


def test_graph_steady_state_donates_without_copies(monkeypatch):
    """Parameters are donated: once they own their buffers, a step copies nothing."""
    from jflow.compiler import state
    m = _model()
    # (test_graph_matches_eager_after_20_steps[adam]'s optimizer: the same step program)
    step_opt = flow.optim.Adam(m.parameters(), lr=0.01, weight_decay=1e-3)
    step = TrainStep(m, step_opt)
    x, y = flow.tensor(X), flow.tensor(Y)
    for _ in range(3):
        step(x, y)
    copies = []
    real = state.donatable_copy
    monkeypatch.setattr(state, "donatable_copy", lambda v: copies.append(1) or real(v))
    for _ in range(3):
        step(x, y)
    assert copies == []
    held = m[0].weight._value          # someone else now holds a parameter's buffer
    step(x, y)
    assert copies == [1] and not held.is_deleted()
    saved = step_opt.state_dict()      # ... and the optimizer state (detached views)
    snapshot = copy.deepcopy(saved)    # (a deep copy owns its values, as in PyTorch)
    before = saved["state"][0]["exp_avg"].numpy().copy()
    step(x, y)
    np.testing.assert_array_equal(snapshot["state"][0]["exp_avg"].numpy(), before)
    # the state_dict's views follow the optimizer's state, as PyTorch's references do
    now = step_opt.state[m[0].weight]["exp_avg"].numpy()
    assert not np.array_equal(now, before)
    np.testing.assert_array_equal(saved["state"][0]["exp_avg"].numpy(), now)


def test_graph_copies_before_donation_compile_nothing():
    """The first call copies every parameter and state array it may not donate (others hold
    them), and a later call the ones someone took meanwhile: buffer copies, not an
    executable per shape (jnp.copy compiled one each: 19 on a ResNet's first call)."""
    with _compiles.compiled() as names:
        flow.manual_seed(0)
        m = nn.Sequential(nn.Linear(37, 29), nn.Tanh(), nn.Linear(29, 3))
        step = TrainStep(m, flow.optim.SGD(m.parameters(), lr=0.1, momentum=0.9))
        rs = np.random.RandomState(1)
        x, y = flow.tensor(rs.randn(16, 37).astype(np.float32)), flow.tensor(Y)
        held = m[0].weight._value          # the first call must not donate this buffer
        want = m[0].weight.detach().numpy().copy()
        step(x, y)
        np.testing.assert_array_equal(np.asarray(held), want)
        step(x, y)
        held = m[2].weight._value          # taken between calls: copied by the fast path
        want = m[2].weight.detach().numpy().copy()
        step(x, y)
        np.testing.assert_array_equal(np.asarray(held), want)
    assert not np.array_equal(m[2].weight.detach().numpy(), want)
    assert names and not [n for n in names if "copy" in n], names


def test_jit_outputs_are_differentiable_eagerly():
    """loss = compiled(x); loss.backward() — as torch.compile: the compiled call is one tape
    node (its backward a compiled vjp), gradients equal eager ones, dropout included."""
    model, twin = _model(), _model()
    compiled = flow.jit(lambda x: model(x))
    x = flow.tensor(X, requires_grad=True)
    x2 = flow.tensor(X, requires_grad=True)
    flow.manual_seed(5)
    out = compiled(x)
    F.cross_entropy(out, flow.tensor(Y)).backward()
    flow.manual_seed(5)
    F.cross_entropy(twin(x2), flow.tensor(Y)).backward()
    assert out.grad_fn is not None
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    with flow.no_grad():
        assert compiled(x).grad_fn is None


def test_graph_data_parallel_on_global_tensors():
    """A Graph step on global tensors (data split over 4 devices, parameters broadcast)
    equals the single-device step; parameters and optimizer state stay global."""
    placement = flow.placement("cpu", ranks=[0, 1, 2, 3])
    local, dist = _model().eval(), _model().eval()
    dist.to_global(placement, flow.sbp.broadcast)
    ol = flow.optim.SGD(local.parameters(), lr=0.1, momentum=0.9)
    od = flow.optim.SGD(dist.parameters(), lr=0.1, momentum=0.9)
    sl, sd = TrainStep(local, ol), TrainStep(dist, od)
    x = flow.tensor(X).to_global(placement, flow.sbp.split(0))
    y = flow.tensor(Y).to_global(placement, flow.sbp.split(0))
    for _ in range(3):
        ll, ld = sl(flow.tensor(X), flow.tensor(Y)), sd(x, y)
    np.testing.assert_allclose(float(ld), float(ll), rtol=1e-5)
    _assert_same_params(local, dist)
    w = dist[0].weight
    assert w.is_global and w.sbp == (flow.sbp.broadcast,)
    buf = od.state[w]["momentum_buffer"]   # as eager: the grad of a data-parallel step is P
    assert buf.is_global and buf.sbp in ((flow.sbp.broadcast,), (flow.sbp.partial_sum,))
    np.testing.assert_allclose(buf.numpy(), ol.state[local[0].weight]["momentum_buffer"].numpy(),
                               rtol=1e-5, atol=1e-6)


def test_jit_of_a_module_and_of_a_bound_method():
    model = _model().eval()
    x = flow.tensor(X)
    want = model(x).detach().numpy()
    for compiled in (flow.jit(model), flow.jit(model.forward)):
        np.testing.assert_allclose(compiled(x).detach().numpy(), want, rtol=1e-6, atol=1e-6)
    with flow.no_grad():
        model[0].weight.mul_(0.0)           # state is read at call time, not frozen
        np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-6,
                                   atol=1e-6)


def test_graph_updates_batchnorm_running_stats_as_eager():
    def make():  # (the Linear layers of _model: their eager programs are compiled already)
        flow.manual_seed(0)
        m = nn.Sequential(nn.Linear(6, 12), nn.BatchNorm1d(12), nn.ReLU(), nn.Linear(12, 3))
        return m, flow.optim.SGD(m.parameters(), lr=0.1)

    (eager, oe), (compiled, oc) = make(), make()
    _eager_steps(eager, oe, 4)
    step = TrainStep(compiled, oc)
    for _ in range(4):
        step(flow.tensor(X), flow.tensor(Y))
    for (name, a), b in zip(eager.named_buffers(), compiled.buffers()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
    assert int(compiled[1].num_batches_tracked) == 4
    _assert_same_params(eager, compiled)
    eager.eval(), compiled.eval()      # eval mode (running stats) through flow.jit
    np.testing.assert_allclose(flow.jit(compiled)(flow.tensor(X)).detach().numpy(),
                               eager(flow.tensor(X)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_graph_optimizer_state_created_up_front_only_where_exact():
    """Adam's zero moments and undampened momentum buffers are made before the first trace
    (one trace); a dampened buffer starts as the first gradient, so it stays lazy and the
    second call traces again, saying why."""
    for opt_fn, traces in [(lambda ps: flow.optim.RMSprop(ps, lr=0.01, momentum=0.5,
                                                         centered=True), 1),
                           (lambda ps: flow.optim.SGD(ps, lr=0.1, momentum=0.9,
                                                      dampening=0.5), 2)]:
        eager, compiled = _model(), _model()
        oe, oc = opt_fn(eager.parameters()), opt_fn(compiled.parameters())
        flow.manual_seed(2)
        _eager_steps(eager, oe, 3)
        step = TrainStep(compiled, oc)
        flow.manual_seed(2)
        for _ in range(3):
            step(flow.tensor(X), flow.tensor(Y))
        _assert_same_params(eager, compiled)
        assert step.trace_count == traces, step.recompile_reasons
        if traces == 2:
            assert "optimizer" in step.recompile_reasons[0]


def test_graph_keeps_optimizer_state_of_parameters_it_no_longer_updates():
    m = _model()
    opt = flow.optim.Adam(m.parameters(), lr=0.01, weight_decay=1e-3)  # (the same program)
    orphan = nn.Parameter(flow.ones(2))
    opt.state[orphan] = {"exp_avg": flow.full((2,), 3.0)}   # e.g. left by a removed group
    step = TrainStep(m, opt)
    step(flow.tensor(X), flow.tensor(Y))
    step(flow.tensor(X), flow.tensor(Y))
    np.testing.assert_array_equal(opt.state[orphan]["exp_avg"].numpy(), [3.0, 3.0])


@pytest.mark.parametrize("make_opt, made_up_front", [
    (lambda ps: flow.optim.AdamW(ps, lr=0.01, weight_decay=0.1), True),
    (lambda ps: flow.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.5), False)],
    ids=["adamw", "sgd-dampening"])
def test_jit_step_makes_the_first_optimizer_state_up_front(make_opt, made_up_front):
    """The first call's trace finds the optimizer making its state (its first step): where
    ``_initial_state`` can, flow.jit makes that state up front and traces again before
    compiling, so the state is an input of the first executable and the second call does not
    compile the whole step again for it. PyTorch's rule holds: state only for the parameters
    that got a gradient (``unused`` has none); values as eager. A lazily made state (a
    dampened momentum buffer starts as the first gradient) still traces inside."""
    eager, compiled = _model(), _model()
    unused_e, unused_c = nn.Parameter(flow.ones(3)), nn.Parameter(flow.ones(3))
    oe = make_opt([*eager.parameters(), unused_e])
    oc = make_opt([*compiled.parameters(), unused_c])
    flow.manual_seed(2)
    _eager_steps(eager, oe, 3)

    @flow.jit
    def step(x, y):
        oc.zero_grad()
        loss = F.cross_entropy(compiled(x), y)
        loss.backward()
        oc.step()
        return loss

    flow.manual_seed(2)
    x, y = flow.tensor(X), flow.tensor(Y)
    with _compiles.compiled() as names:
        step(x, y)
    assert names.count("jit(pure)") == 1
    assert (unused_c not in oc.state) and (compiled[0].weight in oc.state)
    for _ in range(2):
        step(x, y)
    _assert_same_params(eager, compiled)
    assert set(map(id, oc.state)) == {id(q) for p, q in zip(oe.param_groups[0]["params"],
                                                            oc.param_groups[0]["params"])
                                      if p in oe.state}
    for p, q in zip(eager.parameters(), compiled.parameters()):
        for k, v in oe.state[p].items():
            np.testing.assert_allclose(oc.state[q][k].numpy(), v.numpy(), rtol=2e-5,
                                       atol=2e-5, err_msg=k)
    # (the second call traces again for the .grad tensors the first one left: with the
    # state made up front for nothing else, its program is the first one's, read back)
    assert step.trace_count == 2
    about_state = [r for r in step.recompile_reasons if "optimizer" in r]
    assert bool(about_state) != made_up_front, step.recompile_reasons


def test_jit_lower_of_a_first_step_leaves_no_optimizer_state():
    """``lower()`` of a training step whose first call would make the optimizer's state up
    front lowers the program that call compiles (the state an input) and leaves the optimizer
    as it found it: no step ran, so no state (PyTorch's rule); the call then makes it."""
    model = _model()
    opt = flow.optim.Adam(model.parameters(), lr=0.01)

    @flow.jit
    def step(x, y):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    x, y = flow.tensor(X), flow.tensor(Y)
    text = step.lower(x, y).as_text()
    assert opt.state == {} and step.trace_count == 1
    n_params = len(list(model.parameters()))
    # (the lowered program takes the state as inputs: 2 moments + a step count per
    # parameter besides the parameter itself)
    signature = text.split("func.func public @main(", 1)[1].split(") -> ", 1)[0]
    assert signature.count("%arg") >= 4 * n_params
    step(x, y)
    assert len(opt.state) == n_params and step.trace_count == 1, step.recompile_reasons
