"""Recurrent layers and binary cross-entropy against PyTorch: identical weights (copied through
a state dict) give the same outputs, final states and gradients of inputs and parameters.

Shapes are tiny and shared (T=5, B=2, I=3, H=4) so the per-op XLA compiles are reused."""

import numpy as np
import pytest

import jflow as flow
import jflow.nn as nn
import jflow.nn.functional as F

torch = pytest.importorskip("torch")

T, B, I, H = 5, 2, 3, 4
RTOL, ATOL = 1e-5, 1e-7


def _load(jmod, tmod):
    """Same parameter names and shapes as PyTorch; copy torch's values in through NumPy."""
    tsd = tmod.state_dict()
    jsd = jmod.state_dict()
    assert list(jsd) == list(tsd)
    for k, v in tsd.items():
        assert tuple(jsd[k].shape) == tuple(v.shape), k
    jmod.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tsd.items()},
                         assign=True)
    assert all(p.device.type == "cpu" and p.requires_grad for p in jmod.parameters())


def _pair(name, **kw):
    """A PyTorch layer and jflow's twin holding its values. The twin is built on the meta
    device (float64) and takes torch's tensors by ``load_state_dict(assign=True)``: jflow's
    own random initialisation would compile a draw per parameter shape only to be
    overwritten (default initialisation: ``test_errors``' GRU, the init tests of
    test_nn_module_parity / test_nn_conv_modules)."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(**kw).double()
    jm = getattr(nn, name)(**kw, device="meta", dtype=flow.float64)
    _load(jm, tm)
    return jm, tm


def _inputs(*shape_list, seed=0):
    rng = np.random.default_rng(seed)
    arrs = [rng.standard_normal(s) for s in shape_list]
    return ([flow.tensor(a, requires_grad=True) for a in arrs],
            [torch.tensor(a, requires_grad=True) for a in arrs])


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _check(jm, tm, j_args, t_args, rtol=RTOL, atol=ATOL):
    """Forward and backward of sum(out_k^2) in both; compares outputs and every gradient."""
    jo, to = _flat(jm(*j_args)), _flat(tm(*t_args))
    assert len(jo) == len(to)
    for a, b in zip(jo, to):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=rtol, atol=atol)
    # d sum_k sum(out_k^2): backward from the outputs with 2 out_k as their gradients (one
    # compiled backward, no mul / sum / add programs per output shape)
    flow.autograd.backward(jo, [flow.tensor(2 * o.detach().numpy()) for o in jo])
    torch.autograd.backward(to, [2 * o.detach() for o in to])
    for a, b in zip(_flat(j_args), _flat(t_args)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)
    jp, tp = dict(jm.named_parameters()), dict(tm.named_parameters())
    assert set(jp) == set(tp)
    for k in tp:
        np.testing.assert_allclose(jp[k].grad.numpy(), tp[k].grad.numpy(), rtol=rtol,
                                   atol=atol, err_msg=k)


# -- layers -----------------------------------------------------------------------------------

class _Autocast:
    """A layer called inside an autocast block (bfloat16) of its library."""

    def __init__(self, lib, module):
        self.lib, self.module = lib, module

    def __call__(self, *args):
        with self.lib.autocast("cpu", dtype=self.lib.bfloat16):
            return self.module(*args)

    def named_parameters(self):
        return self.module.named_parameters()


@pytest.mark.parametrize("name", ["GRU", "RNN", "LSTM"])
def test_layers_under_autocast_run_unlowered_in_their_input_dtype(name):
    """Under autocast a recurrent layer runs in its input's dtype, its products not lowered:
    float32 in, float32 out, the values PyTorch's layer gives without autocast (compared here).
    PyTorch's own CPU layers differ by kernel under autocast: its GRU returns float32 from
    bfloat16 products, its RNN bfloat16, its LSTM fails in oneDNN. Without this, the
    recurrence ops, which take one dtype, refused the lowered input projection."""
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(input_size=I, hidden_size=H, batch_first=True)
    jm = getattr(nn, name)(input_size=I, hidden_size=H, batch_first=True, device="meta")
    _load(jm, tm)
    x = np.random.default_rng(0).standard_normal((B, T, I)).astype(np.float32)
    jx, tx = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    assert _Autocast(flow, jm)(jx)[0].dtype == flow.float32
    _check(_Autocast(flow, jm), tm, [jx], [tx], rtol=1e-5, atol=1e-6)


def test_rnn_tanh_two_layers_bidirectional_batch_first():
    jm, tm = _pair("RNN", input_size=I, hidden_size=H, num_layers=2, batch_first=True,
                   bidirectional=True)
    (jx, jh), (tx, th) = _inputs((B, T, I), (4, B, H))
    _check(jm, tm, [jx, jh], [tx, th])


def test_rnn_relu_without_bias_default_hx():
    jm, tm = _pair("RNN", input_size=I, hidden_size=H, nonlinearity="relu", bias=False)
    (jx,), (tx,) = _inputs((T, B, I))
    _check(jm, tm, [jx], [tx])


@pytest.mark.parametrize("name,kw,with_hx", [
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True), True),
    ("GRU", dict(bias=False), False),
    ("GRU", dict(num_layers=2, batch_first=True, bias=False), True),
    ("RNN", dict(num_layers=2, bidirectional=True, nonlinearity="relu"), True),
    ("RNN", dict(batch_first=True, bias=False), True),
    ("RNN", dict(num_layers=2, nonlinearity="relu", batch_first=True, bias=False), False),
])
def test_gru_and_rnn_layers(name, kw, with_hx):
    """The gru_layer / rnn_layer ops (both directions, tanh and relu, b_hh absent) in every
    layout: outputs, final state and every gradient as PyTorch's."""
    jm, tm = _pair(name, input_size=I, hidden_size=H, **kw)
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    x_shape = (B, T, I) if kw.get("batch_first") else (T, B, I)
    if with_hx:
        (jx, jh), (tx, th) = _inputs(x_shape, (layers, B, H), seed=7)
        _check(jm, tm, [jx, jh], [tx, th])
    else:
        (jx,), (tx,) = _inputs(x_shape, seed=7)
        _check(jm, tm, [jx], [tx])


