"""The issue-6 functional ops (linear, norms, dropout, embedding, losses) against PyTorch
(values and gradients, when PyTorch is installed), and their jflow-specific behaviour."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow

torch = pytest.importorskip("torch")
F = torch.nn.functional

_rng = np.random.default_rng(5)


def _pair(*shape, scale=1.0):
    a = (_rng.standard_normal(shape) * scale).astype(np.float64)
    t = flow.tensor(a, requires_grad=True)
    return t, torch.tensor(a, requires_grad=True)


def _close(a, b, tol=1e-9):
    np.testing.assert_allclose(np.asarray(a.detach().numpy() if hasattr(a, "detach") else a),
                               b.detach().numpy(), rtol=tol, atol=tol)


def _check(fj, ft, jins, tins):
    yj, yt = fj(*jins), ft(*tins)
    _close(yj.detach().numpy(), yt)
    ct = _rng.standard_normal(tuple(yt.shape))
    (yj * flow.tensor(ct)).sum().backward()
    (yt * torch.tensor(ct)).sum().backward()
    for a, b in zip(jins, tins):
        if isinstance(b, torch.Tensor) and b.requires_grad:
            _close(a.grad.numpy(), b.grad)


def test_linear():
    (x, xt), (w, wt), (b, bt) = _pair(2, 3, 4), _pair(5, 4), _pair(5)
    _check(flow._C.linear, F.linear, [x, w, b], [xt, wt, bt])
    (x, xt), (w, wt) = _pair(4), _pair(2, 4)
    _check(flow._C.linear, F.linear, [x, w], [xt, wt])


def test_norms():
    (x, xt), (w, wt), (b, bt) = _pair(3, 2, 4, scale=3.0), _pair(2, 4), _pair(2, 4)
    _check(lambda *a: flow._C.layer_norm(a[0], [2, 4], *a[1:]),
           lambda *a: F.layer_norm(a[0], [2, 4], *a[1:]), [x, w, b], [xt, wt, bt])
    (x, xt), (w, wt) = _pair(3, 5), _pair(5)
    _check(lambda a, c: flow._C.rms_norm(a, [5], c, eps=1e-6),
           lambda a, c: F.rms_norm(a, [5], c, eps=1e-6), [x, w], [xt, wt])
    (x, xt), (w, wt), (b, bt) = _pair(2, 6, 3), _pair(6), _pair(6)
    _check(lambda *a: flow._C.group_norm(a[0], 3, *a[1:]),
           lambda *a: F.group_norm(a[0], 3, *a[1:]), [x, w, b], [xt, wt, bt])
    with pytest.raises(RuntimeError, match="normalized_shape"):
        flow._C.layer_norm(flow.randn(2, 3), [4])


def test_embedding_padding_row_gets_no_gradient():
    w0 = _rng.standard_normal((6, 3))
    idx = np.array([[1, 0, 1], [4, 1, 5]])
    w = flow.tensor(w0, requires_grad=True)
    wt = torch.tensor(w0, requires_grad=True)
    _check(lambda a: flow._C.embedding(flow.tensor(idx), a, padding_idx=1),
           lambda a: F.embedding(torch.tensor(idx), a, padding_idx=1), [w], [wt])
    assert np.all(w.grad.numpy()[1] == 0)
    with pytest.raises(IndexError, match="out of bounds"):
        flow._C.embedding(flow.tensor([6]), w)


def test_dropout_mask_reused_and_reproducible():
    x = flow.ones(200, 50, requires_grad=True)
    g = flow.Generator().manual_seed(3)
    y = flow._C.dropout(x, 0.25, generator=g)
    kept = y.detach().numpy() != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.75)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 1 / 0.75, 0.0))
    y2 = flow._C.dropout(x, 0.25, generator=flow.Generator().manual_seed(3))
    np.testing.assert_array_equal(y2.detach().numpy(), y.detach().numpy())
    assert flow._C.dropout(x, 0.25, training=False) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        flow._C.dropout(x, 1.5)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_losses(reduction):
    (x, xt), (t, tt) = _pair(3, 4), _pair(3, 4)
    _check(lambda a, b: flow._C.mse_loss(a, b, reduction),
           lambda a, b: F.mse_loss(a, b, reduction=reduction), [x, t], [xt, tt])
    (x, xt), (t, tt) = _pair(3, 4), _pair(3, 4)
    _check(lambda a, b: flow._C.l1_loss(a, b, reduction),
           lambda a, b: F.l1_loss(a, b, reduction=reduction), [x, t], [xt, tt])
    # PyTorch has no gradient for weight and pos_weight (jflow has: the op checker checks it)
    w, pw = _rng.uniform(size=(3, 1)), _rng.uniform(0.5, 2.0, size=(4,))
    (x, xt), (t, tt) = _pair(3, 4), _pair(3, 4)
    _check(lambda a, b: flow._C.binary_cross_entropy_with_logits(
               a, b, flow.tensor(w), reduction=reduction, pos_weight=flow.tensor(pw)),
           lambda a, b: F.binary_cross_entropy_with_logits(
               a, b, torch.tensor(w), reduction=reduction, pos_weight=torch.tensor(pw)),
           [x, t], [xt, tt])


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_and_nll(reduction, smoothing, weighted):
    tgt = np.array([[0, 2], [3, -100], [1, 1]])          # (N=3, d=2), C = 4
    (x, xt) = _pair(3, 4, 2)
    w0 = _rng.uniform(0.5, 1.5, 4)
    wj = flow.tensor(w0) if weighted else None
    wt = torch.tensor(w0) if weighted else None
    _check(lambda a: flow._C.cross_entropy(a, flow.tensor(tgt), wj, reduction=reduction,
                                           label_smoothing=smoothing),
           lambda a: F.cross_entropy(a, torch.tensor(tgt), wt, reduction=reduction,
                                     label_smoothing=smoothing), [x], [xt])
    (x, xt) = _pair(3, 4, 2)
    _check(lambda a: flow._C.nll_loss(a, flow.tensor(tgt), wj, ignore_index=-100,
                                      reduction=reduction),
           lambda a: F.nll_loss(a, torch.tensor(tgt), wt, reduction=reduction), [x], [xt])
    # class-probability targets
    probs = _rng.dirichlet(np.ones(4), size=(3,))
    (x, xt) = _pair(3, 4)
    _check(lambda a: flow._C.cross_entropy(a, flow.tensor(probs), wj, reduction=reduction,
                                           label_smoothing=smoothing),
           lambda a: F.cross_entropy(a, torch.tensor(probs), wt, reduction=reduction,
                                     label_smoothing=smoothing), [x], [xt])


def test_cross_entropy_errors():
    x = flow.randn(3, 4)
    with pytest.raises(IndexError, match="out of bounds"):
        flow._C.cross_entropy(x, flow.tensor([0, 4, 1]))
    with pytest.raises(ValueError, match="reduction"):
        flow._C.cross_entropy(x, flow.tensor([0, 1, 1]), reduction="avg")
