"""Packed sequences against PyTorch: ``pack_padded_sequence`` / ``pad_packed_sequence`` /
``pack_sequence`` / ``unpack_sequence`` give PyTorch's fields and values, and ``nn.RNN`` /
``LSTM`` / ``GRU`` on a packed batch give PyTorch's packed output, final states and every
gradient (input data, initial states, parameters), for sorted and unsorted batches.

Shapes are shared (T=5, B=3, I=3, H=4) so the per-op XLA compiles are reused."""

import numpy as np
import pytest

import jflow as flow
import jflow.nn as nn
from jflow.nn.utils import rnn as frnn

torch = pytest.importorskip("torch")
trnn = torch.nn.utils.rnn

T, B, I, H = 5, 3, 3, 4
RTOL, ATOL = 1e-6, 1e-8


def _close(a, b):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


def _same_fields(fp, tp):
    _close(fp.data, tp.data)
    assert fp.batch_sizes.tolist() == tp.batch_sizes.tolist()
    assert fp.batch_sizes.dtype == flow.int64 and fp.batch_sizes.device.type == "cpu"
    for f, t in ((fp.sorted_indices, tp.sorted_indices),
                 (fp.unsorted_indices, tp.unsorted_indices)):
        assert (f is None) == (t is None)
        if t is not None:
            assert f.tolist() == t.tolist()


def _padded(seed, shape=(T, B, I)):
    a = np.random.default_rng(seed).standard_normal(shape)
    return flow.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("lengths,batch_first,enforce_sorted", [
    ([5, 3, 2], False, True), ([2, 5, 3], True, False), ([3, 5, 3], False, False)])
def test_pack_and_pad_match_pytorch(lengths, batch_first, enforce_sorted):
    """Fields, padded values, lengths and the gradient through pack -> pad, on random data
    (the last case has tied lengths: the sort's order must be PyTorch's)."""
    fx, tx = _padded(1, (B, T, I) if batch_first else (T, B, I))
    kw = dict(batch_first=batch_first, enforce_sorted=enforce_sorted)
    fp = frnn.pack_padded_sequence(fx, lengths, **kw)
    tp = trnn.pack_padded_sequence(tx, lengths, **kw)
    _same_fields(fp, tp)
    assert isinstance(fp, tuple) and fp._fields == tp._fields
    for kw2 in [dict(batch_first=batch_first), dict(padding_value=-2.0, total_length=7)]:
        (fo, fl), (to, tl) = frnn.pad_packed_sequence(fp, **kw2), trnn.pad_packed_sequence(tp,
                                                                                            **kw2)
        _close(fo, to)
        assert fl.tolist() == tl.tolist() and fl.dtype == flow.int64
    w = np.random.default_rng(2).standard_normal(tuple(to.shape))
    (fo * flow.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    _close(fx.grad, tx.grad)


def test_pack_sequence_and_unpack_sequence_match_pytorch():
    rng = np.random.default_rng(3)
    arrs = [rng.standard_normal((n, I)) for n in (2, 4, 1)]
    fs = [flow.tensor(a, requires_grad=True) for a in arrs]
    ts = [torch.tensor(a, requires_grad=True) for a in arrs]
    fp, tp = frnn.pack_sequence(fs, enforce_sorted=False), trnn.pack_sequence(ts,
                                                                              enforce_sorted=False)
    _same_fields(fp, tp)
    back = frnn.unpack_sequence(fp)
    for got, want in zip(back, arrs):
        np.testing.assert_array_equal(got.detach().numpy(), want)
    sum((b * b).sum() for b in back).backward()
    sum((b * b).sum() for b in trnn.unpack_sequence(tp)).backward()
    for f, t in zip(fs, ts):
        _close(f.grad, t.grad)
    # PyTorch's constructor forms; to() and casts keep batch_sizes on the CPU
    same = frnn.PackedSequence(fp.data, fp.batch_sizes, fp.sorted_indices)
    assert same.unsorted_indices.tolist() == tp.unsorted_indices.tolist()
    old = frnn.PackedSequence((fp.data, fp.batch_sizes))
    assert old.sorted_indices is None and old.batch_sizes.tolist() == [3, 2, 1, 1]
    assert fp.float().data.dtype == flow.float32 and fp.double().data.dtype == flow.float64
    assert fp.to("cpu") is fp and not fp.is_cuda and fp.float().batch_sizes.device.type == "cpu"
    assert frnn.invert_permutation(flow.tensor([2, 0, 1])).tolist() == [1, 2, 0]


def _pair(name, **kw):
    torch.manual_seed(0)
    tm = getattr(torch.nn, name)(**kw).double()
    jm = getattr(nn, name)(**kw, device="meta", dtype=flow.float64)
    jm.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()},
                       assign=True)
    return jm, tm


