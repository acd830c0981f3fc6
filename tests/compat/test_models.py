"""Real model code with the import changed: the PyTorch-idiom models of compat_models.py,
run with identical weights in PyTorch and jflow (forward outputs and every parameter's
gradient equal), then trained a few steps eagerly and as a compiled step (the loss falls,
and compiled equals eager)."""

from __future__ import annotations

import numpy as np
import pytest
from compat_models import dcgan, gpt, lstm_lm, masked_scores, mnist_cnn, resnet

import jflow as flow

torch = pytest.importorskip("torch")


def _twins(make):
    torch.manual_seed(0)
    tm = make(torch)
    fm = make(flow)
    fm.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, fm


def _check_grads(tm, fm, rtol=2e-4, atol=2e-5):
    fgrads = dict(fm.named_parameters())
    for name, p in tm.named_parameters():
        q = fgrads[name]
        assert (p.grad is None) == (q.grad is None), name
        if p.grad is not None:
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=rtol, atol=atol,
                                       err_msg=name)


def _train(model, loss_fn, opt, steps, compiled):
    def step(*batch):
        opt.zero_grad()
        loss = loss_fn(model, *batch)
        loss.backward()
        opt.step()
        return loss
    run = flow.jit(step) if compiled else step
    return run


RNG = np.random.RandomState(0)
IDX = RNG.randint(0, 32, size=(2, 8))
TGT = RNG.randint(0, 32, size=(2, 8))
IMG = RNG.randn(4, 1, 8, 8).astype(np.float32)
LBL = RNG.randint(0, 10, size=4)


def _gpt_loss(m, idx, tgt):
    return m(idx, tgt)[1]


def _cls_loss(lib):
    def loss(m, x, y):
        return lib.nn.functional.cross_entropy(m(x), y)
    return loss


@pytest.mark.parametrize("name", ["gpt", "resnet"])
def test_forward_and_gradients_match_pytorch(name):
    if name == "gpt":
        tm, fm = _twins(gpt)
        targs = (torch.tensor(IDX), torch.tensor(TGT))
        fargs = (flow.tensor(IDX), flow.tensor(TGT))
        tl, fl = _gpt_loss(tm, *targs), _gpt_loss(fm, *fargs)
        np.testing.assert_allclose(fm(fargs[0])[0].detach().numpy(),
                                   tm(targs[0])[0].detach().numpy(), rtol=1e-4, atol=1e-5)
    else:
        tm, fm = _twins(resnet)
        targs = (torch.tensor(IMG), torch.tensor(LBL))
        fargs = (flow.tensor(IMG), flow.tensor(LBL))
        tl, fl = _cls_loss(torch)(tm, *targs), _cls_loss(flow)(fm, *fargs)
    np.testing.assert_allclose(fl.item(), tl.item(), rtol=1e-5)
    tl.backward()
    fl.backward()
    _check_grads(tm, fm)
    if name == "resnet":  # batch-norm running statistics were updated alike
        np.testing.assert_allclose(fm.bn1.running_mean.numpy(),
                                   tm.bn1.running_mean.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["gpt", "resnet", "mnist"])
def test_training_eager_and_compiled_decreases_the_loss_alike(name):
    make = {"gpt": gpt, "resnet": resnet, "mnist": mnist_cnn}[name]
    if name == "gpt":
        batch, loss_fn = (flow.tensor(IDX), flow.tensor(TGT)), _gpt_loss
    elif name == "resnet":
        batch, loss_fn = (flow.tensor(IMG), flow.tensor(LBL)), _cls_loss(flow)
    else:
        def loss_fn(m, x, y):
            return flow.nn.functional.nll_loss(m(x), y)
        batch = (flow.tensor(IMG), flow.tensor(LBL))
    losses = {}
    for compiled in (False, True):
        _, model = _twins(make)
        if name == "mnist":
            model.eval()  # dropout off: eager and compiled must agree step by step
        opt = flow.optim.Adam(model.parameters(), lr=1e-2)
        step = _train(model, loss_fn, opt, 4, compiled)
        losses[compiled] = [float(step(*batch)) for _ in range(4)]
    assert losses[False][-1] < losses[False][0]
    np.testing.assert_allclose(losses[True], losses[False], rtol=2e-4)


def test_inplace_writes_through_views_match_pytorch():
    s = RNG.randn(4, 6).astype(np.float32)
    np.testing.assert_array_equal(masked_scores(flow, flow.tensor(s), 3).numpy(),
                                  masked_scores(torch, torch.tensor(s), 3).numpy())


def test_lstm_language_model_and_dcgan_match_pytorch():
    tm, fm = _twins(lstm_lm)
    tm.eval()
    fm.eval()
    inp = RNG.randint(0, 20, size=(5, 3))
    tgt = RNG.randint(0, 20, size=15)
    outs = []
    for lib, m in ((torch, tm), (flow, fm)):
        out, _ = m(lib.tensor(inp), m.init_hidden(3))
        loss = lib.nn.functional.nll_loss(out, lib.tensor(tgt))
        loss.backward()
        outs.append(loss.item())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5)
    _check_grads(tm, fm)

    tm, fm = _twins(dcgan)
    z = RNG.randn(2, 4, 1, 1).astype(np.float32)
    outs = []
    for lib, m in ((torch, tm), (flow, fm)):
        fake = m["g"](lib.tensor(z))
        p = m["d"](fake)
        loss = lib.nn.BCELoss()(p, lib.ones(2))
        loss.backward()
        outs.append(loss.item())
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-5)
    _check_grads(tm, fm)


def test_mnist_style_training_loop_with_a_dataloader():
    from jflow.utils.data import DataLoader, TensorDataset
    flow.manual_seed(0)
    model = mnist_cnn(flow)
    data = TensorDataset(flow.tensor(np.repeat(IMG, 4, axis=0)), flow.tensor(np.tile(LBL, 4)))
    loader = DataLoader(data, batch_size=8, shuffle=True, generator=flow.Generator().manual_seed(1),
                        drop_last=True)
    opt = flow.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    first = last = None
    for _ in range(3):
        for x, y in loader:
            opt.zero_grad()
            loss = flow.nn.functional.nll_loss(model(x), y)
            loss.backward()
            opt.step()
            first = loss.item() if first is None else first
            last = loss.item()
    assert last < first
