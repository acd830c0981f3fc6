"""flow.optim: optimizers against PyTorch's formulas (NumPy) and torch.optim, schedulers,
state dicts, gradient clipping, and a small model that learns."""

import math

import jax
import numpy as np
import pytest

import jflow as flow
from jflow import nn, optim
from jflow.nn.utils import clip_grad_norm_, clip_grad_value_
from jflow.optim import lr_scheduler

STEPS = 6


def _grads(seed, shape, n=STEPS):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for _ in range(n)]


def _run_jflow(make_opt, p0, grads):
    p = nn.Parameter(flow.tensor(p0, dtype=flow.float64))
    opt = make_opt([p])
    out = []
    for g in grads:
        p.grad = flow.tensor(g, dtype=flow.float64)
        opt.step()
        out.append(p.detach().numpy().copy())
    return p, opt, out


# -- reference formulas (PyTorch's documented algorithms) -----------------------------------
def ref_sgd(p, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
            maximize=False):
    p, buf, out = p.copy(), None, []
    for g in grads:
        g = -g if maximize else g
        g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
        out.append(p)
    return out


def ref_adam(p, grads, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
             decoupled=False):
    b1, b2 = betas
    p, m, v, vmax, out = p.copy(), 0 * p, 0 * p, 0 * p, []
    for t, g in enumerate(grads, 1):
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        if amsgrad:
            vmax = np.maximum(vmax, v)
        denom = np.sqrt(vmax if amsgrad else v) / math.sqrt(1 - b2 ** t) + eps
        p = p - lr / (1 - b1 ** t) * m / denom
        out.append(p)
    return out


def ref_rmsprop(p, grads, lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
                centered=False):
    p, sq, ga, buf, out = p.copy(), 0 * p, 0 * p, 0 * p, []
    for g in grads:
        g = g + weight_decay * p
        sq = alpha * sq + (1 - alpha) * g * g
        if centered:
            ga = alpha * ga + (1 - alpha) * g
            avg = np.sqrt(sq - ga * ga) + eps
        else:
            avg = np.sqrt(sq) + eps
        if momentum > 0:
            buf = momentum * buf + g / avg
            p = p - lr * buf
        else:
            p = p - lr * g / avg
        out.append(p)
    return out


CASES = [
    ("SGD", dict(lr=0.1), ref_sgd),
    ("SGD", dict(lr=0.1, momentum=0.9), ref_sgd),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01), ref_sgd),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1), ref_sgd),
    ("SGD", dict(lr=0.05, momentum=0.8, maximize=True), ref_sgd),
    ("Adam", dict(lr=0.01), ref_adam),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1), ref_adam),
    ("Adam", dict(lr=0.02, amsgrad=True), ref_adam),
    ("AdamW", dict(lr=0.01), lambda p, g, **k: ref_adam(p, g, weight_decay=0.01,
                                                        decoupled=True, **k)),
    ("AdamW", dict(lr=0.01, weight_decay=0.2, amsgrad=True),
     lambda p, g, **k: ref_adam(p, g, decoupled=True, **k)),
    ("RMSprop", dict(lr=0.01), ref_rmsprop),
    ("RMSprop", dict(lr=0.01, momentum=0.9, weight_decay=0.1), ref_rmsprop),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, momentum=0.5), ref_rmsprop),
]


@pytest.mark.parametrize("name, kw, ref", CASES)
def test_optimizer_matches_formula(name, kw, ref):
    p0 = np.random.default_rng(0).standard_normal((3, 4))
    grads = _grads(1, (3, 4))
    p, _, got = _run_jflow(lambda ps: getattr(optim, name)(ps, **kw), p0, grads)
    want = ref(p0, grads, **kw)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    assert isinstance(p, nn.Parameter) and p.is_leaf and p.requires_grad


