"""Pooling in 1, 2 and 3 spatial dims against PyTorch on random inputs: avg / max (with
indices) / adaptive avg / adaptive max / lp pools, forward values, indices and input
gradients through ``.backward()``, the modules, unbatched inputs and error messages."""

import numpy as np
import pytest

import jflow as flow
import jflow.nn.functional as F
from jflow import nn

torch = pytest.importorskip("torch")
TF = torch.nn.functional

_rng = np.random.default_rng(7)
_SHAPES = {1: (2, 3, 9), 2: (2, 3, 7, 6), 3: (1, 2, 5, 6, 4)}


def _x(*shape):
    return _rng.standard_normal(shape).astype(np.float32)


def _compare(fn_j, fn_t, x, args=(), kw=None, n_out=1, rtol=1e-5, atol=1e-5):
    """Forward (and indices) and the input gradient of ``fn(x, *args, **kw)`` against
    PyTorch."""
    xj, xt = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yj, yt = fn_j(xj, *args, **(kw or {})), fn_t(xt, *args, **(kw or {}))
    if n_out == 2:
        (yj, ij), (yt, it) = yj, yt
        np.testing.assert_array_equal(ij.numpy(), it.numpy())
    np.testing.assert_allclose(yj.detach().numpy(), yt.detach().numpy(), rtol=rtol, atol=atol)
    g = _x(*yt.shape)
    yj.backward(flow.tensor(g))
    yt.backward(torch.tensor(g))
    np.testing.assert_allclose(xj.grad.numpy(), xt.grad.numpy(), rtol=rtol, atol=atol)


