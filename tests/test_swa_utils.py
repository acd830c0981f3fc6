"""flow.optim.swa_utils against torch.optim.swa_utils: AveragedModel (SWA by default, EMA and
SWA through avg_fn / multi_avg_fn, use_buffers) after the same SGD steps from the same
weights, its state-dict keys and a PyTorch state dict loading; SWALR's learning rates step by
step (cos / linear, per-group swa_lr, anneal_epochs=0, state dict); update_bn's running
statistics; PyTorch's errors.

One small model (Linear, BatchNorm1d, ReLU, Linear) and one batch for every case: the steps
share their programs.
"""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")
TS = pytest.importorskip("torch.optim.swa_utils")
FS = flow.optim.swa_utils
RS = np.random.RandomState(0)
X = RS.randn(5, 3).astype(np.float32)
Y = RS.randn(5, 2).astype(np.float32)
BATCHES = [RS.randn(5, 3).astype(np.float32) for _ in range(3)]


def _build(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))


def _pair():
    """The same model in both libraries (PyTorch's initial weights)."""
    tm, fm = _build(torch), _build(flow)
    fm.load_state_dict({k: flow.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return tm, fm


def _to_flow(sd):
    return {k: flow.tensor(v.numpy()) for k, v in sd.items()}


def _assert_state_close(ts, fs, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    assert list(ts) == list(fs)
    for k in ts:
        np.testing.assert_allclose(fs[k].numpy(), ts[k].numpy(), rtol=rtol, atol=atol,
                                   err_msg=k)


def _train(lib, model, averaged, steps: int = 3) -> None:
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    x, y = lib.tensor(X), lib.tensor(Y)
    for _ in range(steps):
        opt.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        opt.step()
        averaged.update_parameters(model)


MODES = {
    "swa": lambda S: {},
    "ema_multi": lambda S: {"multi_avg_fn": S.get_ema_multi_avg_fn(0.9)},
    "ema_avg": lambda S: {"avg_fn": S.get_ema_avg_fn(0.9)},
    "swa_multi": lambda S: {"multi_avg_fn": S.get_swa_multi_avg_fn()},
    "swa_buffers": lambda S: {"use_buffers": True},   # num_batches_tracked averaged too
}


@pytest.mark.parametrize("mode", list(MODES))
def test_averaged_model_matches_torch(mode: str) -> None:
    tm, fm = _pair()
    ta, fa = TS.AveragedModel(tm, **MODES[mode](TS)), FS.AveragedModel(fm, **MODES[mode](FS))
    assert isinstance(fa.n_averaged, flow.Tensor) and int(fa.n_averaged) == 0
    _train(torch, tm, ta)
    _train(flow, fm, fa)
    assert int(fa.n_averaged) == int(ta.n_averaged) == 3
    # keys (n_averaged, module.<name>) and averaged values, buffers included
    _assert_state_close(ta.state_dict(), fa.state_dict())
    # the average differs from the model (it is an average), and the forward runs the copy
    assert not np.allclose(fa.module[0].weight.detach().numpy(), fm[0].weight.detach().numpy())
    fa.eval()
    ta.eval()
    np.testing.assert_allclose(fa(flow.tensor(X)).detach().numpy(),
                               ta(torch.tensor(X)).detach().numpy(), rtol=1e-5, atol=1e-6)


def test_averaged_model_state_dict_loads_from_torch_and_copies_model() -> None:
    tm, fm = _pair()
    ta, fa = TS.AveragedModel(tm), FS.AveragedModel(fm)
    assert list(fa.state_dict()) == list(ta.state_dict())
    assert fa.module is not fm and fa.module[0].weight is not fm[0].weight  # a deep copy
    _train(torch, tm, ta, steps=2)
    fa.load_state_dict(_to_flow(ta.state_dict()))
    assert int(fa.n_averaged) == 2
    _assert_state_close(ta.state_dict(), fa.state_dict(), rtol=0, atol=0)


def test_averaged_model_errors_match_torch() -> None:
    tm, fm = _pair()
    for S, m in ((TS, tm), (FS, fm)):
        with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
            S.AveragedModel(m, avg_fn=S.get_swa_avg_fn(), multi_avg_fn=S.get_swa_multi_avg_fn())
        for fn in (S.get_ema_avg_fn, S.get_ema_multi_avg_fn):
            with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided"):
                fn(1.5)
    with pytest.raises(TypeError, match="AveragedModel"):
        FS.AveragedModel("not a module")
    # SWA's multi_avg_fn cannot average integer buffers in place (PyTorch raises as well)
    for S, m in ((TS, tm), (FS, fm)):
        avg = S.AveragedModel(m, multi_avg_fn=S.get_swa_multi_avg_fn(), use_buffers=True)
        avg.update_parameters(m)
        with pytest.raises(RuntimeError):
            avg.update_parameters(m)


def _swalr_lrs(lib, steps: int = 6, **kw):
    p = [lib.nn.Parameter(lib.zeros(1)), lib.nn.Parameter(lib.zeros(1))]
    opt = lib.optim.SGD([{"params": [p[0]]}, {"params": [p[1]], "lr": 0.3}], lr=0.5)
    sched = lib.optim.swa_utils.SWALR(opt, **kw)
    out = [sched.get_last_lr()]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr())
    return out, sched, opt


@pytest.mark.parametrize("kw", [
    {"swa_lr": 0.05},
    {"swa_lr": [0.05, 0.01], "anneal_epochs": 3, "anneal_strategy": "linear"},
    {"swa_lr": 0.02, "anneal_epochs": 0},
    {"swa_lr": [0.1, 0.2], "anneal_epochs": 4, "anneal_strategy": "cos"},
])
def test_swalr_learning_rates_match_torch(kw) -> None:
    tl, _, topt = _swalr_lrs(torch, **kw)
    fl, fsched, fopt = _swalr_lrs(flow, **kw)
    np.testing.assert_allclose(np.array(fl), np.array(tl), rtol=1e-12, atol=0)
    assert [g["swa_lr"] for g in fopt.param_groups] == [g["swa_lr"] for g in topt.param_groups]
    # the state dict restores the schedule (strategy included) in a new scheduler
    state = fsched.state_dict()
    assert "optimizer" not in state and "anneal_func" not in state
    assert state["_anneal_strategy"] == kw.get("anneal_strategy", "cos")
    _, again, _ = _swalr_lrs(flow, steps=0, swa_lr=0.5, anneal_strategy="linear")
    again.load_state_dict(state)
    cls = FS.SWALR
    linear = state["_anneal_strategy"] == "linear"
    assert again.anneal_func is (cls._linear_anneal if linear else cls._cosine_anneal)
    assert again._step_count == fsched._step_count


def test_swalr_errors_match_torch() -> None:
    for lib in (torch, flow):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=0.1)
        S = lib.optim.swa_utils
        with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
            S.SWALR(opt, swa_lr=0.1, anneal_strategy="exp")
        with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
            S.SWALR(opt, swa_lr=0.1, anneal_epochs=-1)
        with pytest.raises(ValueError, match="swa_lr must have the same length"):
            S.SWALR(opt, swa_lr=[0.1, 0.2])


def test_update_bn_matches_torch() -> None:
    tm, fm = _pair()
    tm.eval()
    fm.eval()
    tl = [(torch.tensor(b), 0) for b in BATCHES]             # (input, label) batches
    fl = [(flow.tensor(b), 0) for b in BATCHES]
    TS.update_bn(tl, tm)
    FS.update_bn(fl, fm)
    bn_t, bn_f = tm[1], fm[1]
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(getattr(bn_f, name).numpy(), getattr(bn_t, name).numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=name)
    assert int(bn_f.num_batches_tracked) == 3
    assert bn_f.momentum == bn_t.momentum == 0.1 and not fm.training   # restored
    # plain tensors as batches, and a model without BatchNorm is left alone
    FS.update_bn([flow.tensor(b) for b in BATCHES], fm)
    np.testing.assert_allclose(bn_f.running_mean.numpy(), bn_t.running_mean.numpy(),
                               rtol=1e-5, atol=1e-6)
    FS.update_bn(fl, flow.nn.Linear(3, 4))