@pytest.mark.parametrize("name, kw, ref", CASES)
def test_optimizer_matches_torch(name, kw, ref):
    torch = pytest.importorskip("torch")
    p0 = np.random.default_rng(2).standard_normal((5,))
    grads = _grads(3, (5,))
    _, _, got = _run_jflow(lambda ps: getattr(optim, name)(ps, **kw), p0, grads)
    tp = torch.nn.Parameter(torch.tensor(p0))
    topt = getattr(torch.optim, name)([tp], **kw)
    for a, g in zip(got, grads):
        tp.grad = torch.tensor(g)
        topt.step()
        np.testing.assert_allclose(a, tp.detach().numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_with_a_learning_rate_that_changes_between_steps(name):
    """A scheduler's learning rate: new values, values seen before (a cached device scalar),
    one group holding float32 and float64 parameters
    (one learning-rate tensor per dtype) — every step equals the formula with that step's
    lr."""
    rng = np.random.default_rng(4)
    p0s = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    dts = [flow.float32, flow.float64]
    ps = [nn.Parameter(flow.tensor(p0, dtype=dt)) for p0, dt in zip(p0s, dts)]
    opt = getattr(optim, name)(ps, lr=0.01)
    lrs = [0.01, 0.01, 0.005, 0.005, 0.002, 0.03, 0.005]
    wd = 0.01 if name == "AdamW" else 0.0
    ref = [dict(p=p0.copy(), m=0 * p0, v=0 * p0) for p0 in p0s]
    b1, b2, eps = 0.9, 0.999, 1e-8
    for t, lr in enumerate(lrs, 1):
        opt.param_groups[0]["lr"] = lr
        grads = [rng.standard_normal(p0.shape) for p0 in p0s]
        for p, g, dt in zip(ps, grads, dts):
            p.grad = flow.tensor(g, dtype=dt)
        opt.step()
        for r, g, p, dt in zip(ref, grads, ps, dts):
            r["p"] = r["p"] * (1 - lr * wd)
            r["m"] = b1 * r["m"] + (1 - b1) * g
            r["v"] = b2 * r["v"] + (1 - b2) * g * g
            denom = np.sqrt(r["v"]) / math.sqrt(1 - b2 ** t) + eps
            r["p"] = r["p"] - lr / (1 - b1 ** t) * r["m"] / denom
            tol = 1e-5 if dt == flow.float32 else 1e-12
            np.testing.assert_allclose(p.detach().numpy(), r["p"], rtol=tol, atol=tol)


def test_adam_compiles_its_update_once_per_shape():
    """A constant learning rate reaches the update as the same kind of value every step (a
    device array, never host data one step and an array the next): steps 2 and 3 of an eager
    Adam loop compile nothing (the update's executable would miss jit's fast path and, its
    lowering released, compile again per shape)."""
    ps = [nn.Parameter(flow.tensor(np.full((3, 7), 0.5, np.float32))),
          nn.Parameter(flow.tensor(np.full(7, 0.25, np.float32)))]
    opt = optim.Adam(ps, lr=0.0123)
    compiles: list[str] = []

    def count(event: str, duration: float, **_: object) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(event)

    for step in range(3):
        if step == 1:
            jax.monitoring.register_event_duration_secs_listener(count)
        for p in ps:
            p.grad = flow.tensor(np.full(p.shape, 0.1 * (step + 1), np.float32))
        opt.step()
    jax.monitoring.unregister_event_duration_listener(count)
    assert compiles == []
    p, m, v = 0.25, 0.0, 0.0  # (the update's formula on one element: every step ran it)
    for t, g in enumerate((0.1, 0.2, 0.3), 1):
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        p -= 0.0123 / (1 - 0.9 ** t) * m / (math.sqrt(v) / math.sqrt(1 - 0.999 ** t) + 1e-8)
    np.testing.assert_allclose(ps[1].detach().numpy(), np.full(7, p), rtol=1e-5)


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_adam_with_a_scheduler_matches_torch(name, seed):
    """Random parameters and gradients, float32 and float64 parameters in one group, a
    learning rate drawn anew each step (some values repeated): every step equals
    torch.optim on the same inputs."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10 + seed)
    p0s = [rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(5)]
    ps = [nn.Parameter(flow.tensor(p0)) for p0 in p0s]
    tps = [torch.nn.Parameter(torch.tensor(p0)) for p0 in p0s]
    kw = dict(lr=0.01, betas=(0.85, 0.99), weight_decay=0.05)
    opt, topt = getattr(optim, name)(ps, **kw), getattr(torch.optim, name)(tps, **kw)
    pool = rng.uniform(1e-3, 5e-2, size=4)
    for _ in range(6):
        lr = float(rng.choice(pool))
        opt.param_groups[0]["lr"] = topt.param_groups[0]["lr"] = lr
        for p, tp, p0 in zip(ps, tps, p0s):
            g = rng.standard_normal(p0.shape).astype(p0.dtype)
            p.grad, tp.grad = flow.tensor(g), torch.tensor(g)
        opt.step()
        topt.step()
        for p, tp in zip(ps, tps):
            tol = 1e-6 if p.dtype == flow.float32 else 1e-12
            np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=tol, atol=tol)


def test_parameters_stay_the_same_objects_and_none_grads_skipped():
    lin = nn.Linear(3, 2)
    w, b = lin.weight, lin.bias
    opt = optim.Adam(lin.parameters(), lr=0.1)
    lin(flow.randn(4, 3)).sum().backward()
    b.grad = None
    b0 = b.detach().numpy().copy()
    opt.step()
    assert lin.weight is w and lin.bias is b and w.is_leaf and w.requires_grad
    np.testing.assert_array_equal(b.detach().numpy(), b0)
    assert b not in opt.state


def test_param_groups_and_zero_grad():
    a, b = nn.Parameter(flow.ones(2)), nn.Parameter(flow.ones(2))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 1.0}], lr=0.1, momentum=0.0)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 1.0
    (a.sum() + b.sum()).backward()
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.9, 0.9])
    np.testing.assert_allclose(b.detach().numpy(), [0.0, 0.0])
    opt.zero_grad(set_to_none=False)
    assert float(a.grad.sum()) == 0
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="required optimization parameter lr"):
        optim.SGD([a])
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(ValueError, match="Nesterov"):
        optim.SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.Adam([a], lr=-1)


def test_closure():
    p = nn.Parameter(flow.tensor([3.0]))
    opt = optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with flow.no_grad():  # the closure still records (grad is enabled inside step)
        loss = opt.step(closure)
    assert float(loss) == 9.0
    np.testing.assert_allclose(p.detach().numpy(), [1.5])


@pytest.mark.parametrize("name, kw", [("SGD", dict(lr=0.1, momentum=0.9)),
                                      ("Adam", dict(lr=0.01, amsgrad=True)),
                                      ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5))])
def test_state_dict_resumes_identically(name, kw):
    p0 = np.random.default_rng(4).standard_normal((4,))
    grads = _grads(5, (4,), 6)
    p, opt, full = _run_jflow(lambda ps: getattr(optim, name)(ps, **kw), p0, grads)
    q, opt2, _ = _run_jflow(lambda ps: getattr(optim, name)(ps, **kw), p0, grads[:3])
    sd = opt2.state_dict()
    assert sd["param_groups"][0]["params"] == [0] and set(sd["state"]) == {0}
    r = nn.Parameter(q.detach().clone())
    opt3 = getattr(optim, name)([r], **kw)
    opt3.load_state_dict(sd)
    for g in grads[3:]:
        r.grad = flow.tensor(g, dtype=flow.float64)
        opt3.step()
    np.testing.assert_allclose(r.detach().numpy(), full[-1], rtol=1e-12)
    # loading copies: stepping the new optimizer leaves the saved state alone
    assert sd["state"][0] is not opt3.state[r]


def test_load_state_dict_errors():
    a, b = nn.Parameter(flow.ones(2)), nn.Parameter(flow.ones(2))
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD([a], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)


def test_tiny_mlp_learns():
    flow.manual_seed(0)
    x = flow.randn(64, 2)
    y = (x[:, 0:1] * x[:, 1:2] > 0).float()
    for make in (lambda ps: optim.Adam(ps, lr=0.05), lambda ps: optim.SGD(ps, lr=0.5,
                                                                          momentum=0.9)):
        model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1), nn.Sigmoid())
        opt = make(model.parameters())
        losses = []
        for _ in range(60):
            opt.zero_grad()
            out = model(x)
            loss = -(y * flow.log(out + 1e-7) + (1 - y) * flow.log(1 - out + 1e-7)).mean()
            loss.backward()
            opt.step()
            losses.append(float(loss))
        assert losses[-1] < 0.6 * losses[0], losses[::10]


# -- schedulers --------------------------------------------------------------------------------
SCHEDULERS = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5], gamma=0.1)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=10, eta_min=0.01)),
    ("LinearLR", dict(start_factor=0.1, total_iters=4)),
    ("ConstantLR", dict(factor=0.5, total_iters=3)),
    ("LambdaLR", dict(lr_lambda=lambda e: 1 / (e + 1))),
]


@pytest.mark.parametrize("name, kw", SCHEDULERS)
def test_schedulers_match_torch(name, kw):
    torch = pytest.importorskip("torch")
    p = nn.Parameter(flow.ones(1))
    opt = optim.SGD([p], lr=0.1)
    sched = getattr(lr_scheduler, name)(opt, **kw)
    tp = torch.nn.Parameter(torch.ones(1))
    topt = torch.optim.SGD([tp], lr=0.1)
    tsched = getattr(torch.optim.lr_scheduler, name)(topt, **kw)
    for _ in range(12):
        np.testing.assert_allclose(sched.get_last_lr(), tsched.get_last_lr(), rtol=1e-12)
        assert opt.param_groups[0]["lr"] == sched.get_last_lr()[0]
        opt.step()
        sched.step()
        topt.step()
        tsched.step()


def test_scheduler_closed_forms_and_state_dict():
    p = nn.Parameter(flow.ones(1))
    opt = optim.SGD([p], lr=1.0)
    s = lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    lrs = [s.get_last_lr()[0]]
    for _ in range(4):
        s.step()
        lrs.append(s.get_last_lr()[0])
    np.testing.assert_allclose(lrs, [(1 + math.cos(math.pi * t / 4)) / 2 for t in range(5)])
    sd = s.state_dict()
    assert sd["last_epoch"] == 4 and "optimizer" not in sd
    s2 = lr_scheduler.CosineAnnealingLR(optim.SGD([p], lr=1.0), T_max=4)
    s2.load_state_dict(sd)
    assert s2.last_epoch == 4


def test_warmup_then_cosine():
    p = nn.Parameter(flow.ones(1))
    opt = optim.SGD([p], lr=1.0)
    warm = lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=3)
    cos = lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    s = lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[3])
    lrs = []
    for _ in range(7):
        lrs.append(opt.param_groups[0]["lr"])
        s.step()
    np.testing.assert_allclose(lrs[:3], [0.25, 0.5, 0.75])
    np.testing.assert_allclose(lrs[3:], [(1 + math.cos(math.pi * t / 4)) / 2 for t in range(4)])
    torch = pytest.importorskip("torch")
    topt = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=1.0)
    tw = torch.optim.lr_scheduler.LinearLR(topt, start_factor=0.25, total_iters=3)
    tc = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=4)
    ts = torch.optim.lr_scheduler.SequentialLR(topt, [tw, tc], milestones=[3])
    tlrs = []
    for _ in range(7):
        tlrs.append(topt.param_groups[0]["lr"])
        topt.step()
        ts.step()
    np.testing.assert_allclose(lrs, tlrs, rtol=1e-12)


# -- gradient clipping ---------------------------------------------------------------------------
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_clip_grad_norm(norm_type):
    rng = np.random.default_rng(0)
    ps = [nn.Parameter(flow.zeros(3, dtype=flow.float64)),
          nn.Parameter(flow.zeros(2, 2, dtype=flow.float64))]
    gs = [rng.standard_normal(3) * 5, rng.standard_normal((2, 2)) * 5]
    for p, g in zip(ps, gs):
        p.grad = flow.tensor(g)
    flat = np.concatenate([g.ravel() for g in gs])
    total = np.abs(flat).max() if math.isinf(norm_type) else np.linalg.norm(flat, norm_type)
    out = clip_grad_norm_(ps, 1.0, norm_type)
    np.testing.assert_allclose(float(out), total, rtol=1e-12)
    coef = min(1.0, 1.0 / (total + 1e-6))
    for p, g in zip(ps, gs):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-12)
    # below the threshold: untouched
    clip_grad_norm_(ps, 1e6, norm_type)
    for p, g in zip(ps, gs):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-12)


def test_clip_grad_norm_nonfinite_and_value():
    p = nn.Parameter(flow.zeros(2))
    p.grad = flow.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    p.grad = flow.tensor([-3.0, 0.5])
    clip_grad_value_(p, 1.0)
    np.testing.assert_array_equal(p.grad.numpy(), [-1.0, 0.5])


def test_optimizer_on_global_parameters():
    placement = flow.placement("cpu", [0, 1, 2, 3])
    flow.manual_seed(0)
    local = nn.Linear(4, 8)
    glob = nn.Linear(4, 8)
    glob.load_state_dict(local.state_dict())
    glob.to_global(placement, flow.sbp.split(0))
    x = flow.randn(16, 4)
    for mod, inp in ((local, x), (glob, x.to_global(placement, flow.sbp.broadcast))):
        opt = optim.Adam(mod.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            (mod(inp) ** 2).mean().backward()
            clip_grad_norm_(mod.parameters(), 1.0)
            opt.step()
    assert glob.weight.is_global and glob.weight.sbp == (flow.sbp.split(0),)
    np.testing.assert_allclose(glob.weight.detach().numpy(), local.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def _bf16_values(a):
    """``a`` rounded to bfloat16, as float64 (what the NumPy references start from)."""
    return flow.tensor(np.asarray(a, np.float32)).bfloat16().double().numpy()


@pytest.mark.parametrize("name", ["adam", "adamw", "amsgrad", "rmsprop"])
def test_low_precision_parameters_follow_the_reference(name):
    """bfloat16 parameters update as the float64 reference (to bfloat16's precision): the
    scalar state (step count, bias corrections) is float32 (before: bfloat16, where Adam's
    beta2 = 0.999 is 1.0, the bias correction 0, and Adam / AdamW never moved a parameter)."""
    lr = 1e-2
    make, ref = {
        "adam": (lambda ps: optim.Adam(ps, lr=lr), lambda p, g: ref_adam(p, g, lr)),
        "adamw": (lambda ps: optim.AdamW(ps, lr=lr),
                  lambda p, g: ref_adam(p, g, lr, weight_decay=1e-2, decoupled=True)),
        "amsgrad": (lambda ps: optim.Adam(ps, lr=lr, amsgrad=True),
                    lambda p, g: ref_adam(p, g, lr, amsgrad=True)),
        "rmsprop": (lambda ps: optim.RMSprop(ps, lr=lr), lambda p, g: ref_rmsprop(p, g, lr)),
    }[name]
    p0 = _bf16_values(np.random.default_rng(4).standard_normal(32) * 0.3)
    grads = [_bf16_values(g) for g in _grads(5, (32,), 4)]
    p = nn.Parameter(flow.tensor(p0, dtype=flow.bfloat16))
    opt = make([p])
    for g in grads:
        p.grad = flow.tensor(g, dtype=flow.bfloat16)
        opt.step()
    np.testing.assert_allclose(p.double().detach().numpy(), ref(p0, grads)[-1], atol=8e-3)
    try:  # (and as PyTorch's bfloat16 run, when it is installed)
        import torch
    except ImportError:
        return
    tp = torch.nn.Parameter(torch.tensor(p0).bfloat16())
    topt = {
        "adam": lambda: torch.optim.Adam([tp], lr=lr),
        "adamw": lambda: torch.optim.AdamW([tp], lr=lr),
        "amsgrad": lambda: torch.optim.Adam([tp], lr=lr, amsgrad=True),
        "rmsprop": lambda: torch.optim.RMSprop([tp], lr=lr)}[name]()
    for g in grads:
        tp.grad = torch.tensor(g).bfloat16()
        topt.step()
    np.testing.assert_allclose(p.double().detach().numpy(), tp.detach().double().numpy(), atol=8e-3)


def test_a_low_precision_parameter_counts_its_steps_exactly():
    """(A bfloat16 step count stopped at 256: 256 + 1 is 256 in bfloat16.)"""
    p = nn.Parameter(flow.zeros(2, dtype=flow.bfloat16))
    opt = optim.Adam([p], lr=1e-3)
    for _ in range(300):
        p.grad = flow.ones(2, dtype=flow.bfloat16)
        opt.step()
    assert opt.state[p]["step"].item() == 300


def test_a_low_precision_step_count_from_an_older_checkpoint_is_widened():
    """A state dict whose step count is bfloat16 (as jflow saved it before) loads as float32:
    the count goes on past 256 and Adam moves the parameter."""
    p = nn.Parameter(flow.zeros(2, dtype=flow.bfloat16))
    opt = optim.Adam([p], lr=1e-2)
    p.grad = flow.ones(2, dtype=flow.bfloat16)
    opt.step()
    sd = opt.state_dict()
    sd["state"][0]["step"] = flow.tensor(256.0, dtype=flow.bfloat16)
    opt.load_state_dict(sd)
    assert opt.state[p]["step"].dtype == flow.float32
    before = p.float().detach().numpy().copy()
    opt.step()
    assert opt.state[p]["step"].item() == 257 and (p.float().detach().numpy() < before).all()


def test_an_eager_step_that_repeats_runs_as_one_executable(monkeypatch):
    """From its first step an eager AdamW step is one jitted call of the traced step (no
    per-parameter adam_update dispatch), with the formula's numbers; with the fusion off
    every step runs op by op, with the same numbers."""
    from jflow.lazy_mode import optimizer_step
    from jflow.optim import adam

    p0 = np.random.default_rng(4).standard_normal((3, 4))
    grads = _grads(5, (3, 4), n=7)
    want = ref_adam(p0, grads, lr=0.01, weight_decay=0.01, decoupled=True)
    real = adam.Adam._fused_update  # (one call per parameter update, donating or not)
    calls = []

    def counted(*args, **kw):
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(adam.Adam, "_fused_update", counted)
    for fused in (True, False):
        old = flow.config.set_fused_optimizer_step(fused)
        try:
            calls.clear()
            p, opt, got = _run_jflow(lambda ps: optim.AdamW(ps, lr=0.01), p0, grads)
        finally:
            flow.config.set_fused_optimizer_step(old)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        assert optimizer_step.traced_steps(opt) == (1 if fused else 0)
        # the optimizer's first structure runs fused from step 1 (its state made first): the
        # trace runs the step's code once on tracers, then every step is one call
        assert len(calls) == (1 if fused else len(grads))
    with pytest.raises(TypeError, match="set_fused_optimizer_step: flag must be a bool or None"):
        flow.config.set_fused_optimizer_step(1)


def test_by_default_only_steps_of_several_ops_per_parameter_fuse():
    """Default (None): Adam / AdamW, whose update is one ``adam_update`` op per parameter,
    step op by op, and compile nothing ahead; AMSGrad (several ops) and SGD fuse; True fuses
    AdamW too. Values: the formulas'."""
    from jflow.lazy_mode import optimizer_step

    assert flow.config.set_fused_optimizer_step(None) is None  # (the default)
    p0 = np.random.default_rng(4).standard_normal((3, 4))
    grads = _grads(5, (3, 4), n=4)
    adamw = ref_adam(p0, grads, lr=0.01, weight_decay=0.01, decoupled=True)
    cases = [(lambda ps: optim.AdamW(ps, lr=0.01), None, 0, adamw),
             (lambda ps: optim.Adam(ps, lr=0.01, amsgrad=True), None, 1,
              ref_adam(p0, grads, lr=0.01, amsgrad=True)),
             (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9), None, 1,
              ref_sgd(p0, grads, lr=0.1, momentum=0.9)),
             (lambda ps: optim.AdamW(ps, lr=0.01), True, 1, adamw)]
    for make, mode, traced, want in cases:
        old = flow.config.set_fused_optimizer_step(mode)
        try:
            p, opt, got = _run_jflow(make, p0, grads)
        finally:
            flow.config.set_fused_optimizer_step(old)
        assert optimizer_step.traced_steps(opt) == traced, (opt, mode)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    (w, b, u), opt, _ = _ahead_case()  # (AdamW by default: nothing compiled ahead)
    _ahead_loss(w, b).backward()
    assert opt not in optimizer_step._AHEAD


def test_a_fused_step_writes_into_the_buffers_it_updates_unless_they_are_shared():
    """The fused eager step donates the parameters and state it updates: the new values
    take the old buffers (same addresses). A parameter whose array another tensor shares
    (``copy.deepcopy`` shares immutable arrays: an EMA model's copy) is not given up: the
    copy keeps its values, readable, and the step still follows SGD's formula."""
    import copy

    rng = np.random.default_rng(8)
    p0, grads = rng.standard_normal((6, 5)), _grads(9, (6, 5), n=4)

    def sgd_ref(steps):
        p, buf = p0.copy(), None
        for g in grads[:steps]:
            buf = g if buf is None else 0.9 * buf + g
            p = p - 0.1 * buf
        return p

    p = nn.Parameter(flow.tensor(p0))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    for g in grads[:2]:
        p.grad = flow.tensor(g)
        opt.step()
    addr = p._meta.unsafe_buffer_pointer()
    buf_addr = opt.state[p]["momentum_buffer"]._meta.unsafe_buffer_pointer()
    p.grad = flow.tensor(grads[2])
    opt.step()
    assert p._meta.unsafe_buffer_pointer() == addr  # (donated: updated in its own buffer)
    assert opt.state[p]["momentum_buffer"]._meta.unsafe_buffer_pointer() == buf_addr
    np.testing.assert_allclose(p.detach().numpy(), sgd_ref(3), rtol=1e-12)
    ema = copy.deepcopy(p)  # (shares p's array)
    before = ema.detach().numpy().copy()
    p.grad = flow.tensor(grads[3])
    opt.step()
    np.testing.assert_array_equal(ema.detach().numpy(), before)
    np.testing.assert_allclose(p.detach().numpy(), sgd_ref(4), rtol=1e-12)


def test_an_eager_adam_update_writes_into_its_buffers_unless_they_are_shared():
    """Op by op (Adam / AdamW's default), each parameter's adam_update donates the
    parameter and its moments when nothing else holds their arrays: the new values take the
    old buffers (their addresses; without donation the new buffers are allocated while the
    old ones are live, so they cannot coincide). A parameter or moment whose array something
    else holds (a deep copy shares it, the user kept the array) is not given up: the holder
    keeps the old values, readable, and every step follows AdamW's formula."""
    import copy

    rng = np.random.default_rng(31)
    p0, grads = rng.standard_normal((5, 3)), _grads(32, (5, 3), n=5)
    want = ref_adam(p0, grads, lr=0.02, weight_decay=0.1, decoupled=True)
    p = nn.Parameter(flow.tensor(p0))
    opt = optim.AdamW([p], lr=0.02, weight_decay=0.1)
    assert flow.config.set_fused_optimizer_step(None) is None  # (the default: op by op)

    def arrays():
        s = opt.state[p]
        return [p._meta, s["exp_avg"]._meta, s["exp_avg_sq"]._meta]

    for i, g in enumerate(grads):
        p.grad = flow.tensor(g)
        if i >= 1:  # (step 1 makes the state; no reference to the arrays is kept here)
            addrs = [a.unsafe_buffer_pointer() for a in arrays()]
        if i == 3:
            ema = copy.deepcopy(p)  # shares p's array
            kept = opt.state[p]["exp_avg_sq"]._meta  # the user's own reference to a moment
            ema_before, kept_before = ema.detach().numpy().copy(), np.asarray(kept).copy()
        opt.step()
        np.testing.assert_allclose(p.detach().numpy(), want[i], rtol=1e-12, atol=1e-14)
        if i in (1, 2, 4):  # donated: updated in place
            assert [a.unsafe_buffer_pointer() for a in arrays()] == addrs
        elif i == 3:  # shared: nothing given up, the holders read the old values
            assert [a.unsafe_buffer_pointer() for a in arrays()] != addrs
            np.testing.assert_array_equal(ema.detach().numpy(), ema_before)
            np.testing.assert_array_equal(np.asarray(kept), kept_before)
            del kept


def test_donatable_takes_only_plain_local_values_held_once():
    """``optimizer_step.donatable``: the arrays for plain, local, concrete tensors whose
    donated arrays their tensors alone hold; None for a view, a shared array, a value held
    elsewhere, a traced value and while a lazy segment records."""
    from jflow.lazy_mode.optimizer_step import donatable

    a, b, k = flow.ones(3), flow.zeros(3), flow.tensor(2.0)
    vals = donatable((a, b), (k,))
    assert vals is not None and vals[0] is a._meta and vals[2] is k._meta
    del vals
    assert donatable((a[:2],), ()) is None  # a view
    held = b._meta
    assert donatable((a, b), (k,)) is None  # b's array held here too
    del held
    assert donatable((a, b), (k,)) is not None
    c = flow.utils.from_jax(a._meta)
    assert donatable((a,), ()) is None and donatable((c,), ()) is None  # one array, two tensors
    del c
    with flow.lazy():
        assert donatable((a,), ()) is None
    seen = []
    jax.jit(lambda x: seen.append(donatable((flow.utils.from_jax(x),), ())) or x)(1.0)
    assert seen == [None]


def test_donating_executables_are_kept_per_attrs_and_only_for_fixed_inputs():
    """``dispatch.donating_executable``: one executable per op, attrs and donated positions
    (the same object again); an op with optional inputs (linear's bias) has none: a
    ValueError naming it."""
    from jflow.dispatch import donating_executable
    from jflow.ops import get

    adam = get("adam_update")
    a = donating_executable(adam, (0, 2, 3), beta1=0.9, weight_decay=0.1, decoupled=True)
    assert donating_executable(adam, (0, 2, 3), beta1=0.9, weight_decay=0.1,
                               decoupled=True) is a
    assert donating_executable(adam, (0,), beta1=0.9, weight_decay=0.1, decoupled=True) is not a
    with pytest.raises(ValueError, match="op 'linear' has optional or variadic inputs"):
        donating_executable(get("linear"), (0,))


@pytest.fixture
def fused_always():
    """Every optimizer's eager step fused, Adam's too (by default Adam / AdamW, one op per
    parameter already, step op by op: optimizer_step.fuses)."""
    old = flow.config.set_fused_optimizer_step(True)
    yield
    flow.config.set_fused_optimizer_step(old)


def test_the_first_fused_step_makes_state_only_where_pytorch_does(monkeypatch,
                                                                 fused_always):
    """The first step runs fused with its state made first, for the parameters with a
    gradient only (PyTorch's state and state_dict); a later, new structure (another parameter
    gets a gradient) runs op by op until its EAGER_AFTER-th sighting, so a loop whose
    structure keeps changing does not compile a program per step. Numbers: the formula's."""
    from jflow.lazy_mode import optimizer_step
    from jflow.optim import adam

    rng = np.random.default_rng(11)
    a0, b0 = rng.standard_normal((2, 5)), rng.standard_normal(3)
    ga, gb = _grads(12, (2, 5), n=5), _grads(13, (3,), n=5)
    real, calls = adam.Adam._fused_update, []  # (one call per parameter update)
    monkeypatch.setattr(adam.Adam, "_fused_update",
                        lambda *x, **k: calls.append(1) or real(*x, **k))
    a = nn.Parameter(flow.tensor(a0, dtype=flow.float64))
    b = nn.Parameter(flow.tensor(b0, dtype=flow.float64))
    opt = optim.Adam([a, b], lr=0.01)
    a.grad = flow.tensor(ga[0], dtype=flow.float64)
    opt.step()
    assert list(opt.state) == [a] and calls == [1]  # (the trace's one run, on tracers)
    assert list(opt.state_dict()["state"]) == [0]
    calls.clear()
    for i in range(1, 5):  # b gets gradients from step 2: a new structure
        a.grad = flow.tensor(ga[i], dtype=flow.float64)
        b.grad = flow.tensor(gb[i - 1], dtype=flow.float64)
        opt.step()
    # op by op (two parameters each): step 2 (b's state made: a structure of its own) and
    # steps 3-4 (the new structure's first two sightings); the trace at step 5 (two)
    assert len(calls) == 2 + 2 * (optimizer_step.EAGER_AFTER - 1) + 2
    assert optimizer_step.traced_steps(opt) == 2
    np.testing.assert_allclose(a.detach().numpy(), ref_adam(a0, ga, lr=0.01)[-1], rtol=1e-10)
    np.testing.assert_allclose(b.detach().numpy(), ref_adam(b0, gb[:4], lr=0.01)[-1],
                               rtol=1e-10)


# -- the first fused step, compiled while the first backward does ----------------------------
_X = np.random.default_rng(21).standard_normal((5, 4))


def _ahead_case(dtype=flow.float64, make=None):
    """w (4, 3), b (3,) and u (2,), which the loss never uses; an AdamW over the three."""
    rng = np.random.default_rng(22)
    w0, b0, u0 = rng.standard_normal((4, 3)), rng.standard_normal(3), rng.standard_normal(2)
    w, b, u = (nn.Parameter(flow.tensor(a, dtype=dtype)) for a in (w0, b0, u0))
    make = make or (lambda ps: optim.AdamW(ps, lr=0.05, weight_decay=0.1))
    return (w, b, u), make([w, b, u]), (w0, b0)


def _ahead_loss(w, b):
    return ((flow.tensor(_X, dtype=w.dtype) @ w + b) ** 2).sum()


def _ref_adamw_on_loss(w, b, steps, lr=0.05, wd=0.1, b1=0.9, b2=0.999, eps=1e-8):
    """NumPy AdamW on sum((X w + b)^2): the gradients at each step's own parameters."""
    ps, ms, vs = [w.copy(), b.copy()], [0 * w, 0 * b], [0 * w, 0 * b]
    for t in range(1, steps + 1):
        r = 2 * (_X @ ps[0] + ps[1])
        for i, g in enumerate((_X.T @ r, r.sum(0))):
            ps[i] = ps[i] * (1 - lr * wd)
            ms[i] = b1 * ms[i] + (1 - b1) * g
            vs[i] = b2 * vs[i] + (1 - b2) * g * g
            denom = np.sqrt(vs[i]) / math.sqrt(1 - b2 ** t) + eps
            ps[i] = ps[i] - lr / (1 - b1 ** t) * ms[i] / denom
    return ps


def _traced_hit(opt):
    from jflow.lazy_mode import optimizer_step

    (hit,) = [v for v in optimizer_step._STEPS[opt].values()
              if v.__class__ is optimizer_step._Traced]
    return hit


def test_the_first_step_compiles_while_the_first_backward_does(fused_always):
    """The first backward reaching a new optimizer's parameters starts the compile of its
    first fused step (the leaves it reaches: w and b, not the unused u) and leaves no trace
    of it: no state (PyTorch makes it at the step), the gradients the backward's. The step
    then runs that executable, with the state made for it; the values follow AdamW's formula
    over 3 steps."""
    from jflow.lazy_mode import optimizer_step

    (w, b, u), opt, (w0, b0) = _ahead_case()
    _ahead_loss(w, b).backward()
    key, traced, made = optimizer_step._AHEAD[opt]
    assert traced.ahead is not None and opt.state == {} and u.grad is None
    assert list(made) == [w, b]  # (the state the step will take, made for the trace)
    r = 2 * (_X @ w0 + b0)
    np.testing.assert_allclose(w.grad.numpy(), _X.T @ r, rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), r.sum(0), rtol=1e-12)
    opt.step()
    assert opt not in optimizer_step._AHEAD and list(opt.state) == [w, b]
    assert opt.state[w] is made[w] and opt.state[b] is made[b]
    assert _traced_hit(opt) is traced and isinstance(traced.ahead, jax.stages.Compiled)
    for _ in range(2):
        opt.zero_grad()
        _ahead_loss(w, b).backward()
        opt.step()
    assert isinstance(traced.ahead, jax.stages.Compiled)  # (every step: the one executable)
    want_w, want_b = _ref_adamw_on_loss(w0, b0, 3)
    np.testing.assert_allclose(w.detach().numpy(), want_w, rtol=1e-10)
    np.testing.assert_allclose(b.detach().numpy(), want_b, rtol=1e-10)
    assert u.grad is None and u not in opt.state


