"""Real model code with the import changed: the PyTorch-idiom models of compat_models.py,
run with identical weights in PyTorch and jflow (forward outputs and every parameter's
gradient equal), then trained a few steps eagerly, under ``flow.jit``, as an ``nn.Graph``
and in lazy mode (the loss falls; compiled and lazy steps equal eager ones)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from compat_models import dcgan, gpt, lstm_lm, masked_scores, mnist_cnn, resnet, vae

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


class _TrainGraph(flow.nn.Graph):
    """The step as OneFlow code writes it: modules and optimizer on a Graph, ``build`` runs
    forward and backward, the Graph steps the optimizer."""

    def __init__(self, model, loss_fn, opt):
        super().__init__()
        self.model = model
        self.loss_fn = loss_fn
        self.add_optimizer(opt)

    def build(self, *batch):
        loss = self.loss_fn(self.model, *batch)
        loss.backward()
        return loss


def _train(model, loss_fn, opt, mode):
    """One training step, run eagerly, under ``flow.jit``, or as an ``nn.Graph``."""
    if mode == "graph":
        return _TrainGraph(model, loss_fn, opt)

    def step(*batch):
        opt.zero_grad()
        loss = loss_fn(model, *batch)
        loss.backward()
        opt.step()
        return loss
    if mode == "lazy":  # the eager step unchanged, recorded and run fused (flow.lazy)
        return flow.lazy()(step)
    return flow.jit(step) if mode == "jit" else step


RNG = np.random.RandomState(0)
IDX = RNG.randint(0, 32, size=(2, 8))
TGT = RNG.randint(0, 32, size=(2, 8))
IMG = RNG.randn(4, 1, 8, 8).astype(np.float32)
LBL = RNG.randint(0, 10, size=4)
PIX = RNG.rand(6, 16).astype(np.float32)
# three time steps (drawn as five, so that the later draws keep their values): the recurrence
# carries its state across steps all the same, and the whole-step programs unroll fewer of them
LM_IN = RNG.randint(0, 20, size=(5, 3))[:3]
LM_TGT = RNG.randint(0, 20, size=15)[:9]
Z = RNG.randn(2, 4, 1, 1).astype(np.float32)


def _gpt_loss(m, idx, tgt):
    return m(idx, tgt)[1]


def _vae_loss(m, x):
    return m.loss(x)


def _lm_loss(m, inp, tgt):
    out, _ = m(inp, m.init_hidden(inp.shape[1]))
    return flow.nn.functional.nll_loss(out, tgt)


def _gan_loss(m, z):
    """The generator's step: fool the discriminator (both nets in one graph)."""
    p = m["d"](m["g"](z))
    return flow.nn.BCELoss()(p, flow.ones(p.shape[0]))


def _cls_loss(lib):
    def loss(m, x, y):
        return lib.nn.functional.cross_entropy(m(x), y)
    return loss


@pytest.mark.parametrize("name", ["gpt", "resnet", "vae"])
def test_forward_and_gradients_match_pytorch(name):
    if name == "gpt":
        tm, fm = _twins(gpt)
        targs = (torch.tensor(IDX), torch.tensor(TGT))
        fargs = (flow.tensor(IDX), flow.tensor(TGT))
        tl, fl = _gpt_loss(tm, *targs), _gpt_loss(fm, *fargs)
        np.testing.assert_allclose(fm(fargs[0])[0].detach().numpy(),
                                   tm(targs[0])[0].detach().numpy(), rtol=1e-4, atol=1e-5)
    elif name == "vae":  # evaluation mode: reparameterize returns the mean, no sampling
        tm, fm = _twins(vae)
        tm.eval()
        fm.eval()
        tl, fl = _vae_loss(tm, torch.tensor(PIX)), _vae_loss(fm, flow.tensor(PIX))
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


@pytest.mark.parametrize("name", ["gpt", "resnet"])
def test_a_chained_backward_matches_pytorch(name, monkeypatch):
    """The same comparison with the eager backward run as a chain of span executables
    (jflow.autograd.compiled_graph.Chunked, for graphs whose saved values pass CHUNK_BYTES:
    here every graph of 8 nodes or more)."""
    from jflow.autograd import compiled_graph as cg
    from jflow.autograd.engine import graph_cache

    monkeypatch.setattr(cg, "CHUNK_BYTES", 1)
    monkeypatch.setattr(cg, "CHUNK_NODES", 4)
    graph_cache.clear()
    test_forward_and_gradients_match_pytorch(name)
    assert any(isinstance(f, cg.Chunked) and len(f.spans) >= 3
               for f, _ in graph_cache.compiled.values())


