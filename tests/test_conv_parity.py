"""conv3d, conv_transpose1d / 3d, F.unfold / F.fold and their modules against PyTorch on random
inputs and attrs (forward, and the input / weight / bias gradients via ``.backward()``), plus
their error messages."""

from __future__ import annotations

import numpy as np
import pytest

import jflow as flow
import jflow.nn as nn
import jflow.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RS = np.random.RandomState(7)


def _parity(jfn, tfn, arrays, kwargs, *, tkwargs=None, rtol=1e-9, atol=1e-9):
    """Forward and the gradients of ``sum(out * g)`` (g random) for every array, float64."""
    js = [flow.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y = jfn(*js, **kwargs)
    t = tfn(*ts, **(kwargs if tkwargs is None else tkwargs))
    assert tuple(y.shape) == tuple(t.shape)
    np.testing.assert_allclose(y.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)
    g = RS.standard_normal(tuple(t.shape))
    # d sum(out * g) = backward from out with gradient g: no mul / sum programs per shape
    y.backward(flow.tensor(g))
    t.backward(torch.tensor(g))
    for j, tt in zip(js, ts):
        np.testing.assert_allclose(j.grad.numpy(), tt.grad.numpy(), rtol=rtol, atol=atol)


def _conv_case(nd, rs, transposed=False):
    """Random (input, weight, bias) shapes and attrs of an nd-d (transposed) convolution."""
    groups = int(rs.choice([1, 2]))
    cin, cout = groups * int(rs.randint(1, 3)), groups * int(rs.randint(1, 3))
    k = [int(rs.randint(1, 4)) for _ in range(nd)]
    s = [int(rs.randint(1, 3)) for _ in range(nd)]
    d = [int(rs.randint(1, 3)) for _ in range(nd)]
    p = [int(rs.randint(0, 3)) for _ in range(nd)]
    if transposed:
        p = [min(a, (dd * (kk - 1)) // 2) for a, dd, kk in zip(p, d, k)]
        op = [int(rs.randint(0, max(a, b))) for a, b in zip(s, d)]
        size = [int(rs.randint(1, 4)) for _ in range(nd)]
        ws = (cin, cout // groups, *k)
        attrs = dict(stride=s, padding=p, output_padding=op, groups=groups, dilation=d)
        return (2, cin, *size), ws, (cout,), attrs
    size = [max(1, dd * (kk - 1) + 1 - 2 * pp) + int(rs.randint(0, 3))
            for kk, dd, pp in zip(k, d, p)]
    ws = (cout, cin // groups, *k)
    return (2, cin, *size), ws, (cout,), dict(stride=s, padding=p, dilation=d, groups=groups)


@pytest.mark.parametrize("seed", range(3))
def test_conv3d_random(seed):
    rs = np.random.RandomState(100 + seed)
    xs, ws, bs, attrs = _conv_case(3, rs)
    arrays = [rs.standard_normal(xs), rs.standard_normal(ws), rs.standard_normal(bs)]
    _parity(flow.conv3d, TF.conv3d, arrays, attrs)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv3d_same_valid_unbatched_no_bias():
    x, w = RS.standard_normal((3, 4, 5, 4)), RS.standard_normal((2, 3, 2, 3, 2))
    _parity(flow.conv3d, TF.conv3d, [x, w], dict(padding="same", dilation=(1, 2, 1)))
    _parity(flow.conv3d, TF.conv3d, [x, w], dict(padding="valid", stride=2))


@pytest.mark.parametrize("seed", range(3))
def test_conv_transpose1d_random(seed):
    rs = np.random.RandomState(200 + seed)
    xs, ws, bs, attrs = _conv_case(1, rs, transposed=True)
    arrays = [rs.standard_normal(xs), rs.standard_normal(ws), rs.standard_normal(bs)]
    _parity(flow.conv_transpose1d, TF.conv_transpose1d, arrays, attrs)


@pytest.mark.parametrize("seed", range(3))
def test_conv_transpose3d_random(seed):
    rs = np.random.RandomState(300 + seed)
    xs, ws, bs, attrs = _conv_case(3, rs, transposed=True)
    arrays = [rs.standard_normal(xs), rs.standard_normal(ws), rs.standard_normal(bs)]
    _parity(flow.conv_transpose3d, TF.conv_transpose3d, arrays, attrs)


def test_conv_transpose_unbatched_and_output_padding_past_padding():
    # output_padding 1 > padding 0 with stride 1 (allowed by dilation 2): trailing zeros
    x, w = RS.standard_normal((2, 4)), RS.standard_normal((2, 3, 2))
    _parity(flow.conv_transpose1d, TF.conv_transpose1d, [x, w],
            dict(output_padding=1, dilation=2))
    x, w = RS.standard_normal((2, 2, 3, 2)), RS.standard_normal((2, 1, 2, 2, 2))
    _parity(flow.conv_transpose3d, TF.conv_transpose3d, [x, w],
            dict(stride=(1, 2, 1), output_padding=(1, 1, 0), dilation=(2, 1, 1)))


def _fold_case(rs):
    k = [int(rs.randint(1, 4)) for _ in range(2)]
    d = [int(rs.randint(1, 3)) for _ in range(2)]
    p = [int(rs.randint(0, 3)) for _ in range(2)]
    s = [int(rs.randint(1, 3)) for _ in range(2)]
    size = [max(1, dd * (kk - 1) + 1 - 2 * pp) + int(rs.randint(0, 4))
            for kk, dd, pp in zip(k, d, p)]
    blocks = [(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    return size, blocks, dict(kernel_size=k, dilation=d, padding=p, stride=s)


@pytest.mark.parametrize("seed", range(3))
def test_unfold_fold_random(seed):
    rs = np.random.RandomState(400 + seed)
    size, blocks, attrs = _fold_case(rs)
    c = int(rs.randint(1, 4))
    x = rs.standard_normal((2, c, *size))
    _parity(F.unfold, TF.unfold, [x], attrs)
    cols = rs.standard_normal((2, c * attrs["kernel_size"][0] * attrs["kernel_size"][1],
                               blocks[0] * blocks[1]))
    _parity(F.fold, TF.fold, [cols], dict(output_size=size, **attrs))
    if seed == 0:  # unbatched
        _parity(F.unfold, TF.unfold, [x[0]], attrs)
        _parity(F.fold, TF.fold, [cols[0]], dict(output_size=size, **attrs))


def test_unfold_fold_are_adjoint():
    x = flow.tensor(RS.standard_normal((2, 3, 6, 5)))
    cols = flow.tensor(RS.standard_normal((2, 3 * 4, 5 * 3)))
    a = dict(kernel_size=2, dilation=(1, 2), padding=(0, 1), stride=(1, 2))
    lhs = (F.unfold(x, **a) * cols).sum().item()
    rhs = (x * F.fold(cols, (6, 5), **a)).sum().item()
    assert abs(lhs - rhs) < 1e-9


def _copy_params(m, tm):
    """torch's values into ``m``, a module built on the meta device: jflow's own random
    initialisation (a compiled draw per parameter shape, overwritten here) is
    test_default_init_bounds_and_state_dict_keys' subject."""
    m.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()},
                      assign=True)
    assert m.weight.device.type == "cpu" and m.weight.requires_grad


def _module_parity(m, tm, x, **fwd):
    _copy_params(m, tm)
    y = m(flow.tensor(x), **fwd)
    t = tm(torch.tensor(x), **fwd)
    np.testing.assert_allclose(y.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)
    g = RS.standard_normal(tuple(t.shape)).astype(np.float32)
    y.backward(flow.tensor(g))  # = d sum(y * g), without mul / sum programs per shape
    t.backward(torch.tensor(g))
    np.testing.assert_allclose(m.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-4,
                               atol=1e-4)
    if tm.bias is not None:
        np.testing.assert_allclose(m.bias.grad.numpy(), tm.bias.grad.numpy(), rtol=1e-4,
                                   atol=1e-4)


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_module_padding_modes(mode):
    kw = dict(stride=(1, 2, 1), padding=(1, 0, 1), groups=2, padding_mode=mode)
    m, tm = nn.Conv3d(4, 2, (2, 3, 2), **kw, device="meta"), torch.nn.Conv3d(4, 2, (2, 3, 2),
                                                                             **kw)
    assert tuple(m.weight.shape) == tuple(tm.weight.shape) == (2, 2, 2, 3, 2)
    _module_parity(m, tm, RS.standard_normal((2, 4, 3, 5, 4)).astype(np.float32))


def test_conv_transpose_modules():
    kw = dict(stride=2, padding=1, output_padding=1, groups=2, bias=True, dilation=1)
    m, tm = nn.ConvTranspose1d(4, 6, 3, **kw, device="meta"), torch.nn.ConvTranspose1d(4, 6, 3,
                                                                                     **kw)
    assert tuple(m.weight.shape) == tuple(tm.weight.shape) == (4, 3, 3)
    _module_parity(m, tm, RS.standard_normal((2, 4, 5)).astype(np.float32))
    m, tm = nn.ConvTranspose1d(4, 6, 3, stride=3, device="meta"), \
        torch.nn.ConvTranspose1d(4, 6, 3, stride=3)
    _module_parity(m, tm, RS.standard_normal((2, 4, 5)).astype(np.float32), output_size=[15])
    kw = dict(stride=(2, 1, 2), padding=(0, 1, 1), bias=False)
    m, tm = nn.ConvTranspose3d(2, 3, 2, **kw, device="meta"), torch.nn.ConvTranspose3d(2, 3, 2,
                                                                                     **kw)
    assert m.bias is None and tuple(m.weight.shape) == (2, 3, 2, 2, 2)
    _module_parity(m, tm, RS.standard_normal((1, 2, 2, 3, 3)).astype(np.float32))
    assert repr(m) == repr(tm)


def test_default_init_bounds_and_state_dict_keys():
    for m in (nn.Conv3d(4, 5, 3), nn.ConvTranspose1d(4, 5, 3), nn.ConvTranspose3d(4, 6, 2,
                                                                                 groups=2)):
        fan_in = m.weight.shape[1] * int(np.prod(m.kernel_size))
        bound = 1 / np.sqrt(fan_in)
        assert np.abs(m.weight.detach().numpy()).max() <= bound
        assert np.abs(m.bias.detach().numpy()).max() <= bound
        assert sorted(m.state_dict()) == ["bias", "weight"]


def test_unfold_fold_modules():
    x = RS.standard_normal((2, 3, 5, 6)).astype(np.float32)
    u, tu = nn.Unfold(2, dilation=(1, 2), padding=1, stride=2), \
        torch.nn.Unfold(2, dilation=(1, 2), padding=1, stride=2)
    y = u(flow.tensor(x))
    np.testing.assert_allclose(y.numpy(), tu(torch.tensor(x)).numpy(), rtol=1e-6)
    f, tf = nn.Fold((5, 6), 2, dilation=(1, 2), padding=1, stride=2), \
        torch.nn.Fold((5, 6), 2, dilation=(1, 2), padding=1, stride=2)
    np.testing.assert_allclose(f(y).numpy(), tf(torch.tensor(y.numpy())).numpy(), rtol=1e-6)
    assert repr(u) == repr(tu) and repr(f) == repr(tf)


def _t(*shape):
    return flow.tensor(np.zeros(shape, np.float32))


def test_errors():
    x5, w5 = _t(1, 3, 4, 4, 4), _t(2, 2, 2, 2, 2)
    with pytest.raises(ValueError, match=r"conv3d.*input has 3 channels.*expects 2"):
        flow.conv3d(x5, w5)
    with pytest.raises(RuntimeError, match=r"conv3d\(\): expected a 4-d \(unbatched\) or 5-d"):
        flow.conv3d(_t(3, 4, 4), w5)
    with pytest.raises(ValueError, match=r"conv3d\(\): padding='same' is not supported for "
                                         r"strided"):
        flow.conv3d(_t(1, 2, 4, 4, 4), w5, stride=2, padding="same")
    with pytest.raises(ValueError, match=r"conv_transpose3d\(\):.*input has 3 channels.*"
                                         r"weight dim 0"):
        flow.conv_transpose3d(x5, w5)
    with pytest.raises(ValueError, match=r"conv_transpose1d\(\): output_padding must be "
                                         r"smaller than either stride or dilation.*\[2\]"):
        flow.conv_transpose1d(_t(1, 2, 4), _t(2, 3, 3), stride=2,
                              output_padding=2)
    with pytest.raises(ValueError, match=r"conv_transpose3d\(\): output_padding must be "
                                         r"smaller"):
        flow.conv_transpose3d(_t(1, 2, 2, 2, 2), w5, output_padding=(0, 1, 0))
    with pytest.raises(RuntimeError, match=r"conv_transpose1d\(\): bias must have shape "
                                           r"\(6,\)"):
        flow.conv_transpose1d(_t(1, 2, 4), _t(2, 3, 3), _t(3),
                              groups=2)
    with pytest.raises(ValueError, match=r"fold\(\): input dim 1 \(7\) must be divisible by "
                                         r"the product of kernel_size"):
        F.fold(_t(1, 7, 9), (4, 4), 2)
    with pytest.raises(ValueError, match=r"fold\(\): input dim 2 \(8\) must be the number of "
                                         r"sliding blocks 9"):
        F.fold(_t(1, 8, 8), (4, 4), 2)
    with pytest.raises(RuntimeError, match=r"unfold\(\): expected a 3-d \(unbatched\) or 4-d"):
        F.unfold(_t(2, 3, 4, 4, 4), 2)
    with pytest.raises(ValueError, match=r"unfold\(\): kernel size 5 \(dilated\) is larger"):
        F.unfold(_t(1, 2, 3, 3), 3, dilation=2)
    with pytest.raises(ValueError, match=r"unfold\(\): stride must be positive"):
        F.unfold(_t(1, 2, 3, 3), 2, stride=0)
    with pytest.raises(ValueError, match=r"ConvTranspose3d: only 'zeros' padding mode"):
        nn.ConvTranspose3d(2, 2, 2, padding_mode="reflect")
    with pytest.raises(ValueError, match=r"Conv3d: in_channels 3 must be divisible by groups"):
        nn.Conv3d(3, 4, 2, groups=2)
    with pytest.raises(ValueError, match=r"ConvTranspose1d: requested an output size of \[9\]"):
        nn.ConvTranspose1d(2, 2, 3, stride=2)(_t(1, 2, 3), output_size=[9])


def _form_case(nd, rs, form):
    """Random shapes and attrs of a depthwise (one input channel per group, out channels a
    multiple) or a 1x1 convolution: the two forms of jflow's CPU conv kernels."""
    c = int(rs.randint(1, 4))
    s = [int(rs.randint(1, 3)) for _ in range(nd)]
    p = [int(rs.randint(0, 2)) for _ in range(nd)]
    if form == "depthwise":
        k = [int(rs.randint(2, 4)) for _ in range(nd)]
        d = [int(rs.randint(1, 3)) for _ in range(nd)]
        ws, groups = (c * int(rs.randint(1, 3)), 1, *k), c
    else:
        k, d, ws, groups = [1] * nd, [1] * nd, (int(rs.randint(1, 4)), c) + (1,) * nd, 1
    size = [dd * (kk - 1) + 1 + int(rs.randint(0, 4)) for kk, dd in zip(k, d)]
    return (2, c, *size), ws, (ws[0],), dict(stride=s, padding=p, dilation=d, groups=groups)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_cpu_conv_forms_random(nd):
    """Depthwise and 1x1 convolutions, which jflow's CPU kernels compute as shifted slices
    and as a matrix product (ops/conv.py), against PyTorch: forward, input, weight and bias
    gradients, random strides, paddings, dilations and channel multipliers."""
    from jflow.ops.conv import _cpu_form

    rs = np.random.RandomState(40 + nd)
    fn = {1: (F.conv1d, TF.conv1d), 2: (F.conv2d, TF.conv2d), 3: (F.conv3d, TF.conv3d)}[nd]
    for form in ("depthwise", "pointwise"):
        xs, ws, bs, attrs = _form_case(nd, rs, form)
        assert _cpu_form((*ws[:2], *([1] if nd == 1 else []), *ws[2:]), xs[1],
                         attrs["groups"]) == form
        _parity(fn[0], fn[1], [RS.standard_normal(xs), RS.standard_normal(ws),
                               RS.standard_normal(bs)], attrs)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_cpu_depthwise_weight_grad_loop_random(nd):
    """Depthwise convolutions of at least WEIGHT_GRAD_LOOP_TAPS kernel taps, whose weight
    gradient jflow's CPU kernel runs as a loop over the taps (ops/conv.py), against PyTorch:
    random strides, paddings, dilations and channel multipliers."""
    from jflow.ops.conv import WEIGHT_GRAD_LOOP_TAPS, _cpu_form

    rs = np.random.RandomState(50 + nd)
    k = {1: [11], 2: [4, 3], 3: [3, 2, 2]}[nd]
    assert np.prod(k) >= WEIGHT_GRAD_LOOP_TAPS
    c = int(rs.randint(1, 4))
    s = [int(rs.randint(1, 4)) for _ in range(nd)]
    d = [int(rs.randint(1, 3)) for _ in range(nd)]
    p = [int(rs.randint(0, 3)) for _ in range(nd)]
    size = [dd * (kk - 1) + 1 + int(rs.randint(0, 6)) for kk, dd in zip(k, d)]
    ws = (c * int(rs.randint(1, 3)), 1, *k)
    assert _cpu_form((*ws[:2], *([1] if nd == 1 else []), *ws[2:]), c, c) == "depthwise"
    fn = {1: (F.conv1d, TF.conv1d), 2: (F.conv2d, TF.conv2d), 3: (F.conv3d, TF.conv3d)}[nd]
    _parity(fn[0], fn[1], [RS.standard_normal((2, c, *size)), RS.standard_normal(ws)],
            dict(stride=s, padding=p, dilation=d, groups=c))


def test_cpu_depthwise_conv_float32_and_bfloat16():
    """A ConvNeXt block's 7x7 depthwise convolution in float32 (its forward and gradients to
    float32 rounding) and bfloat16 (its taps summed in float32)."""
    x = RS.standard_normal((2, 6, 9, 9)).astype(np.float32)
    w = RS.standard_normal((6, 1, 7, 7)).astype(np.float32)
    _parity(F.conv2d, TF.conv2d, [x, w], dict(padding=3, groups=6), rtol=2e-5, atol=2e-5)
    y = F.conv2d(flow.tensor(x).to(flow.bfloat16), flow.tensor(w).to(flow.bfloat16),
                 padding=3, groups=6)
    t = TF.conv2d(torch.tensor(x).bfloat16(), torch.tensor(w).bfloat16(), padding=3, groups=6)
    np.testing.assert_allclose(y.to(flow.float32).numpy(), t.float().numpy(), rtol=2e-2,
                               atol=6e-2)
    # the bfloat16 weight gradient (a loop over the 49 taps, summed in float32) against
    # PyTorch's float32 one
    g = RS.standard_normal((2, 6, 9, 9)).astype(np.float32)
    wb = flow.tensor(w).to(flow.bfloat16).requires_grad_()
    F.conv2d(flow.tensor(x).to(flow.bfloat16), wb, padding=3, groups=6).backward(
        flow.tensor(g).to(flow.bfloat16))
    tw = torch.tensor(w, requires_grad=True)
    TF.conv2d(torch.tensor(x), tw, padding=3, groups=6).backward(torch.tensor(g))
    assert wb.grad.dtype == flow.bfloat16
    np.testing.assert_allclose(wb.grad.to(flow.float32).numpy(), tw.grad.numpy(), rtol=3e-2,
                               atol=0.3)