def test_lstm_two_layers():
    jm, tm = _pair("LSTM", input_size=I, hidden_size=H, num_layers=2)
    (jx, jh, jc), (tx, th, tc) = _inputs((T, B, I), (2, B, H), (2, B, H))
    _check(jm, tm, [jx, (jh, jc)], [tx, (th, tc)])


@pytest.mark.parametrize("seed", [1, 2])
def test_lstm_bidirectional_batch_first_without_bias(seed):
    """The recurrence op's reverse direction and a zero b_hh, on random inputs."""
    jm, tm = _pair("LSTM", input_size=I, hidden_size=H, num_layers=2, batch_first=True,
                   bidirectional=True, bias=False)
    (jx, jh, jc), (tx, th, tc) = _inputs((B, T, I), (4, B, H), (4, B, H), seed=seed)
    _check(jm, tm, [jx, (jh, jc)], [tx, (th, tc)])


def _nodes(t):
    """The autograd graph's nodes reachable from ``t`` (each once)."""
    seen, todo = set(), [t.grad_fn]
    while todo:
        n = todo.pop()
        if n is None or id(n) in seen or not hasattr(n, "next_functions"):
            continue  # (a leaf: jflow lists the tensor itself)
        seen.add(id(n))
        todo.extend(f for f, _ in n.next_functions)
    return len(seen)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_records_one_node_per_layer_whatever_the_length(name):
    jm, _ = _pair(name, input_size=I, hidden_size=H, num_layers=2)
    short, long = (flow.tensor(np.ones((t, B, I)), requires_grad=True) for t in (T, 4 * T))
    assert _nodes(jm(short)[0]) == _nodes(jm(long)[0])


def _last_state(out):
    """(output, h_n) or (output, (h_n, c_n)): the last state (an LSTM's c_n)."""
    return out[1][-1] if isinstance(out[1], tuple) else out[1]


@pytest.mark.parametrize("name,kw", [("LSTM", {}), ("GRU", dict(bidirectional=True)),
                                     ("RNN", {}),
                                     ("RNN", dict(nonlinearity="relu", bidirectional=True))])
def test_forward_mode_and_second_derivative(name, kw):
    """jvp through the layer (the recurrence's tangent op) equals central differences; a
    second derivative on the tape (create_graph) equals PyTorch's."""
    jm, tm = _pair(name, input_size=I, hidden_size=H, **kw)
    rng = np.random.default_rng(3)
    x0, t0 = rng.standard_normal((T, B, I)), rng.standard_normal((T, B, I))

    def f(m, x):
        out = m(x)
        s = _last_state(out)
        return out[0].sum() + (s * s).sum()

    _, tangent = flow.func.jvp(lambda x: f(jm, x), (flow.tensor(x0),), (flow.tensor(t0),))
    eps = 1e-6
    with flow.no_grad():
        fd = (float(f(jm, flow.tensor(x0 + eps * t0))) - float(f(jm, flow.tensor(x0 - eps * t0)))
              ) / (2 * eps)
    np.testing.assert_allclose(float(tangent), fd, rtol=1e-6)
    (jx,), (tx,) = _inputs((T, B, I), seed=4)
    for lib, m, x in ((flow, jm, jx), (torch, tm, tx)):
        (g,) = lib.autograd.grad(f(m, x), [x], create_graph=True)
        (g * g).sum().backward()
    np.testing.assert_allclose(jx.grad.numpy(), tx.grad.numpy(), rtol=RTOL, atol=ATOL)
    for k, p in tm.named_parameters():
        np.testing.assert_allclose(dict(jm.named_parameters())[k].grad.numpy(),
                                   p.grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=k)