def test_a_first_step_that_differs_from_the_one_compiled_ahead_runs_as_before(
        fused_always):
    """A gradient dropped between the backward and the step (another structure), or an
    executable compiled ahead that cannot run (a failed compile): the step goes on through
    jit as without it, with the right values and PyTorch's state."""
    from concurrent.futures import Future

    from jflow.lazy_mode import optimizer_step

    (w, b, u), opt, (w0, b0) = _ahead_case()
    _ahead_loss(w, b).backward()
    b.grad = None
    made = optimizer_step._AHEAD[opt][2]
    opt.step()
    hit = _traced_hit(opt)
    assert hit.ahead is None and list(opt.state) == [w] and opt not in optimizer_step._AHEAD
    assert opt.state[w] is not made[w]  # (made afresh: the structure compiled ahead differs)
    r = 2 * (_X @ w0 + b0)
    np.testing.assert_allclose(
        w.detach().numpy(), ref_adam(w0, [_X.T @ r], lr=0.05, weight_decay=0.1,
                                     decoupled=True)[-1], rtol=1e-10)
    np.testing.assert_allclose(b.detach().numpy(), b0, rtol=0)

    (w, b, u), opt, (w0, b0) = _ahead_case()
    _ahead_loss(w, b).backward()
    failed = Future()
    failed.set_exception(RuntimeError("compile failed"))
    optimizer_step._AHEAD[opt][1].ahead = failed
    opt.step()
    assert _traced_hit(opt).ahead is None
    want_w, want_b = _ref_adamw_on_loss(w0, b0, 1)
    np.testing.assert_allclose(w.detach().numpy(), want_w, rtol=1e-10)
    np.testing.assert_allclose(b.detach().numpy(), want_b, rtol=1e-10)