@pytest.mark.parametrize("name,kw,lengths,hx", [
    ("LSTM", dict(num_layers=2, bidirectional=True), [3, 5, 2], True),
    ("LSTM", dict(batch_first=True), [5, 4, 4], False),
    ("GRU", dict(num_layers=2, bidirectional=True), [2, 5, 3], True),
    ("RNN", dict(bidirectional=True, nonlinearity="relu"), [4, 2, 5], False),
])
def test_recurrent_layers_on_packed_batches_match_pytorch(name, kw, lengths, hx):
    """The packed output, the final states (each sequence's own last step; the backward
    direction's from its own end) and the gradients of the input, the initial states and
    every parameter, from a loss over all of them."""
    jm, tm = _pair(name, input_size=I, hidden_size=H, **kw)
    fx, tx = _padded(4, (B, T, I) if kw.get("batch_first") else (T, B, I))
    n_state = 2 if name == "LSTM" else 1
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    states = [_padded(5 + k, (layers, B, H)) for k in range(n_state)] if hx else []
    fh = [f for f, _ in states]
    th = [t for _, t in states]
    pk = dict(batch_first=kw.get("batch_first", False), enforce_sorted=False)
    fp = frnn.pack_padded_sequence(fx, lengths, **pk)
    tp = trnn.pack_padded_sequence(tx, lengths, **pk)
    args_f = [fp] + ([tuple(fh) if n_state == 2 else fh[0]] if hx else [])
    args_t = [tp] + ([tuple(th) if n_state == 2 else th[0]] if hx else [])
    (fo, fs), (to, ts) = jm(*args_f), tm(*args_t)
    assert isinstance(fo, frnn.PackedSequence)
    _same_fields(fo, to)
    fs, ts = (fs if n_state == 2 else (fs,)), (ts if n_state == 2 else (ts,))
    for a, b in zip(fs, ts):
        _close(a, b)
    w = np.random.default_rng(9).standard_normal(tuple(to.data.shape))
    loss_f = (fo.data * flow.tensor(w)).sum() + sum((s * s).sum() for s in fs)
    loss_t = (to.data * torch.tensor(w)).sum() + sum((s * s).sum() for s in ts)
    loss_f.backward()
    loss_t.backward()
    for a, b in zip([fx, *fh], [tx, *th]):
        _close(a.grad, b.grad)
    tp_ = dict(tm.named_parameters())
    for k, p in jm.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), tp_[k].grad.numpy(), rtol=RTOL, atol=ATOL,
                                   err_msg=k)


def test_packed_lstm_under_jit_equals_eager():
    """Packing inside flow.jit with lengths as a Python list: the compiled step's loss and
    gradients equal eager ones."""
    jm, _ = _pair("LSTM", input_size=I, hidden_size=H)
    x = flow.tensor(np.random.default_rng(6).standard_normal((T, B, I)))
    lengths = [5, 3, 2]

    def loss_of(x):
        out, (h, c) = jm(frnn.pack_padded_sequence(x, lengths))
        padded, _ = frnn.pad_packed_sequence(out)
        return (padded * padded).sum() + (h * c).sum()

    @flow.jit
    def step(x):
        loss = loss_of(x)
        loss.backward()
        return loss

    got = float(step(x))
    grads = {k: p.grad.numpy().copy() for k, p in jm.named_parameters()}
    for p in jm.parameters():
        p.grad = None
    want = loss_of(x)
    want.backward()
    np.testing.assert_allclose(got, float(want), rtol=RTOL)
    for k, p in jm.named_parameters():
        np.testing.assert_allclose(grads[k], p.grad.numpy(), rtol=RTOL, atol=ATOL, err_msg=k)


def test_errors_name_the_function_and_the_argument():
    x = flow.zeros(T, B, I)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        frnn.pack_padded_sequence(x, [2, 5, 3])
    with pytest.raises(RuntimeError, match="greater than 0"):
        frnn.pack_padded_sequence(x, [5, 3, 0])
    with pytest.raises(ValueError, match="batch_size"):
        frnn.pack_padded_sequence(x, [5, 3])
    with pytest.raises(RuntimeError, match="exceeds"):
        frnn.pack_padded_sequence(x, [6, 3, 2])
    with pytest.raises(TypeError, match="lengths must hold integers"):
        frnn.pack_padded_sequence(x, flow.tensor([5.0, 3.0, 2.0]))
    packed = frnn.pack_padded_sequence(x, [5, 3, 2])
    with pytest.raises(ValueError, match="total_length=4"):
        frnn.pad_packed_sequence(packed, total_length=4)
    with pytest.raises(TypeError, match="PackedSequence"):
        frnn.pad_packed_sequence(x)
    with pytest.raises(TypeError, match="lengths must be known on the host"):
        flow.jit(lambda x, n: frnn.pack_padded_sequence(x, n).data)(x, flow.tensor([5, 3, 2]))
    m = nn.GRU(I, H)
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        m(packed, flow.zeros(1, 2, H))
    with pytest.raises(RuntimeError, match="input_size"):
        m(frnn.pack_padded_sequence(flow.zeros(T, B, I + 1), [5, 3, 2]))
    with pytest.raises(TypeError, match="GRUCell: expected a Tensor input"):
        nn.GRUCell(I, H)(packed)
