"""nn.Conv1d/Conv2d/ConvTranspose2d, pooling layers, Upsample and BatchNorm1d/2d: shapes,
parameter counts, state_dict keys, default initialisation bounds, train/eval behaviour, and
(when PyTorch is installed) numerics against torch with copied weights. Op-level checks of
the underlying ops are the checker's (jflow/testing/op_samples/{conv,pool}.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import jflow as flow
import jflow.nn as nn

_rng = np.random.default_rng(5)


def _x(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def t(a):
    return flow.tensor(np.asarray(a))


def _n_params(m):
    return sum(p.numel() for p in m.parameters())


# -- conv layers ---------------------------------------------------------------------------------

def test_conv_shapes_params_and_keys():
    c2 = nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2)
    assert tuple(c2.weight.shape) == (6, 2, 3, 3)
    assert _n_params(c2) == 6 * 2 * 9 + 6
    assert list(c2.state_dict()) == ["weight", "bias"]
    assert tuple(c2(t(_x(2, 4, 7, 7))).shape) == (2, 6, 4, 4)
    c1 = nn.Conv1d(3, 5, 3, padding="same", bias=False)
    assert list(c1.state_dict()) == ["weight"] and c1.bias is None
    assert tuple(c1(t(_x(2, 3, 8))).shape) == (2, 5, 8)
    ct = nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, output_padding=1, groups=2)
    assert tuple(ct.weight.shape) == (4, 3, 3, 2)
    assert _n_params(ct) == 4 * 3 * 3 * 2 + 6
    assert tuple(ct(t(_x(2, 4, 3, 3))).shape) == (2, 6, 6, 5)
    assert tuple(ct(t(_x(4, 3, 3))).shape) == (6, 6, 5)  # unbatched


def test_conv_default_init_bounds():
    c = nn.Conv2d(3, 8, 3)
    bound = 1 / math.sqrt(3 * 9)  # kaiming_uniform(a=sqrt(5)) == U(+-1/sqrt(fan_in))
    w, b = c.weight.detach().numpy(), c.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.5 * bound
    assert np.abs(b).max() <= bound
    ct = nn.ConvTranspose2d(3, 8, 3)  # fan_in from weight.shape[1] = out_channels
    assert np.abs(ct.weight.detach().numpy()).max() <= 1 / math.sqrt(8 * 9)


def test_conv_argument_errors():
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 6, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(3, 6, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(3, 6, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="zeros"):
        nn.ConvTranspose2d(3, 6, 3, padding_mode="reflect")
    ct = nn.ConvTranspose2d(2, 2, 3, stride=2)
    with pytest.raises(ValueError, match="valid sizes"):
        ct(t(_x(1, 2, 3, 3)), output_size=[9, 9])


def test_conv_transpose_output_size_and_backward():
    ct = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    x = t(_x(1, 2, 4, 4)).requires_grad_()
    y = ct(x, output_size=[8, 8])
    assert tuple(y.shape) == (1, 3, 8, 8)
    y.sum().backward()
    assert tuple(x.grad.shape) == (1, 2, 4, 4) and tuple(ct.weight.grad.shape) == (2, 3, 3, 3)


def test_conv_transpose_second_derivative():
    """conv_transpose2d's rule is built from conv ops with rules: grad of grad works."""
    x = t(_x(1, 2, 3, 3).astype(np.float64)).requires_grad_()
    w = t(_x(2, 2, 2, 2).astype(np.float64)).requires_grad_()
    y = flow.nn.functional.conv_transpose2d(x, w, stride=2, output_padding=1)
    (gx,) = flow.autograd.grad((y * y).sum(), [x], create_graph=True)
    (gw,) = flow.autograd.grad(gx.sum(), [w])
    # d/dw sum_x d/dx sum y^2 = d/dw sum(2 * T^T T x): compare with finite differences
    def f(wv):
        xx = t(x.detach().numpy()).requires_grad_()
        yy = flow.nn.functional.conv_transpose2d(xx, t(wv), stride=2, output_padding=1)
        (g,) = flow.autograd.grad((yy * yy).sum(), [xx])
        return float(g.sum().numpy())
    w0, eps = w.detach().numpy(), 1e-6
    num = np.zeros_like(w0)
    for i in np.ndindex(w0.shape):
        d = np.zeros_like(w0)
        d[i] = eps
        num[i] = (f(w0 + d) - f(w0 - d)) / (2 * eps)
    np.testing.assert_allclose(gw.numpy(), num, rtol=1e-5, atol=1e-6)