def test_nothing_compiles_ahead_where_no_eager_step_follows():
    """autograd.grad (no .grad written), lazy mode, the fused step switched off, an
    optimizer whose first state is made lazily (SGD's momentum with dampening), an
    unhashable hyper-parameter: no compile ahead."""
    from jflow.lazy_mode import optimizer_step

    (w, b, u), opt, _ = _ahead_case()
    flow.autograd.grad(_ahead_loss(w, b), [w, b])
    assert opt not in optimizer_step._AHEAD and opt in optimizer_step._NEW
    with flow.lazy():
        _ahead_loss(w, b).backward()
    assert opt not in optimizer_step._AHEAD
    old = flow.config.set_fused_optimizer_step(False)
    try:
        (w, b, u), opt, _ = _ahead_case()
        _ahead_loss(w, b).backward()
        assert opt not in optimizer_step._AHEAD
    finally:
        flow.config.set_fused_optimizer_step(old)
    (w, b, u), opt, _ = _ahead_case(
        make=lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.5))
    _ahead_loss(w, b).backward()
    assert opt not in optimizer_step._AHEAD and opt.state == {}
    assert w.grad is not None and u.grad is None
    # an unhashable hyper-parameter (no step structure can be cached): nothing ahead, and the
    # step runs as code, right
    (w, b, u), opt, (w0, b0) = _ahead_case()
    opt.param_groups[0]["note"] = np.arange(3.0)
    _ahead_loss(w, b).backward()
    assert opt not in optimizer_step._AHEAD
    opt.step()
    want_w, want_b = _ref_adamw_on_loss(w0, b0, 1)
    np.testing.assert_allclose(w.detach().numpy(), want_w, rtol=1e-10)