def test_hessian_through_jax():
    """jax.hessian (flow.func.hessian: forward mode over reverse mode, through the gradient
    op's rule) equals PyTorch's Hessian (double backward); a short sequence (the gradient
    op's rule is a step-by-step form)."""
    jm, tm = _pair("GRU", input_size=I, hidden_size=H)
    x0 = np.random.default_rng(8).standard_normal((3, 1, I))

    def f(m, x):
        out = m(x)
        s = _last_state(out)
        return (out[0] * out[0]).sum() + (s * s * s).sum()

    got = flow.func.hessian(lambda x: f(jm, x))(flow.tensor(x0))
    want = torch.autograd.functional.hessian(lambda x: f(tm, x), torch.tensor(x0))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=RTOL, atol=ATOL)


def test_gru_bidirectional():
    jm, tm = _pair("GRU", input_size=I, hidden_size=H, bidirectional=True)
    (jx, jh), (tx, th) = _inputs((T, B, I), (2, B, H))
    _check(jm, tm, [jx, jh], [tx, th])


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_unbatched_input(name):
    jm, tm = _pair(name, input_size=I, hidden_size=H, batch_first=True)
    (jx,), (tx,) = _inputs((T, I))
    _check(jm, tm, [jx], [tx])


def test_dropout_is_off_in_eval_and_on_in_training():
    jm, tm = _pair("LSTM", input_size=I, hidden_size=H, num_layers=2, dropout=0.5)
    jm.eval(), tm.eval()
    (jx,), (tx,) = _inputs((T, B, I))
    _check(jm, tm, [jx], [tx])
    jm.train()
    out_train = jm(jx)[0].detach().numpy()
    assert out_train.shape == (T, B, H)
    assert not np.allclose(out_train, jm.eval()(jx)[0].detach().numpy())


# -- cells ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}),
                                     ("LSTMCell", {}), ("GRUCell", {})])
def test_cells(name, kw):
    jm, tm = _pair(name, input_size=I, hidden_size=H, **kw)
    n = 2 if name == "LSTMCell" else 1
    (jx, *jh), (tx, *th) = _inputs((B, I), *[(B, H)] * n)
    jh, th = (tuple(jh), tuple(th)) if n == 2 else (jh[0], th[0])
    _check(jm, tm, [jx, jh], [tx, th])
    for p in (*jm.parameters(), *tm.parameters()):
        p.grad = None
    (jx,), (tx,) = _inputs((I,), seed=1)       # unbatched, default hidden state
    _check(jm, tm, [jx], [tx])