def test_conv_layers_match_torch():
    torch = pytest.importorskip("torch")
    cases = [
        (nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2, device="meta"),
         torch.nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2), _x(2, 4, 7, 6)),
        (nn.Conv2d(3, 4, (3, 2), padding=(1, 2), padding_mode="reflect", dilation=(1, 2),
                   device="meta"),
         torch.nn.Conv2d(3, 4, (3, 2), padding=(1, 2), padding_mode="reflect",
                         dilation=(1, 2)), _x(2, 3, 5, 6)),
        (nn.Conv1d(3, 5, 3, padding="same", padding_mode="circular", device="meta"),
         torch.nn.Conv1d(3, 5, 3, padding="same", padding_mode="circular"), _x(2, 3, 8)),
        (nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, output_padding=1, groups=2,
                            device="meta"),
         torch.nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, output_padding=1,
                                  groups=2), _x(2, 4, 3, 3)),
        (nn.ConvTranspose2d(3, 2, 2, dilation=2, output_padding=1, bias=False, device="meta"),
         torch.nn.ConvTranspose2d(3, 2, 2, dilation=2, output_padding=1, bias=False),
         _x(1, 3, 3, 4)),
    ]
    for mine, theirs, x in cases:
        assert list(mine.state_dict()) == list(theirs.state_dict())
        assert _n_params(mine) == sum(p.numel() for p in theirs.parameters())
        # torch's values into jflow's twin, built on the meta device: jflow's random
        # initialisation (a compiled draw per parameter shape) is test_conv_default_init_bounds'
        mine.load_state_dict({k: t(v.detach().numpy()) for k, v in theirs.state_dict().items()},
                             assign=True)
        xm, xt = t(x).requires_grad_(), torch.tensor(x, requires_grad=True)
        ym, yt = mine(xm), theirs(xt)
        np.testing.assert_allclose(ym.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
        gy = _x(*yt.shape)
        ym.backward(t(gy))
        yt.backward(torch.tensor(gy))
        np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(mine.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                   rtol=1e-5, atol=1e-4)


# -- pooling and upsample ------------------------------------------------------------------------

def test_pool_layers_shapes():
    x = t(_x(2, 3, 7, 6))
    assert tuple(nn.MaxPool2d(2)(x).shape) == (2, 3, 3, 3)
    assert tuple(nn.MaxPool2d(2, ceil_mode=True)(x).shape) == (2, 3, 4, 3)
    y, idx = nn.MaxPool2d(3, 2, 1, return_indices=True)(x)
    assert tuple(y.shape) == tuple(idx.shape) == (2, 3, 4, 3) and idx.dtype == flow.int64
    assert tuple(nn.AvgPool2d(3, 2, ceil_mode=True)(x).shape) == (2, 3, 3, 3)
    assert tuple(nn.AdaptiveAvgPool2d((2, None))(x).shape) == (2, 3, 2, 6)
    assert tuple(nn.Upsample(scale_factor=2)(x).shape) == (2, 3, 14, 12)
    assert tuple(nn.Upsample(size=5, mode="linear")(t(_x(2, 3, 4))).shape) == (2, 3, 5)
    for m in (nn.MaxPool2d(2), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1), nn.Upsample(size=3)):
        assert _n_params(m) == 0 and list(m.state_dict()) == []


def test_pool_layers_match_torch():
    torch = pytest.importorskip("torch")
    x = _x(2, 3, 7, 6)
    pairs = [(nn.MaxPool2d(3, 2, 1, ceil_mode=True), torch.nn.MaxPool2d(3, 2, 1, ceil_mode=True)),
             (nn.AvgPool2d(3, 2, 1, ceil_mode=True), torch.nn.AvgPool2d(3, 2, 1, ceil_mode=True)),
             (nn.AvgPool2d(2, 3, 1, ceil_mode=True, count_include_pad=False),
              torch.nn.AvgPool2d(2, 3, 1, ceil_mode=True, count_include_pad=False)),
             (nn.AvgPool2d(3, 2, ceil_mode=True, divisor_override=4),
              torch.nn.AvgPool2d(3, 2, ceil_mode=True, divisor_override=4)),
             (nn.AdaptiveAvgPool2d((3, 4)), torch.nn.AdaptiveAvgPool2d((3, 4))),
             (nn.Upsample(scale_factor=(1.5, 2.5), mode="bilinear"),
              torch.nn.Upsample(scale_factor=(1.5, 2.5), mode="bilinear")),
             (nn.Upsample(size=(4, 9), mode="bilinear", align_corners=True),
              torch.nn.Upsample(size=(4, 9), mode="bilinear", align_corners=True)),
             (nn.Upsample(scale_factor=1.7), torch.nn.Upsample(scale_factor=1.7))]
    for mine, theirs in pairs:
        xm, xt = t(x).requires_grad_(), torch.tensor(x, requires_grad=True)
        ym, yt = mine(xm), theirs(xt)
        np.testing.assert_allclose(ym.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-6)
        gy = _x(*yt.shape)
        ym.backward(t(gy))
        yt.backward(torch.tensor(gy))
        np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-5)