class _Chain(optim.Optimizer):
    """A bfloat16 step with a reduction, where XLA, left free, keeps the product it sums in
    float32 inside its fused program (the excess precision EAGER_ROUNDING forbids)."""

    def __init__(self, params):
        super().__init__(params, dict(lr=0.1))

    def step(self, closure=None):
        with flow.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        g = p.grad
                        p.sub_(g * (g * p).sum(0) / 3.1)


@pytest.mark.parametrize("make", [
    lambda ps: _Chain(ps),
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
    lambda ps: optim.AdamW(ps, lr=0.05, weight_decay=0.1)], ids=["chain", "sgd", "adamw"])
def test_a_first_step_compiled_ahead_rounds_as_the_ops_do(make):
    """bfloat16 parameters: the executable compiled ahead rounds every op's result as the
    eager ops do (EAGER_ROUNDING): 4 steps (backward, step) bit for bit the op-by-op ones."""
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal((64, 33)).astype(np.float32)
    c = flow.tensor(rng.standard_normal((64, 33)), dtype=flow.bfloat16)
    runs = {}
    for fused in (True, False):
        old = flow.config.set_fused_optimizer_step(fused)
        try:
            p = nn.Parameter(flow.tensor(p0, dtype=flow.bfloat16))
            opt = make([p])
            runs[fused] = []
            for _ in range(4):
                opt.zero_grad()
                (p * p * c).sum().backward()
                opt.step()
                runs[fused].append(p.detach().float().numpy().copy())
        finally:
            flow.config.set_fused_optimizer_step(old)
        if fused:
            assert isinstance(_traced_hit(opt).ahead, jax.stages.Compiled)
    for a, b in zip(runs[True], runs[False]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("make", [
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True), _Chain,
    lambda ps: optim.Adamax(ps, lr=0.03, weight_decay=0.1),
    lambda ps: optim.NAdam(ps, lr=0.03, weight_decay=0.1, decoupled_weight_decay=True)],
    ids=["sgd", "chain", "adamax", "nadamw"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_fused_eager_step_rounds_as_the_ops_do(dtype, make):
    """Half-precision parameters: the fused eager step gives bit for bit what the ops give
    one by one. (XLA CPU computes a fused float16 chain in float32 whatever its options, so
    float16 steps stay op by op; bfloat16 ones fuse, rounded per op: the chain's reduction
    would keep float32 products without EAGER_ROUNDING; Adamax's ``lr / bias_correction``
    and NAdam's ``1 - lr * wd`` round as the Python float lr does only because the traced
    step takes the lr as a WrappedNumber.)"""
    from jflow.lazy_mode import optimizer_step

    rng = np.random.default_rng(3)
    p0 = rng.standard_normal((64, 33)).astype(np.float32)
    grads = [rng.standard_normal((64, 33)).astype(np.float32) for _ in range(6)]
    dt = getattr(flow, dtype)
    runs = {}
    for fused in (True, False):
        old = flow.config.set_fused_optimizer_step(fused)
        try:
            p = nn.Parameter(flow.tensor(p0, dtype=dt))
            opt = make([p])
            runs[fused] = []
            for g in grads:
                p.grad = flow.tensor(g, dtype=dt)
                opt.step()
                runs[fused].append(p.detach().float().numpy().copy())
        finally:
            flow.config.set_fused_optimizer_step(old)
        # (the bfloat16 steps did run fused: one traced step)
        assert optimizer_step.traced_steps(opt) == int(fused and dtype == "bfloat16")
    for step, (a, b) in enumerate(zip(runs[True], runs[False])):
        np.testing.assert_array_equal(a, b, err_msg=f"step {step + 1}")


class _Probe(optim.Optimizer):
    """Records the dtypes its learning rate's arithmetic gives (``seen``)."""

    def __init__(self, params, seen):
        super().__init__(params, dict(lr=0.1))
        self.seen = seen

    def step(self, closure=None):
        with flow.no_grad():
            for group in self.param_groups:
                lr = group["lr"]
                for p in group["params"]:
                    if p.grad is not None:
                        q = lr / flow.ones((), dtype=flow.bfloat16)  # a number: bfloat16
                        r = 1 - lr * 0.5  # numbers: a number (float64 inside a trace)
                        s = r * flow.ones((), dtype=flow.float32)  # with a 0-d tensor: its
                        self.seen.append((q.dtype, s.dtype))      # dtype
                        p.sub_(p.grad * q * s)


def test_a_traced_step_promotes_its_lr_as_the_python_float_it_is():
    """A step traced into one function (fused eagerly, one node in lazy mode, nn.Graph,
    flow.jit) takes the learning rate as an input; it promotes as the Python float it stands
    for (PyTorch's wrapped number), not as a 0-d float tensor that would win over bfloat16,
    and the step's values are the op-by-op step's."""
    rng = np.random.default_rng(5)
    p0, c = rng.standard_normal((4, 3)), flow.tensor(rng.standard_normal((4, 3)))
    want = {(flow.bfloat16, flow.float32)}
    results = {}

    def run(mode):
        seen = []
        p = nn.Parameter(flow.tensor(p0))
        opt = _Probe([p], seen)
        if mode == "graph":
            class G(nn.Graph):
                def __init__(self):
                    super().__init__()
                    self.add_optimizer(opt)

                def build(self):
                    (p * c).sum().backward()
            g = G()
            for _ in range(3):
                g()
        elif mode == "jit":
            @flow.jit
            def f():
                opt.zero_grad()
                (p * c).sum().backward()
                opt.step()
            for _ in range(3):
                f()
        else:
            old = flow.config.set_fused_optimizer_step(mode != "ops")
            try:
                with flow.lazy_mode.lazy(mode == "lazy"):
                    for _ in range(3):
                        opt.zero_grad()
                        (p * c).sum().backward()
                        opt.step()
            finally:
                flow.config.set_fused_optimizer_step(old)
        assert set(seen) == want, (mode, set(seen))
        results[mode] = p.detach().numpy()
        return opt

    from jflow.lazy_mode import optimizer_step

    for mode in ("ops", "fused", "lazy", "graph", "jit"):
        opt = run(mode)
        if mode in ("fused", "lazy"):
            assert optimizer_step.traced_steps(opt) == 1, mode
    for mode, value in results.items():
        np.testing.assert_allclose(value, results["ops"], rtol=1e-6, err_msg=mode)