# -- flow.jit ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_training_step_under_jit_equals_eager(name):
    """A training step (forward, backward, SGD update) under flow.jit: one scan op per layer
    in the compiled program; loss, output, gradients and updated weights as eager."""
    models = [_pair(name, input_size=I, hidden_size=H, num_layers=2)[0] for _ in range(2)]
    opts = [flow.optim.SGD(m.parameters(), lr=0.1) for m in models]
    x = flow.tensor(np.random.default_rng(2).standard_normal((T, B, I)))

    def step(m, opt, x):
        opt.zero_grad()
        out = m(x)
        s = _last_state(out)
        loss = (out[0] * out[0]).sum() + (s * s).sum()
        loss.backward()
        grads = [p.grad.detach().clone() for p in m.parameters()]
        opt.step()
        return out[0], loss, grads

    co, cl, cg = flow.jit(lambda x: step(models[0], opts[0], x))(x)
    eo, el, eg = step(models[1], opts[1], x)
    np.testing.assert_allclose(co.numpy(), eo.detach().numpy(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(float(cl), float(el), rtol=RTOL)
    names = [k for k, _ in models[0].named_parameters()]
    for k, a, b in zip(names, cg, eg):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=RTOL, atol=ATOL, err_msg=k)
    for (k, a), b in zip(models[0].named_parameters(), models[1].parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=RTOL,
                                   atol=ATOL, err_msg=k)


# -- errors -----------------------------------------------------------------------------------

def test_errors():
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(I, H, proj_size=2)
    m = nn.GRU(I, H)
    with pytest.raises(TypeError, match="GRU: expected a Tensor or a PackedSequence input"):
        m([1.0, 2.0])
    with pytest.raises(RuntimeError, match="hidden"):
        m(flow.zeros(T, B, I), flow.zeros(2, B, H))
    with pytest.raises(RuntimeError, match="input_size"):
        m(flow.zeros(T, B, I + 1))


@pytest.mark.parametrize("op,gates,attrs", [("gru_layer", 3, {}),
                                            ("rnn_layer", 1, {"nonlinearity": "relu"})])
def test_recurrence_op_names_a_wrong_argument(op, gates, attrs):
    """The recurrence op checks its operands: a wrong-shaped h0 is a ValueError naming the op
    and the argument."""
    apply = flow.ops.get(op).apply
    gi, w, b = (flow.zeros(*s, dtype=flow.float64)
                for s in ((T, B, gates * H), (gates * H, H), (gates * H,)))
    with pytest.raises(ValueError, match=rf"{op}: h0 must be float64\[{B}, {H}\]"):
        apply(gi, flow.zeros(B, H + 1, dtype=flow.float64), w, b, **attrs)
    with pytest.raises(ValueError, match=rf"{op}: w_hh must be"):
        apply(gi, flow.zeros(B, H, dtype=flow.float64),
              flow.zeros(gates * H, H + 1, dtype=flow.float64), b, **attrs)


# -- binary cross-entropy ---------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_bce_matches_torch(reduction, weighted):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.01, 0.99, (B, H))
    x[0, :2] = [0.0, 1.0]                       # saturated: clamped logs, finite grads
    t = rng.uniform(0, 1, (B, H))
    t[0, :2] = [0.0, 1.0]
    w = rng.uniform(0.5, 2.0, (H,))
    jx, jt = flow.tensor(x, requires_grad=True), flow.tensor(t, requires_grad=True)
    tx, tt = torch.tensor(x, requires_grad=True), torch.tensor(t, requires_grad=True)
    jw, tw = (flow.tensor(w), torch.tensor(w)) if weighted else (None, None)
    jl = nn.BCELoss(jw, reduction=reduction)(jx, jt)
    tl = torch.nn.BCELoss(tw, reduction=reduction)(tx, tt)
    np.testing.assert_allclose(jl.detach().numpy(), tl.detach().numpy(), rtol=RTOL)
    g = rng.standard_normal(tl.shape)
    jl.backward(flow.tensor(g)), tl.backward(torch.tensor(g))
    np.testing.assert_allclose(jx.grad.numpy(), tx.grad.numpy(), rtol=RTOL)
    np.testing.assert_allclose(jt.grad.numpy(), tt.grad.numpy(), rtol=RTOL)
    got = F.binary_cross_entropy(jx, jt, jw, reduction=reduction)
    np.testing.assert_allclose(got.detach().numpy(), jl.detach().numpy())


def test_bce_errors():
    x = flow.tensor([0.5, 1.5])
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(x, flow.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="target size"):
        F.binary_cross_entropy(flow.tensor([0.5, 0.5]), flow.tensor([0.0]))


def test_register_tangent_needs_the_backward_rule():
    """A tangent rule reads what the backward rule saves (the recurrence ops' are the only
    ones)."""
    with pytest.raises(ValueError, match="register the backward rule first"):
        flow.autograd.register_tangent("argmax")(lambda ctx, *t: None)
    with pytest.raises(ValueError, match="already has a tangent rule"):
        flow.autograd.register_tangent("lstm_layer")(lambda ctx, *t: None)


@pytest.mark.parametrize("kw", [dict(num_layers=2, bidirectional=True),
                                dict(batch_first=True, bias=False)])
def test_lstm_with_projections(kw):
    """proj_size > 0: PyTorch's parameters (weight_hr_l{k}), repr, outputs, final states and
    every gradient, with and without initial states; and on a packed batch."""
    jm, tm = _pair("LSTM", input_size=I, hidden_size=H, proj_size=2, **kw)
    assert repr(jm) == repr(tm)
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    x_shape = (B, T, I) if kw.get("batch_first") else (T, B, I)
    (jx, jh, jc), (tx, th, tc) = _inputs(x_shape, (layers, B, 2), (layers, B, H), seed=5)
    _check(jm, tm, [jx, (jh, jc)], [tx, (th, tc)])
    for p in (*jm.parameters(), *tm.parameters()):
        p.grad = None
    (jx,), (tx,) = _inputs(x_shape, seed=6)
    pk = dict(batch_first=kw.get("batch_first", False), enforce_sorted=False)
    jp = nn.utils.rnn.pack_padded_sequence(jx, [T, 2], **pk)
    tp = torch.nn.utils.rnn.pack_padded_sequence(tx, [T, 2], **pk)
    (jo, (jhn, jcn)), (to, (thn, tcn)) = jm(jp), tm(tp)
    for a, b in ((jo.data, to.data), (jhn, thn), (jcn, tcn)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=RTOL, atol=ATOL)
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        jm(jx, (flow.zeros(layers, B, H), flow.zeros(layers, B, H)))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(I, H, proj_size=H)