_TRAINING = {  # model, batch, loss, compiled modes checked step by step against eager
    # (the GPT one block deep: a second block of the same kind runs the same eager ops, the
    # ones test_forward_and_gradients_match_pytorch[gpt] checks against PyTorch with two, and
    # would double each whole-step program graph and lazy compile. flow.jit is checked on the
    # MNIST net, both of its compiles (the stateless first step, the recompile for Adam's new
    # state); the GPT's step goes through the same tracer, jflow.compiler.jit, as nn.Graph,
    # tied weights included, and a jitted GPT step is tests/test_benchmarks_real_models.py's
    # flow.jit column: two whole-step GPT compiles fewer)
    "gpt": (functools.partial(gpt, n_layer=1), lambda: (flow.tensor(IDX), flow.tensor(TGT)),
            _gpt_loss, ("graph", "lazy")),
    "resnet": (resnet, lambda: (flow.tensor(IMG), flow.tensor(LBL)), _cls_loss(flow),
               ("graph", "lazy")),
    "mnist": (mnist_cnn, lambda: (flow.tensor(IMG), flow.tensor(LBL)),
              lambda m, x, y: flow.nn.functional.nll_loss(m(x), y), ("jit", "graph", "lazy")),
    "vae": (vae, lambda: (flow.tensor(PIX),), _vae_loss, ("graph", "lazy")),
    "lstm_lm": (lstm_lm, lambda: (flow.tensor(LM_IN), flow.tensor(LM_TGT)), _lm_loss,
                ("graph", "lazy")),
    "dcgan": (dcgan, lambda: (flow.tensor(Z),), _gan_loss, ("graph", "lazy")),
}


@pytest.mark.parametrize("name", sorted(_TRAINING))
def test_training_eager_and_compiled_decreases_the_loss_alike(name):
    make, batch, loss_fn, modes = _TRAINING[name]
    batch = batch()
    losses = {}
    for mode in ("eager", *modes):
        _, model = _twins(make)
        if name in ("mnist", "vae", "lstm_lm"):
            model.eval()  # no dropout / sampling: eager and compiled must agree step by step
        opt = flow.optim.Adam(model.parameters(), lr=1e-2)
        step = _train(model, loss_fn, opt, mode)
        losses[mode] = [float(step(*batch)) for _ in range(3)]
        # the fourth loss reads the third update (and, lazily, the fused step the third one
        # compiled, run again); eager's fourth update would be read by nothing, and would
        # compile the fused eager optimizer step (its 3rd sighting), which tests/test_optim.py
        # checks against the op-by-op step
        losses[mode].append(float(loss_fn(model, *batch) if mode == "eager" else step(*batch)))
    assert losses["eager"][-1] < losses["eager"][0]
    for mode in modes:
        np.testing.assert_allclose(losses[mode], losses["eager"], rtol=2e-4, err_msg=mode)


def test_vae_trains_with_sampling_as_an_nn_graph():
    """Training mode: ``randn_like`` inside the graph draws new noise every step (the
    generator is an input of the executable, not a frozen constant)."""
    flow.manual_seed(0)
    model = vae(flow)
    graph = _TrainGraph(model, _vae_loss, flow.optim.Adam(model.parameters(), lr=1e-2))
    x = flow.tensor(PIX)
    losses = [float(graph(x)) for _ in range(12)]
    assert graph.trace_count == 1
    assert np.mean(losses[-3:]) < np.mean(losses[:3])
    mu, logvar = model.encode(x)
    noisy = [model.reparameterize(mu, logvar).detach().numpy() for _ in range(2)]
    assert not np.array_equal(*noisy)


def test_inplace_writes_through_views_match_pytorch():
    s = RNG.randn(4, 6).astype(np.float32)
    np.testing.assert_array_equal(masked_scores(flow, flow.tensor(s), 3).numpy(),
                                  masked_scores(torch, torch.tensor(s), 3).numpy())


def test_lstm_language_model_and_dcgan_match_pytorch():
    tm, fm = _twins(lstm_lm)
    tm.eval()
    fm.eval()
    inp = RNG.randint(0, 20, size=(5, 3))[:3]  # (LM_IN's shapes: the same executables)
    tgt = RNG.randint(0, 20, size=15)[:9]
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
    # batches of IMG's size: the net's eager programs are the ones its training test compiled
    loader = DataLoader(data, batch_size=4, shuffle=True, generator=flow.Generator().manual_seed(1),
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