# -- batch norm ----------------------------------------------------------------------------------

def test_batchnorm_params_buffers_keys():
    bn = nn.BatchNorm2d(3)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                     "num_batches_tracked"]
    assert _n_params(bn) == 6
    assert bn.num_batches_tracked.dtype == flow.int64
    np.testing.assert_array_equal(bn.running_var.numpy(), np.ones(3, np.float32))
    bare = nn.BatchNorm1d(4, affine=False, track_running_stats=False)
    assert list(bare.state_dict()) == [] and _n_params(bare) == 0
    with pytest.raises(ValueError, match="expected 4D input"):
        bn(t(_x(2, 3, 4)))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.BatchNorm1d(3)(t(_x(2, 3, 4, 4)))


def test_batchnorm_running_stats_and_eval():
    """Three training steps update running_mean/var (unbiased) and num_batches_tracked;
    eval mode normalises with the running statistics."""
    bn = nn.BatchNorm2d(3, momentum=0.2)
    xs = [_x(4, 3, 2, 2) * (i + 1) + i for i in range(3)]
    rm, rv = np.zeros(3), np.ones(3)
    for x in xs:
        bn(t(x))
        flat = np.moveaxis(x.astype(np.float64), 1, 0).reshape(3, -1)
        rm = 0.8 * rm + 0.2 * flat.mean(1)
        rv = 0.8 * rv + 0.2 * flat.var(1, ddof=1)
    assert int(bn.num_batches_tracked.item()) == 3
    np.testing.assert_allclose(bn.running_mean.numpy(), rm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), rv, rtol=1e-5, atol=1e-6)
    bn.eval()
    x = _x(2, 3, 2, 2)
    want = (x - rm.reshape(1, 3, 1, 1)) / np.sqrt(rv.reshape(1, 3, 1, 1) + 1e-5)
    np.testing.assert_allclose(bn(t(x)).detach().numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bn.running_mean.numpy(), rm, rtol=1e-5, atol=1e-6)  # unchanged
    # cumulative moving average
    cma = nn.BatchNorm1d(3, momentum=None)
    for x in xs:
        cma(t(x[:, :, 0, 0]))
    np.testing.assert_allclose(cma.running_mean.numpy(),
                               np.mean([x[:, :, 0, 0].mean(0) for x in xs], 0), rtol=1e-5,
                               atol=1e-6)


def test_batchnorm_matches_torch():
    torch = pytest.importorskip("torch")
    for mine, theirs, shape in [(nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3), (4, 3, 3, 2)),
                                (nn.BatchNorm1d(3, momentum=None, affine=False),
                                 torch.nn.BatchNorm1d(3, momentum=None, affine=False), (5, 3, 2)),
                                (nn.BatchNorm1d(4), torch.nn.BatchNorm1d(4), (6, 4))]:
        with torch.no_grad():
            for p in theirs.parameters():
                p.uniform_(0.5, 1.5)
        if mine.affine:
            mine.load_state_dict({k: flow.tensor(v.numpy()) for k, v in
                                  theirs.state_dict().items()})
        for step in range(3):
            x = _x(*shape) * (step + 1)
            xm, xt = t(x).requires_grad_(), torch.tensor(x, requires_grad=True)
            ym, yt = mine(xm), theirs(xt)
            np.testing.assert_allclose(ym.detach().numpy(), yt.detach().numpy(), rtol=1e-4,
                                       atol=1e-5)
            ym.sum().backward() if step else (ym * ym).sum().backward()
            yt.sum().backward() if step else (yt * yt).sum().backward()
            np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-4)
        for k, v in theirs.state_dict().items():
            np.testing.assert_allclose(mine.state_dict()[k].numpy(), v.numpy(), rtol=1e-5,
                                       atol=1e-6, err_msg=k)
        mine.eval()
        theirs.eval()
        x = _x(*shape)
        np.testing.assert_allclose(mine(t(x)).detach().numpy(),
                                   theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)


def test_small_cnn_trains():
    """Conv2d + BatchNorm2d + MaxPool2d + Upsample in one model: a few SGD steps lower the
    loss, and the model is callable in eval mode."""
    flow.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Upsample(scale_factor=2, mode="bilinear"),
                          nn.ConvTranspose2d(4, 1, 3, padding=1))
    opt = flow.optim.SGD(model.parameters(), lr=0.01)
    x, target = t(_x(4, 1, 6, 6)), t(_x(4, 1, 6, 6))
    losses = []
    for _ in range(8):
        loss = ((model(x) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach().numpy()))
    assert losses[-1] < losses[0]
    model.eval()
    assert tuple(model(x).shape) == (4, 1, 6, 6)