def _combo(nd, rng, dilation=False):
    """Random kernel / stride / padding (/ dilation) per spatial dim that PyTorch accepts."""
    k = [int(rng.integers(1, 4)) for _ in range(nd)]
    s = [int(rng.integers(1, 4)) for _ in range(nd)]
    p = [int(rng.integers(0, kk // 2 + 1)) for kk in k]
    d = [int(rng.integers(1, 3)) for _ in range(nd)] if dilation else [1] * nd
    return k, s, p, d


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_avg_pool_random(nd):
    rng = np.random.default_rng(nd)
    x = _x(*_SHAPES[nd])
    fj, ft = getattr(F, f"avg_pool{nd}d"), getattr(TF, f"avg_pool{nd}d")
    for _ in range(4):
        k, s, p, _ = _combo(nd, rng)
        ceil, cip = bool(rng.integers(2)), bool(rng.integers(2))
        kw = {"ceil_mode": ceil, "count_include_pad": cip}
        if nd > 1 and rng.integers(2):
            kw["divisor_override"] = int(rng.integers(1, 5))
        _compare(fj, ft, x, (k, s, p), kw)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_random_with_indices(nd):
    rng = np.random.default_rng(10 + nd)
    x = _x(*_SHAPES[nd])
    fj, ft = getattr(F, f"max_pool{nd}d"), getattr(TF, f"max_pool{nd}d")
    for _ in range(4):
        k, s, p, d = _combo(nd, rng, dilation=True)
        ceil = bool(rng.integers(2))
        _compare(fj, ft, x, (k, s, p, d), {"ceil_mode": ceil, "return_indices": True}, 2)
    k, s, p, d = _combo(nd, rng, dilation=True)
    _compare(fj, ft, x, (k, s, p, d))
    wj = getattr(F, f"max_pool{nd}d_with_indices")
    wt = getattr(TF, f"max_pool{nd}d_with_indices")
    _compare(wj, wt, x, (k, s, p, d), n_out=2)


def test_top_level_names():
    x = _x(2, 3, 9)
    for name in ("avg_pool1d", "max_pool1d", "max_pool3d", "adaptive_avg_pool1d"):
        assert callable(getattr(flow, name))
    yj, ij = flow.max_pool1d_with_indices(flow.tensor(x), 3, 2, 1)
    yt, it = torch.max_pool1d_with_indices(torch.tensor(x), 3, 2, 1)
    np.testing.assert_array_equal(ij.numpy(), it.numpy())
    yj, ij = flow.adaptive_max_pool1d(flow.tensor(x), 4)
    yt, it = torch.adaptive_max_pool1d(torch.tensor(x), 4)
    np.testing.assert_allclose(yj.detach().numpy(), yt.detach().numpy())
    np.testing.assert_array_equal(ij.numpy(), it.numpy())
    np.testing.assert_allclose(flow.avg_pool1d(flow.tensor(x), 3, 2).numpy(),
                               torch.avg_pool1d(torch.tensor(x), 3, 2).numpy(), rtol=1e-6)


_ADAPTIVE = {1: [4, 12], 2: [(3, 4), (None, 2)], 3: [(2, 3, 3), (5, None, 1)]}


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_adaptive_pools(nd):
    x = _x(*_SHAPES[nd])
    for os in _ADAPTIVE[nd]:
        aj, at = getattr(F, f"adaptive_avg_pool{nd}d"), getattr(TF, f"adaptive_avg_pool{nd}d")
        _compare(aj, at, x, (os,))
        mj, mt = getattr(F, f"adaptive_max_pool{nd}d"), getattr(TF, f"adaptive_max_pool{nd}d")
        _compare(mj, mt, x, (os,), {"return_indices": True}, 2)
        _compare(mj, mt, x, (os,))


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_lp_pool(nd):
    rng = np.random.default_rng(20 + nd)
    x = _x(*_SHAPES[nd])
    fj, ft = getattr(F, f"lp_pool{nd}d"), getattr(TF, f"lp_pool{nd}d")
    for p_norm in (2.0, 3.0, 1.5):
        k = [int(rng.integers(1, 4)) for _ in range(nd)]
        s = None if rng.integers(2) else [int(rng.integers(1, 4)) for _ in range(nd)]
        if nd == 1:  # torch's lp_pool1d takes ints only
            k, s = k[0], (s if s is None else s[0])
        ceil = bool(rng.integers(2))
        xx = np.abs(x) + 0.1 if p_norm == 1.5 else x  # x^1.5 is NaN for x < 0 (both)
        _compare(fj, ft, xx, (p_norm, k, s, ceil), rtol=1e-4, atol=1e-5)


def test_modules_and_unbatched():
    cases = [
        (nn.AvgPool1d(3, 2, 1, ceil_mode=True), torch.nn.AvgPool1d(3, 2, 1, ceil_mode=True), 1),
        (nn.AvgPool3d(2, (1, 2, 2), 1, count_include_pad=False, divisor_override=None),
         torch.nn.AvgPool3d(2, (1, 2, 2), 1, count_include_pad=False), 3),
        (nn.MaxPool1d(3, 2, 1, dilation=2), torch.nn.MaxPool1d(3, 2, 1, dilation=2), 1),
        (nn.MaxPool3d(2, 2, 1, ceil_mode=True), torch.nn.MaxPool3d(2, 2, 1, ceil_mode=True), 3),
        (nn.AdaptiveAvgPool1d(4), torch.nn.AdaptiveAvgPool1d(4), 1),
        (nn.AdaptiveAvgPool3d((2, None, 3)), torch.nn.AdaptiveAvgPool3d((2, None, 3)), 3),
        (nn.AdaptiveMaxPool1d(4), torch.nn.AdaptiveMaxPool1d(4), 1),
        (nn.AdaptiveMaxPool2d((3, None)), torch.nn.AdaptiveMaxPool2d((3, None)), 2),
        (nn.AdaptiveMaxPool3d(2), torch.nn.AdaptiveMaxPool3d(2), 3),
        (nn.LPPool1d(2, 3, 2), torch.nn.LPPool1d(2, 3, 2), 1),
        (nn.LPPool2d(2, (2, 3), ceil_mode=True), torch.nn.LPPool2d(2, (2, 3), ceil_mode=True), 2),
        (nn.LPPool3d(3, 2), torch.nn.LPPool3d(3, 2), 3),
    ]
    for i, (mine, theirs, nd) in enumerate(cases):
        shape = _SHAPES[nd][1:] if i % 2 else _SHAPES[nd]  # unbatched / batched
        _compare(mine, theirs, _x(*shape), rtol=1e-4, atol=1e-5)
    for mine, theirs, nd in [(nn.MaxPool3d(3, 2, 1, return_indices=True),
                              torch.nn.MaxPool3d(3, 2, 1, return_indices=True), 3),
                             (nn.AdaptiveMaxPool3d((2, 3, 2), return_indices=True),
                              torch.nn.AdaptiveMaxPool3d((2, 3, 2), return_indices=True), 3),
                             (nn.MaxPool1d(2, return_indices=True),
                              torch.nn.MaxPool1d(2, return_indices=True), 1)]:
        _compare(mine, theirs, _x(*_SHAPES[nd][1:]), n_out=2)
    for m in (nn.MaxPool1d(2), nn.AvgPool3d(2), nn.AdaptiveMaxPool2d(1), nn.LPPool2d(2, 2)):
        assert list(m.state_dict()) == [] and len(list(m.parameters())) == 0


def test_ties_and_minus_inf_take_the_first_position():
    x = np.full((1, 1, 4, 4), -np.inf, np.float32)
    x[0, 0, 3, 3] = 1.0
    for kw in ({"kernel_size": 3, "stride": 1, "padding": 1}, {"kernel_size": 2}):
        yj, ij = F.max_pool2d(flow.tensor(x), return_indices=True, **kw)
        yt, it = TF.max_pool2d(torch.tensor(x), return_indices=True, **kw)
        np.testing.assert_array_equal(ij.numpy(), it.numpy())
        np.testing.assert_array_equal(yj.detach().numpy(), yt.detach().numpy())
    z = np.zeros((1, 2, 6), np.float32)
    np.testing.assert_array_equal(F.max_pool1d(flow.tensor(z), 3, return_indices=True)[1].numpy(),
                                  TF.max_pool1d(torch.tensor(z), 3, return_indices=True)[1].numpy())


def test_errors():
    x1, x3 = flow.tensor(_x(2, 3, 9)), flow.tensor(_x(1, 2, 5, 6, 4))
    with pytest.raises(RuntimeError, match=r"max_pool1d\(\): expected a 2-d \(unbatched\) or "
                                           r"3-d \(batched\) input"):
        F.max_pool1d(flow.tensor(_x(2, 3, 4, 4)), 2)
    with pytest.raises(RuntimeError, match=r"avg_pool3d\(\): expected a 4-d .* or 5-d"):
        F.avg_pool3d(x1, 2)
    with pytest.raises(ValueError, match=r"max_pool3d\(\): kernel_size must be an int or 3 ints"):
        F.max_pool3d(x3, (2, 2))
    with pytest.raises(ValueError, match=r"avg_pool1d\(\): kernel_size must be positive"):
        F.avg_pool1d(x1, 0)
    with pytest.raises(ValueError, match=r"max_pool1d\(\): dilation must be positive"):
        F.max_pool1d(x1, 2, dilation=0)
    with pytest.raises(ValueError, match="padding must be 1 non-negative ints of at most half"):
        F.max_pool1d(x1, 2, padding=2)
    with pytest.raises(ValueError, match="larger than the padded input"):
        F.avg_pool3d(x3, (6, 1, 1))
    with pytest.raises(ValueError, match=r"adaptive_max_pool3d\(\): output_size must be "
                                         r"positive"):
        F.adaptive_max_pool3d(x3, (2, 0, 1))
    with pytest.raises(ValueError, match=r"adaptive_avg_pool1d\(\): output_size must be an int "
                                         r"or 1 ints"):
        F.adaptive_avg_pool1d(x1, (2, 3))
    with pytest.raises(ValueError, match=r"lp_pool2d\(\): norm_type must be a finite non-zero"):
        F.lp_pool2d(flow.tensor(_x(1, 2, 4, 4)), float("inf"), 2)
    with pytest.raises(TypeError, match=r"avg_pool1d\(\): expected a floating point input"):
        F.avg_pool1d(flow.tensor(np.ones((1, 2, 4), np.int64)), 2)
